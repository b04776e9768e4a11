"""Unit tests of the allocator pieces: the scans against literal ports of the C loops,
ffs_hashalloc's group order, ffs_reallocblks (policy side), ext2 reservation windows."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from policies.base import BlockRequest
from policies.freebsd_ext2fs import Ext2fs2010, Ext2fs2010Fixed
from policies.groupscan import cdiv, cmod, free_runs, hashalloc
from policies.linux_ext2 import Ext2
from simfs.ondisk.mkfs import mkfs
from simfs.fs.volume import Volume, VolumeOptions
from tests.helpers import block_map, write_file


# literal ports of the C byte loops -----------------------------------------------------------
def c_alloccg_2010_scan(bytes_, start, end):
    for loc in range(start, end):
        if bytes_[loc] == 0:
            return loc * 8
    for loc in range(0, start):
        if bytes_[loc] == 0:
            return loc * 8
    return -1


def c_alloccg_fixed_scan(bytes_, start, end):
    """ext2_alloccg's run search (rayddteam/freebsd-pi, 2012), bytes read as unsigned."""
    def fls(x):
        return x.bit_length()

    def ffs(x):
        return (x & -x).bit_length()
    while True:
        runlen = runstart = 0
        for loc in range(start, end):
            b = bytes_[loc]
            if b == 0xFF:
                runlen = 0
                continue
            if runlen == 0:
                bit = fls(b)
                runlen = 8 - bit
                runstart = loc * 8 + bit
            elif b == 0:
                runlen += 8
            else:
                bit = ffs(b) - 1
                runlen += bit
                if runlen >= 8:
                    return runstart
                bit = fls(b)
                runlen = 8 - bit
                runstart = loc * 8 + bit
            if runlen >= 8:
                return runstart
        if start != 0:
            end, start = start, 0
            continue
        return -1


