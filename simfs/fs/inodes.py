"""The inode table: in-core inodes read from inode-table blocks, their changes packed back into them.

In-core copies live in a bounded LRU; inodes the kernel or an open file holds are pinned
(their allocator state must survive). A change marks the inode-table block dirty in the
buffer cache at once (what the cache, the write-back and the disk model see), but the fields
are packed into the block's bytes later (`pack`), once per inode however often it changed:
before the image commits, and before an in-core copy is dropped, so that only the image and
an inode read back from its block ever see the bytes, and both see them current.
"""

from collections import OrderedDict

from simfs.ondisk.constants import INCOMPAT, RO_COMPAT
from simfs.ondisk.inode import Inode

#: ext4's default s_inode_readahead_blks (EXT4_DEF_INODE_READAHEAD_BLKS)
EXT4_INODE_READAHEAD = 32
_EXT4_LAYOUT = sum(bit for bit, name in INCOMPAT.items() if name in ("extent", "flex_bg"))
_GDT_CSUM = sum(bit for bit, name in RO_COMPAT.items() if name in ("uninit_bg", "metadata_csum"))


def readahead_default(sb) -> int:
    """The inode_readahead_blks in force when the mount does not say: ext4's 32 on an image
    with ext4's layout (extents or flex_bg), 0 on an ext2 image (the kernel's ext2 reads one
    inode-table block per miss)."""
    return EXT4_INODE_READAHEAD if sb.feature_incompat & _EXT4_LAYOUT else 0


def readahead_options(sb, blks: int | None) -> dict:
    """InodeTable's read-ahead arguments for a mount's inode_readahead_blks (None: the default)."""
    return {"readahead": readahead_default(sb) if blks is None else blks,
            "itable_unused": bool(sb.feature_ro_compat & _GDT_CSUM)}


def readahead_span(blk: int, table: int, ra: int, used_blocks: int, table_blocks: int) -> tuple[int, int]:
    """(first block, count) of the inode-table read around a miss of `blk`, as
    __ext4_get_inode_loc reads it: from blk rounded down to ra blocks (not before the table)
    through that + ra, inclusive (the kernel's `b <= end`), and through at most the block after
    those holding in-use inodes (`used_blocks`: the whole table unless the group descriptors
    carry bg_itable_unused) - the kernel's bound, which simfs keeps inside the table (the
    kernel's one block past a full table lands in the block device's cache, which file reads
    do not use; simfs's one cache would take it for a file's block)."""
    b = max(blk & ~(ra - 1), table)
    end = min(b + ra, table + used_blocks, table + table_blocks - 1)
    end = max(end, blk)
    return b, end - b + 1


LOCATIONS_KEPT = 1 << 16       # inode numbers whose table place InodeTable remembers at most


