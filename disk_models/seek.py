"""Seek time as a function of cylinder distance: Lee's curve, as DiskSim's `curve` seek type.

    seek(x) = a*sqrt(x-1) + b*(x-1) + c          for x >= 1 cylinders, 0 for x == 0
    a = (-10*t2t + 15*avg - 5*full) / (3*sqrt(D-1))
    b = (7*t2t - 15*avg + 8*full) / (3*(D-1))
    c = t2t

with D the longest distance (cylinders - 1).  Why this form: it passes through the datasheet's
track-to-track (x = 1) and full-stroke (x = D) figures, and its mean over uniformly random
start/end cylinder pairs (distances triangular: E[x] = D/3, E[sqrt x] = 8/15 sqrt D) is the
datasheet average, which is how manufacturers define "average seek".  The sqrt term is the
accelerate/decelerate phase of short seeks, the linear term the coast of long ones
(Ruemmler & Wilkes 1994).  See docs/reference/disk-models.md section 1.1 and 5.
"""

from __future__ import annotations

import math


class SeekCurve:
    """Read seek time in seconds for a distance in cylinders (settle included, as datasheets quote it)."""

    __slots__ = ("t2t", "avg", "full", "max_distance", "a", "b", "c")

    def __init__(self, t2t: float, avg: float, full: float, cylinders: int):
        if cylinders < 3:
            raise ValueError("a seek curve needs at least 3 cylinders")
        if not 0 <= t2t <= avg <= full:
            raise ValueError(f"seek figures must satisfy 0 <= track-to-track <= average <= full stroke "
                             f"(got {t2t*1e3:g} / {avg*1e3:g} / {full*1e3:g} ms)")
        d = cylinders - 1
        self.t2t, self.avg, self.full, self.max_distance = t2t, avg, full, d
        self.a = (-10 * t2t + 15 * avg - 5 * full) / (3 * math.sqrt(d - 1))
        self.b = (7 * t2t - 15 * avg + 8 * full) / (3 * (d - 1))
        self.c = t2t
        # Non-decreasing in distance needs a >= 0 and a slope a/(2 sqrt(x-1)) + b >= 0 at x = D,
        # i.e. (2*t2t + full)/3 <= avg <= (4*t2t + 11*full)/15.
        lo, hi = (2 * t2t + full) / 3, (4 * t2t + 11 * full) / 15
        if not lo * (1 - 1e-12) <= avg <= hi * (1 + 1e-12):
            raise ValueError(f"seek figures {t2t*1e3:g} / {avg*1e3:g} / {full*1e3:g} ms (track-to-track / "
                             f"average / full stroke) give a Lee curve that is not monotone: the average "
                             f"must lie between {lo*1e3:.3g} and {hi*1e3:.3g} ms")

    def __call__(self, distance: int) -> float:
        if distance <= 0:
            return 0.0
        x = distance - 1
        return self.a * math.sqrt(x) + self.b * x + self.c

    def mean_random_pairs(self) -> float:
        """Exact mean over all ordered pairs of distinct cylinders (the datasheet definition:
        sum over n of (D+1-n) * T(n), normalised).  Vectorised, for tests and `show`."""
        import numpy as np

        n = np.arange(1, self.max_distance + 1, dtype=np.float64)
        x = n - 1
        t = self.a * np.sqrt(x) + self.b * x + self.c
        w = (self.max_distance + 1) - n
        return float((w * t).sum() / w.sum())


class SeekTable:
    """Seek time from a measured table (DiskSim's `extracted` seek type, a .seek file).

    Exact at the table's distances; linear interpolation between them, and linear
    extrapolation from the last two points beyond the table (as DiskSim's
    dm_mech_g1_seek_extracted).  Measured tables need not be monotone (the Atlas 10K's reads
    1.531 ms at 10 cylinders and 1.515 ms at 12); the table is kept as measured, as DiskSim does.
    A distance below the first point extrapolates from the first two (DiskSim's tables start at
    1 cylinder, so it never happens there); an extrapolated time below zero is zero.  DiskSim's
    "Single cylinder seek time" is not used: DiskSim reads x = 1 from the table too.  Results
    are memoised per distance (the distances a drive sees are few)."""

    __slots__ = ("dists", "times", "max_distance", "_cache")

    def __init__(self, dists, times_seconds, cylinders: int):
        if len(dists) < 2 or len(dists) != len(times_seconds):
            raise ValueError("a seek table needs at least two (distance, time) points")
        if any(b <= a for a, b in zip(dists, dists[1:])) or dists[0] < 1:
            raise ValueError("seek table distances must be positive and increasing")
        if any(t < 0 for t in times_seconds):
            raise ValueError("seek table times must not be negative")
        self.dists = [int(d) for d in dists]
        self.times = [float(t) for t in times_seconds]
        self.max_distance = max(1, cylinders - 1)
        self._cache: dict[int, float] = {}

    def __call__(self, distance: int) -> float:
        if distance <= 0:
            return 0.0
        t = self._cache.get(distance)
        if t is not None:
            return t
        from bisect import bisect_left

        d, ts = self.dists, self.times
        i = bisect_left(d, distance)
        if i < len(d) and d[i] == distance:
            t = ts[i]
        else:
            if i == 0:
                i = 1
            elif i >= len(d):
                i = len(d) - 1
            d1, d2, t1, t2 = d[i - 1], d[i], ts[i - 1], ts[i]
            t = t1 + (distance - d1) * (t2 - t1) / (d2 - d1)
            if t < 0.0:
                t = 0.0
        if len(self._cache) < 1 << 16:
            self._cache[distance] = t
        return t

    def mean_random_pairs(self) -> float:
        return mean_random_pairs(self)


class HplSeek:
    """DiskSim's `hpl` / `hplplus10` seek types (Ruemmler & Wilkes' HP C2247A curve):
    x < V1: V2 + V3*sqrt(x); else V4 + V5*x (ms), with the first ten distances from a table
    for hplplus10, and the single-cylinder time for x = 1 when V6 != -1."""

    __slots__ = ("v", "first10", "one", "max_distance")

    def __init__(self, values_ms, first10_ms, one_ms: float, cylinders: int):
        if len(values_ms) != 6:
            raise ValueError("HPL seek equation values need six numbers")
        if first10_ms is not None and len(first10_ms) != 10:
            raise ValueError("First ten seek times needs ten numbers")
        self.v = [float(x) for x in values_ms]
        self.first10 = [float(x) * 1e-3 for x in first10_ms] if first10_ms is not None else None
        self.one = one_ms * 1e-3
        self.max_distance = max(1, cylinders - 1)

    def __call__(self, distance: int) -> float:
        if distance <= 0:
            return 0.0
        if self.first10 is not None and distance <= 10:
            return self.first10[distance - 1]
        v1, v2, v3, v4, v5, v6 = self.v
        if self.first10 is None and distance == 1 and v6 != -1:
            return self.one
        if distance < v1:
            return (v2 + v3 * math.sqrt(distance)) * 1e-3
        return (v4 + v5 * distance) * 1e-3

    def mean_random_pairs(self) -> float:
        return mean_random_pairs(self)


def mean_random_pairs(seek) -> float:
    """The mean seek time over random pairs of cylinders: distance x weighted by the number of
    pairs that far apart. A function of its own, not one class's method lent to another (the
    compiled build gives each class its own slot layout, so a borrowed method reads another
    class's slots)."""
    n = seek.max_distance
    w = [(n + 1) - x for x in range(1, n + 1)]
    return sum(wi * seek(x) for wi, x in zip(w, range(1, n + 1))) / sum(w)