bitmaps = st.lists(st.sampled_from([0x00, 0xFF, 0x01, 0x80, 0x0F, 0xF0, 0x3C, 0x81, 0x7E, 0x10]),
                   min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(bitmaps, st.data())
def test_byte_scans_match_the_c_loops(byte_list, data):
    bits = np.unpackbits(np.array(byte_list, dtype=np.uint8), bitorder="little").astype(bool)
    nbytes = len(byte_list)
    start = data.draw(st.integers(0, nbytes - 1))
    end = nbytes - start                                  # the `end` bug, in both versions
    assert Ext2fs2010()._scan(bits, start, end) == c_alloccg_2010_scan(byte_list, start, end)
    assert Ext2fs2010Fixed()._scan(bits, start, end) == c_alloccg_fixed_scan(byte_list, start, end)


def test_free_runs_and_c_arithmetic():
    bits = np.array([1, 0, 0, 1, 0, 0, 0, 1], dtype=bool)
    s, n = free_runs(bits, 0, 8)
    assert s.tolist() == [1, 4] and n.tolist() == [2, 3]
    s, n = free_runs(bits, 5, 8)                          # cut at the window edge
    assert s.tolist() == [5] and n.tolist() == [2]
    assert cdiv(-1, 8) == 0 and cmod(-1, 8) == -1 and cdiv(17, 8) == 2


def test_hashalloc_visits_groups_in_ffs_order():
    seen = []
    assert hashalloc(8, 3, 99, lambda g, p: seen.append((g, p))) is None
    assert seen == [(3, 99), (4, 0), (6, 0), (2, 0), (5, 0), (6, 0), (7, 0), (0, 0), (1, 0), (2, 0)]


# ffs_reallocblks ----------------------------------------------------------------------------
def _req(vol, ino, lblk):
    inode = vol.inodes.get(ino)
    slot, idx = vol.filemap.path(lblk)
    assert not idx, "direct blocks only in these tests"
    prev = [b for b in inode.block[:slot] if b]
    return BlockRequest(ino=ino, inode_group=vol.geo.group_of_inode(ino), lblk=lblk, slot=slot,
                        map_prev=prev[-1] if prev else 0, map_block=0,
                        prev_phys=vol.filemap.bmap(inode, lblk - 1) if lblk else 0)


@pytest.fixture
def vol4k(tmp_path):
    def make(alloc):
        img = str(tmp_path / f"{alloc}.img")
        mkfs(img, 64 << 20, block_size=4096, blocks_per_group=8192)
        return Volume.open(img, VolumeOptions(alloc=alloc))
    return make


@pytest.mark.parametrize("alloc", ["cg-2010", "cg-2013"])
def test_reallocate_moves_a_broken_cluster_to_the_first_run_after_its_preference(vol4k, alloc):
    with vol4k(alloc) as vol:
        a = vol.create(vol.root_ino, b"a", 0o644, 0, 0).st_ino
        vol.write(a, 0, b"a" * 10 * 4096)                 # d0..d9 contiguous
        vol.sync()                                        # written: no cluster for the volume to move
        write_file(vol, vol.root_ino, b"b", 4096)         # takes the block after d9
        vol.write(a, 10 * 4096, b"a" * 4096)              # d10 lands after b
        data, _ = block_map(vol, a)
        x = data[0]
        assert data == list(range(x, x + 10)) + [x + 11]
        cluster = [(8, x + 8), (9, x + 9), (10, x + 11)]
        inode = vol.inodes.get(a)
        new = vol.placement.allocator.reallocate(vol.space, _req(vol, a, 8), inode.incore["alloc"], cluster)
        assert new == [x + 12, x + 13, x + 14]            # at or after pref = d7 + 1, never before
        assert not vol.space.block_used[new].any()


@pytest.mark.parametrize("alloc,moves", [("cg-2010", True), ("cg-2013", False)])
def test_reallocate_across_lbn_11_12(vol4k, alloc, moves):
    """r242520: cg-2013 refuses a cluster that spans lbn 11 -> 12 (keeps the indirect inline)."""
    with vol4k(alloc) as vol:
        c = write_file(vol, vol.root_ino, b"c", 14 * 4096)
        data, _ = block_map(vol, c)
        cluster = [(10, data[10]), (11, data[11]), (12, data[12])]
        inode = vol.inodes.get(c)
        new = vol.placement.allocator.reallocate(vol.space, _req(vol, c, 10), inode.incore["alloc"], cluster)
        if moves:
            assert new is not None and len(new) == 3 and new == list(range(new[0], new[0] + 3))
            assert not vol.space.block_used[new].any() and new[0] > data[9]
        else:
            assert new is None


@pytest.mark.parametrize("alloc", ["cg-2010", "cg-2013"])
def test_reallocate_refuses_a_cluster_spanning_groups(vol4k, alloc):
    with vol4k(alloc) as vol:
        c = write_file(vol, vol.root_ino, b"c", 4 * 4096)
        data, _ = block_map(vol, c)
        other = vol.geo.group_start(1) + 500
        cluster = [(2, data[2]), (3, data[3]), (4, other)]
        assert vol.placement.allocator.reallocate(vol.space, _req(vol, c, 2), None, cluster) is None
        assert vol.placement.allocator.reallocate(vol.space, _req(vol, c, 2), None, []) is None


def test_other_allocators_refuse_reallocation(vol4k):
    with vol4k("ext2") as vol:
        c = write_file(vol, vol.root_ino, b"c", 4 * 4096)
        data, _ = block_map(vol, c)
        assert vol.placement.allocator.reallocate(vol.space, _req(vol, c, 0), None, list(enumerate(data))) is None


# ext2 reservation windows ---------------------------------------------------------------------
def _runs(blocks):
    return 1 + sum(1 for a, b in zip(blocks, blocks[1:]) if b != a + 1)


def test_ext2_windows_keep_interleaved_writers_apart(vol4k):
    """Two files written block by block in turn: each gets its own window (8 blocks, doubling
    while more than half is used), so each file is a few runs, not every other block."""
    with vol4k("ext2") as vol:
        a = vol.create(vol.root_ino, b"a", 0o644, 0, 0).st_ino
        b = vol.create(vol.root_ino, b"b", 0o644, 0, 0).st_ino
        for i in range(64):
            vol.write(a, i * 4096, b"a" * 4096)
            vol.write(b, i * 4096, b"b" * 4096)
        da, ia = block_map(vol, a)
        db, ib = block_map(vol, b)
        assert da[:8] == list(range(da[0], da[0] + 8))   # the first 8-block window
        assert _runs(sorted(da + ia)) <= 6 and _runs(sorted(db + ib)) <= 6
        windows = [(w.start, w.end) for w in vol.placement.allocator.tree.nodes[1:]]
        assert len(windows) == 2 and windows == sorted(windows)
        assert all(e1 < s2 for (_, e1), (s2, _) in zip(windows, windows[1:]))
        for ino in (a, b):                                # release (close, truncate) drops them
            vol.placement.allocator.release(vol.inodes.get(ino).incore["alloc"])
        assert len(vol.placement.allocator.tree.nodes) == 1


def test_ext2_window_goes_with_the_inode(vol4k):
    with vol4k("ext2") as vol:
        a = write_file(vol, vol.root_ino, b"a", 4096)
        vol.write(a, 4096, b"x")                          # a window again, not released
        assert len(vol.placement.allocator.tree.nodes) == 2
        vol.unlink(vol.root_ino, b"a")                    # in-core inode dropped -> window gone
        import gc
        gc.collect()
        assert len(vol.placement.allocator.tree.nodes) == 1


def test_ext2_goal_rules(vol4k):
    with vol4k("ext2") as vol:
        f = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        vol.write(f, 0, b"0" * 4096)
        vol.write(f, 5 * 4096, b"5" * 4096)               # not sequential: near the previous pointer
        vol.write(f, 6 * 4096, b"6" * 4096)               # sequential: last + 1
        data, _ = block_map(vol, f)
        assert data == [data[0], data[0] + 1, data[0] + 2]
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        g = vol.geo.group_of_inode(d)
        dblocks, _ = block_map(vol, d)                    # no window, no sequential heuristic
        assert vol.geo.group_of_block(dblocks[0]) == g
    assert isinstance(Ext2.pid, int)
