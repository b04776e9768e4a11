"""Hypothesis properties of the disk models: causality, non-negative breakdowns that add up,
determinism, and a seek curve that never gets faster with distance."""

from functools import lru_cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disk_models import make_disk

SPECS = ["wd1200jb", "sata7200", "sas10k", "wd-ears", "wd-ears,partition_offset=37",
         "sata7200,write_cache=off", "wd-ears,write_cache=off,partition_offset=63", "sas10k,drive_cache=0",
         "wd1200jb,write_buffer=0.25,segments=2", "ideal"]
COMPONENTS = ("queue", "overhead", "seek", "rotation", "transfer", "interface", "rmw")


@lru_cache(maxsize=None)
def disk_for(spec):
    return make_disk(spec)


request = st.tuples(
    st.sampled_from("RRW"),                                     # op
    st.one_of(st.floats(0, 1), st.just(-1.0)),                  # position; -1: continue the last
    st.sampled_from([1, 3, 8, 8, 16, 64, 255, 256, 1024]),       # sectors
    st.sampled_from([0.0, 0.0, 1e-5, 1e-3, 0.02, 1.0]),          # gap before issue
    st.booleans(),                                              # sync
    st.integers(0, 30),                                         # flush when 0
)
streams = st.lists(request, min_size=1, max_size=60)


def play(disk, stream):
    disk.reset()
    t, nxt, out = 0.0, 0, []
    for op, pos, n, gap, sync, fl in stream:
        n = min(n, disk.sectors)
        lba = nxt if pos < 0 else int(pos * (disk.sectors - n))
        lba = min(lba, disk.sectors - n)
        t += gap
        r = disk.submit(op, lba, n, t, sync)
        out.append(r)
        nxt = lba + n
        if fl == 0:
            out.append(disk.flush(r.finish))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=st.sampled_from(SPECS), stream=streams)
def test_results_are_causal_non_negative_and_add_up(spec, stream):
    disk = disk_for(spec)
    prev_finish = 0.0
    for r in play(disk, stream):
        if isinstance(r, float):                    # a flush
            assert r >= prev_finish
            prev_finish = r
            continue
        assert r.finish >= r.start >= r.issue
        for name in COMPONENTS:
            assert getattr(r, name) >= 0.0, name
        assert sum(getattr(r, name) for name in COMPONENTS) == \
            __import__("pytest").approx(r.total, rel=1e-9, abs=1e-12)
        assert r.start >= prev_finish - 1e-12       # one command at a time
        prev_finish = r.finish
    assert disk.busy_until == prev_finish


@settings(max_examples=30, deadline=None)
@given(spec=st.sampled_from(SPECS), stream=streams)
def test_the_same_stream_replays_identically(spec, stream):
    disk = disk_for(spec)
    assert play(disk, stream) == play(disk, stream)
    assert play(make_disk(spec), stream) == play(disk, stream)


@settings(max_examples=200, deadline=None)
@given(spec=st.sampled_from(SPECS[:4]), x=st.floats(0, 1), y=st.floats(0, 1))
def test_seek_time_never_decreases_with_distance(spec, x, y):
    disk = disk_for(spec)
    top = disk.layout.cylinders - 1
    d1, d2 = sorted((int(x * top), int(y * top)))
    assert 0.0 <= disk.seek(d1) <= disk.seek(d2)
    assert disk.seek(d2) <= disk.seek(top)


@settings(max_examples=100, deadline=None)
@given(spec=st.sampled_from(SPECS[:4]), pos=st.floats(0, 1), n=st.integers(1, 5000))
def test_a_media_read_takes_at_least_its_transfer_and_at_most_a_full_positioning(spec, pos, n):
    disk = disk_for(spec)
    disk.reset()
    n = min(n, disk.sectors)
    lba = int(pos * (disk.sectors - n))
    r = disk.submit("R", lba, n, 0.5)
    assert not r.cache_hit
    assert r.rotation < disk.t_rev
    assert r.seek <= disk.seek(disk.layout.cylinders - 1) + disk.write_settle
    rate_floor = min(disk.layout.zone_rate(z) for z in range(disk.layout.nzones))
    assert r.transfer <= n * 512 / rate_floor * 1.01 + disk.t_rev
