"""Buffer-cache paths test_cache.py leaves out (simfs.blockio.cache), with its recording clock
and in-memory image: a run read around blocks whose writes are in flight (Linux reclaims no
page under writeback, so those come from memory and split the read), a peek of one block the
cache does not hold, and a buffer re-attached by mark_dirty without a kind (Volume's default:
a data block)."""

from __future__ import annotations

from simfs.blockio.cache import vkey
from tests.unit.test_cache import base, dirty, make


def test_a_run_read_stops_at_a_block_whose_write_is_in_flight():
    c, clock, _, _ = make(capacity=64)
    data = {b: dirty(c, b) for b in range(10, 74)}
    c.bread(200, "data")                       # evicts 10..13, their writes in flight
    assert 10 not in c and clock.writes() == [(10, 4)]
    reads = len(clock.ios)
    c.read_run(8, 6, "data", 0, wait=False)     # 8, 9 from the disk; 10..13 from memory
    assert [io[:3] for io in clock.ios[reads:] if io[0] == "R"] == [("R", 8, 2)]
    assert [bytes(c.bread(b, "data")) for b in (8, 9, 10, 13)] == [base(8), base(9), data[10], data[13]]


def test_peek_of_one_block_not_cached_reads_the_image_without_caching_it():
    c, clock, _, _ = make()
    assert c.peek(42) == base(42)
    assert 42 not in c and clock.ios == []


def test_a_buffer_marked_dirty_without_a_kind_is_written_as_data():
    c, clock, _, _ = make()
    buf = bytearray(b"\x07" * len(base(0)))
    c.mark_dirty(9, buf)                        # not cached: attached anew
    c.sync()
    assert [io[:4] for io in clock.ios if io[0] == "W"] == [("W", 9, 1, "data")]


def test_peek_of_several_blocks_sees_the_cached_ones():
    c, clock, _, _ = make()
    mid = dirty(c, 11)
    assert c.peek(10, 3) == base(10) + mid + base(12)
    assert c.peek(11, 2) == mid + base(12)
    assert 10 not in c and 12 not in c and [io for io in clock.ios if io[0] == "R"] == []


def test_the_cache_evicts_again_after_placing_delayed_pages():
    # no eviction while the placer gives delayed pages their blocks; afterwards as before
    c, clock, _, _ = make(capacity=64)

    class Placer:
        def place(self, keys):
            out = {}
            for i, k in enumerate(sorted(keys, reverse=True)):
                c.rekey(k, 300 + i)
                out[k] = 300 + i
            return out

    c.placer = Placer()
    p = c.page(vkey(9, 0), "data", 9)
    c.mark_dirty(vkey(9, 0), p)
    c.sync()
    assert clock.writes() == [(300, 1)]
    for b in range(1000, 1100):
        c.bread(b, "data")
    assert len(c.buffers) <= 64
