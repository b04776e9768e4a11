"""simfs.blockio.clock.ProcessClocks: per-process simulated clocks (-o clocks=process).

The process tree is a table the test edits (`probe`): a new process starts at its parent's
clock (a parent never seen is recorded at the mount's latest time, so children it starts
together start together), an unknown parent means the latest time, an exited child (gone, a
zombie, or its pid reused: another start time) raises its parent's clock to its last finish,
and the clock stands at the latest time between requests. Each request here is CPU only
(`run`); the drive's part is the disk model's (busy_until), checked through a volume below:
background write-back runs at the mount's latest time, not at a process's clock behind it.
"""

from __future__ import annotations

import pytest

from disk_models import make_disk
from simfs.blockio.clock import ProcessClocks, SimClock
from simfs.blockio.stats import Stats


class Tree:
    """pid -> (ppid, start time); absent: gone."""

    def __init__(self, **procs):
        self.procs = {int(k[1:]): v for k, v in procs.items()}
        self.asked = []

    def __call__(self, pid):
        self.asked.append(pid)
        return self.procs.get(pid)


def make(tree):
    clock = SimClock(make_disk("ideal"), Stats(), 8)
    return clock, ProcessClocks(clock, tree)


def run(pc, pid, seconds) -> tuple[float, float]:
    """One request of `pid` costing `seconds`: (its start, its finish)."""
    p = pc.process(pid)
    pc.begin(p)
    start = pc.clock.now
    pc.clock.cpu(seconds)
    pc.end(p)
    return start, p.t


def test_a_child_starts_at_its_parents_clock_and_siblings_overlap():
    tree = Tree(p100=(1, 10), p101=(100, 20), p102=(100, 21))
    clock, pc = make(tree)
    assert run(pc, 100, 1.0) == (0.0, 1.0)
    assert run(pc, 101, 2.0) == (1.0, 3.0)          # at its parent's clock
    assert run(pc, 102, 0.5) == (1.0, 1.5)          # not at 3.0: 101 still runs
    assert clock.now == clock.latest == 3.0         # between requests: the latest time
    assert run(pc, 102, 0.5) == (1.5, 2.0)          # its own clock, behind the mount's


def test_an_exited_child_moves_its_parent_on():
    tree = Tree(p100=(1, 10), p101=(100, 20))
    _, pc = make(tree)
    run(pc, 100, 1.0)
    run(pc, 101, 5.0)                               # 1.0 .. 6.0
    assert run(pc, 100, 0.1) == (1.0, 1.1)          # 101 still runs: the parent overlaps it
    del tree.procs[101]                             # it exits (and was reaped)
    assert run(pc, 100, 0.1) == (6.0, 6.1)          # the shell waited for it
    assert 101 not in pc.procs and not pc.procs[100].children


def test_a_zombie_counts_as_exited():
    tree = Tree(p100=(1, 10), p101=(100, 20))
    tree_zombie = {101: None}
    _, pc = make(tree)
    run(pc, 100, 1.0)
    run(pc, 101, 5.0)
    tree.procs.update(tree_zombie)                  # proc_stat says None for state Z
    assert run(pc, 100, 0.0)[0] == 6.0


def test_a_reused_pid_is_another_process():
    tree = Tree(p100=(1, 10), p101=(100, 20))
    _, pc = make(tree)
    run(pc, 100, 1.0)
    run(pc, 101, 5.0)                               # 1.0 .. 6.0
    tree.procs[101] = (100, 99)                     # 101 exited; a new 101 started later
    assert run(pc, 100, 0.5) == (6.0, 6.5)          # the old one's exit is seen
    assert run(pc, 101, 1.0) == (6.5, 7.5)          # the new one: from its parent, afresh


def test_the_next_child_of_a_silent_parent_starts_after_the_last_one():
    """The shell never touches the mount: `cp ...; find ...` still runs find after cp."""
    tree = Tree(p50=(1, 5), p51=(50, 6))
    _, pc = make(tree)
    assert run(pc, 51, 4.0) == (0.0, 4.0)           # cp; the shell recorded at 0
    del tree.procs[51]
    tree.procs[52] = (50, 7)
    assert run(pc, 52, 1.0) == (4.0, 5.0)           # find, after cp
    tree.procs[53] = (50, 8)
    assert run(pc, 53, 1.0) == (4.0, 5.0)           # started beside find: overlaps it


def test_grandchildren_reach_the_shell_through_their_parent():
    """make waits for cc, the shell waits for make: cc's finish reaches the shell."""
    tree = Tree(p50=(1, 5), p60=(50, 6), p61=(60, 7))
    _, pc = make(tree)
    run(pc, 60, 1.0)
    run(pc, 61, 9.0)                                # cc: 1 .. 10
    del tree.procs[61], tree.procs[60]              # both exit; make never asked again
    tree.procs[62] = (50, 8)
    assert run(pc, 62, 1.0)[0] == 10.0


