"""simfs.blockio.cache: the buffer-cache model, on its own.

The cache is driven with a recording clock (every request it issues is kept, each takes one
simulated second on a one-at-a-time disk) and an in-memory image with ImageFile's contract
(`read` returns the newest noted buffer, `note`, `discard`), so each test can say exactly
which requests a sequence of calls must produce: hits and misses, dirty tracking, write-back
clustering up to maxio, read-ahead readiness, eviction, re-keying of delayed pages, forget,
and the write-back policies (sync kinds at the end of an operation, async, softdep order,
the syncer and the dirty thresholds).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from policies.writeback import make_writeback
from simfs.blockio.cache import BufferCache, vkey
from simfs.blockio.stats import Stats

BS = 64          # small blocks: the cache does not care about the size


def base(b: int) -> bytes:
    """What the image holds at block b before anything is noted."""
    return bytes([b % 251 + 1]) * BS


class MemImage:
    """ImageFile's contract, in memory: reads return the newest noted buffer (the same
    object), negative keys are never noted, discard forgets a note."""

    def __init__(self):
        self.noted: dict[int, bytearray] = {}
        self.notes: list[int] = []
        self.discards: list[int] = []

    def read(self, blkno, count=1, kind=""):
        return [self.noted[b] if b in self.noted else bytearray(base(b)) for b in range(blkno, blkno + count)]

    def note(self, blkno, data, kind=""):
        self.notes.append(blkno)
        if blkno >= 0:
            self.noted[blkno] = data

    def discard(self, blkno):
        self.discards.append(blkno)
        self.noted.pop(blkno, None)


class RecClock:
    """A disk that serves one request at a time, each in one simulated second."""

    def __init__(self):
        self.now = 0.0
        self.latest = 0.0               # one clock (SimClock's, under ProcessClocks the mount's time)
        self.busy = 0.0
        self.ios: list[tuple] = []       # (op, blkno, nblocks, kind, ino, wait)
        self.drains = 0
        self.drops = 0                   # drop_caches reaching the drive's buffer
        self.cache = None                # set by make(): lets io() check what it is asked to write
        self.spans: list[tuple] = []     # (blkno, nblocks, issue, finish) of every write

    def cpu(self, s):
        self.now += s

    def drop_drive_buffer(self):
        self.drops += 1

    def wait_until(self, t):
        self.now = max(self.now, t)

    def io(self, op, blkno, n, kind, ino=0, wait=True, sync=False, at=None):
        if op == "W" and self.cache is not None:
            for b in range(blkno, blkno + n):      # only dirty, cached buffers are written
                assert self.cache.is_dirty(b), f"write-back of block {b}, which is not dirty"
        assert at is None or at >= self.now
        self.ios.append((op, blkno, n, kind, ino, wait))
        issue = self.now if at is None else at
        start = max(issue, self.busy)
        self.busy = start + 1.0
        if op == "W":
            self.spans.append((blkno, n, issue, self.busy))
        if wait:
            self.now = self.busy
        return self.busy

    def drain(self):
        self.drains += 1
        self.now = max(self.now, self.busy)

    def writes(self):
        return [(b, n) for op, b, n, *_ in self.ios if op == "W"]

    def overlapping_writes(self) -> list[tuple]:
        """Pairs of writes of one block both in flight at once (queued, not yet completed):
        what Linux's buffer lock never lets happen."""
        last: dict[int, tuple] = {}
        out = []
        for span in self.spans:
            blkno, n, issue, finish = span
            for b in range(blkno, blkno + n):
                if b in last and last[b][3] > issue:
                    out.append((last[b], span))
                last[b] = span
        return out


def make(capacity=1024, writeback="async", maxio=32, sync_interval=30.0):
    clock, stats, image = RecClock(), Stats(), MemImage()
    c = BufferCache(image, BS, capacity, stats, clock, writeback=make_writeback(writeback), maxio_blocks=maxio,
                    sync_interval=sync_interval)
    clock.cache = c
    return c, clock, stats, image


def dirty(c, b, kind="data", ino=0, fill=None):
    """Write block b whole (as Volume does for a new block) and return its contents."""
    data = bytes([fill if fill is not None else (b * 7 + 3) % 256]) * BS
    c.write(b, data, kind, ino)
    return data


def ndirty_true(c) -> int:
    return sum(buf.dirty for buf in c.buffers.values())


