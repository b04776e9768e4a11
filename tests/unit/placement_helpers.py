"""A free-space view for driving one allocator by hand: a real image's geometry and group
descriptors, with a block map the test fills as it likes (the policies read only these)."""

from __future__ import annotations

import numpy as np

from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs


class Space:
    """policies.base.SpaceView over a copy of a fresh volume's maps; `take` plays the volume."""

    def __init__(self, vol):
        self.geometry = vol.geo
        self.descs = vol.space.descs
        self.block_used = vol.space.block_used.copy()
        self.inode_used = vol.space.inode_used.copy()
        self.meta = self.block_used.copy()          # what a fresh image uses: metadata only
        self.dirs = np.array([d.used_dirs for d in vol.space.descs], dtype=np.int64)

    def copy(self) -> "Space":
        import copy
        s = copy.copy(self)
        s.block_used = self.block_used.copy()
        s.inode_used = self.inode_used.copy()
        s.dirs = self.dirs.copy()
        return s

    def group_range(self, g: int) -> tuple[int, int]:
        s = self.geometry.group_start(g)
        return s, s + self.geometry.group_blocks(g)

    def group_free_inodes(self, g: int) -> int:
        ipg = self.geometry.inodes_per_group
        return int(ipg - self.inode_used[g * ipg:(g + 1) * ipg].sum())

    def first_free_inode(self, g: int) -> int:
        ipg = self.geometry.inodes_per_group
        seg = self.inode_used[g * ipg:(g + 1) * ipg]
        i = int(seg.argmin())
        return g * ipg + i + 1 if not seg[i] else -1

    def group_used_dirs(self, g: int) -> int:
        return int(self.dirs[g])

    @property
    def free_inodes(self) -> int:
        return int((~self.inode_used).sum())

    @property
    def used_dirs(self) -> int:
        return int(self.dirs.sum())

    def group_free_blocks(self, g: int) -> int:
        s, e = self.group_range(g)
        return int(e - s - self.block_used[s:e].sum())

    @property
    def free_blocks(self) -> int:
        return int((~self.block_used[self.geometry.first_data_block:]).sum())

    def first_free_block(self, start: int, end: int) -> int:
        seg = self.block_used[start:end]
        i = int(seg.argmin()) if len(seg) else 0
        return start + i if len(seg) and not seg[i] else -1

    def fill(self, g: int) -> None:
        s, e = self.group_range(g)
        self.block_used[s:e] = True

    def take(self, b: int) -> None:
        assert not self.block_used[b], f"block {b} handed out while in use"
        assert not self.meta[b], f"metadata block {b} handed out"
        self.block_used[b] = True


def fresh_space(tmp, groups: int = 8, bpg: int = 1024, block_size: int = 1024, profile: str = "ext2",
                ipg: int = 64) -> Space:
    img = f"{tmp}/space-{profile}-{ipg}.img"
    mkfs(img, groups * bpg * block_size, block_size=block_size, blocks_per_group=bpg,
         inodes_per_group=ipg, uuid=bytes(16), hash_seed=bytes(16), now=1, profile=profile)
    with Volume.open(img, VolumeOptions(read_only=True)) as vol:
        return Space(vol)


def first_free_wrapping(used: np.ndarray, rel: int) -> int:
    """ffs_mapsearch / ext2's scan: the first clear bit at or after rel, else from 0; -1."""
    free = np.flatnonzero(~used)
    if not len(free):
        return -1
    after = free[free >= rel]
    return int(after[0] if len(after) else free[0])
