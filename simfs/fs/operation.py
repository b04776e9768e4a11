"""The charging of a volume operation: CPU time, synchronous waits, policy write-back.

Every public operation of the volume is wrapped by `operation`: it charges `cpu_op_us`,
tells the cache which operation starts (the write-back mode, policies.writeback, says which
blocks it must write before it returns), runs, ends the operation in the cache (policy write-back, the syncer, dirty thresholds),
records the time in the statistics, and, between top-level operations only, lets the image
commit (real durability, which never changes simulated time).
"""

import functools


def operation(fn):
    """Charge an operation: CPU time, its synchronous waits, and policy write-back at the end."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        clock = self.clock
        start = clock.now
        clock.cpu(self.cpu_op)
        self.cache.begin_op(name)
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

