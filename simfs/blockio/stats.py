"""Counters of a mounted volume, kept per phase (`mark` starts a named phase).

Everything the volume, buffer cache and clock count goes through `Stats.count`; operation
times and disk-request breakdowns through `op` and `disk`, FLUSH CACHE waits through `flush`.
The drive's own work (destaging its write cache: `DiskModel.work_counters`, `work_time`) is
taken from the model's running totals whenever statistics are read or a phase starts, so it
lands in the phase in which the model played it out. `snapshot()` gives the JSON form shown
in /.simfs/stats: totals, then each phase.
"""

import math
from collections import defaultdict

from simfs.blockio.histogram import Histogram

DISK_COMPONENTS = ("queue", "overhead", "seek", "rotation", "transfer", "interface", "rmw")
#: disk time that is no host request's breakdown (the drive's own work adds its names)
FLUSH = "flush"
SEEK_SECTORS = 128   # seekwatcher's rule: a seek is a jump of more than 128 sectors
LAYOUT_BLOCK_SECTORS = 8   # the layout score counts 4 KiB blocks read, whatever the file system's block size
#: latencies noted (operations and disk requests) before they are folded into the phase's
#: totals and histograms: one loop per batch instead of a histogram update per operation,
#: with memory bounded on a long mount (every reader folds first)
FOLD_EVERY = 4096


# counters every phase shows, 0 included (`.counters.seeks` is 0, not missing, when none happened)
COUNTERS = ("disk_reads", "disk_writes", "sectors_read", "sectors_written", "seeks",
            "drive_cache_hits", "cache_hits", "cache_misses", "readahead_blocks", "blocks_read",
            "blocks_written", "writeback_throttled", "drive_flushes", "read_discontiguities")


def layout_score(counters: dict) -> float | None:
    """Conway et al.'s dynamic layout score (FAST'17, "File Systems Fated for Senescence?",
    section 3): 1 - (read requests that did not start where the previous read ended) / (4 KiB
    blocks read). 1.0 is a perfectly sequential read; None when nothing was read."""
    blocks = counters.get("sectors_read", 0) / LAYOUT_BLOCK_SECTORS
    if not blocks:
        return None
    return 1.0 - counters.get("read_discontiguities", 0) / blocks


def _with_zeros(counters: dict) -> dict:
    return dict(sorted({**dict.fromkeys(COUNTERS, 0), **counters}.items()))


class Phase:
    def __init__(self, name: str, start: float):
        self.name = name
        self.start = start
        self.end = start
        self.counters: dict[str, int] = defaultdict(int)
        self.ops: dict[str, list] = {}                 # name -> [count, simulated seconds]
        self.disk_time: dict[str, float] = defaultdict(float)
        # latency histograms: per operation, per disk request kind ("R data", "W inode", "all")
        self.op_lat: dict[str, Histogram] = {}
        self.disk_lat: dict[str, Histogram] = {}
        self.rotational_misses = 0
        self.read_end = None          # where the phase's previous read request ended (sector)
        # latencies noted and not yet folded into ops / op_lat / disk_lat, in their order
        self.op_pend: dict[str, list] = {}
        self.disk_pend: dict[str, list] = {}

    def fold(self) -> None:
        """Fold the latencies noted since the last fold into the operation totals and the
        histograms, in the order they were noted (the same sums, to the last bit, as adding
        each when it happened)."""
        for name, values in self.op_pend.items():
            if values:
                entry = self.ops.get(name)
                if entry is None:
                    entry = self.ops[name] = [0, 0.0]
                t = entry[1]
                for v in values:
                    t += v
                entry[0] += len(values)
                entry[1] = t
                h = self.op_lat.get(name)
                if h is None:
                    h = self.op_lat[name] = Histogram()
                h.add_many(values)
                values.clear()
        for kind, values in self.disk_pend.items():
            if values:
                h = self.disk_lat.get(kind)
                if h is None:
                    h = self.disk_lat[kind] = Histogram()
                h.add_many(values)
                values.clear()

    def latency(self) -> dict:
        """Percentiles of simulated latency per operation and per disk request kind (the
        request's finish - issue), and the rotational misses (see Stats.disk)."""
        self.fold()
        return {"operations": {k: h.summary() for k, h in sorted(self.op_lat.items())},
                "disk": {k: h.summary() for k, h in sorted(self.disk_lat.items())},
                "rotational_misses": self.rotational_misses}

    def as_dict(self) -> dict:
        self.fold()
        return {
            "name": self.name,
            "start": self.start,
            "elapsed": self.end - self.start,
            "waited": sum(t for _, t in self.ops.values()),
            "operations": {k: {"count": c, "time": t} for k, (c, t) in sorted(self.ops.items())},
            "counters": _with_zeros(self.counters),
            "layout_score": layout_score(self.counters),
            "disk_time": {**dict.fromkeys(DISK_COMPONENTS + ("busy", FLUSH), 0.0), **self.disk_time},
            "latency": self.latency(),
        }


