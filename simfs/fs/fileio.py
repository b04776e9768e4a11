"""File data: read (with clustering and read-ahead), write, truncate, fsync.

Writes map blocks through the file map (immediate allocation) or leave pages for delayed
allocation (simfs.fs.delalloc); a block appended out of line offers its dirty cluster for
reallocation (FFS cluster_write). Reads bring physically contiguous runs in as one request
and read ahead on sequential access, as a real buffer cache does: a file laid out in
one-block runs defeats both (seed 000's mechanism).
"""

import errno

from simfs.blockio.cache import vkey
from simfs.errors import FSError
from simfs.fs.extentmap import CONVERTED
from simfs.fs.operation import operation
from simfs.ondisk.constants import EXTENTS_FL

PAGE_SIZE = 4096      # the page a page cache writes back (simfs.inprocess.pagecache)


def starts_map(filemap, lblk: int) -> bool:
    """Whether lblk is the first block its map block maps (12, 12 + p, ...): a block-map
    lookup (FreeBSD ext2_bmaparray, ufs_bmaparray) never makes a run across such an edge,
    so the map block is read only when the read gets there. (An extent lookup maps whole
    extents: extent files have no such edge.)"""
    idx = filemap.path(lblk)[1]
    return bool(idx) and idx[-1] == 0


