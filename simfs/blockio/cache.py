"""The buffer cache: the only way Volume reads and writes blocks of the image, and its model.

Every block an operation touches passes through `bread` (a hit costs nothing, a miss waits
for the disk) and `mark_dirty` (written back later). Each buffer remembers what it holds
(`kind`: data, inode, dir, bitmap, gdt, super, indirect, xattr, symlink) and for which
inode, so statistics and traces can say why a block moved.

Write-back follows the mount's write-back mode, an object the cache is handed
(policies.writeback.WritebackPolicy: `sync`, `async`, `softdep` or a plug-in). It says which
kinds of block an operation writes synchronously before it returns (`sync_kinds(op)`: sync
writes the inode, directory and indirect blocks a namespace change dirties, as FFS's default
mount does), in which passes the syncer and sync write delayed blocks (`passes`), and which
ordering dependencies an operation's blocks carry (`dependencies(op)`: soft updates). A block
written before the blocks it depends on are on the disk goes out rolled back and stays dirty
(simfs.blockio.softdeps); the dirty thresholds then prefer buffers without dependencies, and
sync/fsync write until nothing is left rolled back. Delayed blocks leave when the syncer runs
(every 30 s, or as the mode's `syncer` says), when dirty buffers pass the background
threshold (the writer keeps going) or the hard limit (the writer waits), on eviction, and on
sync/fsync/unmount. Contiguous dirty blocks leave as one request of at most `maxio` blocks.
The order of those batches is `writeback_order` (WRITEBACK_ORDERS): sorted by block by the
cache (`block`, the default), or as Linux's flusher (`linux`) or FreeBSD's syncer (`freebsd`)
issues them, for the host queue's scheduler to order; under `freebsd` only a regular file's
data blocks cluster (vfs_bio_awrite). A buffer's place in its file (`lblk`: a delayed page's
own, or as `mark_dirty`/`write` are told) orders a file's pages; unknown, its block does.

A block is never written twice at once: as Linux locks a buffer for its write (lock_buffer in
submit_bh's callers) until the write completes, a block written again while its last write is
still on its way to the drive is issued when that write completes (`locked_until`). A writer
that waits for its requests waits for the lock first (wait_on_buffer); a background write is
queued at the lock's release without holding up the operation. A block evicted while its
write is in flight is still in memory (Linux reclaims no page under writeback): read then, it
is a hit.

Writing back is what the *model* does: it occupies the modelled disk and marks buffers clean.
The bytes themselves reach the image file through `ImageFile` (simfs.blockio.imagefile), which is
told of every change and commits on its own real-time schedule; this cache never writes the
image, and the model's timing never depends on when a commit happens.

Requests reach the drive through the host's request queue (simfs.blockio.hostqueue: Linux's
plug, merging up to max_sectors_kb, nr_requests and the I/O scheduler): a write-back batch is
one plug, finished when the batch is submitted; reads nobody waits for (read-ahead) stay in the
plug until the task waits for anything or its operation ends; a request the task waits for is
flushed at once. Until its request is on the drive a buffer's read (`ready_at`) and a block's
write lock (`locked_until`) are PENDING.

With per-process clocks (simfs.blockio.clock.ProcessClocks) the clock is the requesting
process's, which may be behind the mount's latest time: the syncer and the background
threshold then run at the latest time (the flusher's, not the process's), and a block read
for one process is ready for another only from the read's finish (`ready_at`; with one
clock, 0: ready), so a process behind never sees data before it arrived.
"""

from collections import OrderedDict
from typing import Protocol

from simfs.blockio.hostqueue import PENDING, Bio, HostQueue
from simfs.blockio.softdeps import DepTracker


def vkey(ino: int, lblk: int) -> int:
    """Cache key of a dirty page whose block is not allocated yet (delayed allocation):
    negative, so it never collides with a block number and sorts before them."""
    return -((ino << 32) | lblk) - 1


class Placer(Protocol):
    """What the cache is handed to place delayed pages: given keys of pages write-back
    reached, give every pending page of their files a block, re-key the pages (`rekey`),
    and return {key: block}."""

    def place(self, keys: list[int]) -> dict[int, int]: ...


class WritebackMode(Protocol):
    """What the cache asks its write-back mode (policies.writeback.WritebackPolicy has the
    contract): the block kinds an operation writes before returning, and the order of the
    write-back passes."""

    name: str
    passes: tuple
    syncer: dict | None      # None: the cache's batch syncer; else period and per-kind delays
    throttle: dict | None    # None: no dependency limit; else max per cached block and the wait

    def sync_kinds(self, op: str) -> tuple: ...

    def dependencies(self, op: str) -> tuple: ...


