"""simfs.fs.dirblocks: a parsed directory block answers as a fresh walk of its bytes would.

The oracle is a plain record-by-record walk written here (what directory.py did on every
htree lookup and insert before the parse was kept): the first live record with a name, the
first record with room for a new one, ext4's delete (merge into the previous record, bytes
zeroed). Random inserts and deletes on one block keep the incrementally updated parse equal to
a new parse of the bytes, and the bytes equal to the oracle's; damaged blocks give the same
hits and the same ValueError; `Blocks` never hands out the parse of other bytes.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simfs.fs.dirblocks import Blocks, Parsed
from simfs.ondisk import dirent

BS = 1024
_HDR = struct.Struct("<IHBB")
NAMES = st.binary(min_size=1, max_size=40).filter(lambda n: b"\0" not in n and b"/" not in n)


def walk(buf):
    """(offset, inode, rec_len, name, file type) of each record up to the first bad one, and
    the ValueError message there ("" if none)."""
    out, off = [], 0
    while off + 8 <= len(buf):
        ino, rec_len, name_len, ft = _HDR.unpack_from(buf, off)
        if rec_len < 8 or rec_len % 4 or off + rec_len > len(buf) or 8 + name_len > rec_len:
            return out, f"corrupt directory record at offset {off} (rec_len {rec_len})"
        out.append((off, ino, rec_len, bytes(buf[off + 8:off + 8 + name_len]), ft))
        off += rec_len
    return out, (f"directory record header at {off} runs off the block" if off < len(buf) else "")


def kernel_search(buf, name):
    """ext4_search_dir (Linux 6.8+), transcribed: follow rec_len from offset 0 while a header
    fits before the last 8 bytes; a live record with the name is fully checked (bad: an
    error), a rec_len of 0 is an error; running off the block is a miss."""
    off = 0
    while off < len(buf) - 8:
        ino, rec_len, name_len, ft = _HDR.unpack_from(buf, off)
        if ino and bytes(buf[off + 8:off + 8 + name_len]) == name and off + 8 + name_len <= len(buf):
            end = off + rec_len
            if (rec_len < 12 or rec_len % 4 or rec_len < dirent.rec_len_for(name_len) or end > len(buf)
                    or (end > len(buf) - 12 and end != len(buf))):
                raise ValueError("check_dir_entry")
            return off, ino, ft
        if rec_len == 0:
            raise ValueError("rec_len 0")
        off += rec_len
    return None


def find(buf, name):
    """The first live record named name in the walk; in a damaged block, a name not found
    before the damage is searched for as the kernel searches."""
    recs, err = walk(buf)
    for off, ino, _, n, ft in recs:
        if ino and n == name:
            return off, ino, ft
    return kernel_search(buf, name) if err else None


def put(buf, name, ino, ft) -> bool:
    recs, err = walk(buf)
    if err:
        raise ValueError(err)
    need = dirent.rec_len_for(len(name))
    for off, eino, rec_len, n, _ in recs:
        used = dirent.rec_len_for(len(n)) if eino else 0
        if rec_len - used >= need:
            if used:
                dirent.set_rec_len(buf, off, used)
            dirent.put(buf, off + used, ino, rec_len - used, name, ft)
            return True
    return False


def remove(buf, target) -> None:
    prev = None
    for off, _, rec_len, _, _ in walk(buf)[0]:
        if off == target:
            if prev is None:
                dirent.set_inode(buf, off, 0)
                buf[off + 6:off + rec_len] = bytes(rec_len - 6)
            else:
                dirent.set_rec_len(buf, prev[0], prev[1] + rec_len)
                buf[off:off + rec_len] = bytes(rec_len)
            return
        prev = (off, rec_len)
    raise AssertionError("no such record")


def state(p: Parsed):
    return p.snap, p.names, p.offs, p.rooms, p.err


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.booleans(), NAMES, st.integers(0, 255)), max_size=120),
       first=st.booleans())
def test_inserts_and_deletes_keep_the_parse_that_of_the_bytes(ops, first):
    buf = dirent.new_dir_block(BS, 2, 2) if first else dirent.empty_block(BS)
    ref = bytearray(buf)
    p = Parsed(buf)
    live: list[bytes] = [b".", b".."] if first else []
    for i, (add, name, ft) in enumerate(ops):
        if add or len(live) <= (2 if first else 0):
            if name in live or name in (b".", b".."):
                continue
            done = p.put(buf, name, 100 + i, ft)
            assert done == put(ref, name, 100 + i, ft)
            if done:
                live.append(name)
        else:
            name = live.pop(ft % len(live))
            if name in (b".", b".."):
                continue
            off = p.find(name)[0]
            assert off == find(ref, name)[0]
            p.remove(buf, off, name)
            remove(ref, off)
        assert buf == ref
        assert state(p) == state(Parsed(buf))
        for n in live:
            assert p.find(n) == find(ref, n)


@settings(max_examples=300, deadline=None)
@given(names=st.lists(NAMES, min_size=1, max_size=30),        # (a name twice: the first found)
       hits=st.lists(st.tuples(st.integers(0, BS - 1), st.integers(0, 255)), min_size=1, max_size=4),
       probe=NAMES)
def test_a_damaged_block_answers_as_a_walk_does(names, hits, probe):
    buf = dirent.empty_block(BS)
    for i, name in enumerate(names):
        put(buf, name, 10 + i, 1)
    recs, _ = walk(buf)
    end = recs[-1][0] + 8 + len(recs[-1][3])        # the damage falls among the records
    for at, value in hits:
        buf[at % end] = value
    p = Parsed(buf)
    for name in names + [probe]:
        try:
            want = find(buf, name)
        except ValueError:
            with pytest.raises(ValueError):
                p.find(name)
        else:
            assert p.find(name) == want
    recs, err = walk(buf)
    assert p.err == err
    if err:
        with pytest.raises(ValueError):
            p.put(buf, b"new-name", 99, 1)


def test_blocks_hands_out_a_parse_only_for_the_bytes_it_was_made_from():
    blocks = Blocks(capacity=2)
    buf = dirent.empty_block(BS)
    a = blocks.get(7, buf)
    assert blocks.get(7, buf) is a
    put(buf, b"changed", 12, 1)                     # changed behind the parse's back
    b = blocks.get(7, buf)
    assert b is not a and b.find(b"changed") == (0, 12, 1)
    assert blocks.get(7, bytearray(dirent.empty_block(BS))).find(b"changed") is None   # other bytes
    blocks.get(8, buf)
    blocks.get(9, buf)
    assert list(blocks.parsed) == [8, 9]            # bounded: the least recently used forgotten
