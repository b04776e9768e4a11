"""Inode-table read-ahead (simfs/fs/inodes.py, -o inode_readahead_blks=N), in-process.

A cold stat of every file in inode order: with 32 blocks of read-ahead the inode-table misses
fall to about one per 33 table blocks, read in requests around the block missed; with 0 the
counters are those of a mount without the option on an ext2 image (its default is 0). The
span is __ext4_get_inode_loc's: aligned down to the read-ahead size, not before the table,
through that + N inclusive, not past the table.
"""

import dataclasses

import pytest

from simfs.inprocess.kernel import Kernel
from simfs.fs.inodes import EXT4_INODE_READAHEAD, readahead_default, readahead_span
from simfs.fs.volume import Volume, VolumeOptions
from simfs.fuse import mountopts
from simfs.ondisk.mkfs import mkfs

FILES = 600


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """An image with FILES files in 6 directories; their inode numbers, in order."""
    img = tmp_path_factory.mktemp("ra") / "img"
    mkfs(img, 128 << 20, block_size=4096, inode_size=256, uuid=bytes(16), hash_seed=bytes(16), now=1)
    paths = []
    with Volume.open(img, VolumeOptions(alloc="mballoc")) as vol:
        for i in range(6):
            d = vol.mkdir(vol.root_ino, b"d%d" % i, 0o755, 0, 0).st_ino
            for j in range(FILES // 6):
                ino = vol.create(d, b"f%d" % j, 0o644, 0, 0).st_ino
                paths.append((ino, [b"d%d" % i, b"f%d" % j]))
    return img, [p for _, p in sorted(paths)]


def _stat_all(img, paths, **opts):
    options = dataclasses.replace(VolumeOptions(alloc="mballoc", read_only=True), **opts)
    with Volume.open(img, options) as vol:
        k = Kernel(vol)
        t0 = vol.clock.now
        for p in paths:
            k.stat(vol.root_ino, p)
        out = dict(vol.stats.totals(), seconds=vol.clock.now - t0, table=vol.inodes.readahead)
        k.unmount()
    return out


def test_readahead_cuts_inode_table_misses(tree):
    img, paths = tree
    off = _stat_all(img, paths, inode_readahead_blks=0)
    on = _stat_all(img, paths, inode_readahead_blks=32)
    default = _stat_all(img, paths)
    assert default == off and default["table"] == 0            # ext2 image: off by default
    assert off.get("readahead_blocks", 0) == 0 and off.get("inode_readahead_misses", 0) == 0
    table_blocks = -(-(FILES + 11) * 256 // 4096)              # blocks holding these inodes
    assert on["inode_readahead_misses"] >= 1
    assert on["readahead_blocks"] > 0
    # every miss with read-ahead brings its span: the misses that remain are directories'
    # and the one per span of the table, where without it each table block was one
    assert off["cache_misses"] - on["cache_misses"] >= table_blocks - 2 * on["inode_readahead_misses"]
    assert on["disk_reads"] < off["disk_reads"]
    # (simulated time is not asserted: on a tree this small the drive's own read-ahead
    # serves the one-block reads, and the spans read empty table blocks too)


def test_span_follows_ext4():
    table, blocks = 1000, 512
    assert readahead_span(1003, table, 32, blocks, blocks) == (1000, 33)   # 992 -> the table's start
    assert readahead_span(1040, table, 32, blocks, blocks) == (1024, 33)   # b..b+32 inclusive
    assert readahead_span(1505, table, 32, blocks, blocks) == (1504, 8)    # clipped at the table's end
    assert readahead_span(1040, table, 32, 48, blocks) == (1024, 25)       # through used + 1
    assert readahead_span(1070, table, 32, 48, blocks) == (1056, 15)       # never short of blk


def test_default_follows_the_features():
    class Sb:
        feature_incompat = 0
    assert readahead_default(Sb) == 0
    Sb.feature_incompat = 0x40                  # extent
    assert readahead_default(Sb) == EXT4_INODE_READAHEAD == 32
    Sb.feature_incompat = 0x200                 # flex_bg
    assert readahead_default(Sb) == 32


@pytest.mark.parametrize("value", ["3", "48", "-1", str(1 << 31)])
def test_bad_values_are_refused(value):
    with pytest.raises(mountopts.OptionError, match="inode_readahead_blks"):
        mountopts.parse([f"inode_readahead_blks={value}"])