# reading ---------------------------------------------------------------------------------------
def test_miss_reads_once_then_hits():
    c, clock, stats, _ = make()
    data = c.bread(7, "inode", 12)
    assert bytes(data) == base(7)
    assert clock.ios == [("R", 7, 1, "inode", 12, True)] and clock.now == 1.0
    assert c.bread(7, "inode", 12) is data                 # the same buffer, no request
    assert len(clock.ios) == 1 and clock.now == 1.0
    t = stats.totals()
    assert (t["cache_misses"], t["cache_hits"], t["blocks_read"]) == (1, 1, 1)


def test_getblk_reads_nothing_and_zeroes():
    c, clock, stats, _ = make()
    assert bytes(c.getblk(3, "dir", 5)) == bytes(BS) and clock.ios == []
    c.bread(4, "data")
    buf = c.getblk(4, "indirect", 9)
    assert bytes(buf) == bytes(BS) and c.buffers[4].kind == "indirect" and c.buffers[4].ino == 9
    assert len(clock.ios) == 1


def test_peek_neither_charges_nor_caches_but_sees_cached_contents():
    c, clock, stats, _ = make()
    data = dirty(c, 2)
    before = (list(clock.ios), stats.totals(), len(c))
    assert c.peek(1, 3) == base(1) + data + base(3)
    assert (clock.ios, stats.totals(), len(c)) == before
    assert 1 not in c and 3 not in c


def test_read_run_one_request_per_missing_stretch_up_to_maxio():
    c, clock, stats, _ = make(maxio=4)
    c.bread(3, "data")
    c.bread(4, "data")
    clock.ios.clear()
    t0 = clock.now
    c.read_run(0, 10, "data", 7, wait=False)
    assert clock.ios == []              # in the host queue's plug until the task waits or its
    c.hq.flush()                        # operation ends (or the plug is finished, as here)
    assert clock.ios == [("R", 0, 3, "data", 7, False), ("R", 5, 4, "data", 7, False),
                         ("R", 9, 1, "data", 7, False)]
    assert clock.now == t0                                 # read-ahead: the caller goes on
    assert stats.totals()["readahead_blocks"] == 8
    assert all(b in c for b in range(10))
    # a block of the second request is there only when that request finishes
    assert c.buffers[0].ready_at == t0 + 1.0 and c.buffers[6].ready_at == t0 + 2.0
    hits = stats.totals().get("cache_hits", 0)
    assert bytes(c.bread(6, "data")) == base(6)
    assert clock.now == c.buffers[6].ready_at and stats.totals()["cache_hits"] == hits + 1
    now = clock.now
    c.bread(0, "data")                                     # already arrived: no wait
    assert clock.now == now and len(clock.ios) == 3


def test_read_run_waiting_counts_misses_and_advances():
    c, clock, stats, _ = make(maxio=8)
    c.read_run(100, 20, "dir", 2, wait=True)
    assert [(b, n, w) for _, b, n, _, _, w in clock.ios] == [(100, 8, True), (108, 8, True), (116, 4, True)]
    assert clock.now == 3.0
    assert stats.totals()["cache_misses"] == 20 and stats.totals()["readahead_blocks"] == 0
    assert all(c.buffers[b].ready_at == 0.0 for b in range(100, 120))


# dirty tracking --------------------------------------------------------------------------------
def test_mark_dirty_counts_each_buffer_once_and_notes_the_image():
    c, clock, stats, image = make()
    buf = c.bread(5, "inode", 11)
    buf[0] = 0xAB
    c.mark_dirty(5, buf)
    c.mark_dirty(5, buf, "inode", 11)
    assert c.ndirty == 1 and c.is_dirty(5) and not c.is_dirty(6)
    assert image.noted[5] is buf                           # the image is told of the newest bytes
    assert c.buffers[5].kind == "inode" and c.buffers[5].ino == 11
    dirty(c, 6)
    assert c.ndirty == 2 == ndirty_true(c)


def test_mark_dirty_reattaches_a_buffer_that_was_replaced():
    c, clock, stats, image = make()
    old = c.bread(5, "data")
    c.mark_dirty(5, old)
    new = bytearray(b"n" * BS)
    c.mark_dirty(5, new, "data", 3)                        # another buffer for the same block
    assert c.ndirty == 1 == ndirty_true(c)
    assert c.buffers[5].data is new and image.noted[5] is new


