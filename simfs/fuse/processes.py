"""Which process a FUSE request belongs to, and its simulated clock around the handler
(-o clocks=process; docs/concurrency.md).

A request that carries a RequestContext belongs to ctx.pid. READ, WRITE, FLUSH, RELEASE and
FSYNC carry none in pyfuse3: they belong to the process that opened the handle (OPEN, CREATE;
OPENDIR for READDIR, RELEASEDIR, FSYNCDIR). A file's handle is its inode and access mode
(simfs.fuse.operations), so two processes holding the same file open the same way share one
handle: its requests go to the later opener. FORGET, and a handle nobody is known to have
opened, go to the process of the previous request. Requests on the control directory run at
the mount's latest time (what `simfs stats` reads, where a phase is marked), and the process
that asked waits for them. The clock bookkeeping itself is simfs.blockio.clock.ProcessClocks;
this module reads the process tree from /proc.
"""

from __future__ import annotations

from simfs.blockio.clock import ProcessClocks

#: requests whose first argument is a file handle from OPEN/CREATE
FILE_OPS = frozenset(("read", "write", "flush", "release", "fsync"))
#: requests whose first argument is a directory handle from OPENDIR
DIR_OPS = frozenset(("readdir", "releasedir", "fsyncdir"))


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process, from /proc/PID/stat; None
    if it is gone or has exited (a zombie, not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
    except OSError:
        return None
    try:
        if fields[0] in (b"Z", b"X", b"x"):
            return None
        return int(fields[1]), int(fields[19])
    except (IndexError, ValueError):
        return None


def for_operations(ops) -> "RequestClocks | None":
    """The per-process clocks of an Operations object's mount, or None with one clock (the
    default, -o clocks=mount) or a volume without a clock (test doubles)."""
    vol = ops.vol
    if getattr(getattr(vol, "options", None), "clocks", "mount") != "process":
        return None
    clock = getattr(vol, "clock", None)
    return None if clock is None else RequestClocks(clock)


class RequestClocks:
    """The FUSE side of ProcessClocks: owner of each request, and the handles' openers."""

    def __init__(self, clock, probe=proc_stat):
        self.clocks = ProcessClocks(clock, probe)
        self.files: dict[int, list] = {}     # file handle -> [opener's Proc, opens]
        self.dirs: dict[int, object] = {}    # directory handle -> opener's Proc

    def owner(self, op: str, args: tuple):
        """The Proc a request belongs to (see the module docstring)."""
        if op in FILE_OPS:
            entry = self.files.get(args[0])
            return entry[0] if entry is not None else self.clocks.last
        if op in DIR_OPS:
            return self.dirs.get(args[0], self.clocks.last)
        pid = getattr(args[-1], "pid", None) if args else None
        return self.clocks.process(pid) if isinstance(pid, int) else self.clocks.last

    def call(self, fn, ops, op: str, args: tuple, ctl: bool):
        """Serve the request on its process's clock; note the handles it opens and closes."""
        p = self.owner(op, args)
        clocks = self.clocks
        clocks.begin(p, mount=ctl)
        try:
            result = fn(ops, *args)
        finally:
            clocks.end(p)
        if p is not None:
            if op == "open" or op == "create":
                fh = (result[0] if op == "create" else result).fh
                entry = self.files.get(fh)
                if entry is None:
                    self.files[fh] = [p, 1]
                else:
                    entry[0] = p
                    entry[1] += 1
            elif op == "opendir":
                self.dirs[result] = p
        if op == "release":
            entry = self.files.get(args[0])
            if entry is not None:
                entry[1] -= 1
                if entry[1] <= 0:
                    del self.files[args[0]]
        elif op == "releasedir":
            self.dirs.pop(args[0], None)
        return result