class InodeTable:
    def __init__(self, geometry, descs, cache, capacity: int = 8192, checks=None,
                 readahead: int = 0, itable_unused: bool = False):
        self.geo = geometry
        self.readahead = readahead      # inode_readahead_blks: table blocks read per miss
        self.itable_unused = itable_unused   # the descriptors' bg_itable_unused is valid
        self.checks = checks            # an inode read from the image is checked (its `bad`)
        self.descs = descs
        self.cache = cache
        self.capacity = capacity
        self.lru: "OrderedDict[int, Inode]" = OrderedDict()
        self.pinned: dict[int, Inode] = {}
        self.pins: dict[int, int] = {}
        # put since the last pack: ino -> (inode, the block's buffer, offset in it)
        self.unpacked: dict[int, tuple] = {}
        self.cold: set[int] = set()     # pinned inodes to read again at their next get (drop_all)
        self.locations: dict[int, tuple[int, int]] = {}     # ino -> _where's answer

    def _where(self, ino: int) -> tuple[int, int]:
        """(inode-table block, byte offset in it) of `ino`; remembered, since every put and
        miss asks (a mounted file system's inode tables never move)."""
        loc = self.locations.get(ino)
        if loc is not None:
            return loc
        geo = self.geo
        if not 1 <= ino <= geo.inodes_count:
            raise ValueError(f"inode {ino} out of range")
        g, idx = divmod(ino - 1, geo.inodes_per_group)
        blk = self.descs[g].inode_table + idx // geo.inodes_per_block
        if len(self.locations) >= LOCATIONS_KEPT:
            self.locations.clear()
        loc = self.locations[ino] = (blk, (idx % geo.inodes_per_block) * geo.inode_size)
        return loc

    def get(self, ino: int) -> Inode:
        inode = self.pinned.get(ino)
        if inode is not None:
            if ino in self.cold:
                self._reread(ino)
            return inode
        inode = self.lru.get(ino)
        if inode is not None:
            self.lru.move_to_end(ino)
            return inode
        blk, off = self._where(ino)
        if self.readahead and blk not in self.cache:
            self._read_ahead(ino, blk)
        buf = self.cache.bread(blk, "inode", ino)
        inode = Inode.unpack(ino, bytes(buf[off:off + self.geo.inode_size]))
        if self.checks is not None:
            inode.bad = self.checks.inode_problem(inode)
        self._remember(inode)
        return inode

    def _reread(self, ino: int) -> None:
        """The first use of a pinned inode since `drop_all`: its inode-table block is read as
        a miss would read it (charged), the in-core copy (its allocator state, current since
        the sync before) kept."""
        self.cold.discard(ino)
        blk, _ = self._where(ino)
        if self.readahead and blk not in self.cache:
            self._read_ahead(ino, blk)
        self.cache.bread(blk, "inode", ino)

    def _read_ahead(self, ino: int, blk: int) -> None:
        """An inode-table miss with read-ahead (fs/ext4/inode.c __ext4_get_inode_loc): the
        blocks around it are read in the same plugged request as the one wanted, which is
        waited for; the wanted block counts as the miss, the rest as read-ahead."""
        geo = self.geo
        g = (ino - 1) // geo.inodes_per_group
        used = geo.inodes_per_group
        if self.itable_unused:
            used -= int.from_bytes(self.descs[g].rest[8:10], "little")    # bg_itable_unused_lo
        used_blocks = max(-(-used // geo.inodes_per_block), 1)
        first, count = readahead_span(blk, self.descs[g].inode_table, self.readahead, used_blocks,
                                      geo.inode_table_blocks)
        self.cache.read_run(first, count, "inode", ino, wait=True, needed=False)
        stats = self.cache.stats
        stats.count("readahead_blocks", -1)
        stats.count("cache_misses")
        stats.count("cache_hits", -1)           # the bread that follows finds it in the cache
        stats.count("inode_readahead_misses")

    def peek(self, ino: int, checked: bool = True) -> Inode:
        """The inode, from the in-core copy or straight from the image, without charging or
        caching. Not `checked`: a copy read from the image is not judged (its `bad` left
        unset), for callers that read only its links, mode, dtime and generation - an
        allocation peeks at a free inode on every create, which the check only calls a bad
        file type."""
        inode = self.pinned.get(ino) or self.lru.get(ino)
        if inode is not None:
            return inode
        blk, off = self._where(ino)
        inode = Inode.unpack(ino, self.cache.peek(blk)[off:off + self.geo.inode_size])
        if checked and self.checks is not None:
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
        kernel or an open file, or with delayed pages pending. An inode not in core is not
        read for it (nor charged): a readdirplus entry's reference reads nothing, as the
        kernel's readdir reads no inode; the first `get` reads it, and it stays pinned."""
        inode = self.lru.pop(ino, None)
        if inode is not None:
            self.pinned[ino] = inode
        self.pins[ino] = self.pins.get(ino, 0) + 1

    def in_core(self, ino: int) -> Inode | None:
        """The in-core inode, or None (not read since it was pinned or dropped: it has no
        allocator state), without reading or charging anything."""
        inode = self.pinned.get(ino)
        if inode is None and ino in self.lru:
            inode = self.lru[ino]
            self.lru.move_to_end(ino)       # used, as `get` would
        return inode

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
        self.cold.discard(ino)
        self.lru.pop(ino, None)
        self.pinned.pop(ino, None)
        self.pins.pop(ino, None)

    def drop_all(self, keep: tuple[int, ...] = ()) -> None:
        """drop_caches: forget every in-core inode not pinned; a pinned one (held by the host
        kernel, or open) stays in core for its allocator state, but is cold: its next `get`
        reads its block again, as the first access after a fresh mount does, and its file's
        read-ahead starts afresh (the host kernel keeps what it references whatever simfs
        drops, so its references must not keep the model warm). Those in `keep` stay in core
        and warm: what the modelled kernel itself holds (the mount's root)."""
        self.pack()
        kept = [(ino, self.lru[ino]) for ino in keep if ino in self.lru]
        self.lru.clear()
        self.lru.update(kept)
        self.cold = set(self.pinned).difference(keep)
        for inode in self.pinned.values():       # and the read-ahead window the file had built
            if inode.incore:                     # (simfs.fs.fileio: it starts again at 4 blocks)
                inode.incore.pop("ra", None)

    def _remember(self, inode: Inode) -> None:
        if inode.ino in self.pins:
            self.pinned[inode.ino] = inode
            return
        self.lru[inode.ino] = inode
        while len(self.lru) > self.capacity:
            ino = self.lru.popitem(last=False)[0]
            if ino in self.unpacked:
                self.pack(ino)
