"""drop_caches keeps what the kernel's keeps (issue 50): the superblock's and the group
descriptors' buffers, read at mount and held to the unmount (fs/ext4/super.c: s_sbh,
s_group_desc[]), and the root inode the mount's root dentry holds in core. After a drop a
phase reads neither block again, nor the root's inode-table block to look at the root."""

from __future__ import annotations

import pytest

from simfs.fs.types import VolumeOptions
from simfs.fs.volume import Volume
from simfs.ondisk.mkfs import mkfs


class _Reads:
    """Stands in for the trace: every request the drive gets, (op, first block, kind)."""

    def __init__(self, spb: int):
        self.spb, self.rows = spb, []

    def record(self, op, lba, sectors, r, cause, ino, phase, wait=True):
        self.rows.append((op, lba // self.spb, cause))

    def reads(self) -> list[tuple[int, str]]:
        return [(b, k) for op, b, k in self.rows if op == "R"]


def _traced(vol) -> _Reads:
    rec = _Reads(vol.block_size // 512)
    vol.clock.trace = rec
    return rec


@pytest.mark.parametrize("bs", [1024, 4096])
def test_a_phase_after_drop_caches_reads_no_superblock_nor_descriptors(tmp_path, bs):
    img = tmp_path / "img"
    mkfs(img, 32 << 20, block_size=bs)
    with Volume.open(img, VolumeOptions()) as vol:
        held = range(vol.geo.first_data_block, vol.geo.first_data_block + 1 + vol.geo.gdt_blocks)
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        vol.drop_caches()
        rec = _traced(vol)
        for i in range(20):                      # new inodes and blocks: descriptors change
            fh = vol.create(d, b"f%d" % i, 0o644, 0, 0).st_ino
            vol.write(fh, 0, b"x" * 5000)
        vol.sync()                               # the superblock and descriptors written
        reads = rec.reads()
        written = {b for op, b, _ in rec.rows if op == "W"}
    assert reads, "the phase read nothing cold: the drop did not drop"
    assert any(b in written for b in held)      # they were written, from the held buffers
    assert not [r for r in reads if r[0] in held], reads


def test_the_mount_reads_the_superblock_and_descriptors_once(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 32 << 20, block_size=4096)
    with Volume.open(img, VolumeOptions()) as vol:
        assert {0, 1} <= vol.cache.held            # read at mount (the kernel's sb_bread)
        assert 0 in vol.cache.buffers and 1 in vol.cache.buffers
        vol.drop_caches()
        assert 0 in vol.cache.buffers and 1 in vol.cache.buffers
        assert not [b for b in vol.cache.buffers if b not in vol.cache.held]


def test_the_root_stays_in_core_through_drop_caches(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 32 << 20, block_size=4096)
    with Volume.open(img, VolumeOptions()) as vol:
        vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0)
        vol.getattr(vol.root_ino)
        vol.drop_caches()
        rec = _traced(vol)
        vol.getattr(vol.root_ino)                  # in core: nothing to read
        assert rec.reads() == []
        vol.lookup(vol.root_ino, b"d")             # its directory block is cold
        assert [k for _, k in rec.reads()][:1] == ["dir"]