class FileIO:
    """Data operations of `simfs.fs.volume.Volume` (a mixin: it uses the volume's parts)."""

    @operation
    def read(self, ino: int, offset: int, size: int) -> bytes:
        inode, end = self._read_checked(ino, offset, size)
        if offset >= end:
            return b""
        bs = self.block_size
        first, last = offset // bs, (end - 1) // bs
        pages = self.delalloc.pages(inode, first, last)
        phys = self._prefetch(inode, first, last)
        parts = []                      # views of the buffers: the bytes are copied once, by join
        for lblk in range(first, last + 1):
            lo = max(offset - lblk * bs, 0)
            hi = min(end - lblk * bs, bs)
            p = phys[lblk - first]
            if p:
                parts.append(memoryview(self.cache.bread(p, "data", ino))[lo:hi])
            elif lblk in pages:
                parts.append(memoryview(pages[lblk])[lo:hi])
            else:
                parts.append(bytes(hi - lo))
        out = b"".join(parts)
        del parts                       # no buffer stays exported past the read
        self._count("bytes_read", len(out))
        if self.options.atime and not self.options.read_only:
            now = self._now()
            if not self.options.relatime or _relatime_due(inode, now):
                inode.atime_ns = now
                self.inodes.put(inode)
        return out

    def _prefetch(self, inode, first: int, last: int) -> list[int]:
        """Bring blocks first..last into the cache as clustered reads, and read ahead.

        A read that continues the previous one (or starts the file) is sequential: the
        read-ahead window doubles up to maxio. Physically contiguous blocks are read with one
        request; a file laid out in one-block runs gets one request per block, so clustering
        and read-ahead buy nothing (seed 000's mechanism). Returns the physical blocks of
        first..last (0 for holes)."""
        self.placement.state(inode)
        ra = inode.incore.setdefault("ra", [0, 0])        # next expected block, window
        maxio = self.cache.maxio
        nblocks = -(-inode.size // self.block_size)
        if first == ra[0] or first == 0:
            window = min(max(2 * ra[1], 4), maxio)
        else:
            window = 0
        ra[0], ra[1] = last + 1, window
        stop = min(last + 1 + window, nblocks)
        phys: list[int] = []
        done = 0                                          # phys[:done] have been requested
        for lblk in range(first, stop):
            if phys and not inode.flags & EXTENTS_FL and starts_map(self.filemap, lblk):
                # the map block is read when the read reaches it (ext2_bmaparray's run ends at
                # the map's edge): the data before it goes first (docs/reference/one-k-blocks.md)
                self._read_runs(inode, first, last, phys, done)
                done = len(phys)
            # a damaged map met by the read-ahead fails the read, as a kernel's read of the
            # batch fails (ext4_mpage_readpages): a short read would look like EOF to a reader
            phys.append(self.filemap.bmap(inode, lblk))
        self._read_runs(inode, first, last, phys, done)
        return phys[: last - first + 1]

    def _read_runs(self, inode, first: int, last: int, phys: list[int], i: int) -> None:
        """Request phys[i:] (blocks first + i ...) as physically contiguous runs of at most maxio;
        blocks past `last` are read-ahead (not waited for). With `read_batch` every run goes
        at once, in file order as mpage_readpages/read_pages builds its bios, into the host
        queue's plug, and nobody waits here: read() waits for each block as it copies it (the
        buffers' ready times). The order the drive sees is the host queue's (its scheduler;
        docs/host-queue.md), not this function's."""
        maxio = self.cache.maxio
        runs = []
        while i < len(phys):
            if not phys[i]:
                i += 1
                continue
            j = i + 1
            while j < len(phys) and phys[j] == phys[j - 1] + 1 and j - i < maxio:
                j += 1
            runs.append((phys[i], j - i, first + i <= last))
            i = j
        waits = not self.options.read_batch
        for p, n, needed in runs:
            self.cache.read_run(p, n, "data", inode.ino, wait=waits and needed, needed=needed)

    @operation
    def write(self, ino: int, offset: int, data: bytes) -> int:
        inode, data = self._write_checked(ino, offset, data)
        return self._write_data(inode, offset, data) if data else 0

    def _read_checked(self, ino: int, offset: int, size: int):
        """The checks of read(2) on a regular file: (its inode, where the read ends: at most
        its size)."""
        inode = self._inode(ino)
        if inode.is_dir:
            raise FSError(errno.EISDIR)
        if offset < 0 or size < 0 or not inode.is_reg:   # a symlink's i_block is no block map
            raise FSError(errno.EINVAL)
        if inode.damaged:
            raise FSError(errno.EUCLEAN, f"inode {ino}: its block map is damaged")
        return inode, min(inode.size, offset + size)

    def _write_checked(self, ino: int, offset: int, data: bytes):
        """The checks of write(2) on a regular file: (its inode, the data cut at the largest
        size the format allows; empty for nothing to write)."""
        self._writable()
        inode = self._inode(ino)
        if inode.is_dir:
            raise FSError(errno.EISDIR)
        if offset < 0 or not inode.is_reg:
            raise FSError(errno.EINVAL)
        if inode.damaged:
            raise FSError(errno.EUCLEAN, f"inode {ino}: its block map is damaged")
        if data and offset + len(data) > self.max_size:
            if offset >= self.max_size:
                raise FSError(errno.EFBIG)
            data = data[: self.max_size - offset]
        return inode, data

    def _write_data(self, inode, offset: int, data: bytes) -> int:
        """Write `data` at `offset` of a regular file (checked by the caller): immediate
        allocation or delayed pages, the size and times updated. A full disk after some
        bytes returns how many went in; before any, it raises ENOSPC."""
        ino = inode.ino
        bs = self.block_size
        cache, filemap = self.cache, self.filemap
        delayed = self.placement.delayed
        done = 0
        data = memoryview(data)             # slices below copy nothing
        size = len(data)
        try:
            while done < size:
                lblk, lo = divmod(offset + done, bs)
                n = min(bs - lo, size - done)
                # a block of an unwritten extent is allocated: converted below, not delayed
                if delayed and not filemap.bmap(inode, lblk, unwritten=True):
                    key = self.delalloc.delay(inode, lblk)
                    buf = cache.page(key, "data", ino)
                    buf[lo:lo + n] = data[done:done + n]
                    cache.mark_dirty(key, buf, "data", ino)
                    done += n
                    continue
                phys, new = filemap.map_for_write(inode, lblk)
                if new and new != CONVERTED:        # a converted block keeps its place
                    phys = self._cluster_write(inode, lblk, phys)
                if new or n == bs:
                    buf = cache.getblk(phys, "data", ino)
                else:
                    buf = cache.bread(phys, "data", ino)
                buf[lo:lo + n] = data[done:done + n]
                cache.mark_dirty(phys, buf, "data", ino)
                done += n
        except FSError as e:
            if e.errno != errno.ENOSPC or done == 0:
                self._finish_write(inode, offset, done)
                raise
        self._finish_write(inode, offset, done)
        self._count("bytes_written", done)
        return done

    # O_DIRECT ------------------------------------------------------------------------------
    @operation
    def read_direct(self, ino: int, offset: int, size: int) -> bytes:
        """A read of a file opened O_DIRECT (FUSE direct_io), as the kernel's direct I/O does
        it: the range's dirty data is written back first (filemap_write_and_wait_range), then
        its blocks are read from the drive - the cache neither consulted nor filled, no
        read-ahead, each physically contiguous run one request; holes read as zeros."""
        inode, end = self._read_checked(ino, offset, size)
        if offset >= end:
            return b""
        bs = self.block_size
        first, last = offset // bs, (end - 1) // bs
        self._write_range_now(inode, first, last)
        phys = [self.filemap.bmap(inode, lblk) for lblk in range(first, last + 1)]
        data = []
        i = 0
        while i < len(phys):
            if not phys[i]:
                data.append(bytes(bs))
                i += 1
                continue
            j = i + 1
            while j < len(phys) and phys[j] == phys[j - 1] + 1 and j - i < self.cache.maxio:
                j += 1
            self.clock.io("R", phys[i], j - i, "data", ino)          # the caller waits for it
            self._count("direct_blocks_read", j - i)
            data.extend(self.image.read(phys[i], j - i, "data"))
            i = j
        out = b"".join(data)[offset - first * bs: end - first * bs]
        self._count("bytes_read", len(out))
        return out

    @operation
    def write_direct(self, ino: int, offset: int, data: bytes) -> int:
        """A write to a file opened O_DIRECT: placed as any write (allocation, the inode and
        the bitmaps stay in the cache and go out with write-back, as the kernel's), then its
        data blocks go to the drive and the caller waits for them. No FUA: a drive with its
        write cache on may hold them, as for the kernel's O_DIRECT."""
        inode, data = self._write_checked(ino, offset, data)
        if not data:
            return 0
        done = self._write_data(inode, offset, data)
        if done:
            bs = self.block_size
            self._write_range_now(inode, offset // bs, (offset + done - 1) // bs)
        return done

    def _write_range_now(self, inode, first: int, last: int) -> None:
        """Write the dirty blocks of lblks first..last now (delayed ones are placed first) and
        wait for them on the drive - not for its write cache (that is fsync's FLUSH)."""
        ino = inode.ino
        keys = []
        for lblk in range(first, last + 1):
            phys = self.filemap.bmap(inode, lblk)
            key = phys if phys else vkey(ino, lblk)
            if self.cache.is_dirty(key):
                keys.append(key)
        if keys:
            done = self.cache.write_now(keys)
            self._count("direct_blocks_written", len(keys))
            if done:
                self.clock.wait_until(max(f for f, _ in done))

    @operation
    def writepages(self, ino: int, pages: list[int], data: bytes | None = None) -> list[tuple[float, int]]:
        """A page cache writes these 4 KiB pages of the file back now (writepage): holes get
        their blocks here, in the order given, as the write that dirtied them would have; the
        requests start without waiting. `data` is every page's contents (zeros if None).
        Returns (finish time, blocks) per request. Used by simfs.inprocess.pagecache."""
        self._writable()
        inode = self._inode(ino)
        bs = self.block_size
        page = data if data is not None else bytes(PAGE_SIZE)
        keys = []
        for index in pages:
            off = index * PAGE_SIZE
            n = min(PAGE_SIZE, inode.size - off)     # write-back stops at the file's size
            if n <= 0:
                continue
            if self._write_data(inode, off, page[:n]) < n:
                raise FSError(errno.ENOSPC)          # no page is left half written back
            for lblk in range(off // bs, (off + n - 1) // bs + 1):
                phys = self.filemap.bmap(inode, lblk)
                keys.append(phys if phys else vkey(ino, lblk))
        return [(finish, max(1, n * bs // PAGE_SIZE)) for finish, n in self.cache.write_now(keys)]   # page order

    def _cluster_write(self, inode, lblk: int, phys: int) -> int:
        """FFS cluster_write: a block appended out of line with its predecessor offers the
        allocator the still-dirty contiguous run before it plus itself (ffs_reallocblks);
        if a new contiguous place is found the run moves there. Returns lblk's block."""
        prev = self.filemap.bmap(inode, lblk - 1) if lblk else 0
        if not prev or prev + 1 == phys:
            return phys
        cluster = [(lblk, phys)]
        l, p = lblk - 1, prev
        while l >= 0 and len(cluster) < self.cache.maxio:
            if not self.cache.is_dirty(p):       # already written: no longer part of a cluster
                break
            cluster.insert(0, (l, p))
            q = self.filemap.bmap(inode, l - 1) if l else 0
            if not q or q + 1 != p:
                break
            l, p = l - 1, q
        if len(cluster) < 2:
            return phys
        start = cluster[0][0]
        slot, map_block = self.filemap.locate(inode, start)
        req = self.placement.request(inode, start, slot=slot, map_block=map_block,
                                     prev_phys=self.filemap.bmap(inode, start - 1) if start else 0)
        new = self.placement.reallocate(inode, req, cluster)
        if not new:
            return phys
        moves = [(l, old, nb) for (l, old), nb in zip(cluster, new) if nb != old]
        early = bool(inode.flags & EXTENTS_FL)   # re-pointing an extent may take a tree block:
        if early:                                # the new run is taken first, as ffs_reallocblks
            for _, _, nb in moves:
                self.space.take_block(nb, inode.ino)
        for i, (l, old, nb) in enumerate(moves):
            if not early:
                self.space.take_block(nb, inode.ino)
            try:
                self.filemap.set_pointer(inode, l, nb)
            except FSError:                      # (no room for a tree block) the rest stays put
                for _, _, unused in moves[i:] if early else moves[i:i + 1]:
                    self.space.release_block(unused)
                raise
            if l != lblk:                        # lblk's own data is not written yet
                self._move_data(inode.ino, old, nb)
            self.space.release_block(old)
        self._count("clusters_reallocated")
        return new[-1]

    def _move_data(self, ino: int, old: int, new: int) -> None:
        """A reallocated block's data goes with it: its dirty buffer is re-keyed; if a cache
        miss while the cluster was gathered or moved evicted it (writing it to `old`), it is
        read back and written to `new`, which would otherwise keep what the disk held there."""
        if old in self.cache:
            self.cache.rekey(old, new)
        else:
            self.cache.write(new, self.cache.bread(old, "data", ino), "data", ino)
            self.cache.forget(old)

    def _finish_write(self, inode, offset: int, done: int) -> None:
        """The file grows by what was written, not by what was asked (a failed write past
        EOF must not leave a hole of its size)."""
        if done and offset + done > inode.size:
            inode.size = offset + done
        if done:
            self._touch(inode)
        self.inodes.put(inode)

    def _truncate(self, inode, size: int) -> None:
        if size < 0:
            raise FSError(errno.EINVAL)
        if size > self.max_size:
            raise FSError(errno.EFBIG)
        bs = self.block_size
        if size < inode.size:
            if self.placement.delayed:
                self.delalloc.undelay(inode, -(-size // bs))
            self.placement.release(inode)
            self.filemap.truncate(inode, -(-size // bs))
            if size % bs:
                self._zero_tail(inode, size)
        inode.size = size
        self.inodes.put(inode)

    def _zero_tail(self, inode, size: int) -> None:
        """Zero the last block past `size`, so a later extension reads zeros: in the allocated
        block, or in the page still waiting for delayed allocation (which unmount would write)."""
        bs = self.block_size
        lblk, lo = divmod(size, bs)
        phys = self.filemap.bmap(inode, lblk)
        if phys:
            buf = self.cache.bread(phys, "data", inode.ino)
            key = phys
        elif self.placement.delayed and vkey(inode.ino, lblk) in self.cache:
            key = vkey(inode.ino, lblk)
            buf = self.cache.page(key, "data", inode.ino)
        else:
            return
        buf[lo:] = bytes(bs - lo)
        self.cache.mark_dirty(key, buf, "data", inode.ino)

    @operation
    def fsync(self, ino: int, datasync: bool = False) -> None:
        inode = self._inode(ino)
        if self.placement.delayed:
            # written first, so that the cache's write-back places them: placed from here, a
            # block the placement reads or allocates could evict the file's other pages and
            # start a second placement of this file (blocks handed out twice)
            self.cache.flush_blocks(self.delalloc.keys(inode))
        blocks = [b for _, b in self.filemap.blocks(inode)]
        blocks.append(self.inodes.block_of(ino))
        if inode.file_acl:
            blocks.append(inode.file_acl)
        self.cache.flush_blocks(blocks)
        self.commit_soon(durable=True)       # durable on the image when fsync returns


_DAY_NS = 24 * 3600 * 10**9


def _relatime_due(inode, now: int) -> bool:
    """Linux's relatime_need_update: the access time is not later than the modification or
    change time, or is at least a day old."""
    a = inode.atime_ns
    return a <= inode.mtime_ns or a <= inode.ctime_ns or now - a >= _DAY_NS
