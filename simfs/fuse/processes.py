"""Which process a FUSE request belongs to, and its simulated clock around the handler
(-o clocks=process; docs/concurrency.md).

A request that carries a RequestContext belongs to ctx.pid. READ, WRITE, FLUSH, RELEASE and
FSYNC carry none in pyfuse3: they belong to the process that opened the handle (OPEN, CREATE;
OPENDIR for READDIR, RELEASEDIR, FSYNCDIR). The handlers' file handle is the inode and access
mode (simfs.fuse.operations), the same for two processes that open a file the same way, so
each open gets a handle of its own for the kernel (from HANDLE_BASE up), turned back into the
handlers' one on the way in. FORGET, and a handle nobody is known to have opened, go to the
process of the previous request. Requests on the control directory run at
the mount's latest time (what `simfs stats` reads, where a phase is marked), and the process
that asked waits for them. The clock bookkeeping itself is simfs.blockio.clock.ProcessClocks;
this module reads the process tree from /proc. With -o oplog= the volume's recorder (its
`record_processes()`) is told which process each request is for and what the clocks did
between requests, so that `simfs replay` can time the operations as the mount did.
"""

from __future__ import annotations

from simfs.blockio.clock import ProcessClocks
from simfs.fuse import control

#: requests whose first argument is a file handle from OPEN/CREATE
FILE_OPS = frozenset(("read", "write", "flush", "release", "fsync"))
#: requests whose first argument is a directory handle from OPENDIR
DIR_OPS = frozenset(("readdir", "releasedir", "fsyncdir"))
#: the handles given to the kernel for files: above the handlers' WRITER and DIRECT bits, below
#: the control directory's numbers (control.BASE), so that a request on one is not taken for
#: the control directory's before it is turned back
HANDLE_BASE = 1 << 44


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
    if clock is None:
        return None
    record = getattr(vol, "record_processes", None)      # -o oplog=: simfs.inprocess.oplog
    return RequestClocks(clock, recorder=record() if record is not None else None)


class RequestClocks:
    """The FUSE side of ProcessClocks: owner of each request, and the handles' openers.
    `recorder` (an op log's; None without one): told of each request's process
    (`request(proc, ctl)`, `request(None, False)` after it) and of the clocks' changes between
    requests (its `note`, ProcessClocks' observer)."""

    def __init__(self, clock, probe=proc_stat, recorder=None):
        self.recorder = recorder
        self.clocks = ProcessClocks(clock, probe, None if recorder is None else recorder.note)
        self.files: dict[int, tuple] = {}    # the kernel's file handle -> (opener's Proc, the handlers')
        self.dirs: dict[int, object] = {}    # directory handle -> opener's Proc
        self.next_handle = HANDLE_BASE

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
        """Serve the request on its process's clock, with the handlers' own file handle; give
        each open its own handle for the kernel, and forget it at the release."""
        p = self.owner(op, args)
        kernel_fh = None
        if op in FILE_OPS or op == "setattr":
            at = 3 if op == "setattr" else 0
            entry = self.files.get(args[at])
            if entry is not None:
                kernel_fh = args[at]
                args = args[:at] + (entry[1],) + args[at + 1:]
        clocks = self.clocks
        rec = self.recorder
        if rec is not None:
            rec.request(p, ctl)
        clocks.begin(p, mount=ctl)
        try:
            result = fn(ops, *args)
        finally:
            clocks.end(p)
            if rec is not None:
                rec.request(None, False)        # between requests: the mount's latest time
        if op == "open" or op == "create":
            info = result[0] if op == "create" else result
            fh = info.fh
            if control.is_control(fh):      # (one per open already; requests on it are ctl's)
                self.files[fh] = (p, fh)
            else:
                handle = info.fh = self.next_handle
                self.next_handle += 1
                self.files[handle] = (p, fh)
        elif op == "opendir" and p is not None:
            self.dirs[result] = p
        elif op == "release" and kernel_fh is not None:
            del self.files[kernel_fh]
        elif op == "releasedir":
            self.dirs.pop(args[0], None)
        return result
