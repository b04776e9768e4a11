"""The simulated clock of one mount, and the only path from the buffer cache to the disk model.

An operation costs a small CPU charge plus the time it waits for synchronous requests.
Background requests (write-back, read-ahead) are issued at the current time and occupy the
disk; a later synchronous request queues behind them (the disk model reports the wait).

With per-process clocks (`ProcessClocks`, -o clocks=process; docs/concurrency.md) `now` is
the clock of the process whose request is being served, and `latest` the mount's time (the
latest any clock has reached); between requests `now` is `latest`. With one clock `latest`
stays 0 and nothing reads it but the buffer cache's one comparison.
"""


class SimClock:
    def __init__(self, disk, stats, sectors_per_block: int, trace=None):
        self.disk = disk
        self.stats = stats
        self.spb = sectors_per_block
        self.trace = trace
        self.now = 0.0
        self.latest = 0.0       # the mount's time under ProcessClocks; 0 with one clock
        stats.watch(getattr(disk, "work_counters", None), getattr(disk, "work_time", None))
        stats.set_rotation(getattr(disk, "t_rev", None), getattr(disk, "head_switch", None))

    def cpu(self, seconds: float) -> None:
        self.now += seconds

    def wait_until(self, t: float) -> None:
        if t > self.now:
            self.now = t

    def io(self, op: str, blkno: int, nblocks: int, cause: str, ino: int = 0, wait: bool = True,
           sync: bool = False, at: float | None = None) -> float:
        """Issue one request for nblocks file-system blocks at blkno; returns its finish time.

        With wait the caller blocks until it finishes (the clock advances). `at`: the request
        is queued then (later than now: a background write waiting for a buffer lock), in
        its place in the drive's order of requests."""
        lba, sectors = blkno * self.spb, nblocks * self.spb
        r = self.disk.submit(op, lba, sectors, self.now if at is None else at, sync)
        self.stats.disk(op, lba, sectors, r, cause)
        if self.trace is not None:
            self.trace.record(op, lba, sectors, r, cause, ino, self.stats.phase.name, wait or sync)
        if wait:
            self.wait_until(r.finish)
        return r.finish

    def drop_drive_buffer(self) -> None:
        """Empty what the drive's buffer holds for reads (drop_caches: cold everywhere); disk
        models without the call (plug-ins outside DiskModel) have nothing to drop."""
        drop = getattr(self.disk, "drop_buffer", None)
        if drop is not None:
            drop(self.now)

    def drain(self) -> None:
        """Wait for every request issued so far and for the drive's write cache (sync, fsync, unmount)."""
        self.wait_until(self.disk.busy_until)
        issued = self.now
        self.wait_until(self.disk.flush(issued))
        self.stats.flush(self.now - issued)


class Proc:
    """One process's clock: `t` is when its last request finished (its next starts there),
    `start` its identity beside the pid (the kernel's start time: a reused pid is another
    process), `children` the records of the processes it started that are being tracked,
    `n` the record's number (0, 1, ... in order of appearance: what an op log names it by)."""

    __slots__ = ("pid", "t", "start", "children", "n")

    def __init__(self, pid: int, t: float, start, n: int = 0):
        self.pid, self.t, self.start, self.n = pid, t, start, n
        self.children: list[Proc] = []

    def __repr__(self) -> str:
        return f"Proc({self.pid}, t={self.t!r})"


