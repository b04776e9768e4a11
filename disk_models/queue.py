"""The drive's command queue: several requests outstanding at once, served one at a time in the
order the firmware's scheduler picks (DiskSim's ioqueue definitions), completions in time order.

    q = DriveQueue(make_disk("disksim-ibm18es,queue_depth=32,scheduler=sptf"))
    q.submit("R", lba, 8, t, tag="a")        # arrivals in non-decreasing time
    q.submit("R", lba2, 8, t, tag="b")
    tag, result = q.pop()                   # the earliest completion (a DiskResult)

Why a layer over the model and not inside it: the mechanism still serves one command at a time
(one actuator), so the model's `submit` stays the one place a request is timed; the queue only
decides *which* waiting command the drive takes next and *when* (when the drive is free, among
the commands that have arrived). With depth 1 every request is submitted to the model with its
own arrival time, exactly as a one-at-a-time caller would: the same results, bit for bit.

When the drive picks, and what a waiting command has done (DiskSim's drive, disksim_diskctlr.c):
  - A drive that was busy picks as it reports the last command (disk_completion ->
    disk_check_hda): a request arriving at that very instant - one the host sends on that
    completion - is not yet among the candidates. An idle drive takes what arrives.
  - A command's overhead counts from its arrival at the drive (DiskSim's overhead_done): the
    queue tells the model (its `waited` attribute, when it has one) how long the command waited
    in the drive before the pick, and the model charges only the rest. FCFS at depth > 1 keeps
    the order but not depth 1's times.

The caller's rule (what makes this event-driven and exact): before `pop` or `peek`, submit every
request that arrives at or before `next_pick` (the time the drive chooses its next command). A
closed-loop caller - one that submits only when a completion comes back - keeps it by itself.
Requests beyond the depth wait in a host-side FIFO and enter the drive as completions free tags;
their `queue` component counts the whole wait from their arrival.

Schedulers (disksim_ioqueue.c, names as in DiskSim's manual):
  fcfs   FCFS (1): arrival order.
  sstf   SSTF_LBN (4): the waiting request whose first block is nearest the end of the last one
         started; on a tie, alternately the one above and the one below.
  clook  CYCLE_LBN (3), C-LOOK: the first waiting request at or above the start of the last one
         started, in block order; none: wrap to the lowest.
  sptf   SPTF_OPT (8): the least positioning time (seek + rotational wait, no transfer, the cache
         not consulted) as DiskSim estimates it (ioqueue_get_request_from_opt_sptf_queue ->
         disk_buffer_estimate_servtime): from the mechanism's state DiskSim last recorded - the
         track of the last sector transferred and the platter's angle when it passed under the
         head (mech_state, updated only as sectors pass: disk_buffer_sector_done) - not advanced
         to the pick. DiskSim picks when the drive reports the last command, after its bus
         transfer and completion overhead, so the angle it ranks by is that long out of date
         (0.65 ms for a 4 KiB read on the IBM 18ES, 8 % of a revolution). Ties: the earliest
         arrival (a strict `<` over the queue in arrival order). Needs the model's `positioning`
         (a model without it - `queueing` False - is served FIFO, as depth 1; one whose
         `positioning` does not take `recorded` is ranked as sptf-now). Not consulting the
         buffer, it takes a stream's later requests (ahead of the head) before the next one the
         read-ahead has just passed: one sequential stream with several requests outstanding
         loses under it.
  spctf  SPCTF_OPT (9): SPTF with the buffer consulted (DiskSim's key likewise) - a read the
         buffer holds or the read-ahead in progress is bringing in costs 0, one partly held 1e-9
         ms (DiskSim's BUFFER_WHOLE_SERVTIME and BUFFER_PARTIAL_SERVTIME). A sequential stream
         does not lose.
  sptf-now, spctf-now   not DiskSim's: the same keys from where the head is when the drive
         would start the command - the true angle at the pick plus the command overhead, the
         read-ahead in progress stopped where it has got to. What a drive's firmware, which
         knows the angle, can do (rotational position ordering): it gains more with depth than
         DiskSim's SPTF (results/summary/drive-queue/section.md).
"""

from __future__ import annotations

from collections import deque

from .base import DiskResult

SCHEDULERS = ("fcfs", "sstf", "clook", "sptf", "spctf", "sptf-now", "spctf-now")