class Buffer:
    __slots__ = ("blkno", "data", "kind", "ino", "dirty", "dirtied_at", "ready_at", "used", "dseq", "lblk")

    def __init__(self, blkno: int, data: bytearray, kind: str, ino: int):
        self.blkno, self.data, self.kind, self.ino = blkno, data, kind, ino
        self.dirty, self.dirtied_at, self.ready_at = False, 0.0, 0.0
        self.used = 0           # the cache's use count when it last moved to the LRU's end
        self.dseq = 0           # the cache's dirtying count when it last became dirty
        self.lblk = -1          # its block in its file, if the file system said (-1: unknown)


#: the order of the cache's own write-back batches (`writeback_order`):
#: block    sorted by block number by the cache itself (simfs's order before issue 53; no
#:          kernel's flusher issues in it)
#: linux    Linux's flusher (fs/fs-writeback.c writeback_sb_inodes / 2.6's
#:          generic_sync_sb_inodes): inode by inode, the one dirtied first first (b_io is filled
#:          from the oldest end of b_dirty, dirtied_when order), each inode's pages in index
#:          order (mm/page-writeback.c write_cache_pages); metadata buffers (inode table,
#:          bitmaps, descriptors, superblock, indirect/extent blocks, xattr blocks: sb_bread
#:          buffers) are pages of the block device's inode, whose index is the block number
#: freebsd  FreeBSD's syncer (kern/vfs_subr.c sched_sync -> ffs_syncvnode): vnode by vnode,
#:          each vnode's dirty buffers in bo_dirty's order, sorted by logical block
#:          (buf_vlist_add): its indirect blocks first (negative lbns), then its data; inode
#:          blocks, cylinder-group blocks and the superblock are the device vnode's, by block;
#:          the dirty thresholds' batch in the dirty queue's order (buf_daemon's flushbufqueues)
#: eviction's batch goes in LRU order under both (`_batch`'s as_given)
WRITEBACK_ORDERS = ("block", "linux", "freebsd")
#: kinds whose buffers belong to the block device (Linux) or the device vnode (FreeBSD)
DEVICE_KINDS = {"linux": frozenset({"inode", "bitmap", "gdt", "super", "indirect", "xattr"}),
                "freebsd": frozenset({"inode", "bitmap", "gdt", "super"})}


def _age(buf: Buffer) -> tuple:
    """The oldest dirty first; among those dirtied at once, the least recently used first (as
    they stand in the LRU: the order a stable sort of the LRU by dirtied_at gives)."""
    return buf.dirtied_at, buf.used