def test_sync_writes_every_dirty_block_once_then_nothing_is_dirty():
    c, clock, stats, _ = make(maxio=32)
    for b in list(range(10, 80)) + [100, 102]:
        dirty(c, b)
    c.sync()
    assert clock.writes() == [(10, 32), (42, 32), (74, 6), (100, 1), (102, 1)]
    assert all(not w for op, *_, w in clock.ios if op == "W")      # background, then drain
    assert clock.drains == 1 and clock.now == clock.busy
    assert c.ndirty == 0 == ndirty_true(c) and stats.totals()["blocks_written"] == 72
    c.sync()
    assert len(clock.writes()) == 5                        # clean buffers are not written again


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 300), max_size=120), st.integers(1, 40))
def test_write_back_clusters_exactly_the_dirty_blocks(blocks, maxio):
    c, clock, stats, _ = make(maxio=maxio)
    for b in sorted(blocks, key=lambda b: (b * 37) % 301):     # dirtied in a scrambled order
        dirty(c, b)
    c.sync()
    reqs = clock.writes()
    covered = [b + i for b, n in reqs for i in range(n)]
    assert covered == sorted(blocks)                       # each dirty block once, in order
    assert all(1 <= n <= maxio for _, n in reqs)
    for (b1, n1), (b2, _) in zip(reqs, reqs[1:]):          # runs are as long as they may be
        assert b1 + n1 < b2 or n1 == maxio
    assert c.ndirty == 0 and stats.totals().get("blocks_written", 0) == len(blocks)


def test_flush_blocks_writes_only_the_named_dirty_blocks_and_drains():
    c, clock, stats, _ = make()
    for b in (1, 2, 3, 9):
        dirty(c, b)
    c.bread(4, "data")
    c.flush_blocks([3, 2, 4, 2, 50])
    assert clock.writes() == [(2, 2)] and clock.drains == 1
    assert c.is_dirty(1) and c.is_dirty(9) and c.ndirty == 2


# eviction ----------------------------------------------------------------------------------------
def test_capacity_has_a_floor_of_64():
    assert make(capacity=3)[0].capacity == 64


def test_a_block_written_again_while_its_write_is_in_flight_waits_for_the_lock():
    """Linux locks a buffer for its write until the write completes: a block dirtied again
    and written back while its last write is still queued is issued only when that write
    completes - a background write is queued then, a writer that waits sleeps on the lock."""
    c, clock, stats, _ = make()
    dirty(c, 9)
    c._write_back([9], wait=False)                 # queued behind nothing: done at t = 1
    dirty(c, 3)
    c._write_back([3], wait=False)                 # done at t = 2
    dirty(c, 9, fill=1)
    c._write_back([9], wait=False)                 # block 9 again, at t = 0: in flight until 1
    assert clock.now == 0.0                        # the writer is not held up
    assert clock.spans[-1] == (9, 1, 1.0, 3.0)     # queued when the lock is released
    dirty(c, 9, fill=2)
    c.flush_blocks([9])                            # fsync: queued at the lock's release, drained
    assert clock.spans[-1] == (9, 1, 3.0, 4.0) and clock.now == 4.0
    assert clock.overlapping_writes() == [] and not c.is_dirty(9)
    assert stats.totals()["writes_waited_on_lock"] == 2


def test_a_synchronous_metadata_write_sleeps_on_the_lock_before_it_submits():
    """The sync mode writes an operation's inode block before it returns (sync_dirty_buffer:
    lock_buffer first): if the block's background write is still queued, the operation
    waits for it to complete, then submits its own write and waits for that."""
    c, clock, _, _ = make(writeback="sync")
    dirty(c, 7, kind="inode")
    dirty(c, 2)
    c._write_back([2, 7], wait=False)              # 2 done at t = 1, 7 at t = 2
    c.begin_op("create")
    c.mark_dirty(7, c.bread(7, "inode"), "inode")
    c.end_op()
    assert clock.spans[-1] == (7, 1, 2.0, 3.0) and clock.now == 3.0
    assert clock.overlapping_writes() == []


def test_the_buffer_lock_outlives_the_buffer():
    """A block freed (or evicted) while its write is in flight and written again is still
    locked until that write completes."""
    c, clock, _, _ = make()
    dirty(c, 5)
    c._write_back([5], wait=False)
    c.forget(5)
    dirty(c, 5, kind="dir")
    c.sync()
    assert [s[2:] for s in clock.spans] == [(0.0, 1.0), (1.0, 2.0)]
    assert clock.overlapping_writes() == []


