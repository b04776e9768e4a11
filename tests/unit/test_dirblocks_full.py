"""simfs.fs.dirblocks.Parsed.put on a full block: add_dirent_to_buf answers "no room"
(False, the block unchanged) for every name that does not fit, and still takes one that
fits the slack left."""

from __future__ import annotations

import pytest

from simfs.fs.dirblocks import Parsed
from simfs.ondisk import dirent

BS = 1024


@pytest.mark.parametrize("first", [True, False])
def test_a_full_block_refuses_and_keeps_its_bytes(first):
    buf = dirent.new_dir_block(BS, 2, 2) if first else dirent.empty_block(BS)
    p = Parsed(buf)
    i = 0
    while p.put(buf, b"name-%04d-" % i + b"z" * 30, 100 + i, 1):
        i += 1
    assert i > 10
    before = bytes(buf)
    for n in (b"y" * 60, b"w" * 255, b"another-%04d-" % i + b"z" * 30):
        assert p.put(buf, n, 999, 1) is False
        assert bytes(buf) == before and p.find(n) is None
    slack = max(p.rooms)
    small = b"s" * max(1, slack - 8 - 3)
    if dirent.rec_len_for(len(small)) <= slack:
        assert p.put(buf, small, 998, 1) and p.find(small)[1] == 998


def test_a_damaged_block_still_finds_a_name_that_ends_at_the_block_end():
    """ext4_search_dir on a block the record walk cannot pass (a record whose name runs past
    its rec_len): it steps on by rec_len and matches a live name when `de->name + name_len <=
    dlimit`, so a last record whose name ends exactly at the block's end is found."""
    import struct
    buf = bytearray(BS)
    hdr = struct.Struct("<IHBB")
    hdr.pack_into(buf, 0, 0, 200, 255, 0)           # bad for the walk: 8 + 255 > 200
    hdr.pack_into(buf, 200, 0, 804, 0, 0)           # empty, up to 1004
    name = b"twelve-bytes"
    hdr.pack_into(buf, 1004, 77, 20, len(name), 1)  # 8 + 12 = 20: the name ends at byte 1024
    buf[1012:1024] = name
    p = Parsed(buf)
    assert p.err, "the walk stops at the first record"
    assert p.find(name) == (1004, 77, 1)
    assert p.find(b"twelve-byteX") is None
