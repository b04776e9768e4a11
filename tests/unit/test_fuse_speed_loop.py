"""The request loop's view of trio (simfs.fuse.requestloop): a request already there is served
without a pass through trio's scheduler, an idle mount and a long stream still let the
daemon's other tasks run, and pyfuse3 gets trio back afterwards."""

import inspect
import os
import threading
import time

import pyfuse3
import pytest
import trio

from simfs.fuse import requestloop
from simfs.fuse.requestloop import TrioView


def _pipe():
    r, w = os.pipe()
    return r, w


def test_a_waiting_request_is_taken_without_letting_other_tasks_run():
    view = TrioView(trio, idle=0.5, slice_=60.0)
    r, w = _pipe()
    ran = []

    async def other():
        ran.append(True)

    async def main():
        async with trio.open_nursery() as nursery:
            os.write(w, b"x")
            await view.lowlevel.wait_readable(r)        # the first wait goes through trio
            assert view.lowlevel.yielded == 1 and view.lowlevel.polled == 0
            nursery.start_soon(other)                   # runs at the task's next checkpoint
            await view.lowlevel.wait_readable(r)        # readable: served at once
            assert view.lowlevel.polled == 1 and view.lowlevel.yielded == 1
            assert not ran                              # no scheduler pass in between
    try:
        trio.run(main)
    finally:
        os.close(r)
        os.close(w)
    assert ran


def test_an_idle_mount_lets_the_other_tasks_run():
    """No request within IDLE: the wait goes to trio, whose other tasks run (here the one that
    brings the next request, as the signal watcher or the commit timer would run)."""
    view = TrioView(trio, idle=0.02, slice_=60.0)
    r, w = _pipe()

    async def writer():
        os.write(w, b"x")

    async def main():
        with trio.fail_after(5):
            await serve()

    async def serve():
        async with trio.open_nursery() as nursery:
            os.write(w, b"x")
            await view.lowlevel.wait_readable(r)
            os.read(r, 1)
            nursery.start_soon(writer)
            await view.lowlevel.wait_readable(r)        # nothing there: polls IDLE, then trio
            assert view.lowlevel.yielded == 2 and view.lowlevel.polled == 0
    try:
        trio.run(main)
    finally:
        os.close(r)
        os.close(w)


def test_a_steady_stream_still_yields_every_slice():
    view = TrioView(trio, idle=0.5, slice_=0.02)
    r, w = _pipe()
    ticks = []

    async def timer():
        while True:
            ticks.append(time.monotonic())
            await trio.sleep(0)

    async def main():
        async with trio.open_nursery() as nursery:
            nursery.start_soon(timer)
            os.write(w, b"x")                           # always readable: a request each time
            end = time.monotonic() + 0.2
            while time.monotonic() < end:
                await view.lowlevel.wait_readable(r)
            nursery.cancel_scope.cancel()
    try:
        trio.run(main)
    finally:
        os.close(r)
        os.close(w)
    assert view.lowlevel.polled > view.lowlevel.yielded >= 3          # 0.2 s in slices of 0.02 s
    assert len(ticks) >= 3


def test_lock_and_the_rest_of_trio():
    view = TrioView(trio)
    assert view.ClosedResourceError is trio.ClosedResourceError
    assert view.lowlevel.current_task is trio.lowlevel.current_task

    async def main():
        async with view.Lock():                         # pyfuse3's read lock: never waits
            async with view.Lock():
                pass
    trio.run(main)


def test_installed_swaps_pyfuse3s_trio_and_restores_it():
    assert pyfuse3.trio is trio
    with requestloop.installed(pyfuse3, trio) as view:
        assert pyfuse3.trio is view and isinstance(view, TrioView)
    assert pyfuse3.trio is trio


def _request_after(w: int, delay: float) -> threading.Thread:
    t = threading.Thread(target=lambda: (time.sleep(delay), os.write(w, b"x")))
    t.start()
    return t


def test_a_request_that_comes_while_the_loop_spins_is_taken_without_sleeping_or_trio():
    """SPIN: after a request the loop looks for the next one without sleeping; one that comes
    meanwhile is served at once (no blocking poll: idle=0 here), without trio."""
    r, w = _pipe()

    async def serve(view, delay):
        os.write(w, b"x")
        await view.lowlevel.wait_readable(r)            # the first wait goes through trio
        os.read(r, 1)
        t = _request_after(w, delay)
        await view.lowlevel.wait_readable(r)
        t.join()
        os.read(r, 1)
    try:
        spinning = TrioView(trio, idle=0, slice_=60.0, spin=5.0)
        trio.run(serve, spinning, 0.05)
        assert (spinning.lowlevel.spun, spinning.lowlevel.polled, spinning.lowlevel.yielded) == (1, 1, 1)
        still = TrioView(trio, idle=0, slice_=60.0, spin=0)
        trio.run(serve, still, 0.05)
        assert (still.lowlevel.spun, still.lowlevel.polled, still.lowlevel.yielded) == (0, 0, 2)
    finally:
        os.close(r)
        os.close(w)


def test_the_loops_awaitables_are_done_at_once():
    """The lock's enter and exit and a request already there are awaited without a coroutine."""
    view = TrioView(trio, idle=0, slice_=60.0, spin=0)
    lock = view.Lock()
    for awaitable in (lock.__aenter__(), lock.__aexit__(None, None, None)):
        assert not inspect.iscoroutine(awaitable)
        with pytest.raises(StopIteration):
            next(awaitable.__await__())
    r, w = _pipe()
    try:
        view.lowlevel._until = time.monotonic() + 60
        os.write(w, b"x")
        awaitable = view.lowlevel.wait_readable(r)
        assert not inspect.iscoroutine(awaitable)
        with pytest.raises(StopIteration):
            next(awaitable.__await__())
        assert view.lowlevel.polled == 1
    finally:
        os.close(r)
        os.close(w)
