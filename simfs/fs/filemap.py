"""A file's block map: i_block[0..11] direct, [12] single, [13] double, [14] triple indirect.

An extent-mapped inode (EXTENTS_FL) is handed to simfs.fs.extentmap, which answers the same
questions from its extent tree; new files of a file system with the extent feature are
extent-mapped (`init`), so block-mapped files of older images keep their map.

Maps logical to physical blocks, allocates missing data and indirect blocks through the
block allocator (with the hints FFS and ext2 use: the previous block, the nearest earlier
pointer in the same map, the indirect block's address), and frees blocks on truncate.

Every block number read from the map is checked before use (simfs.fs.checks): one beyond the
file system or in a metadata zone makes a lookup or a write fail with EUCLEAN, never read or
written through; freeing skips it (and a block freed already), as ext4_free_branches does,
so a truncate or unlink of a damaged file ends, and every walk is bounded by what the map
can hold.
"""

import errno
import struct

import numpy as np

from simfs.errors import FSError
from simfs.fs.extentmap import ExtentMap
from simfs.ondisk.constants import DIND_BLOCK, EXTENTS_FL, IND_BLOCK, NDIR_BLOCKS, TIND_BLOCK

_U32 = struct.Struct("<I")


class FileMap:
    def __init__(self, geometry, cache, space, placement, inodes):
        self.geo = geometry
        self.cache = cache
        self.space = space
        self.placement = placement          # the allocator, asked through simfs.fs.placement
        self.inodes = inodes
        self.checks = space.checks
        self.nblocks = geometry.blocks_count
        self.is_meta = self.checks.is_meta
        #: indirect blocks whose every entry was found valid (ext4's __ext4_check_blockref,
        #: made once per block read from the image; simfs writes only valid entries)
        self.valid_maps: set[int] = set()
        p = self.p = geometry.ptrs_per_block
        self.limits = (NDIR_BLOCKS, NDIR_BLOCKS + p, NDIR_BLOCKS + p + p * p, NDIR_BLOCKS + p + p * p + p ** 3)
        self.spb = geometry.block_size // 512
        self.ext = ExtentMap(self)
        self.extents = geometry.extents      # new inodes extent-mapped (the extent feature)

    @property
    def max_blocks(self) -> int:
        return self.limits[3]

    def init(self, inode) -> None:
        """A new regular file, directory or slow symlink: extent-mapped on an extent file
        system (ext4_new_inode sets EXTENTS_FL and an empty tree), block-mapped otherwise."""
        if self.extents:
            self.ext.init(inode)

    def map_nodes(self, inode, lblk: int) -> list[tuple]:
        """The map blocks lblk may need, named by their place in the map, for delayed
        allocation's reservation: the indirect blocks on its path, or for an extent file one
        leaf per half a leaf's reach (a leaf is at least half full after a split)."""
        if inode.flags & EXTENTS_FL:
            return [("extent", lblk // max(self.ext.max // 2, 1))]
        slot, idx = self.path(lblk)
        return [(slot, *idx[:depth]) for depth in range(len(idx))]

    def path(self, lblk: int) -> tuple[int, list[int]]:
        """(slot in i_block, [index in each indirect level]) for a logical block."""
        p = self.p
        if lblk < NDIR_BLOCKS:
            return lblk, []
        n = lblk - NDIR_BLOCKS
        if n < p:
            return IND_BLOCK, [n]
        n -= p
        if n < p * p:
            return DIND_BLOCK, [n // p, n % p]
        n -= p * p
        if n < p ** 3:
            return TIND_BLOCK, [n // (p * p), (n // p) % p, n % p]
        raise FSError(errno.EFBIG)

    # lookups -----------------------------------------------------------------------------
    def bmap(self, inode, lblk: int, unwritten: bool = False) -> int:
        """Physical block of lblk, 0 for a hole (and for a block of an unwritten extent
        unless `unwritten`: simfs.fs.extentmap)."""
        if inode.flags & EXTENTS_FL:
            return self.ext.bmap(inode, lblk, unwritten)
        nblocks, is_meta = self.nblocks, self.is_meta
        if lblk < NDIR_BLOCKS:                  # a direct block (most lookups): no path to walk
            blk = inode.block[lblk]
            if blk and (blk >= nblocks or is_meta[blk]):
                raise self._damaged(inode, self.checks.block_error(inode.ino, blk))
            return blk
        slot, idx = self.path(lblk)
        blk = inode.block[slot]
        if blk and (blk >= nblocks or is_meta[blk]):
            raise self._damaged(inode, self.checks.block_error(inode.ino, blk))
        for depth, i in enumerate(idx):
            if not blk:
                return 0
            buf = self.cache.bread(blk, "indirect", inode.ino)
            if blk not in self.valid_maps:
                self._check_map(inode, blk, buf, lblk, len(idx), depth)
            blk = _U32.unpack_from(buf, i * 4)[0]
            if blk and (blk >= nblocks or is_meta[blk]):
                raise self._damaged(inode, self.checks.block_error(inode.ino, blk))
        return blk

    def _check_map(self, inode, blk: int, buf, lblk: int, levels: int, depth: int) -> None:
        """An indirect block read from the image (at `depth` on the path of lblk, whose slot
        has `levels` levels) is used only if its entries that map blocks inside i_size may be (an indirect
        pointer at a data block, or at another level's block, reads data as entries): EUCLEAN
        otherwise. A bad entry past the end of the file is reported (ext4_get_branch's
        ext4_check_indirect_blockref) and not refused: no read consults it (the kernel's
        retried read gets the file), and a write that reaches it checks it then."""
        ptrs = np.frombuffer(bytes(buf), dtype="<u4")
        bad = ptrs >= self.nblocks
        bad[~bad] = self.checks.meta[ptrs[~bad]]
        bad &= ptrs != 0
        if not bad.any():
            self.valid_maps.add(blk)
            return
        span = self.p ** (levels - depth - 1)           # blocks one entry maps
        base = lblk - (lblk - self.limits[levels - 1]) % (span * self.p)   # what entry 0 maps
        eof = -(-inode.size // self.geo.block_size)
        inside = 0 if eof <= base else min(self.p, -(-(eof - base) // span))
        first = int(np.argmax(bad))
        if first < inside:
            raise self._damaged(inode, self.checks.corrupt(f"inode {inode.ino}: indirect block {blk} holds "
                                                           f"block number {int(ptrs[first])}, out of range",
                                                           inode.ino, blk, "check_blockref"))
        self.checks.report(f"inode {inode.ino}: indirect block {blk} holds block number {int(ptrs[first])}, "
                           "out of range, past the end of the file", inode.ino, blk, "check_blockref")
        self.valid_maps.add(blk)

    def locate(self, inode, lblk: int) -> tuple[int, int]:
        """(index of lblk's pointer in its map, physical block of that map or 0 for i_block)."""
        if inode.flags & EXTENTS_FL:
            return self.ext.locate(inode, lblk)
        slot, idx = self.path(lblk)
        if not idx:
            return slot, 0
        blk = self._checked(inode, inode.block[slot])
        for depth, i in enumerate(idx[:-1]):
            if blk:
                buf = self.cache.bread(blk, "indirect", inode.ino)
                if blk not in self.valid_maps:
                    self._check_map(inode, blk, buf, lblk, len(idx), depth)
                blk = self._checked(inode, _U32.unpack_from(buf, i * 4)[0])
        return idx[-1], blk

    @staticmethod
    def _damaged(inode, error):
        """The in-core inode's map is marked damaged: its data is refused (EUCLEAN) from then on
        while it stays in core, so a reader meets the damage at once, not after a short read
        (the FUSE client's page-by-page retry) that looks like the end of the file."""
        inode.damaged = True
        return error

    def _checked(self, inode, b: int) -> int:
        """b, if it is 0 or may be used as the file's block; EUCLEAN (reported) otherwise."""
        if b and (b >= self.nblocks or self.is_meta[b]):
            raise self._damaged(inode, self.checks.block_error(inode.ino, b))
        return b

    def set_pointer(self, inode, lblk: int, phys: int) -> None:
        """Point lblk's existing mapping at another block (cluster reallocation)."""
        if inode.flags & EXTENTS_FL:
            return self.ext.set_pointer(inode, lblk, phys)
        slot, map_block = self.locate(inode, lblk)
        if not map_block:
            inode.block[slot] = phys
            self.inodes.put(inode)
            return
        buf = self.cache.bread(map_block, "indirect", inode.ino)
        _U32.pack_into(buf, slot * 4, phys)
        self.cache.mark_dirty(map_block, buf, "indirect", inode.ino)

    # allocation --------------------------------------------------------------------------
    def map_for_write(self, inode, lblk: int, kind: str = "data", phys: int = 0) -> tuple[int, int]:
        """(physical block, newly allocated) for lblk, allocating what is missing (an extent-
        mapped file's block of an unwritten extent: simfs.fs.extentmap.CONVERTED).

        With `phys` (delayed allocation placed the data and took the block already) that
        block is linked; missing indirect blocks are still asked of the allocator. If an
        allocation fails, the indirect blocks this call added are freed before the error goes on."""
        if inode.flags & EXTENTS_FL:
            return self.ext.map_for_write(inode, lblk, kind, phys)
        slot, idx = (lblk, ()) if lblk < NDIR_BLOCKS else self.path(lblk)
        blk = self._checked(inode, inode.block[slot])
        level = len(idx)
        if level == 0:
            if blk:
                return blk, False
            if phys:
                blk = self._own(inode, phys)
            else:
                blk = self._alloc(inode, lblk, kind, 0, slot, _prev_nonzero(inode.block, slot), 0)
            inode.block[slot] = blk
            self.inodes.put(inode)
            return blk, True
        added = []          # (map block or 0 for i_block, index, new indirect block)
        try:
            if not blk:
                blk = self._alloc(inode, lblk, "indirect", level, slot, _prev_nonzero(inode.block, slot), 0)
                inode.block[slot] = blk
                self.inodes.put(inode)
                added.append((0, slot, blk))
                self.cache.mark_dirty(blk, self.cache.getblk(blk, "indirect", inode.ino), "indirect", inode.ino)
                self.valid_maps.add(blk)
            new = False
            for depth, i in enumerate(idx):
                buf = self.cache.bread(blk, "indirect", inode.ino)
                if blk not in self.valid_maps:
                    self._check_map(inode, blk, buf, lblk, level, depth)
                child = _U32.unpack_from(buf, i * 4)[0]
                if child:
                    blk = self._checked(inode, child)
                    continue
                last = depth == level - 1
                if last and phys:
                    child = self._own(inode, phys)
                else:
                    child = self._alloc(inode, lblk, kind if last else "indirect", level - depth - 1, i,
                                        _prev_nonzero_buf(buf, i), blk)
                buf = self.cache.bread(blk, "indirect", inode.ino)   # may have been evicted meanwhile
                _U32.pack_into(buf, i * 4, child)
                self.cache.mark_dirty(blk, buf, "indirect", inode.ino)
                if not last:
                    added.append((blk, i, child))
                    fresh = self.cache.getblk(child, "indirect", inode.ino)
                    self.cache.mark_dirty(child, fresh, "indirect", inode.ino)
                    self.valid_maps.add(child)
                blk, new = child, last
        except FSError:
            if added:
                self._unlink_branch(inode, added)
            raise
        return blk, new

    def _unlink_branch(self, inode, added) -> None:
        """Free indirect blocks a failed map_for_write added (ext2_alloc_branch's cleanup):
        they map nothing, and would stay allocated, counted in i_blocks, past EOF."""
        parent, i, _ = added[0]
        if parent:
            buf = self.cache.bread(parent, "indirect", inode.ino)
            _U32.pack_into(buf, i * 4, 0)
            self.cache.mark_dirty(parent, buf, "indirect", inode.ino)
        else:
            inode.block[i] = 0
        for _, _, blk in added:
            self._free(inode, blk)
        self.inodes.put(inode)

    def _alloc(self, inode, lblk, kind, level, slot, map_prev, map_block) -> int:
        prev = self.bmap(inode, lblk - 1) if lblk > 0 and level == 0 else 0
        req = self.placement.request(inode, lblk, kind=kind, level=level, slot=slot, map_prev=map_prev,
                                     map_block=map_block, prev_phys=prev)
        if self.space.free_blocks - self.space.reserved <= 0:
            raise FSError(errno.ENOSPC)
        return self._take(inode, self.placement.allocate(inode, req))

    def _take(self, inode, b: int) -> int:
        self.space.take_block(b, inode.ino)
        return self._own(inode, b)

    def _own(self, inode, b: int) -> int:
        inode.blocks += self.spb
        return b

    def allocate_extra(self, inode, kind: str) -> int:
        """A block outside the map (the extended-attribute block)."""
        blk = self._alloc(inode, 0, kind, 0, 0, 0, 0)
        self.inodes.put(inode)
        return blk

    def free_extra(self, inode, blk: int) -> None:
        self._free(inode, blk)

    # freeing -----------------------------------------------------------------------------
    def truncate(self, inode, keep_blocks: int) -> None:
        """Free every block mapping lblk >= keep_blocks, and indirect blocks left empty."""
        if inode.flags & EXTENTS_FL:
            return self.ext.truncate(inode, keep_blocks)
        for slot in range(NDIR_BLOCKS):
            if slot >= keep_blocks and inode.block[slot]:
                self._free(inode, inode.block[slot])
                inode.block[slot] = 0
        bases = (self.limits[0], self.limits[1], self.limits[2])
        for level, slot in ((1, IND_BLOCK), (2, DIND_BLOCK), (3, TIND_BLOCK)):
            blk = inode.block[slot]
            if not blk:
                continue
            if not self._usable_map(inode, blk):
                if bases[level - 1] >= keep_blocks:
                    inode.block[slot] = 0           # a bad map past the end: dropped, not followed
                continue
            if self._truncate_tree(inode, blk, level, bases[level - 1], keep_blocks):
                inode.block[slot] = 0
        self.inodes.put(inode)

    def _usable_map(self, inode, blk: int) -> bool:
        """Whether indirect block blk may be read and freed: a valid data block still
        allocated (one freed already is another file's now, or shared: not followed twice)."""
        if blk >= self.nblocks or self.is_meta[blk]:
            self.checks.report(f"inode {inode.ino}: indirect block number {blk} out of range",
                               inode.ino, blk, "free_branches")
            return False
        if not self.space.block_used[blk]:
            self.checks.report(f"inode {inode.ino}: indirect block {blk} is not in use",
                               inode.ino, blk, "free_branches")
            return False
        return True

    def _truncate_tree(self, inode, blk: int, level: int, base: int, keep: int) -> bool:
        """Free the part of this indirect subtree at or past `keep`; True if blk itself was freed."""
        span = self.p ** (level - 1)
        if base >= keep:
            self._free_subtree(inode, blk, level)
            return True
        buf = self.cache.bread(blk, "indirect", inode.ino)
        ptrs = np.frombuffer(bytes(buf), dtype="<u4")
        changed = False
        first = max(0, (keep - base) // span)
        for i in np.flatnonzero(ptrs[first:]) + first:
            child = int(ptrs[i])
            cbase = base + int(i) * span
            if cbase + span <= keep:
                continue
            if level == 1:
                self._free(inode, child)
            elif not self._usable_map(inode, child):
                if cbase < keep:
                    continue                    # maps blocks kept: left as it is
            elif not self._truncate_tree(inode, child, level - 1, cbase, keep):
                continue
            buf = self.cache.bread(blk, "indirect", inode.ino)
            _U32.pack_into(buf, int(i) * 4, 0)
            changed = True
        if not changed:
            return False
        if not any(np.frombuffer(bytes(buf), dtype="<u4")):   # only holes left: free it, as ext2 does
            self._free(inode, blk)
            return True
        self.cache.mark_dirty(blk, buf, "indirect", inode.ino)
        return False

    def _free_subtree(self, inode, blk: int, level: int) -> None:
        if level > 0:
            ptrs = np.frombuffer(bytes(self.cache.bread(blk, "indirect", inode.ino)), dtype="<u4")
            for child in ptrs[ptrs != 0]:
                child = int(child)
                if level == 1:
                    self._free(inode, child)
                elif self._usable_map(inode, child):
                    self._free_subtree(inode, child, level - 1)
        self._free(inode, blk)

    def _free(self, inode, blk: int) -> None:
        """Free one of the file's blocks; a bad number or a block not in use is reported and
        left alone (the file's i_blocks still counts it off)."""
        inode.blocks -= self.spb
        self.valid_maps.discard(blk)
        if blk >= self.nblocks or self.is_meta[blk]:
            self.checks.report(f"inode {inode.ino}: freeing block number {blk} out of range",
                               inode.ino, blk, "free_blocks")
            return
        if self.space.release_block(blk, inode.ino):
            self.cache.forget(blk)

    # listing -----------------------------------------------------------------------------
    def blocks(self, inode):
        """Yield (lblk, phys) for every mapped data block, and ("IND"|"DIND"|"TIND", phys) for
        indirect blocks, in the order debugfs's `stat` lists them (for an extent file:
        ("ETB", phys) for its tree blocks)."""
        if inode.flags & EXTENTS_FL:
            yield from self.ext.blocks(inode)
            return
        for slot in range(NDIR_BLOCKS):
            if inode.block[slot]:
                yield slot, inode.block[slot]
        for level, slot, name in ((1, IND_BLOCK, "IND"), (2, DIND_BLOCK, "DIND"), (3, TIND_BLOCK, "TIND")):
            if inode.block[slot]:
                yield name, inode.block[slot]
                yield from self._walk(inode, inode.block[slot], level, self.limits[level - 1], set())

    def _walk(self, inode, blk, level, base, seen: set):
        """The subtree under indirect block blk; a bad block number, or an indirect block met
        twice (a loop, or blocks shared), is reported and not followed: the walk reads each
        indirect block once at most."""
        if blk >= self.nblocks or self.is_meta[blk] or blk in seen:
            self.checks.report(f"inode {inode.ino}: indirect block {blk} out of range or met twice",
                               inode.ino, blk, "walk")
            return
        seen.add(blk)
        ptrs = np.frombuffer(bytes(self.cache.bread(blk, "indirect", inode.ino)), dtype="<u4")
        span = self.p ** (level - 1)
        for i in np.flatnonzero(ptrs):
            child = int(ptrs[i])
            if level == 1:
                yield base + int(i), child
            else:
                yield "IND" if level == 2 else "DIND", child
                yield from self._walk(inode, child, level - 1, base + int(i) * span, seen)


def _prev_nonzero(ptrs, slot: int) -> int:
    for i in range(min(slot, NDIR_BLOCKS) - 1, -1, -1):
        if ptrs[i]:
            return ptrs[i]
    return 0


def _prev_nonzero_buf(buf, slot: int) -> int:
    for i in range(slot - 1, -1, -1):
        v = _U32.unpack_from(buf, i * 4)[0]
        if v:
            return v
    return 0
