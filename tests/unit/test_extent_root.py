"""An extent tree's root in i_block: root_words builds the inode's 15 words arithmetically (it
runs once per block a file grows by), so it must give exactly the words of the bytes
Node.pack_into writes, read as i_block's little-endian words, for leaves and index roots."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simfs.ondisk.extent import ROOT_BYTES, Node, root_max, root_of, root_words

_U32 = st.integers(0, 2**32 - 1)


@st.composite
def roots(draw):
    depth = draw(st.integers(0, 5))
    length = st.integers(1, 2**16 - 1) if depth == 0 else st.just(0)
    entries = draw(st.lists(st.tuples(_U32, length, st.integers(0, 2**48 - 1)), max_size=root_max()))
    return Node(depth, draw(st.integers(max(len(entries), 1), root_max())), entries, draw(_U32))


@given(roots())
def test_root_words_are_the_packed_bytes(node):
    buf = bytearray(ROOT_BYTES)
    node.pack_into(buf, ROOT_BYTES)
    assert root_words(node) == list(struct.unpack("<15I", buf))


@given(roots())
def test_root_words_read_back(node):
    back, why = root_of(root_words(node))
    assert not why
    assert (back.depth, back.max, back.entries, back.generation) == (node.depth, node.max,
                                                                     [(s, n if node.depth == 0 else 0, p)
                                                                      for s, n, p in node.entries],
                                                                     node.generation)


def test_a_root_holds_four_entries():
    with pytest.raises(ValueError, match="at most 4"):
        root_words(Node(0, 4, [(i, 1, 100 + i) for i in range(5)]))
