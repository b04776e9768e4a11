"""The newfs request pattern (simfs/inprocess/timed_newfs.py) for the seed's geometry."""

from hypothesis import given, settings
from hypothesis import strategies as st

from simfs.inprocess.timed_newfs import SBLOCK_UFS2, geometry, requests, timed_newfs, _cgsize


def test_the_seeds_10_gb_partition():
    g = geometry(10 << 30, 32768, 4096)
    # the cylinder-group block fills at most one fs_bsize block, and one more group would not fit
    assert _cgsize(g.fpg, g.ipg, 32768, 4096) <= 32768
    assert g.fpg % 8 == 0 and g.ncg == 14
    reqs = requests(g)
    cg_writes = [r for r in reqs if r[2] == 4 * 32768]
    # initcg: one 128 KiB write (4 * fs_bsize) per group, at cgbase + sblkno (24 fragments)
    assert [off for _, off, _ in cg_writes] == [(cg * g.fpg + 24) * 4096 for cg in range(14)]
    assert reqs[0] == ("W", g.size_frags * 4096 - 512, 512)          # the last-sector test write
    assert ("W", SBLOCK_UFS2, 8192) in reqs                            # the superblock
    assert sum(1 for r in reqs if r[0] == "R") == 6                    # fsinit: alloc and iput reads
    assert len(reqs) == 1 + 14 + 2 * 7 + 1 + 1


@settings(max_examples=30, deadline=None)
@given(st.integers(600 << 20, 64 << 30))
def test_requests_lie_in_the_partition_and_are_whole_sectors(size):
    g = geometry(size)
    for op, off, n in requests(g):
        assert op in "RW" and off % 512 == 0 and n % 512 == 0 and n > 0
        assert 0 <= off and off + n <= g.size_frags * g.fsize


def test_misaligned_newfs_is_slower_and_deterministic():
    al = timed_newfs("wd-ears,partition_offset=40", 10 << 30)
    mis = timed_newfs("wd-ears,partition_offset=41", 10 << 30)
    assert mis["sim"] > 1.5 * al["sim"]
    assert mis == timed_newfs("wd-ears,partition_offset=41", 10 << 30)
