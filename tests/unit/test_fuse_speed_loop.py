"""The request loop's view of trio (simfs.fuse.requestloop): a request already there is served
without a pass through trio's scheduler, an idle mount and a long stream still let the
daemon's other tasks run, and pyfuse3 gets trio back afterwards."""

import os
import time

import pyfuse3
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
