"""simfs.ondisk.htree.Index: an index block's fields read once give what the block says.

A dx_root and a dx_node are built with the format's own writers (make_root, insert, new_node)
from random sorted hashes; Index's problem, hash version, levels, entry blocks and the entry
a hash belongs under (the last whose hash is <= it) are checked against the block's bytes
and that definition; a damaged block keeps root_problem's / node_problem's reason.
"""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from simfs.ondisk import dirent, htree as fmt

BS = 1024


def entries(draw_hashes: list[int]) -> list[tuple[int, int]]:
    """(hash, block) of entries 1.. : sorted hashes, blocks 2, 3, ..."""
    return [(h, 2 + i) for i, h in enumerate(sorted(draw_hashes))]


def root(ents, version=1):
    buf = dirent.new_dir_block(BS, 2, 2)
    fmt.make_root(buf, version, 1)
    off = fmt.INFO_OFF + fmt.INFO_LENGTH
    for i, (h, b) in enumerate(ents):
        fmt.insert(buf, off, i, h, b)
    return buf, off


def belongs(ents, h: int) -> int:
    """The definition: the last entry (0 = the first, below every hash) whose hash <= h."""
    return max([0] + [i + 1 for i, (eh, _) in enumerate(ents) if eh <= h])


HASHES = st.lists(st.integers(0, 2**32 - 1).map(lambda h: h & ~1), max_size=fmt.root_limit(BS) - 1,
                  unique=True)


@settings(max_examples=200, deadline=None)
@given(hashes=HASHES, probes=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=20),
       version=st.integers(0, 2))
def test_a_root_read_once(hashes, probes, version):
    ents = entries(hashes)
    buf, off = root(ents, version)
    ix = fmt.Index(buf, root=True)
    assert ix.problem == "" and ix.version == version and ix.levels == 0 and ix.off == off
    assert ix.blocks == [fmt.entry_block(buf, off, i) for i in range(len(ents) + 1)] == [1] + [b for _, b in ents]
    for h in probes + [e[0] for e in ents]:
        assert ix.find(h) == belongs(ents, h)


@settings(max_examples=100, deadline=None)
@given(hashes=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=fmt.node_limit(BS) - 1, unique=True),
       probe=st.integers(0, 2**32 - 1))
def test_a_node_read_once(hashes, probe):
    ents = entries(hashes)
    raw = struct.pack("<II", 0, 1) + b"".join(struct.pack("<II", h, b) for h, b in ents)
    node = fmt.new_node(BS, raw)
    ix = fmt.Index(node, root=False)
    assert ix.problem == "" and ix.off == fmt.NODE_ENTRIES
    assert ix.blocks == [1] + [b for _, b in ents]
    assert ix.find(probe) == belongs(ents, probe)


def test_a_damaged_block_keeps_its_reason():
    buf, off = root(entries([10, 20]))
    struct.pack_into("<H", buf, off, 7)                     # a limit that is not the root's
    ix = fmt.Index(buf, root=True)
    assert ix.problem == fmt.root_problem(buf) != ""
    buf[fmt.INFO_OFF + 4] = 9                               # an unknown hash version
    assert fmt.Index(buf, root=True).problem == "unrecognised hash version 9"
    node = fmt.new_node(BS, struct.pack("<II", 0, 1))
    struct.pack_into("<H", node, fmt.NODE_ENTRIES + 2, 0)   # count 0
    assert fmt.Index(node, root=False).problem == fmt.node_problem(node) == "count 0 beyond limit 127"