class BufferCache:
    def __init__(self, image, block_size: int, capacity_blocks: int, stats, clock, *,
                 writeback: WritebackMode, maxio_blocks: int = 32, sync_interval: float = 30.0,
                 dirty_background: float = 0.10, dirty_limit: float = 0.40,
                 iosched: str = "none", nr_requests: int = 128, max_request_blocks: int | None = None,
                 writeback_order: str = "block"):
        self.image = image            # simfs.blockio.imagefile.ImageFile: reads, and is told of changes
        self.bs = block_size
        self.capacity = max(64, capacity_blocks)
        self.stats = stats
        self.clock = clock            # SimClock: `now`, and `latest` (0 with one clock)
        self.writeback = writeback    # the write-back mode (policies.writeback)
        self.maxio = max(1, maxio_blocks)
        self.sync_interval = sync_interval
        self.bg_dirty = max(1, int(self.capacity * dirty_background))
        self.hard_dirty = max(2, int(self.capacity * dirty_limit))
        self.buffers: "OrderedDict[int, Buffer]" = OrderedDict()
        # the dirty buffers (the thresholds and the syncer look at these, not at every buffer);
        # `uses` stamps a buffer each time it moves to the LRU's end, so that ordering dirty
        # buffers by `used` is ordering them as they stand in `buffers`
        self.dirty: dict[int, Buffer] = {}
        self.uses = 0
        self.dseqs = 0                # counts buffers becoming dirty (Buffer.dseq)
        if writeback_order not in WRITEBACK_ORDERS:
            raise ValueError(f"write-back order {writeback_order!r}: choose one of {', '.join(WRITEBACK_ORDERS)}")
        self.writeback_order = writeback_order
        self.op_sync: set[int] = set()       # metadata to write before the operation returns
        self.sync_kinds: tuple = ()
        self.last_syncer = 0.0
        self.placer: Placer | None = None   # places delayed pages (simfs.fs.delalloc), if any
        # the buffer locks: block -> when its last write completes (entries in the past are
        # dropped now and then); kept apart from the buffers, for a block may be forgotten,
        # evicted or re-keyed while its write is in flight
        self.locked_until: dict[int, float] = {}
        self._lock_prune = 1024
        self.held: set[int] = set()          # read at mount and held for its life (`hold`)
        self._resolving = False
        self.deps = DepTracker()             # soft-updates dependencies (empty for most modes)
        # the mode's answers per operation name (they depend on the name only: the contract)
        self._modes: dict[str, tuple] = {}
        self._syncer = writeback.syncer
        # operations begun and not ended, innermost last: first `_unrecorded` ones whose
        # dependency rules were empty (nothing to record, DepTracker not asked), then
        # `_recording` ones each with a DepTracker frame (once one is open, every nested
        # operation opens its own, so the frames keep shadowing as DepTracker expects)
        self._unrecorded = 0
        self._recording = 0
        # max_softdeps scales with memory: the cache's size in 4 KiB pages
        self.max_deps = (int(self.capacity * block_size / 4096 * writeback.throttle["per_page"])
                         if writeback.throttle else None)
        # the block layer below: max_request_blocks None = maxio (no request grows past what
        # the cache builds)
        self.hq = HostQueue(self._dispatch, self._clock_now, iosched, nr_requests,
                            max_request_blocks or self.maxio, stats)

    def _clock_now(self) -> float:
        return self.clock.now

    def _dispatch(self, op: str, blkno: int, nblocks: int, kind: str, ino: int, wait: bool) -> float:
        """The host queue sends a request to the drive now. One the task waits for is issued
        as waited (the trace says so) but the clock moves only when the task sleeps on it,
        after the whole flush (`_wait_for`)."""
        clock = self.clock
        if not wait:
            return clock.io(op, blkno, nblocks, kind, ino, wait=False)
        now = clock.now
        finish = clock.io(op, blkno, nblocks, kind, ino)
        clock.now = now
        return finish

    def _unlock(self, blocks: list[int], finish: float) -> None:
        """Their write is on the drive: the buffer locks are held until it finishes."""
        locks = self.locked_until
        for b in blocks:
            if locks.get(b) == PENDING:
                locks[b] = finish

    def _wait_for(self, bio) -> float:
        """The task sleeps until this bio's request has finished: the plug goes first."""
        self.hq.flush()
        self.clock.wait_until(bio.finish)
        return bio.finish

    @property
    def ndirty(self) -> int:
        """Dirty buffers (written to, not yet written back)."""
        return len(self.dirty)

    # reading -------------------------------------------------------------------------------
    def bread(self, blkno: int, kind: str, ino: int = 0) -> bytearray:
        """The block's current contents, as a buffer the caller may modify and then mark dirty."""
        buf = self.buffers.get(blkno)
        if buf is not None:
            self.buffers.move_to_end(blkno)       # self._use(buf), inlined: the hottest path
            self.uses += 1
            buf.used = self.uses
            self.stats.count("cache_hits")
            if buf.ready_at > self.clock.now:     # read-ahead still on its way: the task
                self.hq.flush()                   # sleeps, its plug goes first (it may hold
                self.clock.wait_until(buf.ready_at)   # this very read)
            return buf.data
        if self._locked(blkno):
            self.stats.count("cache_hits")
            return self._keep(blkno, kind, ino).data
        self.stats.count("cache_misses")
        finish = self._wait_for(self.hq.submit("R", blkno, 1, kind, ino, wait=True))
        return self._load(blkno, 1, kind, ino, finish if self.clock.latest else 0.0)[0].data

    def _locked(self, blkno: int) -> bool:
        """Its write is still on its way to the drive (the buffer lock is held)."""
        return bool(self.locked_until) and self.locked_until.get(blkno, 0.0) > self.clock.now

    def _keep(self, blkno: int, kind: str, ino: int) -> Buffer:
        """The buffer of a block evicted while its write is in flight: Linux does not reclaim
        a page under writeback, so it is still in memory - back in the cache, no request."""
        buf = Buffer(blkno, self.image.read(blkno, 1, kind)[0], kind, ino)
        self._insert(buf)
        return buf

    def read_run(self, blkno: int, count: int, kind: str, ino: int, wait: bool,
                 needed: bool | None = None) -> None:
        """Bring a physically contiguous run into the cache with as few requests as possible:
        one per stretch of missing blocks, at most maxio blocks each. Without wait the
        requests are read-ahead: the caller goes on, a later bread waits for the data.
        `needed` (default: wait): the blocks are what the caller asked for (cache misses),
        not read-ahead, even when it does not wait here."""
        i = 0
        while i < count:
            if blkno + i in self.buffers:
                i += 1
                continue
            if self._locked(blkno + i):
                self._keep(blkno + i, kind, ino)
                i += 1
                continue
            j = i
            while j < count and j - i < self.maxio and blkno + j not in self.buffers \
                    and not self._locked(blkno + j):
                j += 1
            self.stats.count("cache_misses" if (wait if needed is None else needed) else "readahead_blocks", j - i)
            bio = self.hq.submit("R", blkno + i, j - i, kind, ino, wait=wait)
            if wait:
                self._wait_for(bio)
            bufs = self._load(blkno + i, j - i, kind, ino, PENDING if not wait else
                              bio.finish if self.clock.latest else 0.0)
            if not wait:
                if bio.finish != PENDING:         # loading them flushed the plug (eviction)
                    _ready(bufs, bio.finish)
                else:
                    bio.done = lambda finish, bufs=bufs: _ready(bufs, finish)
            i = j

    def _load(self, blkno: int, count: int, kind: str, ino: int, ready_at: float) -> list[Buffer]:
        self.stats.count("blocks_read", count)
        out = []
        for i, data in enumerate(self.image.read(blkno, count, kind)):
            buf = Buffer(blkno + i, data, kind, ino)
            buf.ready_at = ready_at
            self._insert(buf)
            out.append(buf)
        return out

    def getblk(self, blkno: int, kind: str, ino: int = 0) -> bytearray:
        """A zeroed buffer for a block that is about to be overwritten whole (no read)."""
        if self._recording:
            self.deps.fresh(blkno)
        buf = self.buffers.get(blkno)
        if buf is not None:
            self._use(buf)
            buf.data[:] = bytes(self.bs)
            buf.kind, buf.ino, buf.ready_at, buf.lblk = kind, ino, 0.0, -1
            return buf.data
        buf = Buffer(blkno, bytearray(self.bs), kind, ino)
        self._insert(buf)
        return buf.data

    def page(self, key: int, kind: str, ino: int) -> bytearray:
        """The buffer of a not-yet-allocated block (delayed allocation), zeroed if new; no I/O."""
        if self._recording:
            self.deps.fresh(key)
        buf = self.buffers.get(key)
        if buf is not None:
            self._use(buf)
            return buf.data
        buf = Buffer(key, bytearray(self.bs), kind, ino)
        buf.lblk = (-key - 1) & 0xFFFFFFFF if key < 0 else -1   # vkey's page: kept when placed
        self.buffers[key] = buf     # no eviction here: it could place this very page meanwhile;
        self._use(buf)              # the dirty thresholds at the end of the operation bound these
        return buf.data

    def __contains__(self, key: int) -> bool:
        return key in self.buffers

    def __len__(self) -> int:
        return len(self.buffers)

    def is_dirty(self, blkno: int) -> bool:
        """Written to but not yet written back (still part of a delayed-write cluster)."""
        buf = self.buffers.get(blkno)
        return buf is not None and buf.dirty

    def rekey(self, key: int, blkno: int) -> None:
        """The buffer cached under `key` now stands for block blkno (a delayed block got its
        place, or cluster reallocation moved it); nothing happens if it is not cached."""
        buf = self.buffers.pop(key, None)
        if buf is None:
            return
        old = self.buffers.pop(blkno, None)
        if old is not None and old.dirty:
            del self.dirty[blkno]
        self.deps.cancel(blkno, self.clock.now)
        self.deps.rekey(key, blkno)
        buf.blkno = blkno
        self.buffers[blkno] = buf
        self._use(buf)
        if buf.dirty:
            del self.dirty[key]
            self.dirty[blkno] = buf
        self.image.note(blkno, buf.data, buf.kind)

    def peek(self, blkno: int, count: int = 1) -> bytes:
        """Read blocks without charging or caching (mount-time loading of bitmaps and tables,
        the attributes readdirplus hands out); a cached block is not read from the image."""
        if count == 1:
            buf = self.buffers.get(blkno)
            if buf is not None:
                return bytes(buf.data)
        out = bytearray()
        for i, data in enumerate(self.image.read(blkno, count)):
            buf = self.buffers.get(blkno + i)
            out += buf.data if buf is not None else data
        return bytes(out)

    # writing -------------------------------------------------------------------------------
    def mark_dirty(self, blkno: int, data: bytearray, kind: str | None = None, ino: int | None = None,
                   lblk: int | None = None) -> None:
        """Mark a buffer dirty; `data` is re-attached if the buffer was evicted meanwhile.
        `lblk`: the block's place in its file, for the flusher's page order (optional)."""
        buf = self.buffers.get(blkno)
        if buf is None or buf.data is not data:
            if buf is not None and buf.dirty:
                del self.dirty[blkno]
            buf = Buffer(blkno, data, kind or "data", ino or 0)
            self._insert(buf)
        if kind is not None:
            buf.kind = kind
        if ino is not None and ino != buf.ino:
            buf.ino, buf.lblk = ino, -1     # another file's block now: its page is not known
        if lblk is not None:
            buf.lblk = lblk
        if not buf.dirty:
            buf.dirty = True
            buf.dirtied_at = self.clock.now
            self.dseqs += 1
            buf.dseq = self.dseqs
            self.dirty[blkno] = buf
        self.image.note(blkno, buf.data, buf.kind)
        if self._recording:
            self.deps.dirtied(blkno, buf.kind)
        if buf.kind in self.sync_kinds:
            self.op_sync.add(blkno)

    def write(self, blkno: int, data: bytes, kind: str, ino: int = 0, lblk: int | None = None) -> None:
        """Replace a whole block's contents and mark it dirty."""
        buf = self.getblk(blkno, kind, ino)
        buf[:] = data
        self.mark_dirty(blkno, buf, lblk=lblk)

    def in_use(self, blkno: int, used: bool) -> None:
        """The file system took (used) or freed the block: the image writes a block that was
        free at its last commit in place before the journal (ImageFile.allocated)."""
        if used:
            self.image.allocated(blkno)
        else:
            self.image.freed(blkno)

    def forget(self, blkno: int) -> None:
        """The block was freed: drop it, dirty or not (bforget)."""
        buf = self.buffers.pop(blkno, None)
        if buf is not None and buf.dirty:
            del self.dirty[blkno]
        self.op_sync.discard(blkno)
        self.deps.cancel(blkno, self.clock.now)
        self.image.discard(blkno)

    # the operation boundary ----------------------------------------------------------------
    def begin_op(self, op: str) -> None:
        """Operation `op` starts: the write-back mode says which kinds of block it must write
        before it returns."""
        modes = self._modes.get(op)
        if modes is None:
            modes = self._modes[op] = (self.writeback.sync_kinds(op), tuple(self.writeback.dependencies(op)))
        self.sync_kinds = modes[0]
        if modes[1] or self._recording:
            self.deps.begin(modes[1])
            self._recording += 1
        else:
            self._unrecorded += 1

    def end_op(self) -> None:
        self.hq.flush()                 # the operation's plug: its read-ahead goes now
        if self._recording:
            self._recording -= 1
            if self.deps.end(self.is_dirty, self.clock.now) and self.max_deps is not None \
                    and self.deps.live > self.max_deps:
                self._request_cleanup()
        elif self._unrecorded:
            self._unrecorded -= 1
        if self.op_sync:
            self._write_back(sorted(b for b in self.op_sync if b in self.buffers and self.buffers[b].dirty),
                             wait=True, vreg_only=self.writeback_order == "freebsd")
            self.op_sync.clear()
        self.sync_kinds = ()
        clock = self.clock
        own = now = clock.now
        if clock.latest > own:          # per-process clocks, this process behind the mount's
            now = clock.now = clock.latest   # time: background write-back runs at that time
        syncer = self._syncer
        if syncer:
            self._syncer_ticks(syncer, now)
        elif now - self.last_syncer >= self.sync_interval:
            self.last_syncer = now
            self._flush_dirty(wait=False, older_than=now - self.sync_interval)
        ndirty = len(self.dirty)
        if ndirty > self.hard_dirty:
            self.stats.count("writeback_throttled")
            self._flush_oldest(ndirty - self.bg_dirty // 2, wait=True)
            return                      # the writer waited for it: its clock moved on
        if ndirty > self.bg_dirty:
            self._flush_oldest(ndirty - self.bg_dirty // 2, wait=False)
        if now != own:
            clock.now = own             # the flusher's time was not this process's

    # flushing --------------------------------------------------------------------------------
    def sync(self) -> None:
        """Write every dirty buffer and wait for all of it to reach the media. Blocks that went
        out rolled back (soft updates) are still dirty: write again until none is left."""
        for _ in range(self.MAX_ROUNDS):
            self._flush_dirty(wait=False)
            self.hq.flush()
            self.clock.drain()
            if not self.deps.pending:
                return
        raise RuntimeError("soft-updates write-back did not converge")   # rules have a cycle

    #: rounds of write-and-wait after which a dependency chain must have gone out
    MAX_ROUNDS = 64

    def flush_blocks(self, blknos) -> None:
        """Write the named blocks if they are dirty and wait until they are on the media
        (fsync); under soft updates, with the blocks they wait for (softdep_sync_metadata)."""
        want = set(blknos)
        for _ in range(self.MAX_ROUNDS):
            todo = {b for b in want | self.deps.prerequisites(want & self.deps.pending.keys())
                    if b in self.buffers and self.buffers[b].dirty}
            self._batch(todo, wait=False)
            self.hq.flush()
            self.clock.drain()
            if not (want & self.deps.pending.keys()):
                return
        raise RuntimeError("soft-updates write-back did not converge")

    def write_now(self, keys: list[int]) -> list[tuple[float, int]]:
        """Start writing these dirty buffers now without waiting, in the order given (a page
        cache's writepages, an O_DIRECT write: file order, as write_cache_pages submits under
        its plug; the host queue's scheduler orders them, as Linux's elevator does). Delayed
        pages are placed first; blocks contiguous in that order go as one request of at most
        maxio blocks. Returns (finish time, blocks) per request."""
        return self._write_back(list(dict.fromkeys(k for k in keys if self.is_dirty(k))), wait=False,
                                in_order=True)

    def hold(self, blkno: int, count: int, kind: str) -> None:
        """Read a run at mount and hold its buffers for the mount's life: the superblock and
        the group descriptors, which Linux's ext4 and ext2 keep referenced from mount to
        unmount (sbi->s_sbh, sbi->s_group_desc[]: fs/ext4/super.c ext4_load_super and
        ext4_group_desc_init), so that neither eviction nor drop_caches frees them."""
        self.read_run(blkno, count, kind, 0, wait=True)
        self.held.update(range(blkno, blkno + count))

    def drop_clean(self) -> None:
        """Drop every clean buffer but the held ones, and the drive's read buffer below
        (drop_caches: the caller wrote the dirty ones back first, so cold means cold down to
        the platters)."""
        self.hq.flush()
        held = self.held
        for b in [b for b, buf in self.buffers.items() if not buf.dirty and b not in held]:
            del self.buffers[b]
        self.clock.drop_drive_buffer()

    def _flush_dirty(self, wait: bool, older_than: float | None = None) -> None:
        dirty = [b for b in self.dirty.values() if older_than is None or b.dirtied_at <= older_than]
        passes = self.writeback.passes
        if passes:
            for kinds in passes:
                self._batch([b.blkno for b in dirty if b.kind in kinds], wait)
            dirty = [b for b in dirty if b.dirty]
        self._batch([b.blkno for b in dirty], wait)

    def _flush_oldest(self, n: int, wait: bool) -> None:
        """The dirty thresholds (bufdaemon): the oldest dirty buffers. Under soft updates as
        FreeBSD's buf_daemon does it: flushbufqueues(0) writes only buffers a write would not
        roll back; only if there are none, flushbufqueues(1) writes half as many of those it
        would, and bufdaemon sleeps ("qsleep", the mode's throttle["bufdaemon_sleep"]) - a
        writer waiting at the hard limit (bwillwrite) sleeps with it, for the rolled-back
        buffers are dirty again and the count does not fall."""
        dirty = sorted(self.dirty.values(), key=_age)
        n = max(n, 1)
        if self.deps.pending:
            now = self.clock.now
            free = [b for b in dirty if not self.deps.blocked(b.blkno, now)]
            if not free:
                self.stats.count("softdep_flush_with_deps")
                free, n = dirty, max(n // 2, 1)
                if wait:
                    self._batch([b.blkno for b in free[:n]], wait, as_given=self.writeback_order == "freebsd")
                    self.hq.flush()
                    self.clock.cpu(self.writeback.throttle["bufdaemon_sleep"])
                    return
            dirty = free
        self._batch([b.blkno for b in dirty[:n]], wait, as_given=self.writeback_order == "freebsd")

    def _syncer_ticks(self, syncer: dict, now: float) -> None:
        """A syncer that wakes every `period` seconds (FreeBSD's sched_sync): each wake-up
        writes the dirty blocks older than their kind's delay (filedelay/dirdelay/metadelay);
        blocks that went out rolled back keep their age, so the next wake-up after their
        prerequisites are on the disk writes them again (softdep_process_worklist's role)."""
        period = syncer["period"]
        if now - self.last_syncer < period:
            return
        self.last_syncer = now - (now - self.last_syncer) % period
        delays, default = syncer["delays"], syncer["default"]
        due = [b for b in self.dirty.values() if b.dirtied_at <= now - delays.get(b.kind, default)]
        if due:
            self._batch([b.blkno for b in due], wait=False)

    def _request_cleanup(self) -> None:
        """Too many dependencies (softdep's max_softdeps): the writer sleeps a few ticks
        (request_cleanup, tickdelay) while the syncer is sped up to push out the blocks
        others wait for (speedup_syncer, clear_inodedeps)."""
        self.stats.count("softdep_throttled")
        pre = [b for b in self.deps.prerequisites() if b in self.buffers and self.buffers[b].dirty]
        self._batch(pre, wait=False)
        self.hq.flush()
        self.clock.cpu(self.writeback.throttle["wait"])

    def _use(self, buf: Buffer) -> None:
        """The buffer goes to the LRU's end, stamped with the use count (see `_age`)."""
        self.buffers.move_to_end(buf.blkno)
        self.uses += 1
        buf.used = self.uses

    def _insert(self, buf: Buffer) -> None:
        self.buffers[buf.blkno] = buf
        self._use(buf)
        if len(self.buffers) > self.capacity and not self._resolving:
            self._evict()

    def _evict(self) -> None:
        """Evict least recently used buffers; dirty ones are written back first, as one batch."""
        excess = len(self.buffers) - self.capacity
        victims = []
        held = self.held
        for b in self.buffers:
            if len(victims) >= max(excess, self.capacity // 16):
                break
            if b not in held:
                victims.append(b)
        self._batch([b for b in victims if self.buffers[b].dirty], wait=False, as_given=True)
        for b in victims:                 # delayed pages were re-keyed when placed; a victim
            buf = self.buffers.get(b)     # placing them dirtied (a map, a bitmap) stays
            if buf is not None and not buf.dirty:
                del self.buffers[b]

    def place(self, keys: list[int]) -> dict[int, int]:
        """Have the placer give delayed pages their blocks (it re-keys them here); no
        eviction meanwhile, since evicting could write back a page being placed."""
        self._resolving = True
        try:
            return self.placer.place(keys)
        finally:
            self._resolving = False

    def _batch(self, keys, wait: bool, as_given: bool = False) -> list[tuple[float, int]]:
        """One of the cache's own write-back batches (the syncer, sync, the dirty thresholds,
        eviction, fsync, the dependency cleanup) in `writeback_order`: by block number
        (`block`), or in the order the system's flusher issues them (WRITEBACK_ORDERS), for the
        host queue's scheduler to order. `as_given`: a batch the system issues in the order the
        caller found the buffers, not file by file - eviction's, in LRU order (Linux's pageout
        writes the pages reclaim reaches, one by one), and FreeBSD's buf_daemon's, in the dirty
        queue's order (flushbufqueues)."""
        if self.writeback_order == "block":
            return self._write_back(sorted(keys), wait)
        return self._write_back(list(dict.fromkeys(keys)), wait, in_order=True, flusher=not as_given,
                                vreg_only=self.writeback_order == "freebsd")

    def flusher_order(self, blknos: list[int]) -> list[int]:
        """The blocks (dirty, cached, placed) in the order `writeback_order`'s flusher issues
        them: file by file (the block device's or device vnode's buffers one more file), the
        file whose oldest dirty buffer was dirtied first first, each file's pages ascending
        (FreeBSD: its indirect blocks first). A file's page is its buffers' `lblk` when the
        cache knows it for every one of the batch's buffers of that file (delayed pages, and
        buffers marked dirty with it); else its blocks go in block order (the file systems
        modelled allocate a file's blocks in page order unless it is fragmented)."""
        bufs = self.buffers
        device = DEVICE_KINDS[self.writeback_order]
        bsd = self.writeback_order == "freebsd"
        first: dict[int, tuple] = {}
        owner_of = {}
        by_block: set[int] = set()      # files with a buffer whose page the cache does not know
        for b in blknos:
            buf = bufs[b]
            owner = -1 if buf.kind in device else buf.ino
            owner_of[b] = owner
            age = (buf.dirtied_at, buf.dseq)
            if owner not in first or age < first[owner]:
                first[owner] = age
            if buf.lblk < 0:
                by_block.add(owner)

        def key(b):
            owner = owner_of[b]
            buf = bufs[b]
            page = b if owner in by_block else buf.lblk
            return first[owner], owner, 0 if bsd and buf.kind == "indirect" else 1, page, b
        return sorted(blknos, key=key)

    def _write_back(self, blknos: list[int], wait: bool, in_order: bool = False,
                    flusher: bool = False, vreg_only: bool = False) -> list[tuple[float, int]]:
        """Write dirty blocks back (in the model), sorted by block (this cache's own batches)
        or, `in_order`, in the order given: runs contiguous in that order, up to maxio blocks,
        become one bio each, all of them under one plug (the host queue may merge them further;
        its scheduler orders them). Delayed blocks (negative keys) are placed first; in order,
        the placed ones follow the others as the placer placed them (inode by inode, page
        order). `flusher`: after placing, in `flusher_order`. `vreg_only`: FreeBSD's clustering
        (vfs_bio_awrite, cluster_wbuild): only a regular file's data blocks form a run, with
        blocks of the same file; a directory's, an indirect block or a device-vnode buffer
        (inode, cylinder group, superblock) goes alone. Returns (finish time, blocks) per bio."""
        requests = []
        plugged = []                    # runs whose finish the plug's flush will tell
        if blknos and (blknos[0] < 0 or in_order and min(blknos) < 0):
            placed = self.place([k for k in blknos if k < 0])
            blknos = [b for b in blknos if b >= 0] + list(placed.values())
            if not in_order:
                blknos.sort()
            blknos = [b for b in blknos if b in self.buffers and self.buffers[b].dirty]   # a placed file may be gone
        if flusher:
            blknos = self.flusher_order(blknos)
        i = 0
        while i < len(blknos):
            j = i + 1
            while j < len(blknos) and blknos[j] == blknos[j - 1] + 1 and j - i < self.maxio:
                if vreg_only and not _clusters(self.buffers[blknos[j - 1]], self.buffers[blknos[j]]):
                    break
                j += 1
            run = [self.buffers[b] for b in blknos[i:j]]
            now = self.clock.now
            carried = [self.deps.start_write(b.blkno, now) for b in run]
            finish = self._issue(blknos[i], run, wait)
            if not isinstance(finish, Bio):
                self._written(run, carried, finish)
            else:
                plugged.append((run, carried, finish))
            requests.append((finish, len(run)))
            i = j
        if plugged:
            self.hq.flush()             # blk_finish_plug: the batch goes to the drive
            for run, carried, bio in plugged:
                self._written(run, carried, bio.finish)
            requests = [(f.finish if isinstance(f, Bio) else f, n) for f, n in requests]
        return requests

    def _written(self, run: list[Buffer], carried: list, finish: float) -> None:
        """The run's write finishes at `finish`: its buffers are clean, or dirty again if the
        write carried them rolled back (soft updates)."""
        for b, c in zip(run, carried):
            if c is not None and not self.deps.finish_write(b.blkno, c, finish):
                # written rolled back: redirtied when the write completes (the buffer goes
                # to the tail of the dirty queue and the syncer's list afresh)
                self.stats.count("softdep_rollbacks")
                b.dirtied_at = finish
                continue
            b.dirty = False
            del self.dirty[b.blkno]
        self.stats.count("blocks_written", len(run))

    def _issue(self, blkno: int, run: list[Buffer], wait: bool):
        """Issue one write of the run at blkno, after the last write of any of its blocks has
        completed (the buffer lock); locks its blocks until it finishes. Returns its finish,
        or, for a write left in the plug, its bio (the finish is known at the flush)."""
        locks = self.locked_until
        now = self.clock.now
        unlock = max([locks.get(b.blkno, 0.0) for b in run]) if locks else 0.0
        if unlock == PENDING:                    # its last write is still in the plug: it goes
            self.hq.flush()
            unlock = max(locks.get(b.blkno, 0.0) for b in run)
        if unlock > now:
            self.stats.count("writes_waited_on_lock")
            self.hq.flush()                      # the writer sleeps, or its batch goes first
            if wait:
                self.clock.wait_until(unlock)    # the writer sleeps on the lock, then submits
                unlock = 0.0
        if unlock > now:
            # submitted when the lock is released, by the completion: outside this plug
            finish = self.clock.io("W", blkno, len(run), run[0].kind, run[0].ino, wait=False, at=unlock)
        else:
            bio = self.hq.submit("W", blkno, len(run), run[0].kind, run[0].ino, wait=wait)
            if wait:
                finish = self._wait_for(bio)
            else:
                finish = PENDING
                bio.done = lambda f, blocks=[b.blkno for b in run]: self._unlock(blocks, f)
        for b in run:
            locks[b.blkno] = finish
        if len(locks) > self._lock_prune:        # forget the locks released (amortised)
            now = self.clock.now
            self.locked_until = {b: t for b, t in locks.items() if t > now}
            self._lock_prune = max(1024, 2 * len(self.locked_until))
        return finish if finish != PENDING else bio


def _clusters(a: Buffer, b: Buffer) -> bool:
    """FreeBSD's vfs_bio_awrite clusters "only to regular files": two data blocks of one file."""
    return a.kind == "data" and b.kind == "data" and a.ino == b.ino


def _ready(bufs: list[Buffer], finish: float) -> None:
    """Their read is on the drive: a buffer not overwritten meanwhile (getblk) is ready then."""
    for b in bufs:
        if b.ready_at == PENDING:
            b.ready_at = finish

