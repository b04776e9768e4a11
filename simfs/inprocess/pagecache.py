"""The modelled system's page-cache write-back: which dirty pages reach the file system, when.

A page dirtied through a shared mapping has no block until the kernel writes it back (ext2 and
ext3 allocate in writepage; ext4 with delayed allocation too). So the layout of a file filled
through a mapping is decided by the *write-back* order, and that order belongs to the system
being simulated, not to the host simfs runs on. This module is that write-back, in simulated
time, for Linux 2.6.29 (seed 004's system: "amd64 quad-core 6GB running 2.6.29"), from
mm/page-writeback.c, fs/fs-writeback.c, mm/page-writeback.c:write_cache_pages and
block/blk-core.c of v2.6.29:

* thresholds (get_dirty_limits): background = dirty_background_ratio % and the hard limit
  dirty_ratio % of the dirtyable memory (`ram`); the per-device limit is the hard limit (one
  device writes), lowered by task_dirty_limit's 1/8 for the one task that dirties;
* the dirtier (balance_dirty_pages_ratelimited): every `ratelimit_pages` pages it dirties
  (8 once the limit was exceeded) it checks the limits; above the device limit (dirty +
  under write-back) and above the midpoint of background and hard limit it writes back
  `write_chunk` = 1.5 x ratelimit_pages pages itself, waits in congestion_wait (100 ms, or
  until a request completes) and checks again until it wrote its chunk or fell below; on the
  way out it starts background write-back if dirty pages exceed the background threshold;
* background write-back (pdflush, background_writeout): chunks of MAX_WRITEBACK_PAGES = 1024
  pages while dirty pages exceed the background threshold; non-blocking: a congested queue
  (113 of 128 requests) makes it wait (congestion_wait) instead;
* kupdate (wb_kupdate): every dirty_writeback_interval (5 s) it writes back the inodes first
  dirtied more than dirty_expire_interval (30 s) ago, in chunks of 1024;
* each chunk is write_cache_pages with range_cyclic: the inode's dirty pages in ascending
  order from its writeback_index, wrapping once, up to the chunk; writeback_index moves past
  the last page written. The pages go to the file system as one writepages call (allocation
  for holes happens there: `Volume.writepages`) and their requests are started without
  waiting; the block layer's queue holds `nr_requests` (128) requests: a blocking writer
  (the dirtier, msync) waits for a free slot;
* msync(MS_SYNC) / fsync (filemap_fdatawrite + wait, WB_SYNC_ALL): every dirty page of the
  file, ascending from page 0, then wait for the media.

The dirtier's own time per page (the fault, the page's zeroing, set_page_dirty) is `fault_us`:
4.89 us, what seed 004's machine measured for the same fill when it was never throttled
(vm.dirty_ratio=90: "touched 262144 pages in 1.281706 seconds (4.89 usec/page)"), an input of the
modelled machine, not fitted to the figures this model predicts.

The requests of each writepages call go through the volume's host queue (simfs.blockio.hostqueue:
one plug per call, merged up to `max_sectors_kb` and ordered by `iosched`, mount options); this
model's own `nr_requests` is its view of that queue's depth for congestion and for a blocking
writer's wait.

Left out: the host's page cache (never involved: the pages are the model's), the
page-allocation and reclaim side (the file fits in the modelled RAM), the flusher's plug over a
whole chunk (each call of BATCH pages is its own plug, so requests merge within a call only),
laptop mode, several devices (one device writes, so its share of the limit is all of it), the
journal of ext3 (ext2's rules).

Determinism: no real time, no host state; the same calls give the same result.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, fields

import numpy as np

from simfs.units import parse_size

PAGE = 4096


@dataclass(frozen=True)
class WritebackParams:
    """Linux 2.6.29's write-back parameters, with where each value comes from."""

    ram: int = 6 << 30                      # dirtyable memory: seed 004's machine had 6 GB
    cpus: int = 4                           # "amd64 quad-core": ratelimit_pages = RAM pages / (cpus * 32)
    dirty_ratio: int = 10                   # vm_dirty_ratio, 2.6.22-2.6.29 default
    dirty_background_ratio: int = 5         # dirty_background_ratio, same kernels
    dirty_writeback_interval: float = 5.0   # dirty_writeback_interval = 5 * HZ
    dirty_expire_interval: float = 30.0     # dirty_expire_interval = 30 * HZ
    max_writeback_pages: int = 1024         # MAX_WRITEBACK_PAGES (fs/fs-writeback.c)
    nr_requests: int = 128                  # BLKDEV_MAX_RQ: the block layer's queue depth
    congestion_wait: float = 0.1            # congestion_wait(WRITE, HZ/10)
    fault_us: float = 4.89                  # the dirtier's time per page (seed 004, unthrottled)

    @property
    def ratelimit_pages(self) -> int:
        """writeback_set_ratelimit: RAM pages / (cpus * 32), at least 16, at most 4 MiB of pages."""
        r = (self.ram // PAGE) // (self.cpus * 32)
        return max(16, min(r, (4 << 20) // PAGE))

    @property
    def write_chunk(self) -> int:
        """sync_writeback_pages: what the dirtier writes back itself each time it is throttled."""
        return self.ratelimit_pages + self.ratelimit_pages // 2

    def thresholds(self) -> tuple[int, int, int]:
        """get_dirty_limits: (background, dirty, this task's device limit) in pages."""
        pages = self.ram // PAGE
        ratio = max(self.dirty_ratio, 5)
        bg_ratio = self.dirty_background_ratio
        if bg_ratio >= ratio:
            bg_ratio = ratio // 2
        dirty = pages * ratio // 100
        background = pages * bg_ratio // 100
        return background, dirty, dirty - dirty // 8     # task_dirty_limit: the one dirtier

    @classmethod
    def parse(cls, spec: str) -> "WritebackParams":
        """`linux-2.6.29[,key=value...]` (sizes take K/M/G): the preset with overrides."""
        parts = [p for p in spec.split(",") if p]
        if not parts or parts[0] not in PRESETS:
            raise ValueError(f"unknown page-cache model {parts[0] if parts else spec!r} "
                             f"(known: {', '.join(PRESETS)})")
        kw = {}
        names = {f.name: f.type for f in fields(cls)}
        for p in parts[1:]:
            key, eq, value = p.partition("=")
            if key not in names:
                raise ValueError(f"page-cache model: unknown parameter {p!r} (known: {', '.join(names)})")
            if not value.strip():
                raise ValueError(f"page-cache model: {key}{eq} has no value (e.g. {key}="
                                 f"{_shown(getattr(cls, key), key)})")
            try:
                v = parse_size(value) if key == "ram" else (float(value) if names[key] == "float" else int(value))
            except ValueError:
                raise ValueError(f"page-cache model: bad value {p!r}") from None
            _check(key, v, p)
            kw[key] = v
        params = PRESETS[parts[0]](**kw)
        if params.dirty_background_ratio > params.dirty_ratio:
            given = [k for k in ("dirty_background_ratio", "dirty_ratio") if k not in kw]
            raise ValueError(f"page-cache model: dirty_background_ratio ({params.dirty_background_ratio}) must "
                             f"not exceed dirty_ratio ({params.dirty_ratio})"
                             + (f"; {given[0]} is the default: give it too" if given else ""))
        return params


# the values parse accepts: every parameter positive but dirty_background_ratio, and within
# (lowest, highest, unit) (None: no bound). Finite and bounded so that simulated time moves on:
# an infinite or enormous step of the dirtier's clock (fault_us, congestion_wait) or a vanishing
# kupdate period would make the loops that catch up with the clock run forever.
LIMITS = {
    "ram": (PAGE, None, ""),
    "cpus": (1, 4096, ""),
    "dirty_ratio": (1, 100, "percent"),       # the model uses 5 below 5, as the kernel does
    "dirty_background_ratio": (0, 100, "percent"),     # and at most dirty_ratio
    "dirty_writeback_interval": (0.01, None, "seconds"),   # the sysctl counts centiseconds
    "dirty_expire_interval": (None, None, "seconds"),
    "max_writeback_pages": (1, None, "pages"),
    "nr_requests": (1, None, "requests"),
    "congestion_wait": (0.001, 60, "seconds"),  # a jiffy at HZ=1000 .. a minute
    "fault_us": (None, 1_000_000, "microseconds per page"),     # up to a second
}


def _shown(v, key: str = "") -> str:
    if key == "ram":
        for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
            if v >= 1 << shift and v % (1 << shift) == 0:
                return f"{v >> shift}{unit}"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _check(key: str, v, given: str) -> None:
    """A parameter's value: finite, positive (but dirty_background_ratio), within LIMITS."""
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"page-cache model: {given}: must be a finite number")
    lo, hi, unit = LIMITS[key]
    unit = f" {unit}" if unit else ""
    if v <= 0 and key != "dirty_background_ratio":
        raise ValueError(f"page-cache model: {given}: {key} must be positive")
    if lo is not None and v < lo or hi is not None and v > hi:
        span = (f"{_shown(lo, key)} to {_shown(hi, key)}" if lo is not None and hi is not None
                else f"at least {_shown(lo, key)}" if lo is not None else f"at most {_shown(hi, key)}")
        raise ValueError(f"page-cache model: {given}: {key} must be {span}{unit}")


PRESETS = {"linux-2.6.29": WritebackParams}


class _Inode:
    __slots__ = ("ino", "dirty", "ndirty", "index", "dirtied_when")

    def __init__(self, ino: int, npages: int):
        self.ino = ino
        self.dirty = np.zeros(max(npages, 1), dtype=bool)
        self.ndirty = 0
        self.index = 0               # mapping->writeback_index
        self.dirtied_when = None     # when the inode went from clean to dirty


class PageWriteback:
    """Dirty pages of the modelled system and the three actors that write them back (the
    dirtier when throttled, background write-back, kupdate), on the volume's simulated clock.

    `sink(ino, pages) -> [(finish, blocks)]` writes pages back (Volume.writepages): gives holes
    their blocks, starts the requests, returns each request's finish time and size."""

    def __init__(self, clock, sink, params: WritebackParams):
        self.clock = clock
        self.sink = sink
        self.p = params
        self.bg_thresh, self.dirty_thresh, self.task_thresh = params.thresholds()
        self.inodes: dict[int, _Inode] = {}
        self.ndirty = 0
        self.inflight: list[tuple[float, int]] = []    # heap of (finish, pages) of our requests
        self.nr_since = 0                              # pages dirtied since the last check
        self.dirty_exceeded = False
        self.bg_at: float | None = None                # background write-back: next step's time
        self.kupdate_at = params.dirty_writeback_interval
        self.counts = {"throttled": 0, "pages_by_dirtier": 0, "pages_by_background": 0,
                       "pages_by_kupdate": 0, "pages_by_sync": 0, "chunks": 0}

    # the dirtier ---------------------------------------------------------------------------
    def dirty(self, ino: int, index: int, npages: int) -> None:
        """A store dirtied page `index` of file `ino` (npages long) at the clock's time; the
        dirtier is charged fault_us and balanced as balance_dirty_pages_ratelimited does."""
        self.clock.cpu(self.p.fault_us * 1e-6)
        self.run_background()
        f = self.inodes.get(ino)
        if f is None:
            f = self.inodes[ino] = _Inode(ino, npages)
        if index >= len(f.dirty):
            f.dirty = np.concatenate([f.dirty, np.zeros(max(index + 1, 2 * len(f.dirty)) - len(f.dirty), bool)])
        if f.dirty[index]:
            return
        f.dirty[index] = True
        f.ndirty += 1
        self.ndirty += 1
        if f.dirtied_when is None:
            f.dirtied_when = self.clock.now
        self.nr_since += 1
        if self.nr_since >= (8 if self.dirty_exceeded else self.p.ratelimit_pages):
            self.nr_since = 0
            self._balance()

    def _writeback_pages(self) -> int:
        now = self.clock.now
        while self.inflight and self.inflight[0][0] <= now:
            heapq.heappop(self.inflight)
        return sum(n for _, n in self.inflight)

    def _balance(self) -> None:
        """balance_dirty_pages."""
        written = 0
        chunk = self.p.write_chunk
        while True:
            wb = self._writeback_pages()
            if self.ndirty + wb <= self.task_thresh:
                break
            if self.ndirty + wb < (self.bg_thresh + self.dirty_thresh) // 2:
                break
            self.dirty_exceeded = True
            self.counts["throttled"] += 1
            if self.ndirty:
                written += self._writeback(chunk, blocking=True, who="pages_by_dirtier")
            if self.ndirty + self._writeback_pages() <= self.task_thresh or written >= chunk:
                break
            self._congestion_wait()
        if self.ndirty + self._writeback_pages() < self.task_thresh:
            self.dirty_exceeded = False
        if self.bg_at is None and self.ndirty > self.bg_thresh:
            self.bg_at = self.clock.now

    # background write-back and kupdate -------------------------------------------------------
    def run_background(self) -> None:
        """Let pdflush's background write-back and kupdate do what was due by now."""
        while self.bg_at is not None and self.bg_at <= self.clock.now:
            self._background_step()
        while self.kupdate_at <= self.clock.now:
            self._kupdate()
            self.kupdate_at += self.p.dirty_writeback_interval

    def _congested(self) -> bool:
        self._writeback_pages()
        return len(self.inflight) >= self.p.nr_requests - self.p.nr_requests // 8 + 1

    def _uncongested_at(self) -> float:
        """When congestion_wait returns: a request completes, or the timeout."""
        t = self.clock.now + self.p.congestion_wait
        return min(t, self.inflight[0][0]) if self.inflight else t

    def _congestion_wait(self) -> None:
        self.clock.wait_until(self._uncongested_at())

    def _background_step(self) -> None:
        """One turn of background_writeout's loop."""
        if self.ndirty < self.bg_thresh:
            self.bg_at = None
            return
        if self._congested():
            self.bg_at = self._uncongested_at()
            return
        n = self._writeback(self.p.max_writeback_pages, blocking=False, who="pages_by_background")
        if n < self.p.max_writeback_pages:
            self.bg_at = self._uncongested_at() if self._congested() else None

    def _kupdate(self) -> None:
        """wb_kupdate: write back the inodes dirtied before now - dirty_expire_interval."""
        old = self.clock.now - self.p.dirty_expire_interval
        for f in sorted(self.inodes.values(), key=lambda f: (f.dirtied_when is None, f.dirtied_when or 0)):
            while f.ndirty and f.dirtied_when is not None and f.dirtied_when <= old:
                if self._congested():
                    self._congestion_wait()
                    continue
                self._write_inode(f, self.p.max_writeback_pages, cyclic=True, blocking=False,
                                  who="pages_by_kupdate")

    # writing back -----------------------------------------------------------------------------
    def _writeback(self, nr: int, blocking: bool, who: str) -> int:
        """writeback_inodes: the dirty inodes, oldest first, until nr pages are written."""
        done = 0
        for f in sorted(self.inodes.values(), key=lambda f: (f.dirtied_when is None, f.dirtied_when or 0)):
            if done >= nr:
                break
            if f.ndirty:
                done += self._write_inode(f, nr - done, cyclic=True, blocking=blocking, who=who)
        return done

    def _write_inode(self, f: _Inode, nr: int, cyclic: bool, blocking: bool, who: str) -> int:
        """write_cache_pages: dirty pages ascending from writeback_index (wrapping once when
        cyclic, from 0 otherwise), at most nr, handed to the file system a request's worth at
        a time; a non-blocking writer stops where the queue becomes congested, a blocking one
        waits for a free request (get_request_wait)."""
        start = f.index if cyclic else 0
        pages = np.flatnonzero(f.dirty[start:])[:nr] + start
        if cyclic and len(pages) < nr and start:
            pages = np.concatenate([pages, np.flatnonzero(f.dirty[:start])[:nr - len(pages)]])
        done = 0
        for i in range(0, len(pages), self.BATCH):
            if not blocking and self._congested():
                break
            batch = pages[i:i + self.BATCH]
            f.dirty[batch] = False
            f.ndirty -= len(batch)
            self.ndirty -= len(batch)
            f.index = int(batch[-1]) + 1
            done += len(batch)
            for finish, n in self.sink(f.ino, [int(p) for p in batch]):
                heapq.heappush(self.inflight, (finish, n))
            if blocking:
                self._writeback_pages()
                while len(self.inflight) > self.p.nr_requests:
                    self.clock.wait_until(self.inflight[0][0])
                    self._writeback_pages()
        if done:
            self.counts[who] += done
            self.counts["chunks"] += 1
        if not f.ndirty:
            f.dirtied_when = None
        return done

    #: pages handed to the file system at once (one plug of the host queue): maxio's 128 KiB
    BATCH = 32

    def sync_file(self, ino: int) -> None:
        """msync(MS_SYNC) / fsync: every dirty page of the file from page 0, then the wait for
        the media is the caller's (Volume.fsync writes the metadata and drains)."""
        f = self.inodes.get(ino)
        if f is not None and f.ndirty:
            self._write_inode(f, f.ndirty, cyclic=False, blocking=True, who="pages_by_sync")
        self.inflight.clear()
