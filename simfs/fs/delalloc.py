"""Delayed allocation (ext4's delalloc): data waits in the cache until write-back places it.

A write to a block the file does not have yet reserves a block (`delay`) and leaves the data
in a cache page keyed by (inode, logical block) (`simfs.blockio.cache.vkey`). When the
cache's write-back reaches such pages it hands them to this component, its placer
(`place`): every pending block of those inodes is placed in logical order, as runs of
logically consecutive blocks (ext4_writepages -> mballoc), the file maps are filled in and
the pages re-keyed to their blocks; the cache then writes them. The component works only
downwards (allocator, file map, free space, cache); it keeps the in-core inode pinned while
pages are pending.
"""

import errno

from simfs.blockio.cache import vkey
from simfs.errors import FSError


def inode_of(key: int) -> int:
    """The inode a delayed page's key belongs to."""
    return (-key - 1) >> 32


class DelayedAllocation:
    def __init__(self, geometry, space, filemap, placement, inodes, cache, stats):
        self.geo = geometry
        self.space = space
        self.filemap = filemap
        self.placement = placement
        self.inodes = inodes
        self.cache = cache
        self.stats = stats

    def pending(self, inode) -> set:
        """Logical blocks of the file written but not placed yet."""
        self.placement.state(inode)
        return inode.incore.setdefault("pending", set())

    def has_pending(self, inode) -> bool:
        return bool(inode.incore and inode.incore.get("pending"))

    def delay(self, inode, lblk: int) -> int:
        """Reserve a block for a delayed write of lblk; the cache key of its page."""
        pending = self.pending(inode)
        if lblk not in pending:
            space = self.space
            # room for the block and, pessimistically, the indirect blocks it may need
            if space.free_blocks - space.reserved * (1 + 3 / self.geo.ptrs_per_block) - 4 < 1:
                raise FSError(errno.ENOSPC)
            pending.add(lblk)
            space.reserved += 1
            if len(pending) == 1:
                self.inodes.pin(inode.ino)      # keep the in-core inode until its blocks are placed
        return vkey(inode.ino, lblk)

    def undelay(self, inode, keep_blocks: int) -> None:
        """Forget delayed blocks at or past keep_blocks (truncate, unlink)."""
        if not self.has_pending(inode):
            return
        pending = inode.incore["pending"]
        gone = [lblk for lblk in pending if lblk >= keep_blocks]
        for lblk in gone:
            pending.discard(lblk)
            self.cache.forget(vkey(inode.ino, lblk))
            self.space.reserved -= 1
        if gone and not pending:
            self.inodes.unpin(inode.ino)

    def place(self, keys: list[int]) -> dict[int, int]:
        """The cache's placer: write-back reached these delayed pages; place every pending
        block of their inodes and return {key: block} for the pages placed."""
        placed = {}
        for ino in sorted({inode_of(k) for k in keys}):
            inode = self.inodes.get(ino)
            pending = sorted(self.pending(inode))
            i = 0
            while i < len(pending):
                j = i + 1
                while j < len(pending) and pending[j] == pending[j - 1] + 1 and j - i < self.placement.max_run:
                    j += 1
                first = pending[i]
                req = self.placement.request(inode, first,
                                             prev_phys=self.filemap.bmap(inode, first - 1) if first else 0)
                blocks = self.placement.allocate_run(inode, req, j - i)
                for lblk, phys in zip(pending[i:j], blocks):
                    self.space.reserved -= 1
                    self.filemap.map_for_write(inode, lblk, "data", phys=phys)
                    self.placement.placed(inode, lblk, phys)
                    self.cache.rekey(vkey(ino, lblk), phys)
                    placed[vkey(ino, lblk)] = phys
                i = j
            self.inodes.put(inode)
            inode.incore["pending"] = set()
            self.inodes.unpin(ino)
        self.stats.count("delayed_blocks_placed", len(placed))
        return placed

    def place_file(self, inode) -> None:
        """Place the file's pending blocks now (fsync)."""
        if self.has_pending(inode):
            self.cache.place([vkey(inode.ino, next(iter(inode.incore["pending"])))])

    def runs(self, inode) -> list[tuple[int, int]]:
        """(lblk, n) runs of the file's pending blocks, for inspection."""
        out: list[list[int]] = []
        for lblk in sorted((inode.incore or {}).get("pending") or ()):
            if out and out[-1][0] + out[-1][1] == lblk:
                out[-1][1] += 1
            else:
                out.append([lblk, 1])
        return [tuple(r) for r in out]
