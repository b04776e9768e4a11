"""The simulated clock of one mount, and the only path from the buffer cache to the disk model.

An operation costs a small CPU charge plus the time it waits for synchronous requests.
Background requests (write-back, read-ahead) are issued at the current time and occupy the
disk; a later synchronous request queues behind them (the disk model reports the wait).
"""


class SimClock:
    def __init__(self, disk, stats, sectors_per_block: int, trace=None):
        self.disk = disk
        self.stats = stats
        self.spb = sectors_per_block
        self.trace = trace
        self.now = 0.0
        stats.watch(getattr(disk, "work_counters", None), getattr(disk, "work_time", None))
        stats.set_rotation(getattr(disk, "t_rev", None), getattr(disk, "head_switch", None))

    def cpu(self, seconds: float) -> None:
        self.now += seconds

    def wait_until(self, t: float) -> None:
        if t > self.now:
            self.now = t

    def io(self, op: str, blkno: int, nblocks: int, cause: str, ino: int = 0, wait: bool = True,
           sync: bool = False, at: float | None = None) -> float:
        """Issue one request for nblocks file-system blocks at blkno; returns its finish time.

        With wait the caller blocks until it finishes (the clock advances). `at`: the request
        is queued then (later than now: a background write waiting for a buffer lock), in
        its place in the drive's order of requests."""
        lba, sectors = blkno * self.spb, nblocks * self.spb
        r = self.disk.submit(op, lba, sectors, self.now if at is None else at, sync)
        self.stats.disk(op, lba, sectors, r, cause)
        if self.trace is not None:
            self.trace.record(op, lba, sectors, r, cause, ino, self.stats.phase.name, wait or sync)
        if wait:
            self.wait_until(r.finish)
        return r.finish

    def drop_drive_buffer(self) -> None:
        """Empty what the drive's buffer holds for reads (drop_caches: cold everywhere); disk
        models without the call (plug-ins outside DiskModel) have nothing to drop."""
        drop = getattr(self.disk, "drop_buffer", None)
        if drop is not None:
            drop(self.now)

    def drain(self) -> None:
        """Wait for every request issued so far and for the drive's write cache (sync, fsync, unmount)."""
        self.wait_until(self.disk.busy_until)
        issued = self.now
        self.wait_until(self.disk.flush(issued))
        self.stats.flush(self.now - issued)
