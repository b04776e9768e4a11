"""The charging of a volume operation: CPU time, synchronous waits, policy write-back.

Every public operation of the volume is wrapped by `operation`: it charges `cpu_op_us`,
tells the cache which metadata this operation must write before it returns (writeback=sync),
runs, ends the operation in the cache (policy write-back, the syncer, dirty thresholds),
records the time in the statistics, and, between top-level operations only, lets the image
commit (real durability, which never changes simulated time).
"""

import functools

from simfs.blockio.cache import METADATA

_NAMESPACE_SYNC = METADATA
_SYNC_KINDS = {"create": _NAMESPACE_SYNC, "mkdir": _NAMESPACE_SYNC, "mknod": _NAMESPACE_SYNC,
               "symlink": _NAMESPACE_SYNC, "link": _NAMESPACE_SYNC, "unlink": _NAMESPACE_SYNC,
               "rmdir": _NAMESPACE_SYNC, "rename": _NAMESPACE_SYNC, "write": ("indirect",)}


def operation(fn):
    """Charge an operation: CPU time, its synchronous waits, and policy write-back at the end."""
    name = fn.__name__
    sync_kinds = _SYNC_KINDS.get(name, ())

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        clock = self.clock
        start = clock.now
        clock.cpu(self.cpu_op)
        self.cache.begin_op(sync_kinds)
        self._depth += 1
        try:
            return fn(self, *args, **kwargs)
        finally:
            try:
                self.cache.end_op()
                self.stats.op(name, clock.now - start, clock.now)
            finally:
                self._depth -= 1
            self.commit_if_due()                        # between operations: a consistent image
    return wrapper

