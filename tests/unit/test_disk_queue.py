"""Hypothesis properties of the drive's command queue (disk_models.queue): nothing lost or served
twice, FIFO and today's results at depth 1, SPTF's and C-LOOK's choices as DiskSim defines them."""

from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disk_models import DriveQueue, make_disk
from disk_models.queue import SCHEDULERS

SPECS = ["sata7200", "wd-ears,partition_offset=37", "wd1200jb,write_cache=off", "disksim-ibm18es",
         "disksim-barracuda", "ideal"]
COMPONENTS = ("queue", "overhead", "seek", "rotation", "transfer", "interface", "rmw")


@lru_cache(maxsize=None)
def disk_for(spec):
    return make_disk(spec)


request = st.tuples(
    st.sampled_from("RRW"),                                 # op
    st.one_of(st.floats(0, 1), st.just(-1.0)),              # position; -1: right after the last
    st.sampled_from([1, 8, 8, 16, 128]),                    # sectors
    st.sampled_from([0.0, 0.0, 0.0, 1e-4, 3e-3, 0.02]),     # gap before its arrival
    st.booleans(),                                          # sync (FUA)
)
streams = st.lists(request, min_size=1, max_size=50)
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def arrivals(disk, stream):
    """[(t, op, lba, sectors, sync)] with arrival times in order."""
    t, nxt, out = 0.0, 0, []
    for op, pos, n, gap, sync in stream:
        lba = nxt if pos < 0 else int(pos * (disk.sectors - n))
        lba = min(lba, disk.sectors - n)
        t += gap
        out.append((t, op, lba, n, sync))
        nxt = lba + n
    return out


def run(q, reqs):
    """Open-loop: every request is submitted before the drive picks past its arrival (the
    queue's rule); returns [(tag, result)] in completion order."""
    i, out = 0, []
    while i < len(reqs) or q.outstanding:
        pick = q.next_pick
        if i < len(reqs) and (pick is None or reqs[i][0] <= pick):
            t, op, lba, n, sync = reqs[i]
            q.submit(op, lba, n, t, sync, tag=i)
            i += 1
        else:
            out.append(q.pop())
    return out


@settings(max_examples=60, **SETTINGS)
@given(spec=st.sampled_from(SPECS), stream=streams, depth=st.sampled_from([1, 2, 4, 32]),
       sched=st.sampled_from(SCHEDULERS))
def test_no_request_is_lost_or_served_twice(spec, stream, depth, sched):
    disk = disk_for(spec)
    disk.reset()
    q = DriveQueue(disk, depth, sched)
    reqs = arrivals(disk, stream)
    done = run(q, reqs)
    assert sorted(tag for tag, _ in done) == list(range(len(reqs)))
    assert q.outstanding == 0
    prev = 0.0
    for tag, r in done:
        assert r.issue == reqs[tag][0]                   # timed from its own arrival
        assert r.finish >= r.start >= r.issue
        assert r.finish >= prev                          # completions in time order
        prev = r.finish
        for name in COMPONENTS:
            assert getattr(r, name) >= 0.0, name
        assert sum(getattr(r, n) for n in COMPONENTS) == pytest.approx(r.total, rel=1e-9, abs=1e-12)


@settings(max_examples=60, **SETTINGS)
@given(spec=st.sampled_from(SPECS), stream=streams, sched=st.sampled_from(SCHEDULERS))
def test_depth_one_is_fifo_and_todays_results_exactly(spec, stream, sched):
    disk = disk_for(spec)
    disk.reset()
    reqs = arrivals(disk, stream)
    done = run(DriveQueue(disk, 1, sched), reqs)
    assert [tag for tag, _ in done] == list(range(len(reqs)))
    disk.reset()
    alone = [disk.submit(op, lba, n, t, sync) for t, op, lba, n, sync in reqs]   # one at a time
    assert [r for _, r in done] == alone


