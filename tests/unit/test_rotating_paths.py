"""Two rules of the rotating-drive model (disk_models/rotating.py, after DiskSim's segmented
cache) that test_disk_models.py leaves out: a read-ahead segment keeps only the last
seg_sectors of its stream (what a long sequential read passed is no longer in the buffer),
and after a media read the head rests on the track of the last sector read (so a read that
starts on the next track pays a head switch)."""

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
