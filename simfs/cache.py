"""The buffer cache: the only way Volume reads and writes blocks of the image.

Every block a file-system operation touches passes through `bread` (read, or hit) and
`mark_dirty` (to be written back). Dirty blocks reach the image in `flush`/`sync`, or when the
cache is full and must evict. Each buffer remembers what it holds (`kind`: data, inode, dir,
bitmap, gdt, super, indirect, xattr) and for which inode, so that statistics and traces can
say why a block moved. The timing model sits behind `_read_blocks`/`_write_blocks`.
"""

import os
from collections import OrderedDict

KINDS = ("data", "dir", "inode", "indirect", "bitmap", "gdt", "super", "xattr", "symlink")


class Buffer:
    __slots__ = ("blkno", "data", "kind", "ino", "dirty")

    def __init__(self, blkno: int, data: bytearray, kind: str, ino: int):
        self.blkno, self.data, self.kind, self.ino, self.dirty = blkno, data, kind, ino, False


class BufferCache:
    """An LRU of block buffers over an open image file descriptor."""

    def __init__(self, fd: int, block_size: int, capacity_blocks: int = 16384, counters=None):
        self.fd = fd
        self.bs = block_size
        self.capacity = max(64, capacity_blocks)
        self.buffers: "OrderedDict[int, Buffer]" = OrderedDict()
        self.ndirty = 0
        self.counters = counters if counters is not None else {}

    # reading -------------------------------------------------------------------------------
    def bread(self, blkno: int, kind: str, ino: int = 0) -> bytearray:
        """The block's current contents, as a buffer the caller may modify and then mark dirty."""
        buf = self.buffers.get(blkno)
        if buf is not None:
            self.buffers.move_to_end(blkno)
            self._count("cache_hits")
            return buf.data
        self._count("cache_misses")
        data = bytearray(self._read_blocks(blkno, 1, kind, ino))
        self._insert(Buffer(blkno, data, kind, ino))
        return data

    def getblk(self, blkno: int, kind: str, ino: int = 0) -> bytearray:
        """A zeroed buffer for a block that is about to be overwritten whole (no read)."""
        buf = self.buffers.get(blkno)
        if buf is not None:
            self.buffers.move_to_end(blkno)
            buf.data[:] = bytes(self.bs)
            buf.kind, buf.ino = kind, ino
            return buf.data
        data = bytearray(self.bs)
        self._insert(Buffer(blkno, data, kind, ino))
        return data

    def peek(self, blkno: int, count: int = 1) -> bytes:
        """Read blocks without charging or caching (mount-time loading of bitmaps and tables)."""
        out = bytearray(os.pread(self.fd, count * self.bs, blkno * self.bs).ljust(count * self.bs, b"\0"))
        for i in range(count):
            buf = self.buffers.get(blkno + i)
            if buf is not None:
                out[i * self.bs:(i + 1) * self.bs] = buf.data
        return bytes(out)

    # writing -------------------------------------------------------------------------------
    def mark_dirty(self, blkno: int, data: bytearray, kind: str | None = None, ino: int | None = None) -> None:
        """Mark a buffer dirty; `data` is re-attached if the buffer was evicted meanwhile."""
        buf = self.buffers.get(blkno)
        if buf is None or buf.data is not data:
            if buf is not None and buf.dirty:
                self.ndirty -= 1
            buf = Buffer(blkno, data, kind or "data", ino or 0)
            self._insert(buf)
        if kind is not None:
            buf.kind = kind
        if ino is not None:
            buf.ino = ino
        if not buf.dirty:
            buf.dirty = True
            self.ndirty += 1

    def write(self, blkno: int, data: bytes, kind: str, ino: int = 0) -> None:
        """Replace a whole block's contents and mark it dirty."""
        buf = self.getblk(blkno, kind, ino)
        buf[:] = data
        self.mark_dirty(blkno, buf)

    def forget(self, blkno: int) -> None:
        """The block was freed: drop it, dirty or not (bforget)."""
        buf = self.buffers.pop(blkno, None)
        if buf is not None and buf.dirty:
            self.ndirty -= 1

    def sync(self) -> None:
        """Write every dirty buffer, in block order, clustering contiguous runs."""
        dirty = sorted(b for b, buf in self.buffers.items() if buf.dirty)
        self._write_back(dirty)

    def flush_blocks(self, blknos) -> None:
        """Write the named blocks if they are dirty (fsync of one file)."""
        self._write_back(sorted(b for b in set(blknos) if b in self.buffers and self.buffers[b].dirty))

    def drop_clean(self) -> None:
        """Drop every clean buffer (drop_caches)."""
        for b in [b for b, buf in self.buffers.items() if not buf.dirty]:
            del self.buffers[b]

    # internals -----------------------------------------------------------------------------
    def _insert(self, buf: Buffer) -> None:
        self.buffers[buf.blkno] = buf
        self.buffers.move_to_end(buf.blkno)
        if len(self.buffers) > self.capacity:
            self._evict()

    def _evict(self) -> None:
        """Evict least recently used buffers; dirty ones are written back first, in a batch."""
        excess = len(self.buffers) - self.capacity
        victims = []
        for b in self.buffers:
            if len(victims) >= max(excess, self.capacity // 8):
                break
            victims.append(b)
        self._write_back(sorted(b for b in victims if self.buffers[b].dirty))
        for b in victims:
            del self.buffers[b]

    def _write_back(self, blknos: list[int]) -> None:
        i = 0
        while i < len(blknos):
            j = i + 1
            while j < len(blknos) and blknos[j] == blknos[j - 1] + 1:
                j += 1
            run = [self.buffers[b] for b in blknos[i:j]]
            self._write_blocks(blknos[i], b"".join(bytes(b.data) for b in run), run)
            for b in run:
                b.dirty = False
            self.ndirty -= len(run)
            i = j

    def _read_blocks(self, blkno: int, count: int, kind: str, ino: int) -> bytes:
        self._count("blocks_read", count)
        data = os.pread(self.fd, count * self.bs, blkno * self.bs)
        return data.ljust(count * self.bs, b"\0")

    def _write_blocks(self, blkno: int, data: bytes, run: list[Buffer]) -> None:
        self._count("blocks_written", len(run))
        os.pwrite(self.fd, data, blkno * self.bs)

    def _count(self, key: str, n: int = 1) -> None:
        self.counters[key] = self.counters.get(key, 0) + n
