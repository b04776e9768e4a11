"""A latency histogram in the HDR style: log-bucketed, mergeable, deterministic.

Values are simulated seconds, kept as whole nanoseconds. Below 512 ns each value is a bucket
of its own; above, a power of two is split into 256 buckets, so a bucket is at most 1/256 of
the values in it wide and a percentile read from the histogram (its bucket's middle) is
within REL_ERROR of the value at that rank in the sorted list. Count, sum (mean), min and
max are kept exactly (a percentile is clamped to [min, max]: one value reads back as itself).
Two histograms merge by adding bucket counts (phases into a total, runs into one), and the
same values give the same histogram in any order.
"""

from __future__ import annotations

import math

import numpy as np

SUB = 256                 # buckets per power of two
REL_ERROR = 1 / SUB       # stated bound on a percentile's relative error (the bound met is half)
#: a batch of at least this many values goes in through numpy (`add_many`) ...
VECTOR_FOLD = 64
#: ... if every one is finite, >= 0 and below this (seconds: whole nanoseconds exact in a double)
VECTOR_MAX_S = 1e6
PERCENTILES = (50, 90, 99, 99.9)


def _key(ns: int) -> int:
    if ns < 2 * SUB:
        return ns
    e = ns.bit_length() - 9
    return (e + 1) * SUB + (ns >> e) - SUB


def _bounds(key: int) -> tuple[int, int]:
    """The smallest and largest nanosecond value of a bucket."""
    if key < 2 * SUB:
        return key, key
    e = key // SUB - 1
    m = key - e * SUB
    return m << e, ((m + 1) << e) - 1


class Histogram:
    __slots__ = ("counts", "count", "total", "min", "max")

    def __init__(self):
        self.counts: dict[int, int] = {}
        self.count = 0
        self.total = 0.0
        self.min = math.inf
        self.max = 0.0

    def add(self, seconds: float) -> None:
        k = _key(round(seconds * 1e9)) if seconds > 0 else 0
        self.counts[k] = self.counts.get(k, 0) + 1
        self.count += 1
        self.total += seconds
        if seconds > self.max:
            self.max = seconds
        if seconds < self.min:
            self.min = seconds

    def add_many(self, values: list) -> None:
        """`add` each of `values` in turn, in one loop: the same counts, and the same sum (added
        in the same order), min and max (the statistics fold their per-operation latencies in
        bulk: one call per batch, not one per operation)."""
        if not values:
            return
        if len(values) >= VECTOR_FOLD and self._add_vector(values):
            return
        counts = self.counts
        total = self.total
        for seconds in values:
            if seconds > 0:
                ns = round(seconds * 1e9)
                if ns >= 2 * SUB:
                    e = ns.bit_length() - 9
                    ns = (e + 1) * SUB + (ns >> e) - SUB
            else:
                ns = 0
            counts[ns] = counts.get(ns, 0) + 1
            total += seconds
        self.total = total
        self.count += len(values)
        hi, lo = max(values), min(values)
        if hi > self.max:
            self.max = hi
        if lo < self.min:
            self.min = lo

    def _add_vector(self, values: list) -> bool:
        """`add_many` of a long batch with numpy, the same to the last bit: each value's bucket
        (round(seconds * 1e9), half to even as round() rounds; bit_length from the double's
        exponent, exact for whole numbers below 2**53), the counts per bucket, the sum added in
        the order given (a cumulative sum is sequential, not pairwise), min and max as
        add_many takes them. False (nothing added) for a batch with a negative, non-finite or
        huge value: add_many's loop takes those."""
        a = np.array(values, dtype=np.float64)
        if not (np.isfinite(a).all() and a.min() >= 0.0 and a.max() < VECTOR_MAX_S):
            return False
        ns = np.rint(a * 1e9)                               # a value <= 0 is 0 here already
        e = np.maximum(np.frexp(ns)[1] - 9, 0)              # int(ns).bit_length() - 9
        nsi = ns.astype(np.int64)
        keys = np.where(nsi >= 2 * SUB, (e + 1) * SUB + (nsi >> e) - SUB, nsi)
        uniq, nums = np.unique(keys, return_counts=True)
        counts = self.counts
        for k, c in zip(uniq.tolist(), nums.tolist()):
            counts[k] = counts.get(k, 0) + c
        acc = np.empty(len(values) + 1, dtype=np.float64)
        acc[0] = self.total
        acc[1:] = a
        self.total = float(np.add.accumulate(acc)[-1])
        self.count += len(values)
        hi, lo = max(values), min(values)
        if hi > self.max:
            self.max = hi
        if lo < self.min:
            self.min = lo
        return True

    def merge(self, other: "Histogram") -> "Histogram":
        for k, n in other.counts.items():
            self.counts[k] = self.counts.get(k, 0) + n
        self.count += other.count
        self.total += other.total
        self.max = max(self.max, other.max)
        self.min = min(self.min, other.min)
        return self

    def percentile(self, p: float) -> float:
        """The value at rank ceil(p% of count) (seconds), to within REL_ERROR; 0 if empty."""
        if not self.count:
            return 0.0
        rank = max(1, math.ceil(p / 100 * self.count))
        seen = 0
        for k in sorted(self.counts):
            seen += self.counts[k]
            if seen >= rank:
                lo, hi = _bounds(k)
                return min(max((lo + hi) / 2 / 1e9, self.min), self.max)
        return self.max

    def summary(self) -> dict:
        """count, mean, p50, p90, p99, p99.9 and max (seconds)."""
        out = {"count": self.count, "mean": self.total / self.count if self.count else 0.0}
        for p in PERCENTILES:
            out[f"p{p:g}"] = self.percentile(p)
        out["max"] = self.max
        return out

    def to_dict(self) -> dict:
        return {"counts": {str(k): n for k, n in sorted(self.counts.items())},
                "count": self.count, "total": self.total, "min": self.min if self.count else 0.0,
                "max": self.max}

    @classmethod
    def from_dict(cls, d: dict) -> "Histogram":
        h = cls()
        h.counts = {int(k): int(n) for k, n in d.get("counts", {}).items()}
        h.count, h.total, h.max = int(d.get("count", 0)), float(d.get("total", 0.0)), float(d.get("max", 0.0))
        h.min = float(d.get("min", 0.0)) if h.count else math.inf
        return h
