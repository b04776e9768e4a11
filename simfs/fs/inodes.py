"""The inode table: in-core inodes read from inode-table blocks, their changes packed back into them.

In-core copies live in a bounded LRU; inodes the kernel or an open file holds are pinned
(their allocator state must survive). A change marks the inode-table block dirty in the
buffer cache at once (what the cache, the write-back and the disk model see), but the fields
are packed into the block's bytes later (`pack`), once per inode however often it changed:
before the image commits, and before an in-core copy is dropped, so that only the image and
an inode read back from its block ever see the bytes, and both see them current.
"""

from collections import OrderedDict

from simfs.ondisk.inode import Inode


class InodeTable:
    def __init__(self, geometry, descs, cache, capacity: int = 8192, checks=None):
        self.geo = geometry
        self.checks = checks            # an inode read from the image is checked (its `bad`)
        self.descs = descs
        self.cache = cache
        self.capacity = capacity
        self.lru: "OrderedDict[int, Inode]" = OrderedDict()
        self.pinned: dict[int, Inode] = {}
        self.pins: dict[int, int] = {}
        # put since the last pack: ino -> (inode, the block's buffer, offset in it)
        self.unpacked: dict[int, tuple] = {}

    def _where(self, ino: int) -> tuple[int, int]:
        geo = self.geo
        if not 1 <= ino <= geo.inodes_count:
            raise ValueError(f"inode {ino} out of range")
        g, idx = divmod(ino - 1, geo.inodes_per_group)
        blk = self.descs[g].inode_table + idx // geo.inodes_per_block
        return blk, (idx % geo.inodes_per_block) * geo.inode_size

    def get(self, ino: int) -> Inode:
        inode = self.pinned.get(ino)
        if inode is not None:
            return inode
        inode = self.lru.get(ino)
        if inode is not None:
            self.lru.move_to_end(ino)
            return inode
        blk, off = self._where(ino)
        buf = self.cache.bread(blk, "inode", ino)
        inode = Inode.unpack(ino, bytes(buf[off:off + self.geo.inode_size]))
        if self.checks is not None:
            inode.bad = self.checks.inode_problem(inode)
        self._remember(inode)
        return inode

    def peek(self, ino: int) -> Inode:
        """The inode, from the in-core copy or straight from the image, without charging or caching."""
        inode = self.pinned.get(ino) or self.lru.get(ino)
        if inode is not None:
            return inode
        blk, off = self._where(ino)
        inode = Inode.unpack(ino, self.cache.peek(blk)[off:off + self.geo.inode_size])
        if self.checks is not None:
            inode.bad = self.checks.inode_problem(inode)
        return inode

    def new(self, ino: int) -> Inode:
        """A fresh in-core inode for a just-allocated number (old contents are not kept)."""
        self.lru.pop(ino, None)
        inode = Inode(ino, self.geo.inode_size)
        self._remember(inode)
        return inode

    def put(self, inode: Inode) -> None:
        """The in-core inode changed: mark its inode-table block dirty (its bytes follow at
        the next `pack`)."""
        blk, off = self._where(inode.ino)
        buf = self.cache.bread(blk, "inode", inode.ino)
        self.cache.mark_dirty(blk, buf, "inode", inode.ino)
        self.unpacked[inode.ino] = (inode, buf, off)

    def pack(self, ino: int | None = None) -> None:
        """Write the changed in-core inodes (or only `ino`) into their blocks' bytes. The buffer
        kept is the one the image notes for the block until it commits (ImageFile.read hands it
        back after an eviction), so the bytes land where the commit reads them."""
        todo = self.unpacked
        if ino is not None:
            one = todo.pop(ino, None)
            todo = {ino: one} if one is not None else {}
        size = self.geo.inode_size
        for inode, buf, off in todo.values():
            buf[off:off + size] = inode.packed()
        if ino is None:
            self.unpacked = {}

    def block_of(self, ino: int) -> int:
        return self._where(ino)[0]

    def pin(self, ino: int) -> None:
        """Keep the in-core inode (its allocator state) until as many unpins: held by the
        kernel or an open file, or with delayed pages pending."""
        inode = self.get(ino)
        self.lru.pop(ino, None)
        self.pinned[ino] = inode
        self.pins[ino] = self.pins.get(ino, 0) + 1

    def unpin(self, ino: int) -> None:
        left = self.pins.get(ino, 0) - 1
        if left > 0:
            self.pins[ino] = left
            return
        self.pins.pop(ino, None)
        inode = self.pinned.pop(ino, None)
        if inode is not None:
            self._remember(inode)

    def forget(self, ino: int) -> None:
        self.pack(ino)
        self.lru.pop(ino, None)
        self.pinned.pop(ino, None)
        self.pins.pop(ino, None)

    def drop_unpinned(self) -> None:
        self.pack()
        self.lru.clear()

    def _remember(self, inode: Inode) -> None:
        if inode.ino in self.pinned:
            self.pinned[inode.ino] = inode
            return
        self.lru[inode.ino] = inode
        while len(self.lru) > self.capacity:
            ino = self.lru.popitem(last=False)[0]
            if ino in self.unpacked:
                self.pack(ino)