def test_a_block_evicted_while_its_write_is_in_flight_is_still_in_memory():
    """Linux reclaims no page under writeback: a block the cache evicted right after starting
    its write is read back without a request while that write is in flight (a hit), and from
    the disk once it has completed."""
    c, clock, stats, _ = make(capacity=64)
    data = [dirty(c, b) for b in range(64)]
    c.bread(100, "data")                           # evicts blocks 0..3, their writes queued
    assert 0 not in c and clock.writes() == [(0, 4)]
    reads = len(clock.ios)
    hits = stats.totals()["cache_hits"]
    assert bytes(c.bread(0, "data")) == data[0] and len(clock.ios) == reads
    c.read_run(1, 2, "data", 0, wait=True)         # 1 and 2 as well
    assert len(clock.ios) == reads and stats.totals()["cache_hits"] == hits + 1
    clock.wait_until(clock.busy)                   # the write has completed
    c.forget(1)
    c.forget(3)
    c.bread(3, "data")
    assert clock.ios[-1][:3] == ("R", 3, 1)


def test_eviction_writes_dirty_victims_then_drops_the_least_recently_used():
    c, clock, stats, image = make(capacity=64)
    bufs = [c.bread(b, "data") for b in range(64)]
    for b in (0, 2):                                       # dirtied in place: the LRU order stays
        bufs[b][:] = bytes([0xE0 + b]) * BS
        c.mark_dirty(b, bufs[b])
    data0 = bytes(bufs[0])
    c.bread(1, "data")                                     # touched: no longer least recent
    clock.ios.clear()
    c.bread(64, "data")                                    # one over capacity
    # victims: a sixteenth of the cache, oldest first (0, 2, 3, 4); only the dirty ones are written
    assert clock.ios[0][:2] == ("R", 64)
    assert clock.writes() == [(0, 1), (2, 1)]
    assert all(b not in c for b in (0, 2, 3, 4)) and 1 in c and 5 in c
    assert len(c) == 61 and c.ndirty == 0 == ndirty_true(c)
    assert bytes(c.bread(0, "data")) == data0              # the newest bytes come back from the image


def test_eviction_writes_contiguous_dirty_victims_as_one_request():
    c, clock, stats, _ = make(capacity=64, maxio=32)
    for b in range(64):
        dirty(c, b)
    c.bread(200, "data")
    assert clock.writes() == [(0, 4)]
    assert c.ndirty == 60 == ndirty_true(c)


def test_drop_clean_keeps_dirty_buffers():
    c, clock, stats, _ = make()
    for b in range(10):
        c.bread(b, "data")
    dirty(c, 3)
    dirty(c, 20)
    c.drop_clean()
    assert sorted(c.buffers) == [3, 20] and c.ndirty == 2
    assert clock.drops == 1                  # and the drive's buffer below, through the clock


# forget and rekey --------------------------------------------------------------------------------
def test_held_buffers_outlive_eviction_and_drop_clean():
    """The superblock's and descriptors' buffers the mount holds (s_sbh, s_group_desc[]):
    neither the LRU nor drop_caches frees them, so they are never read twice."""
    c, clock, stats, _ = make(capacity=64)
    c.hold(0, 2, "gdt")
    assert [io[:3] for io in clock.ios] == [("R", 0, 2)]
    for b in range(10, 10 + 64 * 3):                       # the least recent by far: evicted
        c.bread(b, "data")                                 # if they were not held
    c.drop_clean()
    clock.ios.clear()
    c.bread(0, "gdt")
    c.bread(1, "gdt")
    assert clock.ios == [] and sorted(c.buffers) == [0, 1]


def test_forget_drops_a_dirty_block_unwritten():
    c, clock, stats, image = make(writeback="sync")
    c.begin_op("create")          # under sync: writes its inodes, directories ...
    dirty(c, 8, "inode")
    dirty(c, 9, "data")
    c.forget(8)
    c.forget(77)                                           # not cached: harmless
    assert 8 not in c and c.ndirty == 1 == ndirty_true(c)
    assert 8 in image.discards and 8 not in image.noted
    c.end_op()                                             # the sync write of block 8 is gone too
    c.sync()
    assert clock.writes() == [(9, 1)]
    assert bytes(c.bread(8, "inode")) == base(8)            # what the image held before