class Stats:
    def __init__(self, now: float = 0.0):
        self.last_end_lba = None
        self._work: tuple[dict, dict] = ({}, {})      # the model's running totals of its own work
        self._seen: tuple[dict, dict] = ({}, {})
        self.miss_rotation, self.miss_seek = math.inf, 0.0     # see set_rotation
        self._unfolded = 0                 # latencies noted since the last fold (FOLD_EVERY)
        self._start(Phase("all", now), keep=False)

    def set_rotation(self, revolution: float | None, head_switch: float | None) -> None:
        """The drive's revolution time and head-switch time (rotating models; others have
        none): a request that waits more than half a revolution for its sector although the
        arm did not change cylinder (seek no longer than a head switch) counts as a
        rotational miss: the sector it wanted had just passed under the head."""
        if revolution:
            self.miss_rotation = revolution / 2
            self.miss_seek = head_switch or 0.0

    def watch(self, counters: dict | None, seconds: dict | None) -> None:
        """Take the drive's own work from these running totals (DiskModel.work_counters,
        work_time): counts go to the counters, seconds to the disk time."""
        self._work = (counters or {}, seconds or {})
        self._seen = (dict(self._work[0]), dict(self._work[1]))

    def _settle(self) -> None:
        """Add the drive's work since the last look to the current phase (0 included)."""
        for work, seen, into in zip(self._work, self._seen, (self.phase.counters, self.phase.disk_time)):
            for k, v in work.items():
                into[k] += v - seen[k]
                seen[k] = v

    def _start(self, phase: Phase, keep: bool) -> None:
        if keep:
            self._settle()
            self.phase.fold()
        else:
            self._seen = (dict(self._work[0]), dict(self._work[1]))
        self.phases = self.phases + [phase] if keep else [phase]
        self.phase = phase
        self._counters = phase.counters     # the hot path: one dict, no lookups
        self._op_pend = phase.op_pend
        self._disk_pend = phase.disk_pend
        self._unfolded = 0

    def count(self, key: str, n: int = 1) -> None:
        self._counters[key] += n

    def op(self, name: str, seconds: float, now: float) -> None:
        """Operation `name` took `seconds` and ended at `now` (noted; folded in bulk)."""
        pend = self._op_pend.get(name)
        if pend is None:
            pend = self._op_pend[name] = []
        pend.append(seconds)
        self.phase.end = now
        self._unfolded += 1
        if self._unfolded >= FOLD_EVERY:
            self._unfolded = 0
            self.phase.fold()

    def disk(self, op: str, lba: int, sectors: int, result, cause: str) -> None:
        c = self.phase.counters
        c["disk_reads" if op == "R" else "disk_writes"] += 1
        c["sectors_read" if op == "R" else "sectors_written"] += sectors
        c[f"disk_requests_{cause}"] += 1
        if op == "R":
            if self.phase.read_end is not None and lba != self.phase.read_end:
                c["read_discontiguities"] += 1
            self.phase.read_end = lba + sectors
        if self.last_end_lba is not None and abs(lba - self.last_end_lba) > SEEK_SECTORS:
            c["seeks"] += 1
        self.last_end_lba = lba + sectors
        if result.cache_hit:
            c["drive_cache_hits"] += 1
        dt = self.phase.disk_time
        dt["queue"] += result.queue                     # DISK_COMPONENTS, unrolled
        dt["overhead"] += result.overhead
        dt["seek"] += result.seek
        dt["rotation"] += result.rotation
        dt["transfer"] += result.transfer
        dt["interface"] += result.interface
        dt["rmw"] += result.rmw
        dt["busy"] += result.finish - result.start
        lat = result.finish - result.issue
        pend = self._disk_pend
        kind = f"{op} {cause}"
        values = pend.get(kind)
        if values is None:
            values = pend[kind] = []
        values.append(lat)
        values = pend.get("all")
        if values is None:
            values = pend["all"] = []
        values.append(lat)
        self._unfolded += 2
        if result.rotation > self.miss_rotation and result.seek <= self.miss_seek:
            self.phase.rotational_misses += 1

    def flush(self, seconds: float) -> None:
        """A FLUSH CACHE command kept the host waiting `seconds` (fsync, sync, unmount)."""
        self.phase.counters["drive_flushes"] += 1
        self.phase.disk_time[FLUSH] += seconds

    def mark(self, name: str, now: float) -> None:
        """Start a new phase at `now`."""
        self.phase.end = max(self.phase.end, now)
        self._start(Phase(name, now), keep=True)

    def reset(self, now: float) -> None:
        self._start(Phase("all", now), keep=False)

    def totals(self) -> dict[str, int]:
        self._settle()
        out: dict[str, int] = defaultdict(int)
        for p in self.phases:
            for k, v in p.counters.items():
                out[k] += v
        return _with_zeros(out)

    def disk_busy(self) -> float:
        """Disk busy time summed over every phase."""
        return sum(p.disk_time.get("busy", 0.0) for p in self.phases)

    def since(self, start: float, totals: dict, busy: float, now: float) -> dict:
        """What happened since `start` (when `totals()` and `disk_busy()` were taken): the
        final write-back at unmount, in the form of a phase's elapsed, counters and busy."""
        now_totals = self.totals()
        counters = {k: now_totals.get(k, 0) - totals.get(k, 0) for k in sorted(set(now_totals) | set(totals))}
        return {"name": "unmount", "start": start, "elapsed": now - start,
                "counters": _with_zeros(counters), "disk_time": {"busy": self.disk_busy() - busy}}

    def snapshot(self, now: float, extra: dict | None = None) -> dict:
        self._settle()
        self.phase.end = max(self.phase.end, now)
        total = Phase("total", self.phases[0].start)
        total.end = now
        for p in self.phases:
            p.fold()
            for k, v in p.counters.items():
                total.counters[k] += v
            for k, (c, t) in p.ops.items():
                e = total.ops.setdefault(k, [0, 0.0])
                e[0] += c
                e[1] += t
            for k, v in p.disk_time.items():
                total.disk_time[k] += v
            for mine, theirs in ((total.op_lat, p.op_lat), (total.disk_lat, p.disk_lat)):
                for k, h in theirs.items():
                    mine.setdefault(k, Histogram()).merge(h)
            total.rotational_misses += p.rotational_misses
        out = {"now": now, "total": total.as_dict(), "phases": [p.as_dict() for p in self.phases]}
        if extra:
            out.update(extra)
        return out
