"""simfs.blockio.clock: the simulated clock and its one path to the disk model.

A scripted disk (fixed service time, one request at a time, a write cache that takes a
while to flush) shows what the clock adds: block numbers turned into sectors, waits only for
synchronous requests, queueing behind background ones, statistics and trace rows for every
request, and drain waiting for both the queue and the drive's cache.
"""

from __future__ import annotations

import pytest

from disk_models import DiskResult, make_disk
from simfs.blockio.clock import SimClock
from simfs.blockio.stats import Stats


class ScriptedDisk:
    """0.25 s per request plus 1 ms per sector, FIFO; writes sit in a cache that flush()
    empties 0.5 s after the last of them."""

    def __init__(self):
        self.calls = []
        self.busy_until = 0.0
        self.cached_writes = 0
        self.flushes = []

    def submit(self, op, lba, sectors, issue_time, sync=False):
        self.calls.append((op, lba, sectors, issue_time, sync))
        start = max(issue_time, self.busy_until)
        finish = start + 0.25 + 0.001 * sectors
        self.busy_until = finish
        if op == "W":
            self.cached_writes += 1
        return DiskResult(issue_time, start, finish, queue=start - issue_time, overhead=0.25,
                          transfer=0.001 * sectors, cache_hit=False)

    def flush(self, now):
        self.flushes.append(now)
        done = now + 0.5 if self.cached_writes else now
        self.cached_writes = 0
        return done


class Trace:
    def __init__(self):
        self.rows = []

    def record(self, *row):
        self.rows.append(row)


def make(spb=8, trace=None):
    disk, stats = ScriptedDisk(), Stats()
    return SimClock(disk, stats, spb, trace), disk, stats


def test_cpu_and_wait_until_never_go_back():
    clock, _, _ = make()
    clock.cpu(0.5)
    clock.cpu(0.25)
    assert clock.now == 0.75
    clock.wait_until(0.5)
    assert clock.now == 0.75
    clock.wait_until(2.0)
    assert clock.now == 2.0


def test_io_converts_blocks_to_sectors_and_waits_when_asked():
    clock, disk, stats = make(spb=8)
    finish = clock.io("R", 100, 4, "inode", ino=12)
    assert disk.calls == [("R", 800, 32, 0.0, False)]
    assert finish == pytest.approx(0.25 + 0.032) and clock.now == finish
    t = clock.now
    f2 = clock.io("W", 10, 1, "data", wait=False)
    assert clock.now == t and f2 == pytest.approx(t + 0.258)          # background: the caller goes on
    f3 = clock.io("R", 20, 1, "dir", sync=True)
    assert disk.calls[-1] == ("R", 160, 8, t, True)
    assert f3 == pytest.approx(f2 + 0.258) and clock.now == f3          # queued behind the write


def test_every_request_is_counted_with_its_cause():
    clock, disk, stats = make(spb=2)
    clock.io("R", 0, 4, "inode")
    clock.io("R", 1000, 1, "dir")
    clock.io("W", 1001, 2, "dir", wait=False)
    c = stats.totals()
    assert (c["disk_reads"], c["disk_writes"]) == (2, 1)
    assert (c["sectors_read"], c["sectors_written"]) == (10, 4)
    assert (c["disk_requests_inode"], c["disk_requests_dir"]) == (1, 2)
    assert c["seeks"] == 1                         # 8 -> 2000 is a seek; 2002 -> 2002 is not
    dt = stats.phase.disk_time
    assert dt["overhead"] == pytest.approx(0.75) and dt["transfer"] == pytest.approx(0.014)
    assert dt["busy"] == pytest.approx(0.75 + 0.014)


def test_trace_rows_carry_the_phase():
    trace = Trace()
    clock, disk, stats = make(spb=8, trace=trace)
    clock.io("R", 3, 1, "inode", ino=7)
    stats.mark("readback", clock.now)
    clock.io("W", 4, 2, "data", ino=9, wait=False)
    assert [(op, lba, n, cause, ino, phase, wait) for op, lba, n, _, cause, ino, phase, wait in trace.rows] == \
        [("R", 24, 8, "inode", 7, "all", True), ("W", 32, 16, "data", 9, "readback", False)]


def test_drain_waits_for_the_queue_and_then_the_drive_cache():
    clock, disk, stats = make()
    f = clock.io("W", 0, 1, "data", wait=False)
    clock.io("W", 100, 1, "data", wait=False)
    assert clock.now == 0.0
    clock.drain()
    assert disk.flushes == [pytest.approx(2 * (0.25 + 0.008))]        # flushed once the queue was empty
    assert clock.now == pytest.approx(disk.busy_until + 0.5) and clock.now > f
    now = clock.now
    clock.drain()                                                     # nothing cached: no time
    assert clock.now == now


def test_flushes_and_the_drive_s_own_work_are_counted_in_the_phase_they_happen():
    clock = SimClock(make_disk("sata7200"), Stats(), 8)
    clock.io("W", 1000, 4, "data", wait=False)
    clock.stats.mark("sync", clock.now)
    issued = max(clock.now, clock.disk.busy_until)     # FLUSH CACHE goes once the write is taken
    clock.drain()                      # the destage is played out here: it belongs to "sync"
    snap = clock.stats.snapshot(clock.now)
    first, sync = snap["phases"]
    assert first["counters"]["drive_destages"] == 0 and first["counters"]["drive_flushes"] == 0
    assert sync["counters"]["drive_destages"] == 1 and sync["counters"]["sectors_destaged"] == 32
    assert sync["counters"]["drive_flushes"] == 1
    assert sync["disk_time"]["flush"] == pytest.approx(clock.now - issued)
    work = sum(sync["disk_time"][k] for k in ("destage_seek", "destage_rotation", "destage_transfer"))
    assert 0 < work <= sync["disk_time"]["flush"]
    assert snap["total"]["counters"]["drive_destages"] == 1


def test_the_ideal_disk_costs_nothing():
    stats = Stats()
    clock = SimClock(make_disk("ideal"), stats, 8)
    for i in range(10):
        clock.io("R", i * 1000, 16, "data")
        clock.io("W", i, 1, "inode", wait=False)
    clock.drain()
    assert clock.now == 0.0 and stats.totals()["disk_reads"] == 10


def test_a_real_drive_charges_reads_and_queues_behind_write_back():
    alone = SimClock(make_disk("sata7200"), Stats(), 8)
    t_alone = alone.io("R", 10, 1, "inode")
    assert t_alone == alone.now > 0
    clock = SimClock(make_disk("sata7200"), Stats(), 8)
    f_write = clock.io("W", 1_000_000, 32, "data", wait=False)
    assert clock.now == 0.0 and f_write > 0
    t = clock.io("R", 10, 1, "inode")
    assert t == clock.now > f_write and t > t_alone