class Watched(DriveQueue):
    """Records, at every pick, what the model says of each waiting request and which one was
    chosen, computed here and not by the scheduler."""

    def __init__(self, disk, depth, sched):
        super().__init__(disk, depth, sched)
        self.seen = []
        self.served = []
        real = disk.submit

        def submit(op, lba, n, t, sync=False):
            self.served.append(lba)
            return real(op, lba, n, t, sync)
        self._real_submit, disk.submit = real, submit

    def _least_positioning(self, cands, t, cache, recorded):
        # each key by its own definition: DiskSim's recorded state (sptf, spctf) or where the
        # head is at the pick (sptf-now, spctf-now)
        kw = {"recorded": True} if recorded else {}
        keys = {id(r): self.disk.positioning(r.op, r.lba, r.sectors, t, cache, r.sync, **kw) for r in cands}
        chosen = super()._least_positioning(cands, t, cache, recorded)
        self.seen.append((keys[id(chosen)], min(keys.values())))
        return chosen

    def _pick_clook(self, cands, t):
        last = self.served[-1] if self.served else 0
        chosen = super()._pick_clook(cands, t)
        self.seen.append((last, sorted(r.lba for r in cands), chosen.lba))
        return chosen

    def close(self):
        del self.disk.submit                     # the model's own method again


@settings(max_examples=50, **SETTINGS)
@given(spec=st.sampled_from(SPECS[:5]), stream=streams, depth=st.sampled_from([2, 4, 32]),
       sched=st.sampled_from(["sptf", "spctf", "sptf-now", "spctf-now"]))
def test_sptf_never_picks_a_longer_positioning_time(spec, stream, depth, sched):
    """At every pick, no waiting request has a smaller positioning time than the one chosen,
    each scheduler's key by its own definition (DiskSim's recorded state, or the head now)."""
    disk = disk_for(spec)
    disk.reset()
    q = Watched(disk, depth, sched)
    try:
        run(q, arrivals(disk, stream))
    finally:
        q.close()
    for chosen, best in q.seen:
        assert chosen <= best


@settings(max_examples=50, **SETTINGS)
@given(spec=st.sampled_from(SPECS), stream=streams, depth=st.sampled_from([2, 4, 32]))
def test_clook_sweeps_up_and_wraps_to_the_lowest(spec, stream, depth):
    disk = disk_for(spec)
    disk.reset()
    q = Watched(disk, depth, "clook")
    try:
        run(q, arrivals(disk, stream))
    finally:
        q.close()
    for last, lbas, chosen in q.seen:
        above = [a for a in lbas if a >= last]
        assert chosen == (min(above) if above else min(lbas))


def test_requests_beyond_the_depth_wait_at_the_host():
    disk = make_disk("sata7200,write_cache=off")
    q = DriveQueue(disk, 2, "sptf")
    for i in range(5):
        q.submit("R", 1_000_000 * (5 - i), 8, 0.0, tag=i)
    assert q.outstanding == 5
    done = q.drain()
    assert sorted(t for t, _ in done) == list(range(5))
    # the last two entered the drive only when tags freed: their queue time covers that wait
    r = dict(done)
    assert r[4].queue >= min(r[0].finish, r[1].finish)


def test_a_one_at_a_time_model_is_served_fifo():
    class Old:                                   # a plug-in of the old kind: no `queueing`
        sectors = 1 << 20
        t = 0.0

        def check(self, op, lba, n):
            pass

        busy_until = property(lambda self: self.t)

        def submit(self, op, lba, n, t, sync=False):
            from disk_models import DiskResult
            start = max(t, self.t)
            self.t = start + 0.001
            return DiskResult(t, start, self.t, start - t, 0.001)

    q = DriveQueue(Old(), 32, "sptf")
    assert (q.depth, q.scheduler) == (1, "fcfs")
    for i in range(4):
        q.submit("R", 1000 - i, 8, 0.0, tag=i)
    assert [t for t, _ in q.drain()] == [0, 1, 2, 3]


