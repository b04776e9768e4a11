"""The extent map's write path (simfs.fs.extentmap.ExtentMap.map_for_write), at every offset
inside and around extents, in-process.

A write into a block an extent already maps must land on that extent's block for it:
pstart + (lblk - ee_block), whatever the extent's first logical block (issue 54: with `+ s`
for `- s` only extents at logical block 0 came out right). Checked on the image itself:
after each overwrite and a sync, the block the map names holds the new bytes, no other mapped
block changed, nothing was allocated and the map is the same; reads after the caches are
dropped agree. On the ext4 profile, under allocators that place blocks differently (ext2,
mballoc, first-free), with hypothesis choosing the extents and the overwrites.
"""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs

BS = 1024


def _image(tmp) -> str:
    img = os.path.join(tmp, "ext4.img")
    if os.path.exists(img):
        os.unlink(img)
    mkfs(img, 8 << 20, block_size=BS, profile="ext4", uuid=bytes(16), hash_seed=bytes(16))
    return img


def _block(tag: int, lblk: int) -> bytes:
    """A block's bytes, told apart by writer and logical block."""
    return (tag.to_bytes(2, "little") + lblk.to_bytes(4, "little")) * (BS // 6) + bytes(BS % 6)


class File:
    """A file on an open volume and the model of what each of its blocks holds."""

    def __init__(self, vol, img):
        self.vol, self.img = vol, img
        self.ino = vol.create(vol.root_ino, b"f", stat.S_IFREG | 0o644, 0, 0).st_ino
        vol.hold(self.ino)
        self.model: dict[int, bytes] = {}
        self.tag = 0

    def write(self, lblk: int, n: int = 1) -> None:
        self.tag += 1
        data = b"".join(_block(self.tag, lb) for lb in range(lblk, lblk + n))
        assert self.vol.write(self.ino, lblk * BS, data) == len(data)
        for i in range(n):
            self.model[lblk + i] = data[i * BS:(i + 1) * BS]

    def mapping(self) -> dict[int, int]:
        inode = self.vol.inodes.get(self.ino)
        return {lb: self.vol.filemap.bmap(inode, lb) for lb in self.model}

    def check_image(self, where: str) -> dict[int, int]:
        """Every mapped block, read from the image file at the block the map names, holds
        what was last written to it."""
        self.vol.sync()
        mapping = self.mapping()
        with open(self.img, "rb") as f:
            for lb, phys in sorted(mapping.items()):
                assert phys, f"{where}: lblk {lb} unmapped"
                f.seek(phys * BS)
                assert f.read(BS) == self.model[lb], f"{where}: lblk {lb} (block {phys}) holds other bytes"
        return mapping

    def check_reads(self, where: str) -> None:
        self.vol.drop_caches()
        for lb, want in sorted(self.model.items()):
            assert self.vol.read(self.ino, lb * BS, BS) == want, f"{where}: lblk {lb} reads back other bytes"


@pytest.mark.parametrize("alloc", ["ext2", "mballoc", "first-free"])
def test_overwrite_at_every_offset_in_and_around_extents(tmp_path, alloc):
    """Extents at lblk 10 (8 blocks) and 30 (5 blocks, after a hole); every lblk from 0 to 40
    overwritten in turn. Inside an extent: the same physical block, rewritten in place; in
    the holes and past the end: a new block, the extents' blocks untouched."""
    img = _image(str(tmp_path))
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        f = File(vol, img)
        f.write(10, 8)
        f.write(30, 5)
        before = f.check_image("written")
        assert before[11] == before[10] + 1, "an extent starts at lblk 10 and goes on"
        free = vol.space.free_blocks
        for lb in range(0, 41):
            inside = lb in before
            f.write(lb)
            mapping = f.check_image(f"overwrote lblk {lb}")
            for old, phys in before.items():
                assert mapping[old] == phys, f"lblk {old} moved after writing lblk {lb}"
            if inside:
                assert vol.space.free_blocks == free, f"overwriting mapped lblk {lb} allocated"
            before = mapping
            free = vol.space.free_blocks
        f.check_reads("after the overwrites")


def test_issue_54_probe(tmp_path):
    """The probe of issue 54: 8 blocks at lblk 10, lblk 12 overwritten, read back after the
    caches are dropped (ext4 profile, mballoc)."""
    img = _image(str(tmp_path))
    with Volume.open(img, VolumeOptions(alloc="mballoc")) as vol:
        f = File(vol, img)
        f.write(10, 8)
        vol.drop_caches()
        f.write(12)
        f.check_reads("after the overwrite")
        f.check_image("after the overwrite")


RUNS = st.lists(st.tuples(st.integers(0, 60), st.integers(1, 12)), min_size=1, max_size=6)
OVERWRITES = st.lists(st.tuples(st.integers(0, 75), st.integers(1, 4)), min_size=1, max_size=12)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(alloc=st.sampled_from(["ext2", "mballoc", "first-free"]), runs=RUNS, overwrites=OVERWRITES,
       cold=st.booleans())
def test_overwrites_land_where_the_map_says(tmp_path, alloc, runs, overwrites, cold):
    """Random runs written (extents anywhere, merged or not), then random overwrites, with or
    without the caches dropped first: every block of the map holds its last bytes on the
    image, and a mapped block never moves."""
    img = _image(str(tmp_path))
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        f = File(vol, img)
        for lb, n in runs:
            f.write(lb, n)
        before = f.check_image("written")
        if cold:
            vol.drop_caches()
        for lb, n in overwrites:
            f.write(lb, n)
        after = f.check_image("overwritten")
        assert {lb: after[lb] for lb in before} == before, "a mapped block moved"
        f.check_reads("overwritten")
