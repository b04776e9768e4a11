"""The drive's on-board buffer: read segments and the write-back cache.

Only *which sectors are held* is modelled, never their bytes (the image file holds the data).
Timing (read-ahead progress, destage cost) belongs to the drive; these classes are bookkeeping
that the drive consults on every request, so they are small and cheap.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right


class Segment:
    """One read segment: holds sectors [start, end).  While the drive reads ahead into it,
    `end` is where read-ahead will stop, not where it has got to (the drive knows the time)."""

    __slots__ = ("start", "end", "used")

    def __init__(self, start: int, end: int, used: int):
        self.start, self.end, self.used = start, end, used


class SegmentCache:
    """A fixed number of segments, replaced least-recently-used (DiskSim's segmented buffer)."""

    def __init__(self, count: int, size: int):
        self.count, self.size = count, size
        self.segs: list[Segment] = []
        self.tick = 0

    def find(self, lba: int) -> Segment | None:
        """The most recently used segment with start <= lba <= end (end inclusive: a read that
        starts right where a segment ends continues that segment's stream)."""
        best = None
        for s in self.segs:
            if s.start <= lba <= s.end and (best is None or s.used > best.used):
                best = s
        return best

    def holds(self, a: int, b: int) -> bool:
        for s in self.segs:
            if s.start <= a and b <= s.end:
                return True
        return False

    def touch(self, seg: Segment) -> None:
        self.tick += 1
        seg.used = self.tick

    def allocate(self, start: int) -> Segment:
        """A segment for a new stream at `start`, evicting the least recently used one."""
        self.tick += 1
        if len(self.segs) < self.count:
            seg = Segment(start, start, self.tick)
            self.segs.append(seg)
            return seg
        seg = min(self.segs, key=lambda s: s.used)
        seg.start = seg.end = start
        seg.used = self.tick
        return seg

    def clear(self) -> None:
        self.segs.clear()
        self.tick = 0

    def drop(self) -> None:
        """Forget every segment's sectors (drop-caches): the buffer reads as cold."""
        self.segs.clear()


class WriteCache:
    """Dirty sectors as sorted, disjoint, non-adjacent extents [start, end).

    Adjacent and overlapping writes merge, which is how a drive turns a stream of small
    sequential writes into one media write (and, on a 4K drive, avoids read-modify-write).
    `pick` gives the destage order: C-LOOK, ascending LBA from the head, wrapping around — an
    elevator, as drive firmware approximates; O(log n) per pick."""

    __slots__ = ("capacity", "starts", "ends", "dirty", "_last")

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.dirty = 0
        self._last = -1

    def add(self, a: int, b: int) -> None:
        starts, ends = self.starts, self.ends
        i = self._last
        # fast path: a sequential stream extends the extent the previous write grew
        if 0 <= i < len(ends) and ends[i] == a and (i + 1 == len(starts) or starts[i + 1] > b):
            ends[i] = b
            self.dirty += b - a
            return
        lo = bisect_left(ends, a)        # first extent ending at or after a (touching counts)
        hi = bisect_right(starts, b)     # extents starting at or before b (touching counts)
        if lo < hi:
            ns, ne = min(a, starts[lo]), max(b, ends[hi - 1])
            removed = sum(ends[j] - starts[j] for j in range(lo, hi))
            del starts[lo:hi], ends[lo:hi]
            starts.insert(lo, ns)
            ends.insert(lo, ne)
            self.dirty += (ne - ns) - removed
        else:
            starts.insert(lo, a)
            ends.insert(lo, b)
            self.dirty += b - a
        self._last = lo

    def discard(self, a: int, b: int) -> None:
        """Forget dirty sectors in [a, b) (they were overwritten straight to the media)."""
        starts, ends = self.starts, self.ends
        lo = bisect_right(ends, a)       # first extent ending after a
        hi = bisect_left(starts, b)      # extents starting before b
        if lo >= hi:
            return
        keep_s, keep_e = [], []
        for j in range(lo, hi):
            s, e = starts[j], ends[j]
            self.dirty -= min(e, b) - max(s, a)
            if s < a:
                keep_s.append(s)
                keep_e.append(a)
            if e > b:
                keep_s.append(b)
                keep_e.append(e)
        starts[lo:hi] = keep_s
        ends[lo:hi] = keep_e
        self._last = -1

    def covers(self, a: int, b: int) -> bool:
        i = bisect_right(self.starts, a) - 1
        return i >= 0 and self.ends[i] >= b

    def pick(self, cursor: int) -> int:
        """Index of the next extent to destage: the first at or after `cursor`, else the first."""
        i = bisect_left(self.starts, cursor)
        return i if i < len(self.starts) else 0

    def remove_head(self, i: int, b: int) -> None:
        """Extent i was written up to b: drop [start, b)."""
        s, e = self.starts[i], self.ends[i]
        if b >= e:
            del self.starts[i], self.ends[i]
            self.dirty -= e - s
            self._last = -1
        else:
            self.starts[i] = b
            self.dirty -= b - s

    def clear(self) -> None:
        self.starts.clear()
        self.ends.clear()
        self.dirty = 0
        self._last = -1