def test_an_unknown_parent_means_the_latest_time():
    tree = Tree(p100=(1, 10), p200=(999, 30))       # 999: gone already
    _, pc = make(tree)
    run(pc, 100, 3.0)
    assert run(pc, 200, 1.0) == (3.0, 4.0)


def test_requests_of_no_process_belong_to_the_previous_one():
    tree = Tree(p100=(1, 10), p101=(1, 11))
    _, pc = make(tree)
    run(pc, 100, 2.0)
    run(pc, 101, 1.0)                               # 2 .. 3 (unknown parent: latest)
    assert run(pc, 0, 1.0) == (3.0, 4.0)            # FORGET: on 101's clock
    assert pc.procs[101].t == 4.0 and pc.procs[100].t == 2.0


def test_children_are_probed_only_for_a_parent_with_children():
    tree = Tree(p100=(1, 10))
    _, pc = make(tree)
    for _ in range(5):
        run(pc, 100, 0.1)
    assert tree.asked == [100]                      # once, at its first request


def test_a_sweep_drops_records_of_processes_gone():
    tree = Tree(**{f"p{i}": (1, i) for i in range(1000, 1010)})
    _, pc = make(tree)
    for i in range(1000, 1010):
        run(pc, i, 0.1)
    for i in range(1000, 1008):
        del tree.procs[i]
    pc.sweep()
    assert sorted(pc.procs) == [1008, 1009]


def test_one_process_alone_is_timed_as_one_clock_times_it(tmp_path):
    """Through a volume: the same operations give the same statistics with and without
    ProcessClocks when one process asks them all."""
    figures = [_one_writer(tmp_path, i, processes) for i, processes in enumerate((False, True))]
    assert figures[0] == figures[1]


def _volume(tmp_path, name, **opts):
    from simfs.fs.volume import Volume, VolumeOptions
    from simfs.ondisk.mkfs import mkfs
    img = tmp_path / f"{name}.img"
    mkfs(img, 64 << 20, block_size=4096)
    return Volume.open(img, VolumeOptions(**opts))


def _one_writer(tmp_path, n, processes):
    vol = _volume(tmp_path, f"one{n}", disk="sata7200", sync_interval=0.05, cache=4 << 20)
    pc = ProcessClocks(vol.clock, Tree(p7=(1, 1))) if processes else None
    p = pc.process(7) if pc else None
    for i in range(40):
        if pc:
            pc.begin(p)
        a = vol.create(vol.root_ino, f"f{i}".encode(), 0o100644, 0, 0)
        vol.write(a.st_ino, 0, b"x" * 300_000)
        if pc:
            pc.end(p)
    snap = vol.stats_snapshot()
    vol.close()
    return snap["now"], snap["total"]["counters"], vol.unmount_stats["elapsed"]


def test_background_write_back_runs_at_the_mounts_latest_time(tmp_path):
    """B dirties a block, A's clock runs far ahead; when B's next operation ends, the syncer
    is due at the mount's time: the write goes to the drive then, B's clock stays behind."""
    vol = _volume(tmp_path, "bg", disk="sata7200", sync_interval=1.0)
    issued = []
    submit = vol.disk.submit

    def watch(op, lba, sectors, t, sync=False):
        issued.append((op, t))
        return submit(op, lba, sectors, t, sync)
    vol.disk.submit = watch
    pc = ProcessClocks(vol.clock, Tree(p1=(0, 1), p2=(0, 2)))
    a, b = pc.process(1), pc.process(2)
    pc.begin(b)
    ino = vol.create(vol.root_ino, b"f", 0o100644, 0, 0).st_ino
    vol.write(ino, 0, b"y" * 4096)
    pc.end(b)
    pc.begin(a)
    vol.clock.cpu(50.0)                             # A thinks for 50 s (CPU only)
    pc.end(a)
    issued.clear()
    pc.begin(b)
    vol.getattr(ino)
    pc.end(b)
    writes = [t for op, t in issued if op == "W"]
    assert writes, "the syncer did not run at the mount's time"
    assert min(writes) >= 50.0
    assert b.t < 1.0                                # the flusher's time is not B's
    assert vol.clock.now == vol.clock.latest == pytest.approx(a.t)
    assert vol.stats_snapshot()["now"] == vol.clock.latest
    vol.close()


def test_a_process_behind_waits_for_a_block_another_read(tmp_path):
    """A and B start together; A's read of a block misses and waits for the drive; B's read
    of it next is a hit, but not before A's read brought the block in."""
    vol = _volume(tmp_path, "ready", disk="sata7200")
    vol.drop_caches()
    pc = ProcessClocks(vol.clock, Tree(p1=(9, 1), p2=(9, 2), p9=(0, 9)))
    a, b = pc.process(1), pc.process(2)
    start = a.t
    assert b.t == start
    hits = []
    for p in (a, b):
        hits.append(vol.stats.totals()["cache_hits"])
        pc.begin(p)
        vol.cache.bread(5000, "data")
        pc.end(p)
    assert vol.stats.totals()["cache_hits"] - hits[1] == 1        # B's read: a hit
    assert a.t > start + 0.001
    assert b.t == a.t
    vol.close()