class _Req:
    __slots__ = ("op", "lba", "sectors", "sync", "tag", "arrival", "entered", "seq")

    def __init__(self, op, lba, sectors, sync, tag, arrival, seq):
        self.op, self.lba, self.sectors, self.sync, self.tag = op, lba, sectors, sync, tag
        self.arrival = self.entered = arrival
        self.seq = seq


class DriveQueue:
    """A drive with a command queue of `depth` (default: the model's `queue_depth`) served by
    `scheduler` (default: the model's `scheduler`). `picks`, when a list, records every
    decision: (pick time, [waiting requests' tags], chosen tag)."""

    def __init__(self, disk, depth: int | None = None, scheduler: str | None = None):
        self.disk = disk
        depth = getattr(disk, "queue_depth", 1) if depth is None else depth
        scheduler = getattr(disk, "scheduler", "fcfs") if scheduler is None else scheduler
        if scheduler not in SCHEDULERS:
            raise ValueError(f"scheduler {scheduler!r}: choose one of {', '.join(SCHEDULERS)}")
        if not isinstance(depth, int) or depth < 1:
            raise ValueError(f"queue depth must be a whole number >= 1, not {depth!r}")
        if not getattr(disk, "queueing", False):
            depth, scheduler = 1, "fcfs"          # a model of the one-at-a-time kind
        self.depth = depth
        self.scheduler = scheduler
        self._pick = getattr(self, "_pick_" + scheduler.replace("-", "_"))
        # DiskSim's SPTF key, if the model can give it (else the key from the pick)
        self._recorded = bool(getattr(disk, "positioning_recorded", False))
        # the model takes `waited` (a queued command's overhead overlapped: _start)
        self._overlap = hasattr(disk, "waited")
        self.picks: list | None = None
        self.reset_queue()

    def reset_queue(self) -> None:
        """Forget every request (the model's own state is the model's: `disk.reset()`)."""
        self._waiting: list[_Req] = []          # in the drive, not started; in order of entry
        self._host: deque[_Req] = deque()       # beyond the depth: the host holds them
        self._current: tuple | None = None      # (tag, result): started, not yet popped
        self._inside = 0                        # in the drive: waiting + started, not popped
        self._seq = 0
        self._last_t = 0.0
        self._last_start = 0                    # C-LOOK: first block of the last one started
        self._last_end = 0                      # SSTF: the block after the last one started
        self._updown = False                    # SSTF's alternation on ties

    # -- the caller's side -------------------------------------------------------------------
    def submit(self, op: str, lba: int, sectors: int, t: float, sync: bool = False, tag=None):
        """A request arrives at `t` (not before the previous arrival); returns its tag (the
        arrival's number when none is given)."""
        if t < self._last_t:
            raise ValueError(f"arrival at {t} before the previous one at {self._last_t}")
        self._last_t = t
        if tag is None:
            tag = self._seq
        if self._inside == 0 and self.depth == 1:
            # depth 1, the drive empty: it takes this one now (the fast path; the same as below)
            self._current = (tag, self.disk.submit(op, lba, sectors, t, sync))
            self._inside = 1
            self._seq += 1
            return tag
        self.disk.check(op, lba, sectors)
        r = _Req(op, lba, sectors, sync, tag, t, self._seq)
        self._seq += 1
        if self._inside < self.depth:
            self._waiting.append(r)
            self._inside += 1
        else:
            self._host.append(r)
        return tag

    @property
    def outstanding(self) -> int:
        """Requests submitted and not yet popped."""
        return self._inside + len(self._host)

    @property
    def next_pick(self) -> float | None:
        """When the drive picks its next command (None: nothing waits in it, or one is started)."""
        if self._current is not None or not self._waiting:
            return None
        free = self.disk.busy_until
        first = min(x.entered for x in self._waiting)
        return free if free > first else first

    def peek(self) -> float | None:
        """When the next completion comes (None: nothing outstanding)."""
        if self._current is None and not self._start():
            return None
        return self._current[1].finish

    def pop(self):
        """(tag, DiskResult) of the earliest completion; IndexError when nothing is outstanding."""
        if self._current is None and not self._start():
            raise IndexError("pop from an empty drive queue")
        done = self._current
        self._current = None
        self._inside -= 1
        if self._host:                            # a tag is free: the host sends the next one
            h = self._host.popleft()
            finish = done[1].finish
            if finish > h.entered:
                h.entered = finish
            self._waiting.append(h)
            self._inside += 1
        return done

    def drain(self) -> list:
        """Pop everything: [(tag, DiskResult)] in completion order."""
        out = []
        while self.outstanding:
            out.append(self.pop())
        return out

    # -- the drive's side --------------------------------------------------------------------
    def _start(self) -> bool:
        """The drive picks and serves its next command; False if none waits."""
        w = self._waiting
        if not w:
            return False
        free = self.disk.busy_until
        if len(w) == 1:
            r = w[0]
            tpick = free if free > r.entered else r.entered
        else:
            first = min(x.entered for x in w)
            if free > first:
                # the drive picks as it reports the last command: one the host sends on that
                # completion, arriving at the same instant, is not yet there (DiskSim's
                # disk_completion chooses the next before the completion reaches the host)
                tpick = free
                cands = [x for x in w if x.entered < free]
            else:
                tpick = first
                cands = [x for x in w if x.entered <= first]
            if len(cands) > 1:
                cands.sort(key=_seq)
                r = self._pick(cands, tpick)
                if self.picks is not None:
                    self.picks.append((tpick, [x.tag for x in cands], r.tag))
            else:
                r = cands[0]
        w.remove(r)
        self._last_start = r.lba
        self._last_end = r.lba + r.sectors
        disk = self.disk
        # it waited in the drive from `entered` to the pick: its command overhead ran meanwhile
        # (DiskSim: overhead_done = arrival + overhead; the seek starts at max(pick,
        # overhead_done)), so the model charges only the rest. 0 at depth 1: a command enters
        # the drive when the one before it is reported, and is taken at once
        overlap = self._overlap and tpick > r.entered
        if overlap:
            disk.waited = tpick - r.entered
        try:
            if r.entered <= (free if free > r.arrival else r.arrival):
                # the model starts it at max(busy_until, arrival) = tpick itself (it waited for
                # the drive, not for a tag); without overlap the result is the one a one-at-a-time
                # caller gets, bit for bit
                res = disk.submit(r.op, r.lba, r.sectors, r.arrival, r.sync)
            else:
                res = disk.submit(r.op, r.lba, r.sectors, tpick, r.sync)
                res = _waited(res, r.arrival)
        finally:
            if overlap:
                disk.waited = 0.0
        self._current = (r.tag, res)
        return True

    # a policy gets the waiting requests that have arrived by `t`, in arrival order, and
    # returns the one the drive serves next

    def _pick_fcfs(self, cands, t):
        return cands[0]

    def _pick_clook(self, cands, t):
        last = self._last_start
        above = [r for r in cands if r.lba >= last]
        return min(above or cands, key=_lba)

    def _pick_sstf(self, cands, t):
        last = self._last_end
        top = bottom = None
        for r in cands:
            a = r.lba
            if a >= last:
                if top is None or a < top.lba:
                    top = r
            elif bottom is None or a > bottom.lba:
                bottom = r
        if top is None:
            return bottom
        if bottom is None:
            return top
        up, down = top.lba - last, last - bottom.lba
        if up == down:
            self._updown = not self._updown
            return bottom if not self._updown else top
        return top if up < down else bottom

    def _least_positioning(self, cands, t, cache: bool, recorded: bool):
        """The first candidate (in arrival order) with the least `positioning` key; `recorded`:
        DiskSim's key (only asked of a model that offers it: `positioning_recorded`)."""
        pos = self.disk.positioning
        kw = {"recorded": True} if recorded and self._recorded else {}
        best, key = None, 0.0
        for r in cands:
            k = pos(r.op, r.lba, r.sectors, t, cache, r.sync, **kw)
            if best is None or k < key:
                best, key = r, k
        return best

    def _pick_sptf(self, cands, t):
        return self._least_positioning(cands, t, False, True)

    def _pick_spctf(self, cands, t):
        return self._least_positioning(cands, t, True, True)

    def _pick_sptf_now(self, cands, t):
        return self._least_positioning(cands, t, False, False)

    def _pick_spctf_now(self, cands, t):
        return self._least_positioning(cands, t, True, False)


def _seq(r: _Req) -> int:
    return r.seq


def _lba(r: _Req) -> int:
    return r.lba


def _waited(res: DiskResult, arrival: float) -> DiskResult:
    """`res` (timed from when the request entered the drive) with the host-side wait before it."""
    res.queue += res.issue - arrival
    res.issue = arrival
    return res
