"""The 4K/512e model's read-modify-write of a write written through (FUA), stated from its
docstring (disk_models/advanced_format.py, after Hitachi's "Adaptive PRE_READ" and the WD and
Dell white papers): the drive reads the partly covered physical sectors as a read (no write
settle), then waits for them to come round again - one revolution on the same track - and
a physical sector its read buffer already holds needs no pre-read."""

import pytest

from disk_models import make_disk

SPEC = "wd-ears,partition_offset=40"     # an aligned partition: LBA 8k is a physical boundary
REV = 60.0 / 5400                        # wd-ears turns at 5400 rpm


def test_a_misaligned_fua_write_costs_a_pre_read_and_one_revolution():
    lba = 5_000_001                      # both ends partial, one track, far from the head
    w = make_disk(SPEC).submit("W", lba, 8, 0.0, True)
    r = make_disk(SPEC).submit("R", lba, 8, 0.0)     # the same sectors read by a cold drive
    # the first positioning is the pre-read's: a read's seek and rotational wait
    assert (w.seek, w.rotation) == (r.seek, r.rotation)
    assert w.rmw == pytest.approx(REV, rel=1e-9)
    assert w.finish - w.issue == pytest.approx(w.overhead + w.seek + w.rotation + w.transfer + w.rmw)


def test_an_aligned_fua_write_pays_nothing_more():
    w = make_disk(SPEC).submit("W", 5_000_000, 8, 0.0, True)
    assert w.rmw == 0.0


def test_sectors_in_the_read_buffer_need_no_pre_read():
    d = make_disk(SPEC)
    r = d.submit("R", 800, 32, 0.0)                  # holds physical sectors 840..871
    w = d.submit("W", 801, 8, r.finish, True)        # partial 840 and 848: both held
    assert w.rmw == 0.0


def _position(d, cur, t, lba, write):
    """Seek and rotational wait from track `cur` at time t to the start of `lba` (DiskSim's
    positioning: a seek across cylinders, plus the write settle before a write; a head switch
    on the same cylinder; then the wait for the sector to come under the head)."""
    cyl, head, ang = d.layout.locate(lba)
    if cyl != cur[0]:
        seek = d.seek(abs(cyl - cur[0])) + (d.write_settle if write else 0.0)
    else:
        seek = d.head_switch if head != cur[1] else 0.0
    w = (ang - (t + seek) / d.t_rev) % 1.0
    return seek, (0.0 if w > 1.0 - 1e-7 else w) * d.t_rev


def _fua_rmw(d, w, a, b):
    """What the pre-read adds to a FUA write of whole-disk sectors [a, b) on a cold drive, by
    Hitachi's description: read the partial physical sectors (as reads) in the order the head
    reaches them - the first one at the write's own seek and rotation (w) - then position for
    the write (as a write) at the first physical sector and write [pa, pb)."""
    L = d.layout
    pa, pb = a & ~7, (b + 7) & ~7
    parts = ([pa] if a != pa else []) + ([pb - 8] if b & 7 and (pb - 8 != pa or a == pa) else [])
    t = w.start + w.overhead + w.seek + w.rotation + L.stream_time(parts[0], parts[0] + 8)
    cur = L.track(parts[0] + 7)
    for p in parts[1:]:
        s, r = _position(d, cur, t, p, False)
        t += s + r + L.stream_time(p, p + 8)
        cur = L.track(p + 7)
    s, r = _position(d, cur, t, pa, True)
    return t + s + r + L.stream_time(pa, pb) - (w.start + w.overhead + w.seek + w.rotation + w.transfer)


@pytest.mark.parametrize("lba", [5_000_001 + 776 * k for k in range(6)])
def test_a_fua_write_across_tracks_and_cylinders_pre_reads_both_ends(lba):
    # several starts: the margin by which the tail's pre-read misses the head sector's next
    # pass differs with the angle between them
    d0 = make_disk(SPEC)
    c0 = d0.layout.track(lba + 40)[0]
    cyl_len = next(n for n in range(0, 40_000, 64) if d0.layout.track(lba + 40 + n)[0] != c0)

    def turns(n):
        d = make_disk(SPEC)
        a = lba + d.offset
        w = d.submit("W", lba, n, 0.0, True)
        assert w.rmw == pytest.approx(_fua_rmw(d, w, a, a + n), abs=1e-9), n
        return round(w.rmw / REV)

    coarse = {n: turns(n) for n in range(8, cyl_len + 3000, 37)}
    assert set(coarse.values()) == {1, 2}, "the tail's pre-read sometimes costs a second turn"
    for lo in [n for n in coarse if n + 37 in coarse and coarse[n] != coarse[n + 37]]:
        for n in range(lo + 1, lo + 37):        # every length where the second turn starts or ends
            turns(n)


def test_a_cached_misaligned_write_is_pre_read_at_destage():
    d = make_disk(SPEC)
    c = d.submit("W", 5_000_001, 7, 1.0, False)    # [5000041, 5000048): its physical sector partly
    d.flush(c.finish)
    r = make_disk(SPEC).submit("R", 5_000_000, 8, c.finish - d.ovh)   # a cold read of it, then
    st = d.layout.stream_time(5_000_040, 5_000_048)
    assert d.work_counters["sectors_preread"] == 8
    assert d.work_time["destage_rmw"] == pytest.approx(r.seek + r.rotation + st, abs=1e-12)
    # then the write waits for the sector to come round under the head
    assert d.work_time["destage_seek"] == 0.0
    assert d.work_time["destage_rotation"] + st == pytest.approx(REV, rel=1e-9)


def test_a_sector_just_past_the_read_buffer_is_pre_read():
    d = make_disk(SPEC)
    d.submit("R", 800, 8, 0.0)                      # read-ahead fills a segment from 840 on
    d.submit("R", 900_000, 8, 1.0)                  # a read elsewhere stops it
    end = max(s.end for s in d._segs.segs if s.start == 840)
    assert end % 8 == 0
    w = d.submit("W", end + 1 - d.offset, 8, 2.0, True)   # partial: [end, end + 8) and the next
    assert w.rmw > 0.0, "the buffer ends where this physical sector starts: it must be read"
