"""Free-space maps: block and inode bitmaps as numpy arrays, kept in step with the image.

The arrays are what policies search (fast, whole-volume); every change is also applied to
the bitmap block in the buffer cache and marks the group descriptor's block dirty, so the
image stays the truth and the write-back of bitmaps and descriptors is charged like any other
block. A changed descriptor is packed into its block's bytes once, before the image commits
(`pack`), not at every block it counts: nothing else reads those bytes after the mount.
"""

import numpy as np

from simfs.ondisk.constants import FIRST_INO, GROUP_DESC_SIZE
from simfs.ondisk.groupdesc import GroupDesc


class FreeSpace:
    def __init__(self, geometry, descs: list[GroupDesc], cache, stats):
        self.geometry = geo = geometry
        self.descs = descs
        self.cache = cache
        self.stats = stats
        self.reserved = 0     # blocks promised to delayed-allocation writes, not yet placed
        self.unpacked: dict[int, bytearray] = {}   # changed group -> its descriptor block's buffer
        self.block_used = np.zeros(geo.blocks_count, dtype=bool)
        self.inode_used = np.zeros(geo.inodes_count, dtype=bool)
        self._load()

    def _load(self) -> None:
        geo = self.geometry
        ipg = geo.inodes_per_group
        self.block_used[: geo.first_data_block] = True
        for g, d in enumerate(self.descs):
            start, n = geo.group_start(g), geo.group_blocks(g)
            bits = np.unpackbits(np.frombuffer(self.cache.peek(d.block_bitmap), np.uint8), bitorder="little")
            self.block_used[start:start + n] = bits[:n].astype(bool)
            bits = np.unpackbits(np.frombuffer(self.cache.peek(d.inode_bitmap), np.uint8), bitorder="little")
            self.inode_used[g * ipg:(g + 1) * ipg] = bits[:ipg].astype(bool)
        self.free_blocks = sum(d.free_blocks for d in self.descs)
        self.free_inodes = sum(d.free_inodes for d in self.descs)
        self.used_dirs = sum(d.used_dirs for d in self.descs)

    # queries for policies ----------------------------------------------------------------
    def group_free_blocks(self, g: int) -> int:
        return self.descs[g].free_blocks

    def group_free_inodes(self, g: int) -> int:
        return self.descs[g].free_inodes

    def group_used_dirs(self, g: int) -> int:
        return self.descs[g].used_dirs

    def first_free_block(self, start: int, end: int) -> int:
        """Lowest free block in [start, end), or -1."""
        if start >= end:
            return -1
        seg = self.block_used[start:end]
        i = int(seg.argmin())
        return start + i if not seg[i] else -1

    def first_free_inode(self, g: int) -> int:
        ipg = self.geometry.inodes_per_group
        seg = self.inode_used[g * ipg:(g + 1) * ipg]
        i = int(seg.argmin())
        return g * ipg + i + 1 if not seg[i] else -1

    def is_metadata(self, b: int) -> bool:
        """True for superblock copies, descriptor tables, bitmaps and inode tables."""
        geo = self.geometry
        if b < geo.first_data_block:
            return True
        g = geo.group_of_block(b)
        d = self.descs[g]
        start = geo.group_start(g)
        return (b < start + geo.super_and_gdt_blocks(g) or b in (d.block_bitmap, d.inode_bitmap)
                or d.inode_table <= b < d.inode_table + geo.inode_table_blocks)

    # changes -----------------------------------------------------------------------------
    def take_block(self, b: int, ino: int = 0) -> None:
        if self.block_used[b]:
            raise AssertionError(f"block {b} handed out twice")
        self._set_block(b, True)
        self.stats.count("blocks_allocated")

    def release_block(self, b: int) -> None:
        if not self.block_used[b] or self.is_metadata(b):
            raise AssertionError(f"freeing block {b} which is not an allocated data block")
        self._set_block(b, False)
        self.stats.count("blocks_freed")

    def take_inode(self, ino: int, is_dir: bool) -> None:
        if self.inode_used[ino - 1] or ino < FIRST_INO:
            raise AssertionError(f"inode {ino} handed out twice")
        self._set_inode(ino, True, is_dir)
        self.stats.count("inodes_allocated")

    def release_inode(self, ino: int, is_dir: bool) -> None:
        assert self.inode_used[ino - 1], f"freeing free inode {ino}"
        self._set_inode(ino, False, is_dir)
        self.stats.count("inodes_freed")

    def _set_block(self, b: int, used: bool) -> None:
        geo = self.geometry
        g = geo.group_of_block(b)
        self.block_used[b] = used
        self.cache.in_use(b, used)
        self._set_bit(self.descs[g].block_bitmap, b - geo.group_start(g), used)
        delta = -1 if used else 1
        self.descs[g].free_blocks += delta
        self.free_blocks += delta
        self._dirty_desc(g)

    def _set_inode(self, ino: int, used: bool, is_dir: bool) -> None:
        g, idx = divmod(ino - 1, self.geometry.inodes_per_group)
        self.inode_used[ino - 1] = used
        self._set_bit(self.descs[g].inode_bitmap, idx, used)
        delta = -1 if used else 1
        self.descs[g].free_inodes += delta
        self.free_inodes += delta
        if is_dir:
            self.descs[g].used_dirs -= delta
            self.used_dirs -= delta
        self._dirty_desc(g)

    def _set_bit(self, blkno: int, bit: int, value: bool) -> None:
        buf = self.cache.bread(blkno, "bitmap")
        byte, mask = bit >> 3, 1 << (bit & 7)
        buf[byte] = (buf[byte] | mask) if value else (buf[byte] & ~mask)
        self.cache.mark_dirty(blkno, buf, "bitmap")

    def _dirty_desc(self, g: int) -> None:
        blkno = self.geometry.gdt_block(g)
        buf = self.cache.bread(blkno, "gdt")
        self.cache.mark_dirty(blkno, buf, "gdt")
        self.unpacked[g] = buf

    def pack(self) -> None:
        """Write the changed group descriptors into their blocks' bytes (before a commit; the
        buffer kept is the one the image notes for the block until then)."""
        bs = self.geometry.block_size
        for g, buf in self.unpacked.items():
            off = (g * GROUP_DESC_SIZE) % bs
            buf[off:off + GROUP_DESC_SIZE] = self.descs[g].pack()
        self.unpacked = {}
