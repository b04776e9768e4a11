"""Free-space maps: block and inode bitmaps as numpy arrays, kept in step with the image.

The arrays are what policies search (fast, whole-volume); every change is also applied to
the bitmap block in the buffer cache and marks the group descriptor's block dirty, so the
image stays the truth and the write-back of bitmaps and descriptors is charged like any other
block. A changed descriptor is packed into its block's bytes once, before the image commits
(`pack`), not at every block it counts: nothing else reads those bytes after the mount.

A bitmap is checked against its group descriptor when loaded, as ext4 checks it
(ext4_validate_block_bitmap, ext4_mb_generate_buddy): the group's metadata zone must read as
in use and the free bits must add up to the descriptor's free count. A group that disagrees
is reported and marked corrupt (EXT4_GROUP_INFO_BBITMAP_CORRUPT / IBITMAP_CORRUPT): nothing is
allocated from it (its blocks all read as used in the in-memory map, its free count reads 0)
and nothing is freed into it (those blocks leak until e2fsck), so a bitmap that calls other
files' blocks free never hands them out.
"""

import numpy as np

from simfs.fs.checks import Checks
from simfs.ondisk.constants import FIRST_INO, GROUP_DESC_SIZE
from simfs.ondisk.groupdesc import GroupDesc


class FreeSpace:
    def __init__(self, geometry, descs: list[GroupDesc], cache, stats, checks: Checks | None = None):
        self.geometry = geo = geometry
        self.descs = descs
        self.cache = cache
        self.stats = stats
        self.checks = checks = checks if checks is not None else Checks(geo, descs)
        self.meta = checks.meta
        self.bad_block_groups: set[int] = set()     # bitmap disagrees with its descriptor
        self.invalid_block_groups: set[int] = set()  # ... or calls the group's metadata free
        self.reserved = 0     # blocks promised to delayed-allocation writes, not yet placed
        self.unpacked: dict[int, bytearray] = {}   # changed group -> its descriptor block's buffer
        self.block_used = np.zeros(geo.blocks_count, dtype=bool)
        self.inode_used = np.zeros(geo.inodes_count, dtype=bool)
        # the same bits for scalar reads, without numpy's overhead (inode_used changes in place)
        self.inode_in_use = memoryview(self.inode_used)  # type: ignore[arg-type]  # (numpy arrays are buffers)
        self._load()

    def _load(self) -> None:
        geo = self.geometry
        ipg = geo.inodes_per_group
        self.block_used[: geo.first_data_block] = True
        report = self.checks.report
        for g, d in enumerate(self.descs):
            start, n = geo.group_start(g), geo.group_blocks(g)
            bits = np.unpackbits(np.frombuffer(self.cache.peek(d.block_bitmap), np.uint8), bitorder="little")
            used = self.block_used[start:start + n]
            used[:] = bits[:n]
            free = n - int(np.count_nonzero(used))
            invalid = not used[self.meta[start:start + n]].all() or not bits[n:].all()   # (padding: set
            # to the block's end by mke2fs and simfs's mkfs; "padding at end of block bitmap is not set")
            if invalid:
                self.invalid_block_groups.add(g)
            if free != d.free_blocks or invalid:
                what = (f"group {g}: block bitmap and group descriptor disagree ({free} vs "
                        f"{d.free_blocks} free blocks)" if free != d.free_blocks else
                        f"group {g}: block bitmap marks the group's metadata, or blocks past "
                        "the end of the file system, free")
                report(what, 0, d.block_bitmap, "validate_block_bitmap")
                self.bad_block_groups.add(g)
                used[:] = True
            bits = np.unpackbits(np.frombuffer(self.cache.peek(d.inode_bitmap), np.uint8), bitorder="little")
            iused = self.inode_used[g * ipg:(g + 1) * ipg]
            iused[:] = bits[:ipg]
            ifree = ipg - int(np.count_nonzero(iused))
            if ifree != d.free_inodes:      # reported; an in-use inode whose bit is clear is
                report(f"group {g}: inode bitmap and group descriptor disagree ({ifree} vs "   # met
                       f"{d.free_inodes} free inodes)", 0, d.inode_bitmap, "validate_inode_bitmap")  # at allocation
        self.inode_used[: FIRST_INO - 1] = True         # reserved inodes are never handed out
        self.free_blocks = sum(d.free_blocks for g, d in enumerate(self.descs) if g not in self.bad_block_groups)
        self.free_inodes = sum(d.free_inodes for d in self.descs)
        self.used_dirs = sum(d.used_dirs for d in self.descs)

    # queries for policies ----------------------------------------------------------------
    def group_free_blocks(self, g: int) -> int:
        if self.bad_block_groups and g in self.bad_block_groups:
            return 0
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
        return bool(self.meta[b])

    # changes -----------------------------------------------------------------------------
    def take_block(self, b: int, ino: int = 0) -> None:
        if self.block_used[b] or self.meta[b]:
            raise AssertionError(f"block {b} handed out twice")
        self._set_block(b, True)
        self.stats.count("blocks_allocated")

    def release_block(self, b: int, ino: int = 0) -> bool:
        """Free a data block; False (and reported, as ext2_free_blocks reports "bit already
        cleared") if it is no allocated data block. A block of a group whose bitmap is corrupt
        is not freed (it leaks until e2fsck, as ext4 leaves such a group alone)."""
        if self.bad_block_groups and self.geometry.group_of_block(b) in self.bad_block_groups:
            return False
        if not self.block_used[b] or self.meta[b]:
            self.checks.report(f"inode {ino}: freeing block {b}, which is not an allocated data block",
                               ino, b, "free_blocks")
            return False
        self._set_block(b, False)
        self.stats.count("blocks_freed")
        return True

    def take_inode(self, ino: int, is_dir: bool) -> None:
        if self.inode_in_use[ino - 1] or ino < FIRST_INO:
            raise AssertionError(f"inode {ino} handed out twice")
        self._set_inode(ino, True, is_dir)
        self.stats.count("inodes_allocated")

    def release_inode(self, ino: int, is_dir: bool) -> None:
        if not self.inode_in_use[ino - 1]:
            self.checks.report(f"freeing inode {ino}, which is not in use", ino, 0, "free_inode")
            return
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
