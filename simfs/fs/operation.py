"""The charging of a volume operation: CPU time, synchronous waits, policy write-back.

Every public operation of the volume is wrapped by `operation`: it charges its CPU time (the
kernel's per kind, simfs.fs.cpucost, for the outermost operation only; or a flat `cpu_op_us` for
each, nested ones too, as before), tells the cache which operation starts (the write-back mode, policies.writeback, says which
blocks it must write before it returns), runs, ends the operation in the cache (policy write-back, the syncer, dirty thresholds),
records the time in the statistics, and, between top-level operations only, lets the image
commit (real durability, which never changes simulated time). An operation that stops on
anything but an FSError records a file-system error on the image (it may have stopped
half-way); a signal an in-process run defers (`deferred_signals`) stops it between operations.

This wrapper runs for every request (tens of them per file a tool touches), so it is written
for speed: its state lives in one `OperationCharger` object per volume (compiled, its fields are
reached directly, not through the volume's dictionary), the clock's CPU charge is added in
place (what SimClock.cpu does), and the commit check is made only when the outermost
operation ends, and only every COMMIT_CHECK_EVERY of them.
"""

import contextlib
import functools
import signal

from simfs.errors import FSError

#: top-level operations between two checks whether a commit is due: the check reads the real
#: clock, and what is noted meanwhile is bounded (a commit needs only be "at most `commit`
#: seconds" late; ImageFile's byte limit is a soft one); a commit an operation asked for
#: (commit_soon: fsync, a recorded error) is made when it ends, as before
COMMIT_CHECK_EVERY = 64

#: how the wrapper marks an exception that stopped an operation half-way (its note)
RECORDED = "records a file-system error"


def recorded_error(e: BaseException) -> str:
    """The note an operation stopped half-way by `e` left on it ("" if none): the volume
    recorded a file-system error, and the image needs `simfs fsck --repair`."""
    return next((n for n in getattr(e, "__notes__", ()) if RECORDED in n), "")


#: signals received while `deferred_signals` is in force, not yet acted on
_pending: list[int] = []


class Interrupted(KeyboardInterrupt):
    """A signal asked an in-process run to stop; raised when the operation it arrived in has
    ended, so that the volume closes consistent and clean."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def deferred_signals(signums=(signal.SIGINT, signal.SIGTERM, signal.SIGHUP)):
    """For in-process runs (verbs, replay): SIGINT, SIGTERM or SIGHUP stops the run at the end
    of the volume operation it arrives in, never half-way through one (an operation stopped
    half-way would leave an inconsistent image behind, which would then be closed as clean). A
    second signal stops at once, as before."""
    def handler(signum, frame):
        if _pending:
            raise Interrupted(signum)
        _pending.append(signum)
    old = {s: signal.signal(s, handler) for s in signums}
    try:
        yield
        if _pending:                     # arrived after the last operation
            raise Interrupted(_pending[0])
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        _pending.clear()


class OperationCharger:
    """A volume's bookkeeping around its operations: the clock, cache and statistics each
    one charges, how deep the operations in progress are nested, the countdown to the next
    commit check, whether a commit was asked for, and the inodes to free when the outermost
    one ends. Kept in one plain class (an extension type when compiled: simfs.compiled.slots),
    whose `call` reaches these fields directly: the wrapper runs for every request."""

    def __init__(self, clock, cache, stats, cpu_op: float, kernel=None):
        self.clock = clock
        self.cache = cache
        self.stats = stats
        self.cpu_op = cpu_op             # the flat charge (seconds), when `kernel` is None
        self.kernel = kernel             # a cpucost.KernelCharge: the charge per kind
        self.depth = 0                   # operations in progress (commits wait for 0)
        self.countdown = 0               # top-level operations until the next commit check
        self.commit_asked = False        # an operation asked for a commit when it ends
        self.evict: list[int] = []       # unlinked inodes to free when the operation ends

    def call(self, vol, fn, name: str, args: tuple, kwargs: dict):
        """Run operation `fn` (named `name`) of volume `vol`, charged. (The volume is passed,
        not kept: no reference cycle, so a closed volume is freed at once.)"""
        clock = self.clock
        start = clock.now
        kernel = self.kernel
        if kernel is None:
            clock.now = start + self.cpu_op             # clock.cpu(self.cpu_op)
        elif self.depth:
            kernel = None                               # a nested operation: its caller's charge
        else:
            clock.now = start + kernel.before(name, args, kwargs)
        cache = self.cache
        cache.begin_op(name)
        self.depth += 1
        try:
            # the usual cases spelt out: compiled, a call with its arguments listed needs no
            # new argument tuple nor a copy of the (empty) keyword dictionary
            if kwargs:
                result = fn(vol, *args, **kwargs)
            else:
                n = len(args)
                if n == 1:
                    result = fn(vol, args[0])
                elif n == 2:
                    result = fn(vol, args[0], args[1])
                elif n == 3:
                    result = fn(vol, args[0], args[1], args[2])
                else:
                    result = fn(vol, *args)
            if kernel is not None:
                charge = kernel.after(vol.holds, name, result)
                if charge:                              # (now + 0.0 is now: the clock is >= 0)
                    clock.now += charge
            return result
        except FSError:
            if kernel is not None:
                clock.now += kernel.failed(name)
            raise
        except BaseException as e:
            if self.depth == 1:     # stopped half-way: the image may be inconsistent (ext2_error)
                vol.fs_error(f"unexpected {type(e).__name__} in {name}: {e}")
                e.add_note(f"{vol.path} {RECORDED}: run simfs fsck --repair on it")
            raise
        finally:
            try:
                cache.end_op()
                now = clock.now
                self.stats.op(name, now - start, now)
            finally:
                depth = self.depth = self.depth - 1
            if not depth:                               # between operations: a consistent image
                if self.evict:
                    vol.evict_unlinked()
                countdown = self.countdown = self.countdown - 1
                if countdown <= 0 or self.commit_asked:
                    self.countdown = COMMIT_CHECK_EVERY
                    vol.commit_if_due()
                if _pending:
                    raise Interrupted(_pending[0])


def operation(fn):
    """Charge an operation: CPU time, its synchronous waits, and policy write-back at the end
    (OperationCharger.call, through the volume's `ops`)."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        return self.ops.call(self, fn, name, args, kwargs)
    return wrapper
