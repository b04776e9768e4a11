"""Two rules of the rotating-drive model (disk_models/rotating.py, after DiskSim's segmented
cache) that test_disk_models.py leaves out: a read-ahead segment keeps only the last
seg_sectors of its stream (what a long sequential read passed is no longer in the buffer),
and after a media read the head rests on the track of the last sector read (so a read that
starts on the next track pays a head switch)."""

import pytest

from disk_models import make_disk

START = 1_000_000


def test_a_long_stream_keeps_only_its_last_segment_of_sectors():
    d = make_disk("sata7200")
    assert not d._wrap_as_read and d.nseg
    t, n = 0.0, 6 * d.seg_sectors
    for i in range(0, n, 64):                    # sequential reads, mostly buffer hits
        t = d.submit("R", START + i, 64, t).finish
    seg = next(s for s in d._segs.segs if s.start <= START + n - 1 <= s.end)
    assert seg.end - seg.start <= d.seg_sectors
    r = d.submit("R", START, 8, t)               # the stream's first sectors: read again
    assert not r.cache_hit and r.seek + r.rotation > 0.0


def test_after_a_media_read_the_head_is_on_the_last_sectors_track():
    d = make_disk("sata7200,readahead=0")        # nothing moves the head after the read
    L = d.layout
    x = 2_000_000
    while L.track(x) == L.track(x + 1):
        x += 1
    first = x + 1                                # the first sector of the next track
    (c0, h0), (c1, h1) = L.track(x), L.track(first + 1)
    assert c0 == c1 and h0 != h1                 # the same cylinder, another head
    r1 = d.submit("R", first - 8 - d.offset, 8, 0.0)      # ends with the track's last sector
    r2 = d.submit("R", first + 1 - d.offset, 8, r1.finish)
    assert not r2.cache_hit and r2.seek == d.head_switch


X = 3_000_000


def test_a_request_outside_the_drive_is_refused_by_its_range():
    d = make_disk("sata7200")
    with pytest.raises(ValueError, match=r"request lba=.* outside 0\.\."):
        d.submit("R", d.sectors - 4, 8, 0.0)


def test_a_hit_waits_for_the_read_ahead_to_pass_its_last_sector():
    d = make_disk("sata7200")
    a = d.submit("R", X, 8, 0.0)
    media = a.start + a.overhead + a.seek + a.rotation       # the stream under the head from X
    r = d.submit("R", X + 512, 8, a.finish)                   # ahead of the read-ahead yet
    assert r.cache_hit and r.transfer > 0.0
    lo = d.offset + X
    assert r.finish >= media + d.layout.stream_time(lo, lo + 520) - 1e-12


def test_a_hit_in_the_read_ahead_keeps_the_segment_where_it_starts():
    d = make_disk("sata7200")
    a = d.submit("R", X, 8, 0.0)
    b = d.submit("R", X + 8, 8, a.finish)                     # a hit: read-ahead extended
    assert b.cache_hit
    r = d.submit("R", X - 100, 8, b.finish + 1.0)             # before the stream: never read
    assert not r.cache_hit


def test_positioning_is_what_the_drive_then_spends():
    # the command queue's estimate (disk_models.queue) against the service itself, while
    # read-ahead runs, after it has finished, and for a read the buffer holds (SPCTF: 0)
    L = make_disk("sata7200").layout
    edge = X
    while L.track(edge)[0] == L.track(edge + 1)[0]:
        edge += 1                                # the last sector of a cylinder
    x = edge - 100 - make_disk("sata7200").offset   # read-ahead from here crosses into the next
    for dt in (0.0005, 0.002, 0.02, 1.0):
        for target in range(x + 1500, x + 6000, 139):      # the next cylinders, around a turn
            d = make_disk("sata7200")
            a = d.submit("R", x, 8, 0.0)
            est = d.positioning("R", target, 8, a.finish + dt)
            r = d.submit("R", target, 8, a.finish + dt)
            assert est == pytest.approx(r.seek + r.rotation, abs=1e-12), (dt, target)
    d = make_disk("sata7200")
    a = d.submit("R", X, 8, 0.0)
    t = d.submit("R", 9_000_000, 8, a.finish + 1.0).finish + 1.0   # X's read-ahead stopped
    seg = next(s for s in d._segs.segs if s.start == d.offset + X)
    last = seg.end - d.offset                                 # the segment ends before `last`
    assert d.positioning("R", X, 8, t, cache=True) == 0.0
    assert d.positioning("R", last - 8, 8, t, cache=True) == 0.0       # its last sectors
    assert d.positioning("R", last - 8, 9, t, cache=True) > 0.0        # one past them
    assert d.positioning("W", X, 8, t, cache=True, sync=True) > 0.0    # a FUA write: the media
    assert d.positioning("W", X, 8, t, cache=True) == 0.0              # the write cache takes it