def test_the_observer_is_told_every_change_between_requests():
    """What an op log records (simfs.inprocess.processlog): each record made, numbered in
    order, with the parent whose clock it starts at (None: the latest time), and each parent
    raised by an exited child, children's exits first."""
    tree = Tree(p100=(1, 10), p101=(100, 20), p102=(101, 30))
    seen = []
    clock = SimClock(make_disk("ideal"), Stats(), 8)
    pc = ProcessClocks(clock, tree, note=lambda kind, a, b: seen.append((kind, a.n, b and b.n)))
    run(pc, 100, 1.0)                               # its parent (init) is none: the latest time
    run(pc, 101, 1.0)
    run(pc, 102, 1.0)
    del tree.procs[102], tree.procs[101]
    run(pc, 100, 1.0)
    assert seen == [("process", 0, None), ("process", 1, 0), ("process", 2, 1),
                    ("exited", 2, 1), ("exited", 1, 0)]
    assert [p.n for p in pc.procs.values()] == [0]


# the FUSE side: simfs.fuse.processes.RequestClocks ---------------------------------------------
class FakeOps:
    """Handlers that charge `cost` seconds of CPU on the clock and reply as pyfuse3's do."""

    def __init__(self, clock):
        self.clock = clock

    def charge(self, reply=None, cost=1.0):
        self.clock.cpu(cost)
        return reply


def _request(rc, ops, op, *args, ctl=False, reply=None, cost=1.0):
    from types import SimpleNamespace
    reply = SimpleNamespace(fh=reply) if op == "open" else reply
    return rc.call(lambda o, *a: o.charge(reply, cost), ops, op, args, ctl)


def test_a_handles_requests_belong_to_its_opener():
    """Two processes open the same file the same way: the handlers give one handle, the
    kernel gets one per open, and each one's reads go to its opener's clock."""
    from types import SimpleNamespace
    from simfs.fuse.processes import RequestClocks
    clock = SimClock(make_disk("ideal"), Stats(), 8)
    rc = RequestClocks(clock, Tree(p1=(0, 1), p2=(0, 2)))
    ops = FakeOps(clock)
    seen = []
    ops.charge = lambda reply=None, cost=1.0, fh=None: (seen.append(fh), clock.cpu(cost), reply)[2]
    ctx1, ctx2 = SimpleNamespace(pid=1), SimpleNamespace(pid=2)
    h1 = rc.call(lambda o, *a: o.charge(SimpleNamespace(fh=77)), ops, "open", (5, 0, ctx1), False).fh
    h2 = rc.call(lambda o, *a: o.charge(SimpleNamespace(fh=77), 5.0), ops, "open", (5, 0, ctx2), False).fh
    assert h1 != h2 and 77 not in (h1, h2)         # pid 1: 0 .. 1; pid 2: 1 .. 6
    read = lambda o, fh, *a: o.charge(fh=fh)        # noqa: E731
    rc.call(read, ops, "read", (h1, 0, 4096), False)   # pid 1's open: 1 .. 2
    procs = rc.clocks.procs
    assert procs[1].t == 2.0 and procs[2].t == 6.0
    rc.call(read, ops, "read", (h2, 0, 4096), False)   # pid 2's: 6 .. 7
    assert procs[1].t == 2.0 and procs[2].t == 7.0
    assert seen[-2:] == [77, 77]                    # the handlers see their own handle
    rc.call(read, ops, "release", (h1,), False)
    assert h1 not in rc.files and h2 in rc.files and procs[1].t == 3.0
    rc.call(read, ops, "read", (h1, 0, 4096), False)   # a handle nobody holds: the last one's
    assert procs[1].t == 4.0 and seen[-1] == h1


def test_a_control_request_runs_at_the_mounts_time_and_its_caller_waits():
    from types import SimpleNamespace
    from simfs.fuse.processes import RequestClocks
    clock = SimClock(make_disk("ideal"), Stats(), 8)
    rc = RequestClocks(clock, Tree(p1=(0, 1), p2=(0, 2)))
    ops = FakeOps(clock)
    _request(rc, ops, "getattr", 1, SimpleNamespace(pid=1), cost=10.0)   # 0 .. 10
    _request(rc, ops, "getattr", 1, SimpleNamespace(pid=2), cost=0.0)    # pid 2 at 10: (latest)
    rc.clocks.procs[2].t = 3.0                                            # as if it started earlier
    seen = []
    rc.call(lambda o, *a: seen.append(clock.now), ops, "getattr", (1, SimpleNamespace(pid=2)), True)
    assert seen == [10.0]                      # the mark, the stats: at the mount's time
    assert rc.clocks.procs[2].t == 10.0        # and the asker waited for it