def test_vkey_is_negative_and_distinct():
    keys = {vkey(ino, lblk) for ino in (1, 2, 12, 2**31) for lblk in (0, 1, 2**32 - 1)}
    assert len(keys) == 12 and all(k < 0 for k in keys)
    assert vkey(5, 0) != vkey(4, 2**32 - 1)


def test_rekey_moves_a_delayed_page_to_its_block():
    c, clock, stats, image = make()
    key = vkey(12, 3)
    page = c.page(key, "data", 12)
    assert bytes(page) == bytes(BS) and clock.ios == []
    page[:] = b"p" * BS
    c.mark_dirty(key, page)
    assert key not in image.noted                          # a page has no place in the image yet
    dirty(c, 500, fill=1)                                  # a stale dirty buffer of the target block
    assert c.ndirty == 2
    c.rekey(key, 500)
    assert key not in c and c.buffers[500].data is page and c.buffers[500].blkno == 500
    assert image.noted[500] is page
    assert c.ndirty == 1 == ndirty_true(c)                 # the stale buffer's dirtiness went with it
    c.rekey(vkey(12, 4), 501)                              # not cached: nothing happens
    assert 501 not in c
    c.sync()
    assert clock.writes() == [(500, 1)]


def test_write_back_asks_the_placer_for_delayed_pages():
    c, clock, stats, _ = make()

    class Placer:
        calls = []

        def place(self, keys):
            self.calls.append(list(keys))
            out = {}
            for i, k in enumerate(sorted(keys, reverse=True)):   # (0, 0) -> 300, (0, 1) -> 301
                c.rekey(k, 300 + i)
                out[k] = 300 + i
            return out

    c.placer = Placer()
    for lblk in (0, 1):
        p = c.page(vkey(9, lblk), "data", 9)
        c.mark_dirty(vkey(9, lblk), p)
    dirty(c, 302)
    c.sync()
    assert Placer.calls == [sorted([vkey(9, 0), vkey(9, 1)])]
    assert clock.writes() == [(300, 3)]                    # placed pages cluster with their neighbour
    assert c.ndirty == 0 == ndirty_true(c)


# write-back policies ----------------------------------------------------------------------------
def test_unknown_writeback_policy_is_refused():
    with pytest.raises(ValueError, match="choose one of: async, softdep, sync"):
        make(writeback="eventually")


def test_sync_policy_writes_the_operations_metadata_before_it_returns():
    c, clock, stats, _ = make(writeback="sync")
    c.begin_op("create")
    dirty(c, 10, "inode")
    dirty(c, 11, "data")
    dirty(c, 12, "dir")
    dirty(c, 13, "inode")
    c.end_op()
    assert [(b, n, w) for op, b, n, _, _, w in clock.ios] == [(10, 1, True), (12, 2, True)]
    assert clock.now == 2.0                                # the operation waited for both
    assert c.is_dirty(11) and c.ndirty == 1
    dirty(c, 20, "inode")                                  # outside an operation: delayed
    c.end_op()
    assert c.is_dirty(20) and len(clock.ios) == 2


@pytest.mark.parametrize("writeback", ["async", "softdep"])
def test_delayed_policies_write_nothing_at_the_end_of_an_operation(writeback):
    c, clock, stats, _ = make(writeback=writeback)
    c.begin_op("create")
    dirty(c, 10, "inode")
    dirty(c, 12, "dir")
    c.end_op()
    assert clock.ios == [] and c.ndirty == 2


def _create_then_sync(writeback):
    """One create's bitmap, inode and directory blocks (blocks 8, 7, 6), then sync."""
    c, clock, stats, _ = make(writeback=writeback)
    c.begin_op("create")
    for b, k in ((8, "bitmap"), (7, "inode"), (6, "dir")):
        c.mark_dirty(b, c.bread(b, k), k)
    c.end_op()
    clock.ios.clear()
    c.sync()
    return c, clock, stats


def test_softdep_rolls_back_an_entry_written_before_its_inode_and_writes_it_again():
    c, clock, stats = _create_then_sync("softdep")
    # round 1: all three go out at once (one request); inode and entry are rolled back;
    # round 2 carries the inode, round 3 the entry
    assert clock.writes() == [(6, 3), (6, 2), (6, 1)]
    assert stats.totals()["softdep_rollbacks"] == 3 and c.ndirty == 0 and not c.deps.pending