def test_sptf_gains_on_random_reads_and_fcfs_does_not():
    """The shape: 32 random 4 KiB reads outstanding at once finish sooner under SPTF."""
    import random

    rng = random.Random(5)
    disk = make_disk("disksim-ibm18es")
    lbas = [rng.randrange(disk.sectors // 8 - 1) * 8 for _ in range(64)]

    def last_finish(depth, sched):
        disk.reset()
        q = DriveQueue(disk, depth, sched)
        for i, a in enumerate(lbas):
            q.submit("R", a, 8, 0.0, tag=i)
        return q.drain()[-1][1].finish

    one = last_finish(1, "fcfs")
    # FCFS keeps the order; only the overheads of commands waiting in the drive overlap
    assert 0.95 * one < last_finish(32, "fcfs") <= one
    assert last_finish(32, "sptf") < 0.8 * one
    assert last_finish(32, "sptf-now") < last_finish(32, "sptf")
    assert last_finish(32, "clook") < one


def _track_start(disk, lo=100_000):
    """An LBA at the start of a track (its physical sector too), with the next 200 blocks
    unslipped: (lba, sectors per track)."""
    L, m = disk.layout, disk.lbn_map.physical
    for lba in range(lo, lo + 100_000, 8):
        p = m(lba)
        z = L.zone(p)
        if (p - L.zstart[z]) % L.zspt[z] == 0 and m(lba + 200) == p + 200:
            return lba, L.zspt[z]
    raise AssertionError("no track start found")


def test_sptf_ranks_by_the_angle_disksim_recorded_sptf_now_by_the_angle_now():
    """A hand-computed case. After read A (8 blocks from a track's start), B lies 14 sectors
    and C 56 sectors further on the same track. DiskSim ranks from the angle at which A's last
    sector passed (disk_buffer_estimate_servtime: mech_state, not advanced to the pick): B is
    14 sector times away, C 56 - it takes B. The pick comes when A is reported, after its bus
    transfer and completion overhead (about 30 sectors later on the IBM 18ES): the head has
    passed B by then (almost a revolution to wait) but not C - sptf-now takes C."""
    disk = make_disk("disksim-ibm18es")
    a, spt = _track_start(disk)
    st = disk.t_rev / spt                                 # one sector's time on this track
    b, c = a + 8 + 14, a + 8 + 56
    orders, keys = {}, {}
    for sched in ("sptf", "sptf-now"):
        disk.reset()
        q = DriveQueue(disk, 4, sched)
        q.submit("R", a, 8, 0.0, tag="A")
        q.submit("R", b, 8, 1e-6, tag="B")
        q.submit("R", c, 8, 1e-6, tag="C")
        first = q.pop()
        t = first[1].finish
        keys[sched] = [disk.positioning("R", x, 8, t, recorded=sched == "sptf") for x in (b, c)]
        orders[sched] = [first[0]] + [tag for tag, _ in q.drain()]
    assert keys["sptf"] == pytest.approx([14 * st, 56 * st], abs=1e-9)
    assert orders["sptf"] == ["A", "B", "C"]
    assert keys["sptf-now"][0] > disk.t_rev / 2 > keys["sptf-now"][1]
    assert orders["sptf-now"] == ["A", "C", "B"]


def test_the_drive_picks_before_a_command_sent_on_the_completion_arrives():
    """DiskSim chooses the next command when the drive reports the last (disk_completion ->
    disk_check_hda); one the host sends on that completion arrives after the choice."""
    disk = make_disk("sata7200,write_cache=off")
    q = DriveQueue(disk, 4, "clook")
    q.submit("R", 1000, 8, 0.0, tag="A")
    q.submit("R", 5_000_000, 8, 1e-6, tag="B")
    done = q.pop()
    q.submit("R", 2000, 8, done[1].finish, tag="C")      # sent on A's completion
    assert [tag for tag, _ in q.drain()] == ["B", "C"]   # C-LOOK from 1000 would take C first


def test_a_queued_commands_overhead_overlaps_the_work_before_it():
    """DiskSim counts a command's overhead from its arrival (overhead_done); the seek of a
    command that waited in the drive starts when the drive picks it."""
    disk = make_disk("sata7200,write_cache=off")
    res = {}
    for depth in (1, 2):
        disk.reset()
        q = DriveQueue(disk, depth, "fcfs")
        q.submit("R", 1000, 8, 0.0, tag="A")
        q.submit("R", 9_000_000, 8, 0.0, tag="B")
        res[depth] = dict(q.drain())
    assert res[2]["A"] == res[1]["A"]
    assert res[1]["B"].overhead == pytest.approx(disk.ovh)
    assert res[2]["B"].overhead == 0.0                     # it waited longer than the overhead
    assert res[2]["B"].start == res[1]["B"].start          # the drive took it as A was reported
    assert disk.waited == 0.0


@pytest.mark.parametrize("spec", ["disksim-barracuda", "sata7200"])
def test_one_sequential_stream_does_not_lose_under_spctf_and_clook(spec):
    """fio's sequential read at iodepth 32: consecutive requests outstanding at once."""
    disk = make_disk(spec)

    def rate(depth, sched):
        disk.reset()
        q = DriveQueue(disk, depth, sched)
        nxt, issued, end = 1 << 20, 0, 0.0
        for _ in range(depth):
            q.submit("R", nxt, 128, 0.0)
            nxt, issued = nxt + 128, issued + 1
        while q.outstanding:
            end = q.pop()[1].finish
            if issued < 300:
                q.submit("R", nxt, 128, end)
                nxt, issued = nxt + 128, issued + 1
        return 300 / end

    one = rate(1, "fcfs")
    # the first pick, before anything is buffered, may start mid-stream (a revolution lost once)
    assert rate(32, "spctf") >= 0.97 * one
    assert rate(32, "clook") >= 0.97 * one
    assert rate(32, "sptf") < 0.97 * one           # the buffer not consulted: the stream loses


@pytest.mark.parametrize("spec, msg", [
    ("sata7200,queue_depth=0", "queue_depth='0': must be between 1 and 256"),
    ("sata7200,scheduler=elevator", "scheduler='elevator': expected one of fcfs, sstf, clook, sptf, spctf, sptf-now, spctf-now"),
])
def test_bad_queue_options_are_refused_in_one_line(spec, msg):
    with pytest.raises(ValueError) as e:
        make_disk(spec)
    assert msg in str(e.value) and "\n" not in str(e.value)


def test_queue_options_reach_the_model_with_provenance():
    from disk_models import resolve
    d = make_disk("disksim-ibm18es,queue_depth=16,scheduler=clook")
    assert (d.queue_depth, d.scheduler) == (16, "clook")
    d = make_disk("disksim-ibm18es")                       # Max queue length 1 in its .parv
    assert (d.queue_depth, d.scheduler) == (1, "fcfs")
    assert resolve("wd1200jb").values["queue_depth"] == 1
    assert resolve("sata7200").values["queue_depth"] == 32


def parv_with(tmp_path, depth, policy):
    """ibm18es.parv in a directory of its own, its disk's queue set (a fresh path: the files
    read are remembered per path and modification time)."""
    import shutil

    from disk_models.disksim_drives import DATA
    d = tmp_path / f"q{depth}-{policy}"
    d.mkdir()
    for f in ("ibm18es.parv", "ibm18es.diskspecs", "ibm18es.model", "ibm18es.seek", "statdefs"):
        shutil.copy(f"{DATA}/{f}", d)
    specs = d / "ibm18es.diskspecs"
    specs.write_text(specs.read_text().replace("Max queue length = 1", f"Max queue length = {depth}")
                     .replace("Scheduling policy = 1", f"Scheduling policy = {policy}", 1))
    return f"disksim:{d}/ibm18es.parv"


def test_a_parv_gives_the_drives_queue(tmp_path):
    spec = parv_with(tmp_path, 8, 8)
    d = make_disk(spec)
    assert (d.queue_depth, d.scheduler) == (8, "sptf")
    from disk_models import resolve
    assert "[read] Max queue length in ibm18es.parv" in resolve(spec).provenance["queue_depth"]
    assert resolve(spec + ",queue_depth=2").provenance["queue_depth"] == "override (queue_depth=2); preset value 8"
    assert make_disk(parv_with(tmp_path, 4, 3)).scheduler == "clook"
    assert make_disk(parv_with(tmp_path, 1, 2)).scheduler == "fcfs"      # one at a time: never chooses
    with pytest.raises(ValueError, match="Scheduling policy 2 is not modelled"):
        make_disk(parv_with(tmp_path, 8, 2))


def test_the_true_angle_schedulers_are_mount_options():
    """`-o disk=...,scheduler=sptf-now` reaches the queue: it ranks from where the head is."""
    q = DriveQueue(make_disk("sata7200,queue_depth=8,scheduler=spctf-now"))
    assert (q.depth, q.scheduler) == (8, "spctf-now")
