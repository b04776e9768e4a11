"""The process records of an op log (format 3): which process each operation ran for under
-o clocks=process, and what the mount's per-process clocks did between requests, so that a
replay puts every operation on the simulated clock the mount put it on (docs/concurrency.md).

Four records, each a line [KIND, null, ...] like an operation's:

  ["process", null, N, P]  record N of a process is made (N = 0, 1, ... in order), its clock
                           at record P's (P null: at the mount's latest time)
  ["exited", null, C, P]   child C of P has exited: P's clock becomes at least C's
  ["on", null, N]          the operations that follow run on process N's clock (null: at the
                           mount's latest time, as between requests)
  ["ctl", null, N]         a control-directory request of process N: what follows runs at the
                           mount's latest time, and N's clock becomes at least its finish

A request of the same process as the previous one writes no "on" (its operations continue
that process's clock, as they would after its previous request ended); a "process" or
"exited" record ends the current request first. The numbers are records, not pids: a reused
pid is another number; a request may run for a process after its "exited" (a file it opened,
released later), as on the mount.
"""

from __future__ import annotations

from simfs.blockio.clock import Proc, ProcessClocks

#: the kinds of process record (ProcessLog.step's, and what a log may hold besides operations)
KINDS = frozenset(("process", "exited", "on", "ctl"))

_CLOSED = object()      # the log's span was ended by a process record: the next operation says its own


class ProcessRecorder:
    """The writing side, between RequestClocks (simfs.fuse.processes) and the op log: every
    line the RecordingVolume writes goes through `write`, which first says the process the
    operation runs for when it is not the one the log said last."""

    def __init__(self, log):
        self._log = log
        self._want = None           # the span of the request being served: None, N, or ("ctl", N)
        self._have = None           # the span the log said last (None at the start: the latest time)

    # the LogWriter's interface, for the RecordingVolume
    def _switch(self) -> None:
        """The process record, when the next record is another process's."""
        if self._want != self._have:
            self._log.write(["on", None, self._want])
            self._have = self._want

    def write(self, rec) -> None:
        self._switch()
        self._log.write(rec)

    def line(self, text: str) -> None:
        """A record already formatted (LogWriter.line), after the same process record."""
        self._switch()
        self._log.line(text)

    def flush(self) -> None:
        self._log.flush()

    def close(self) -> None:
        self._log.close()

    @property
    def lines(self) -> int:
        return self._log.lines

    # RequestClocks' side
    def request(self, p, ctl: bool) -> None:
        """A request of process record `p` starts (None after it ends: the latest time)."""
        if p is None:
            self._want = None
        elif ctl:                   # written even if it asks the volume nothing: it raises p
            self._log.write(["ctl", None, p.n])
            self._want = self._have = ("ctl", p.n)
        else:
            self._want = p.n

    def note(self, kind: str, a, b) -> None:
        """ProcessClocks' observer: a record made, or a parent raised by an exited child."""
        if kind == "process":
            self._log.write(["process", None, a.n, None if b is None else b.n])
        else:
            self._log.write(["exited", None, a.n, b.n])
        self._have = _CLOSED


class ProcessLogError(ValueError):
    """A process record that does not fit the ones before it (message: why)."""


class ProcessLog:
    """The replaying side: ProcessClocks over the replay's clock, fed from the records instead
    of /proc. `step(rec)` applies one record (ProcessLogError if it is malformed); `finish()`
    ends the last request (the unmount runs at the latest time)."""

    def __init__(self, clock):
        self.clocks = ProcessClocks(clock, probe=None)
        self.procs: list[Proc] = []
        self.parent: list[int | None] = []
        self.gone: set[int] = set()
        self.span: Proc | None = None
        self.ctl = False

    def _proc(self, n, what: str) -> Proc:
        if type(n) is not int or not 0 <= n < len(self.procs):
            raise ProcessLogError(f"{what} {n!r} is not a process an earlier record made")
        return self.procs[n]

    def _end(self) -> None:
        self.clocks.end(self.span)
        self.span, self.ctl = None, False

    def step(self, rec: list) -> None:
        kind, args = rec[0], rec[2:]
        if len(args) != (1 if kind in ("on", "ctl") else 2):
            raise ProcessLogError(f"a {kind!r} record takes {1 if kind in ('on', 'ctl') else 2} "
                                  f"arguments, the line gives {len(args)}")
        if kind == "on":
            p = None if args[0] is None else self._proc(args[0], "process")
            self._end()
            self.span = p
            self.clocks.begin(p)
        elif kind == "ctl":
            p = self._proc(args[0], "process")
            self._end()
            self.span, self.ctl = p, True
            self.clocks.begin(p, mount=True)
        elif kind == "process":
            n, parent = args
            if n != len(self.procs):
                raise ProcessLogError(f"process {n!r} is made out of order (the next one is "
                                      f"{len(self.procs)})")
            pp = None if parent is None else self._proc(parent, "its parent")
            self._end()
            self.procs.append(self.clocks.make(0, pp, None))
            self.parent.append(parent)
        else:
            c, p = self._proc(args[0], "the child"), self._proc(args[1], "the parent")
            if self.parent[c.n] != p.n:
                raise ProcessLogError(f"process {c.n} exits to {p.n}, which is not its parent "
                                      f"({self.parent[c.n]})")
            if c.n in self.gone:
                raise ProcessLogError(f"process {c.n} exits twice")
            self._end()
            self.gone.add(c.n)
            self.clocks.exited(c, p)

    def finish(self) -> None:
        self._end()