def test_async_has_no_rollbacks_for_the_same_operation():
    c, clock, stats = _create_then_sync("async")
    assert clock.writes() == [(6, 3)] and "softdep_rollbacks" not in stats.totals()


def test_the_syncer_writes_what_has_been_dirty_for_a_whole_interval():
    c, clock, stats, _ = make(sync_interval=30.0)
    dirty(c, 1)                                            # at t = 0
    clock.now = 20.0
    dirty(c, 2)
    clock.now = 31.0
    c.begin_op("read")
    c.end_op()
    assert clock.writes() == [(1, 1)] and c.is_dirty(2) and c.last_syncer == 31.0
    clock.now = 59.0                                       # block 2 is old enough, but the syncer slept
    c.end_op()
    assert len(clock.writes()) == 1
    clock.now = 61.0
    c.end_op()
    assert clock.writes() == [(1, 1), (2, 1)] and c.ndirty == 0
    assert all(not w for op, *_, w in clock.ios)           # the syncer does not make anyone wait


def test_background_threshold_writes_the_oldest_without_waiting():
    c, clock, stats, _ = make(capacity=100)                # background 10, hard limit 40
    assert (c.bg_dirty, c.hard_dirty) == (10, 40)
    blocks = [90 - 5 * i for i in range(12)]               # dirtied oldest first, highest number first
    for i, b in enumerate(blocks):
        clock.now = float(i) * 0.01
        dirty(c, b)
    clock.ios.clear()
    now = clock.now
    c.end_op()
    written = sorted(b for b, _ in clock.writes())
    assert written == sorted(blocks[:7])                   # down to half the threshold: the 7 oldest
    assert clock.now == now and stats.totals()["writeback_throttled"] == 0
    assert c.ndirty == 5


def test_hard_limit_throttles_the_writer():
    c, clock, stats, _ = make(capacity=100)
    for b in range(0, 90, 2):                              # 45 dirty, none contiguous
        dirty(c, b)
    c.end_op()
    assert stats.totals()["writeback_throttled"] == 1
    assert len(clock.writes()) == 40 and all(w for op, *_, w in clock.ios)
    assert clock.now == 40.0 and c.ndirty == 5


# a random walk against a model ------------------------------------------------------------------
class CacheMachine(RuleBasedStateMachine):
    """Random reads, writes, forgets, syncs and operation ends on a 64-block cache over 160
    blocks: every read returns the newest contents, the dirty index holds the dirty buffers, the
    use stamps follow the LRU order, the cache stays within capacity, and only dirty buffers
    are ever written (RecClock checks)."""

    def __init__(self):
        super().__init__()
        self.c, self.clock, self.stats, self.image = make(capacity=64, writeback="sync", maxio=8)
        self.model: dict[int, bytes] = {}
        self.n = 0

    blocks = st.integers(0, 159)

    @rule(b=blocks)
    def read(self, b):
        assert bytes(self.c.bread(b, "data")) == self.model.get(b, base(b))

    @rule(b=blocks, kind=st.sampled_from(["data", "inode", "dir", "bitmap"]))
    def write(self, b, kind):
        self.n += 1
        self.model[b] = dirty(self.c, b, kind, fill=self.n % 256)

    @rule(b=blocks)
    def modify(self, b):
        buf = self.c.bread(b, "data")
        buf[0] = (buf[0] + 1) % 256
        self.c.mark_dirty(b, buf)
        self.model[b] = bytes(buf)

    @rule(b=blocks)
    def forget(self, b):
        self.c.forget(b)
        self.model.pop(b, None)

    @rule(start=blocks, n=st.integers(1, 20), wait=st.booleans())
    def read_run(self, start, n, wait):
        self.c.read_run(start, min(n, 160 - start), "data", 0, wait)

    @rule(op=st.sampled_from(["read", "create"]), dt=st.sampled_from([0.0, 31.0]))
    def operation(self, op, dt):
        self.c.begin_op(op)
        self.clock.now += dt
        self.c.end_op()

    @rule()
    def sync(self):
        self.c.sync()
        assert self.c.ndirty == 0

    @rule()
    def drop_clean(self):
        self.c.drop_clean()

    @invariant()
    def consistent(self):
        c = self.c
        assert c.ndirty == ndirty_true(c)
        assert c.dirty == {b: buf for b, buf in c.buffers.items() if buf.dirty}
        used = [buf.used for buf in c.buffers.values()]      # the LRU's order, which the
        assert used == sorted(set(used))                      # thresholds' tie-break relies on
        assert len(c) <= c.capacity
        assert all(buf.blkno == b for b, buf in c.buffers.items())
        assert self.stats.totals().get("blocks_written", 0) == sum(n for _, n in self.clock.writes())
        assert all(n <= c.maxio for _, n in self.clock.writes())
        assert self.clock.overlapping_writes() == []


CacheMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=60, deadline=None,
                                          derandomize=True, suppress_health_check=list(HealthCheck))
TestCacheRandomWalk = CacheMachine.TestCase


def test_softdep_past_max_softdeps_the_writer_sleeps_and_prerequisites_go_out():
    c, clock, stats, _ = make(capacity=64, writeback="softdep")     # 64 x 64 B: max_softdeps 2
    assert c.max_deps == 2
    c.begin_op("create")
    for b, k in ((8, "bitmap"), (7, "inode"), (6, "dir")):
        c.mark_dirty(b, c.bread(b, k), k)
    clock.ios.clear()
    t = clock.now
    c.end_op()
    assert stats.totals()["softdep_throttled"] == 1
    assert clock.writes() == [(7, 2)]              # what others wait for: bitmap and inode
    assert clock.now == pytest.approx(t + 0.020)   # tickdelay, not the writes
    assert c.is_dirty(6) and c.is_dirty(7) and not c.is_dirty(8)    # the inode rolled back


def test_softdep_bufdaemon_with_only_dependent_buffers_writes_half_and_sleeps():
    # buf_daemon: flushbufqueues(0) finds nothing a write would not roll back (the bitmap is
    # on its way to the disk, the inode and the entry wait for it), so flushbufqueues(1)
    # writes half the target, rolled back, and a writer at the hard limit sleeps hz / 10
    c, clock, stats, _ = make(writeback="softdep")
    c.begin_op("create")
    for b, k in ((8, "bitmap"), (7, "inode"), (6, "dir")):
        c.mark_dirty(b, c.bread(b, k), k)
    c.end_op()
    c._write_back([8], wait=False)                 # in flight: done at t + 1
    clock.ios.clear()
    t = clock.now
    c._flush_oldest(2, wait=True)
    assert stats.totals()["softdep_flush_with_deps"] == 1
    assert clock.writes() == [(7, 1)] and c.is_dirty(7)             # rolled back, dirty again
    assert clock.now == pytest.approx(t + 2.0 + 0.100)              # its write, then the sleep
    c._flush_oldest(2, wait=False)                 # the background threshold: no sleep
    assert clock.now == pytest.approx(t + 2.0 + 0.100)


@pytest.mark.parametrize("outer,inner", [("getattr", "create"), ("create", "getattr"),
                                         ("create", "unlink"), ("getattr", "read")])
def test_nested_operations_record_dependencies_as_a_deptracker_driven_by_hand(outer, inner):
    """The cache opens a DepTracker frame only when there is something to record (the fast
    path); what it records must be what a tracker given every operation's frame records."""
    from simfs.blockio.softdeps import DepTracker
    c, clock, _, _ = make(writeback="softdep")
    mode = make_writeback("softdep")
    hand = DepTracker()
    steps = [("begin", outer), ("dirty", 8, "bitmap"), ("dirty", 7, "inode"),
             ("begin", inner), ("dirty", 6, "dir"), ("dirty", 5, "inode"), ("dirty", 4, "bitmap"),
             ("end",), ("dirty", 3, "dir"), ("end",)]
    for step in steps:
        if step[0] == "begin":
            c.begin_op(step[1])
            hand.begin(mode.dependencies(step[1]))
        elif step[0] == "dirty":
            c.mark_dirty(step[1], c.bread(step[1], step[2]), step[2])
            hand.dirtied(step[1], step[2])
        else:
            c.end_op()
            hand.end(c.is_dirty, clock.now)

    def shape(t):
        return {b: sorted((u.tag, sorted(n.tag for n in u.needs)) for u in ups)
                for b, ups in t.pending.items()}
    assert shape(c.deps) == shape(hand) and c.deps.live == hand.live
    assert bool(hand.pending) == ("create" in (outer, inner) or "unlink" in (outer, inner))
