"""Buffer-cache paths test_cache.py leaves out (simfs.blockio.cache), with its recording clock
and in-memory image: a run read around blocks whose writes are in flight (Linux reclaims no
page under writeback, so those come from memory and split the read), a peek of one block the
cache does not hold, and a buffer re-attached by mark_dirty without a kind (Volume's default:
a data block)."""

from __future__ import annotations

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