class ProcessClocks:
    """Per-process simulated clocks over one SimClock, kept without seeing the processes run.

    A process's request starts at its own clock (its previous request's finish; the caller's
    operation adds the CPU charge); the drive is shared, so a request submitted while the
    drive is busy waits for it (the disk model's busy_until). Causality comes from the
    process tree, asked of `probe(pid) -> (ppid, start) | None` (None: gone, or exited and not
    yet reaped): a new process starts at its parent's clock (a parent never seen before is
    recorded at the mount's latest time, so that two children it starts together start
    together); a parent's clock becomes at least the last finish of each child found exited
    (gone, or its start time changed: the pid was reused) - the shell that waited for `cp`
    then runs `find` after it. Exits are looked for only among a record's children, when
    that record's own request arrives or a new child of it appears, and in a sweep of the
    records when they grow past `sweep_at`.

    `begin(proc)` puts the clock at the process's time (None, or `mount=True`: at the mount's
    latest time, for requests of no known process and the control directory's); `end(proc)`
    keeps the finish as the process's time, raises `latest`, and leaves the clock at `latest`
    between requests, where statistics, marks and unmount read it. Requests with no process
    (FORGET) belong to the process of the previous request, so that one process alone is
    timed exactly as one clock times it.

    `note(kind, a, b)`, if given, is told of every change to the clocks that is not a request
    (what an op log records, so that a replay makes the same; simfs.inprocess.processlog):
    ("process", p, parent) when record `p` is made at `parent`'s clock (None: the latest time),
    ("exited", c, p) when `p`'s clock is raised to exited child `c`'s."""

    SWEEP = 4096

    def __init__(self, clock, probe, note=None):
        self.clock = clock
        self.probe = probe
        self.note = note
        self.procs: dict[int, Proc] = {}
        self.last: Proc | None = None
        self.sweep_at = self.SWEEP
        self.made = 0                   # records made so far (the next one's number)
        clock.latest = max(clock.now, clock.latest)

    def make(self, pid: int, parent: "Proc | None", start) -> Proc:
        """A new record for `pid`, at `parent`'s clock (None: the mount's latest time)."""
        p = Proc(pid, parent.t if parent is not None else self.clock.latest, start, self.made)
        self.made += 1
        if self.note is not None:
            self.note("process", p, parent)
        return p

    def exited(self, c: Proc, p: Proc) -> None:
        """Child `c` has exited: `p`'s clock is at least its last finish."""
        if self.note is not None:
            self.note("exited", c, p)
        if c.t > p.t:
            p.t = c.t

    def process(self, pid: int) -> Proc | None:
        """The record of process `pid` (its exited children reaped first); made at its first
        request. pid 0 (a request the kernel sent on no process's behalf): the last one's."""
        if not pid:
            return self.last
        p = self.procs.get(pid)
        if p is None:
            return self._new(pid)
        if p.children:
            self._reap(p)
        return p

    def _new(self, pid: int) -> Proc:
        info = self.probe(pid)
        parent = None
        if info is not None and info[0] > 1:
            ppid = info[0]
            parent = self.procs.get(ppid)
            if parent is None:
                pinfo = self.probe(ppid)
                if pinfo is not None:
                    parent = self.procs[ppid] = self.make(ppid, None, pinfo[1])
            elif parent.children:
                self._reap(parent)
        p = self.make(pid, parent, None if info is None else info[1])
        self.procs[pid] = p
        if parent is not None:
            parent.children.append(p)
        if len(self.procs) > self.sweep_at:
            self.sweep()
        return p

    def _exited(self, p: Proc) -> bool:
        info = self.probe(p.pid)
        return info is None or info[1] != p.start

    def _reap(self, p: Proc) -> None:
        """Children of `p` that have exited: `p`'s clock is at least their last finish (theirs
        first at least their own exited children's), and their records go."""
        alive = []
        for c in p.children:
            if self._exited(c):
                if c.children:
                    self._reap(c)
                self.exited(c, p)
                if self.procs.get(c.pid) is c:
                    del self.procs[c.pid]
            else:
                alive.append(c)
        p.children = alive

    def sweep(self) -> None:
        """Drop the records of processes gone (their exits propagated to their parents);
        amortised: the next sweep waits until the records have doubled."""
        for p in list(self.procs.values()):
            if p.children:
                self._reap(p)
        for pid, p in list(self.procs.items()):
            if self._exited(p):
                if p.children:
                    self._reap(p)
                del self.procs[pid]
        self.sweep_at = max(self.SWEEP, 2 * len(self.procs))

    def begin(self, p: Proc | None, mount: bool = False) -> None:
        """A request of process `p` starts: at its clock, or (`mount`, or no process) at the
        mount's latest time, where the clock stands between requests."""
        if p is not None and not mount:
            self.clock.now = p.t

    def end(self, p: Proc | None) -> None:
        """The request ended: its finish is the process's time (at least), the mount's latest
        time is raised to it, and the clock goes back to the latest time."""
        clock = self.clock
        t = clock.now
        if t > clock.latest:
            clock.latest = t
        if p is not None:
            if t > p.t:
                p.t = t
            self.last = p
        clock.now = clock.latest
