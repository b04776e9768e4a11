"""The modelled page cache's write-back (simfs.inprocess.pagecache): Linux 2.6.29's rules on a fake
clock and disk, so each rule can be watched on its own."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simfs.inprocess.pagecache import PAGE, PageWriteback, WritebackParams


class Clock:
    def __init__(self):
        self.now = 0.0

    def cpu(self, s):
        self.now += s

    def wait_until(self, t):
        self.now = max(self.now, t)


class Disk:
    """A sink writing `rate` pages per second, one request per 32 pages, behind what is queued."""

    def __init__(self, clock, rate=15000.0):
        self.clock, self.rate, self.busy = clock, rate, 0.0
        self.chunks = []                       # (time, ino, pages) per writepages call

    def __call__(self, ino, pages):
        self.chunks.append((self.clock.now, ino, list(pages)))
        out = []
        for i in range(0, len(pages), 32):
            n = len(pages[i:i + 32])
            self.busy = max(self.busy, self.clock.now) + n / self.rate
            out.append((self.busy, n))
        return out


def fill(params, npages, order=None, sync=True):
    clock = Clock()
    disk = Disk(clock)
    pc = PageWriteback(clock, disk, params)
    for p in order if order is not None else range(npages):
        pc.dirty(7, p, npages)
    before_sync = len(disk.chunks)
    if sync:
        pc.sync_file(7)
    return pc, disk, clock, before_sync


def test_linux_2_6_29_limits_for_the_seeds_machine():
    p = WritebackParams()                  # 6 GiB, 4 CPUs, dirty_ratio 10, background 5
    pages = (6 << 30) // PAGE
    assert p.ratelimit_pages == 1024       # capped at 4 MiB of pages
    assert p.write_chunk == 1536
    bg, dirty, task = p.thresholds()
    assert (bg, dirty) == (pages * 5 // 100, pages * 10 // 100)
    assert task == dirty - dirty // 8
    small = WritebackParams(ram=64 << 20, cpus=4)
    assert small.ratelimit_pages == max(16, (64 << 20) // PAGE // 128)
    odd = WritebackParams(dirty_ratio=6, dirty_background_ratio=8)
    assert odd.thresholds()[0] == (6 << 30) // PAGE * 3 // 100      # background >= limit: half


def test_a_file_under_the_background_threshold_waits_for_msync():
    p = WritebackParams(ram=1 << 30)       # background 5 % = 13,107 pages
    order = random.Random(1).sample(range(8000), 8000)
    pc, disk, _, before = fill(p, 8000, order)
    assert before == 0                      # nothing left before msync
    pages = [q for _, _, batch in disk.chunks for q in batch]
    assert pages == sorted(order)           # msync: every page, ascending from 0
    assert pc.counts["pages_by_sync"] == 8000 and pc.ndirty == 0


def test_a_file_past_the_limit_goes_in_ascending_cyclic_chunks():
    p = WritebackParams(ram=256 << 20, cpus=4)
    n = 65536                              # 4x the RAM's 10 %: the dirtier is throttled
    order = [((i + 23) * 1000000007) % n for i in range(n)]
    pc, disk, clock, before = fill(p, n, order)
    assert pc.counts["throttled"] > 0 and pc.counts["pages_by_dirtier"] > 0
    assert before > 1
    written = [q for _, _, pages in disk.chunks for q in pages]
    assert sorted(written) == list(range(n))            # every page exactly once
    for _, _, pages in disk.chunks[:before]:
        # one chunk: ascending from the cyclic index, wrapping at most once
        drops = sum(1 for a, b in zip(pages, pages[1:]) if b < a)
        assert drops <= 1
        assert len(pages) <= p.write_chunk
    assert clock.now > n * p.fault_us * 1e-6            # throttling cost time


def test_the_same_fill_gives_the_same_write_back():
    p = WritebackParams(ram=128 << 20)
    order = random.Random(5).sample(range(30000), 30000)
    a, b = fill(p, 30000, order)[1], fill(p, 30000, order)[1]
    assert a.chunks == b.chunks


def test_kupdate_writes_pages_older_than_the_expiry():
    p = WritebackParams(ram=8 << 30, fault_us=20000.0)   # 20 ms per page: 40 s for 2000 pages
    pc, disk, clock, before = fill(p, 2000, sync=False)
    assert pc.counts["pages_by_kupdate"] > 0
    t, _, pages = disk.chunks[0]
    assert t >= p.dirty_expire_interval                   # not before the first page expired
    assert pages[0] == 0


def test_a_blocking_writer_waits_for_a_free_request():
    p = WritebackParams(ram=64 << 20, nr_requests=16)     # congested at 15 of 16
    clock = Clock()
    disk = Disk(clock, rate=1000.0)
    pc = PageWriteback(clock, disk, p)
    for q in range(20000):
        pc.dirty(1, q, 20000)
        assert len(pc.inflight) <= p.nr_requests     # background stops at 15, the dirtier waits


@pytest.mark.parametrize("spec, msg", [
    ("linux-9", "unknown page-cache model"),
    ("linux-2.6.29,bogus=1", "unknown parameter"),
    ("linux-2.6.29,ram=lots", "bad value"),
    ("linux-2.6.29,dirty_ratio=0", "must be positive"),
])
def test_bad_specs_are_one_line_errors(spec, msg):
    with pytest.raises(ValueError, match=msg):
        WritebackParams.parse(spec)


def test_spec_overrides():
    p = WritebackParams.parse("linux-2.6.29,ram=2G,dirty_ratio=20,fault_us=3.5")
    assert (p.ram, p.dirty_ratio, p.fault_us, p.cpus) == (2 << 30, 20, 3.5, 4)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6000), seed=st.integers(0, 10 ** 6), ram_mib=st.sampled_from([16, 32, 64, 4096]))
def test_every_dirtied_page_is_written_back_once(n, seed, ram_mib):
    order = random.Random(seed).sample(range(n), n)
    pc, disk, _, _ = fill(WritebackParams(ram=ram_mib << 20), n, order)
    written = [q for _, _, pages in disk.chunks for q in pages]
    assert sorted(written) == list(range(n)) and pc.ndirty == 0
