"""Delayed allocation (ext4's delalloc): data waits in the cache until write-back places it.

A write to a block the file does not have yet reserves a block (`delay`) and leaves the data
in a cache page keyed by (inode, logical block) (`simfs.blockio.cache.vkey`). When the
cache's write-back reaches such pages it hands them to this component, its placer
(`place`): every pending block of those inodes is placed in logical order, as runs of
logically consecutive blocks (ext4_writepages -> mballoc), the file maps are filled in and
the pages re-keyed to their blocks; the cache then writes them. The inodes go in the order
they were first dirtied (the flusher's b_dirty list, oldest first: writeback_sb_inodes), and
each request says whether the file is still open for writing (ext4_mb_group_or_file gives a
closed file no inode preallocation). The component works only
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
        self.dirtied = 0            # inodes dirtied so far: the write-back order (dirtied_when)

    def pending(self, inode) -> set:
        """Logical blocks of the file written but not placed yet."""
        self.placement.state(inode)
        return inode.incore.setdefault("pending", set())

    def has_pending(self, inode) -> bool:
        return bool(inode.incore and inode.incore.get("pending"))

    def keys(self, inode) -> list[int]:
        """Cache keys of the file's pending pages."""
        return [vkey(inode.ino, lblk) for lblk in (inode.incore or {}).get("pending") or ()]

    def pages(self, inode, first: int, last: int) -> dict[int, bytearray]:
        """The pages of first..last still waiting for delayed allocation, taken before a
        read does any I/O: a cache miss can evict, and write-back then places these pages
        under block numbers the read has already looked up as holes."""
        pending = self.has_pending(inode) and inode.incore["pending"]
        if not pending:
            return {}
        return {lblk: self.cache.page(vkey(inode.ino, lblk), "data", inode.ino)
                for lblk in range(first, last + 1) if lblk in pending}

    def delay(self, inode, lblk: int) -> int:
        """Reserve a block for a delayed write of lblk, and the indirect blocks it maps through
        that no other pending block of the file reserved yet; the cache key of its page."""
        pending = self.pending(inode)
        self.placement.writing(inode)
        if lblk not in pending:
            space = self.space
            maps = inode.incore.setdefault("maps", set())
            new = [node for node in self.filemap.map_nodes(inode, lblk) if node not in maps]
            if space.free_blocks - space.reserved < 1 + len(new):
                raise FSError(errno.ENOSPC)
            pending.add(lblk)
            maps.update(new)
            space.reserved += 1 + len(new)
            if len(pending) == 1:
                self.inodes.pin(inode.ino)      # keep the in-core inode until its blocks are placed
                self.dirtied += 1
                inode.incore["dirtied"] = self.dirtied
        return vkey(inode.ino, lblk)

    def _reserve_maps(self, inode) -> None:
        """Reserve the indirect blocks of the file's pending blocks anew (after some left)."""
        maps = {node for lblk in inode.incore.get("pending", ()) for node in self.filemap.map_nodes(inode, lblk)}
        self.space.reserved += len(maps) - len(inode.incore.get("maps", ()))
        inode.incore["maps"] = maps

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
        if gone:
            self._reserve_maps(inode)
        if gone and not pending:
            self.inodes.unpin(inode.ino)

    def place(self, keys: list[int]) -> dict[int, int]:
        """The cache's placer: write-back reached these delayed pages; place every pending
        block of their inodes and return {key: block} for the pages placed."""
        placed = {}
        queue = [self.inodes.get(ino) for ino in sorted({inode_of(k) for k in keys})]
        queue.sort(key=lambda inode: (inode.incore or {}).get("dirtied", 0))
        for inode in queue:
            ino = inode.ino
            pending = self.pending(inode)
            if not pending:
                continue
            lblks = sorted(pending)
            self.space.reserved -= len(inode.incore.pop("maps", ()))   # the indirect blocks' room
            try:
                i = 0
                while i < len(lblks):
                    j = i + 1
                    while j < len(lblks) and lblks[j] == lblks[j - 1] + 1 and j - i < self.placement.max_run:
                        j += 1
                    first = lblks[i]
                    req = self.placement.request(inode, first, size=inode.size,
                                                 prev_phys=self.filemap.bmap(inode, first - 1) if first else 0,
                                                 writing=self.placement.is_writing(inode))
                    blocks = self.placement.allocate_run(inode, req, j - i)
                    for phys in blocks:   # all at once: an indirect block mapped below must go elsewhere
                        self.space.take_block(phys, ino)
                    self.space.reserved -= len(blocks)
                    for k, (lblk, phys) in enumerate(zip(lblks[i:j], blocks)):
                        try:
                            self.filemap.map_for_write(inode, lblk, "data", phys=phys)
                        except FSError:
                            for b in blocks[k:]:
                                self.space.release_block(b)
                            self.space.reserved += len(blocks) - k
                            raise
                        pending.discard(lblk)
                        self.placement.placed(inode, lblk, phys)
                        self.cache.rekey(vkey(ino, lblk), phys)
                        placed[vkey(ino, lblk)] = phys
                    i = j
            except FSError:           # what was not placed stays pending, with its reservation
                self._reserve_maps(inode)
                raise
            self.inodes.put(inode)
            self.inodes.unpin(ino)
        self.stats.count("delayed_blocks_placed", len(placed))
        return placed

    def runs(self, inode) -> list[tuple[int, int]]:
        """(lblk, n) runs of the file's pending blocks, for inspection."""
        out: list[list[int]] = []
        for lblk in sorted((inode.incore or {}).get("pending") or ()):
            if out and out[-1][0] + out[-1][1] == lblk:
                out[-1][1] += 1
            else:
                out.append([lblk, 1])
        return [tuple(r) for r in out]
