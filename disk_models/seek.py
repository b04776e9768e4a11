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
