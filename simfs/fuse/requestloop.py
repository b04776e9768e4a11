"""pyfuse3's request loop without a pass through trio's scheduler per request.

pyfuse3.main serves requests on trio: before each one its reader task takes a trio.Lock (a
checkpoint: one pass of trio's scheduler, with an epoll_wait) and waits for /dev/fuse in
trio's epoll (epoll_ctl, the scheduler again, epoll_wait, rescheduling). On simfs, whose
handlers never await (the volume is synchronous; one reader task, main(max_tasks=1)), that
pure-Python scheduling is a large share of each request's cost. pyfuse3 reaches trio only
through its module attribute `pyfuse3.trio` (pyfuse3.asyncio swaps it the same way);
`installed()` gives it, for the life of the loop, a view of trio in which

- `Lock()` never waits: there is one reader task, so nothing to wait for;
- `lowlevel.wait_readable(fd)` first polls the descriptor itself and returns as soon as a
  request is there, without leaving the task: at once if one is waiting; else it keeps
  looking for up to SPIN seconds without sleeping (sched_yield between looks, so any other
  task on the CPU runs meanwhile), then sleeps in poll for up to IDLE seconds. Only when none
  came (the mount is idle) or SLICE seconds have passed since the loop last yielded does it
  wait the trio way, which runs the daemon's other tasks (the signal watcher, the commit
  timer): they run at most max(IDLE, SLICE) later than they would.

Why spin: a program working through a file system (tar -x) sends its next request a few
microseconds after the last answer. A daemon that sleeps at once must be woken for each one,
and when tar and the daemon sit on different CPUs (the scheduler's choice on a quiet host) the
wake-up of an idle CPU (an inter-processor interrupt; in a VM an exit to the hypervisor) costs
more than the request. Measured (untar of /usr/include, 257,000 requests, 2-CPU VM, load
about 1): sleeping at once 25-28 s (the daemon slept 242,000 times); with SPIN 11-14 s (1,000
sleeps); pyfuse3's passthrough example 8.6-18.4 s. The price: the daemon's CPU time is about
its real time while requests come (at most SPIN more per request when none follows; an idle
mount sleeps as before). What the loop awaits when nothing waits (the lock, a request already
there) is an awaitable already done, not a coroutine made and run each time.

The same requests reach the same handlers in the same order: nothing the volume sees, and no
simulated figure, changes.
"""

from __future__ import annotations

import contextlib
import os
import select
import time

#: how long the loop waits for the next request on its own before it lets trio run (seconds)
IDLE = 0.05
#: after a request, how long the loop looks for the next one without sleeping (seconds)
SPIN = 0.0001
#: under a steady stream of requests, the loop lets trio run at least this often (seconds)
SLICE = 0.2


class _Done:
    """An awaitable already done: `await` on it returns None at once, with no coroutine made
    and run (the loop awaits three of these per request)."""

    __slots__ = ()

    def __await__(self):
        return _EXHAUSTED


_EXHAUSTED = iter(())        # an exhausted iterator: the end of any `await` handed it
_DONE = _Done()


class _OneReaderLock:
    """pyfuse3's read lock with one reader task: held by nobody else, never waits."""

    __slots__ = ()

    def __aenter__(self):
        return _DONE

    def __aexit__(self, *exc):
        return _DONE


class _Lowlevel:
    """trio.lowlevel with wait_readable polling first (see the module docstring)."""

    def __init__(self, trio, idle: float, slice_: float, spin: float):
        self._trio = trio
        self._idle_ms = max(0, int(idle * 1000))
        self._slice = slice_
        self._spin_s = spin
        self._polls: dict[int, select.poll] = {}
        self._until = 0.0               # the loop yields to trio once this monotonic time passes
        self.polled = 0                 # requests found by the fast path (tests read these)
        self.yielded = 0                # waits handed to trio
        self.spun = 0                   # requests found while spinning

    def __getattr__(self, name):
        return getattr(self._trio.lowlevel, name)

    def wait_readable(self, fd: int):
        """An awaitable: done at once when a request came within IDLE (no coroutine, no
        pass through trio), trio's own wait otherwise."""
        if _monotonic() < self._until:
            p = self._polls.get(fd)
            if p is None:
                p = self._polls[fd] = select.poll()
                p.register(fd, select.POLLIN)
            if p.poll(0) or (self._spin_s and self._spin(p)) or p.poll(self._idle_ms):
                self.polled += 1        # readable, or hung up (unmounted): the read says which
                return _DONE
        return self._yield(fd)

    def _spin(self, p) -> bool:
        """Look for a request for up to SPIN seconds without sleeping (yielding the CPU to
        any other task that wants it meanwhile); whether one came."""
        end = _monotonic() + self._spin_s
        while _monotonic() < end:
            os.sched_yield()
            if p.poll(0):
                self.spun += 1
                return True
        return False

    async def _yield(self, fd: int) -> None:
        self.yielded += 1
        try:
            await self._trio.lowlevel.wait_readable(fd)
        finally:
            self._until = _monotonic() + self._slice


_monotonic = time.monotonic


class TrioView:
    """What pyfuse3 sees as `trio`: trio itself but for Lock and lowlevel.wait_readable."""

    def __init__(self, trio, idle: float = IDLE, slice_: float = SLICE, spin: float = SPIN):
        self._trio = trio
        self.lowlevel = _Lowlevel(trio, idle, slice_, spin)

    def __getattr__(self, name):
        return getattr(self._trio, name)

    @staticmethod
    def Lock():     # noqa: N802  (trio's name)
        return _OneReaderLock()


@contextlib.contextmanager
def installed(pyfuse3, trio, idle: float = IDLE, slice_: float = SLICE, spin: float = SPIN):
    """pyfuse3 on the TrioView while the block runs (its main must use max_tasks=1); trio
    again afterwards."""
    view = TrioView(trio, idle, slice_, spin)
    before = pyfuse3.trio
    pyfuse3.trio = view
    try:
        yield view
    finally:
        pyfuse3.trio = before
