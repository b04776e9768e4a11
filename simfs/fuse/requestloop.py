"""pyfuse3's request loop without a pass through trio's scheduler per request.

pyfuse3.main serves requests on trio: before each one its reader task takes a trio.Lock (a
checkpoint: one pass of trio's scheduler, with an epoll_wait) and waits for /dev/fuse in
trio's epoll (epoll_ctl, the scheduler again, epoll_wait, rescheduling). On simfs, whose
handlers never await (the volume is synchronous; one reader task, main(max_tasks=1)), that
pure-Python scheduling is a large share of each request's cost. pyfuse3 reaches trio only
through its module attribute `pyfuse3.trio` (pyfuse3.asyncio swaps it the same way);
`installed()` gives it, for the life of the loop, a view of trio in which

- `Lock()` never waits: there is one reader task, so nothing to wait for;
- `lowlevel.wait_readable(fd)` first polls the descriptor itself, blocking for up to IDLE
  seconds, and returns as soon as a request is there, without leaving the task. Only when
  none came (the mount is idle) or SLICE seconds have passed since the loop last yielded does
  it wait the trio way, which runs the daemon's other tasks (the signal watcher, the commit
  timer): they run at most max(IDLE, SLICE) later than they would.

The same requests reach the same handlers in the same order: nothing the volume sees, and no
simulated figure, changes.
"""

from __future__ import annotations

import contextlib
import select
import time

#: how long the loop waits for the next request on its own before it lets trio run (seconds)
IDLE = 0.05
#: under a steady stream of requests, the loop lets trio run at least this often (seconds)
SLICE = 0.2


class _OneReaderLock:
    """pyfuse3's read lock with one reader task: held by nobody else, never waits."""

    async def __aenter__(self):
        return None

    async def __aexit__(self, *exc):
        return None


class _Lowlevel:
    """trio.lowlevel with wait_readable polling first (see the module docstring)."""

    def __init__(self, trio, idle: float, slice_: float):
        self._trio = trio
        self._idle_ms = max(0, int(idle * 1000))
        self._slice = slice_
        self._polls: dict[int, select.poll] = {}
        self._until = 0.0               # the loop yields to trio once this monotonic time passes
        self.polled = 0                 # requests found by the fast path (tests read these)
        self.yielded = 0                # waits handed to trio

    def __getattr__(self, name):
        return getattr(self._trio.lowlevel, name)

    async def wait_readable(self, fd: int) -> None:
        if time.monotonic() < self._until:
            p = self._polls.get(fd)
            if p is None:
                p = self._polls[fd] = select.poll()
                p.register(fd, select.POLLIN)
            if p.poll(self._idle_ms):   # readable, or hung up (unmounted): the read says which
                self.polled += 1
                return
        self.yielded += 1
        try:
            await self._trio.lowlevel.wait_readable(fd)
        finally:
            self._until = time.monotonic() + self._slice


class TrioView:
    """What pyfuse3 sees as `trio`: trio itself but for Lock and lowlevel.wait_readable."""

    def __init__(self, trio, idle: float = IDLE, slice_: float = SLICE):
        self._trio = trio
        self.lowlevel = _Lowlevel(trio, idle, slice_)

    def __getattr__(self, name):
        return getattr(self._trio, name)

    @staticmethod
    def Lock():     # noqa: N802  (trio's name)
        return _OneReaderLock()


@contextlib.contextmanager
def installed(pyfuse3, trio, idle: float = IDLE, slice_: float = SLICE):
    """pyfuse3 on the TrioView while the block runs (its main must use max_tasks=1); trio
    again afterwards."""
    view = TrioView(trio, idle, slice_)
    before = pyfuse3.trio
    pyfuse3.trio = view
    try:
        yield view
    finally:
        pyfuse3.trio = before
