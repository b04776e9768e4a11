"""The disk-model interface: a request goes in, its completion time and a breakdown come out.

Times are simulated seconds (floats).  LBAs and lengths are in 512-byte logical sectors and
are relative to the partition the file system lives in (a model may add a partition offset).
Models are stateful (head position, rotation, cache contents) and deterministic: they never
read the wall clock and use no randomness, so the same request stream gives the same times.

The caller issues requests in non-decreasing `issue_time`.  The drive has no command queue
(like a PATA drive, or SATA without NCQ): a request starts when the previous one has finished,
and the wait is reported as `queue`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

SECTOR = 512


@dataclass(slots=True, frozen=True)
class DiskRequest:
    """One command to the drive.  `sync` means FUA: the data must be on the media on return."""

    op: str              # "R" or "W"
    lba: int             # first 512-byte sector, partition-relative
    sectors: int         # number of 512-byte sectors (> 0)
    issue_time: float    # simulated seconds
    sync: bool = False


@dataclass(slots=True)
class DiskResult:
    """When a request finished and where its time went.

    finish - issue == queue + overhead + seek + rotation + transfer + interface + rmw
    (exactly, up to float rounding).  `start` is issue + queue: when the drive began to work on
    this command.  `transfer` is media time (or, on a cache hit, the wait for read-ahead to bring
    the data in); `interface` is bus time not hidden under media time; `rmw` is everything a
    read-modify-write of partly covered 4 KiB physical sectors added.
    """

    issue: float
    start: float
    finish: float
    queue: float = 0.0
    overhead: float = 0.0
    seek: float = 0.0
    rotation: float = 0.0
    transfer: float = 0.0
    interface: float = 0.0
    rmw: float = 0.0
    cache_hit: bool = False

    @property
    def total(self) -> float:
        """Response time: finish - issue."""
        return self.finish - self.issue

    COMPONENTS = ("queue", "overhead", "seek", "rotation", "transfer", "interface", "rmw")

    def breakdown(self) -> dict:
        return {name: getattr(self, name) for name in self.COMPONENTS}


class DiskModel(ABC):
    """A modelled drive.  Subclasses implement `submit`, `flush` and `reset`."""

    #: preset or spec name, e.g. "sata7200,rpm=5400"
    name: str = "?"
    #: addressable 512-byte sectors of the partition
    sectors: int = 0

    def access(self, req: DiskRequest) -> DiskResult:
        """Service one request (see `submit`)."""
        return self.submit(req.op, req.lba, req.sectors, req.issue_time, req.sync)

    @abstractmethod
    def submit(self, op: str, lba: int, sectors: int, issue_time: float, sync: bool = False) -> DiskResult:
        """Service one request given as plain values (the fast path; no request object)."""

    @abstractmethod
    def flush(self, now: float) -> float:
        """FLUSH CACHE issued at `now`: returns when every cached write is on the media."""

    @abstractmethod
    def reset(self) -> None:
        """Back to the power-on state: empty caches, heads at cylinder 0, idle at time 0."""

    @property
    @abstractmethod
    def busy_until(self) -> float:
        """When the drive will accept the next command."""

    def check(self, op: str, lba: int, sectors: int) -> None:
        """Raise ValueError for a request the drive would reject."""
        if op not in ("R", "W"):
            raise ValueError(f"op must be 'R' or 'W', not {op!r}")
        if sectors <= 0 or lba < 0 or lba + sectors > self.sectors:
            raise ValueError(f"request lba={lba} sectors={sectors} outside 0..{self.sectors}")
