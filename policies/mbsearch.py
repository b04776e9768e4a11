"""mballoc's regular allocator: the goal try and the criteria passes over the groups' buddies.

Replicates fs/ext4/mballoc.c `ext4_mb_regular_allocator` (Linux 5.x, before
mb_optimize_scan's per-order group lists: the groups are visited linearly from the goal's
group, as with ``mb_optimize_scan=0``), `ext4_mb_find_by_goal`, `ext4_mb_good_group`,
`ext4_mb_simple_scan_group`, `ext4_mb_complex_scan_group`, `ext4_mb_measure_extent`,
`ext4_mb_check_limits`, `mb_find_extent` and `ext4_mb_use_best_found`.

The buddy of a group (order k: aligned chunks of 2^k blocks, k = 0 .. blocksize_bits + 1) is
computed with numpy from the group's bitmap, as ext4_mb_generate_buddy builds it: a chunk is
free at order k when its two halves are free at k - 1; it is a buddy *of* order k (its bit
clear in the order-k bitmap) when it is free and its pair is not (the top order keeps all).

Criteria (ac_criteria), each a pass over all groups from the goal's group:
  cr0  request a power of two of at least 4 blocks (s_mb_order2_reqs = 2): groups whose
       largest free order fits (not the first group of a flex group for data), the first
       buddy of the request's order or, failing that, of a higher order;
  cr1  groups whose average free extent (free / fragments) is at least the request: the
       group's free extents from its start, measured (an extent of exactly the request's
       length is taken at once; else the smallest that fits among the first
       s_mb_min_to_scan = 10, or the longest seen; at most s_mb_max_to_scan = 200 in all);
  cr2  as cr1 in groups with at least the request's length free;
  cr3  as cr1 in any group with a free block.
"""

import numpy as np

from .base import NoSpace
from .groupscan import free_runs

ORDER2_REQS = 2         # s_mb_order2_reqs
MIN_TO_SCAN = 10        # s_mb_min_to_scan
MAX_TO_SCAN = 200       # s_mb_max_to_scan
FLEX_SIZE_DIR_ALLOC_SCHEME = 4   # EXT4_FLEX_SIZE_DIR_ALLOC_SCHEME


class Group:
    """One group's bitmap as mballoc sees it (preallocated blocks in use), with its buddy."""

    __slots__ = ("bits", "ladder", "free", "starts", "lengths")

    def __init__(self, bits: np.ndarray, max_order: int):
        self.bits = bits
        ladder = [~bits]
        for _ in range(max_order):
            f = ladder[-1]
            ladder.append(f[0::2] & f[1::2])
        self.ladder = ladder                  # ladder[k][j]: chunk j of 2^k blocks all free
        self.starts, self.lengths = free_runs(bits, 0, len(bits))
        self.free = int(self.lengths.sum())

    @property
    def fragments(self) -> int:
        return len(self.starts)

    def largest_free_order(self) -> int:
        """bb_largest_free_order: the highest order with a free chunk (-1: none)."""
        for k in range(len(self.ladder) - 1, -1, -1):
            if self.ladder[k].any():
                return k
        return -1

    def buddy(self, k: int) -> np.ndarray:
        """The free buddies of order k (clear bits of mballoc's order-k bitmap)."""
        f = self.ladder[k]
        if k == len(self.ladder) - 1:
            return f
        return f & ~np.repeat(self.ladder[k + 1], 2)[:len(f)]

    def extent(self, pos: int, needed: int) -> int:
        """mb_find_extent: the free length from pos, grown buddy by buddy while shorter than
        `needed` (0 if pos is in use)."""
        ladder = self.ladder
        top = len(ladder) - 1
        length = 0
        n = len(self.bits)
        while pos < n and length < needed:
            if not ladder[0][pos]:
                break
            k = 0
            while k < top and ladder[k + 1][pos >> (k + 1)]:
                k += 1
            end = ((pos >> k) + 1) << k
            length += end - pos
            pos = end
        return length


class Search:
    """One allocation context's search state (ac_found, ac_b_ex, ac_status)."""

    def __init__(self, need: int):
        self.need = need           # ac_g_ex.fe_len
        self.found = 0             # ac_found
        self.best: tuple[int, int, int] | None = None   # ac_b_ex: (group, start in group, length)
        self.done = False          # AC_STATUS_FOUND
        self.stop = False          # AC_STATUS_BREAK

    def use(self, g: int, start: int, length: int) -> None:
        """ext4_mb_use_best_found: take at most the goal length from the extent's start."""
        self.best = (g, start, min(length, self.need))
        self.done = True

    def measure(self, g: int, start: int, length: int) -> None:
        """ext4_mb_measure_extent then ext4_mb_check_limits(finish_group=0)."""
        self.found += 1
        if length == self.need:
            self.use(g, start, length)
            return
        b = self.best
        if b is None:
            self.best = (g, start, length)
        elif b[2] < self.need:
            if length > b[2]:
                self.best = (g, start, length)
        elif length > self.need and length < b[2]:
            self.best = (g, start, length)
        self.limits(g, False)

    def limits(self, g: int, finish_group: bool) -> None:
        """ext4_mb_check_limits: stop after max_to_scan, or take a good enough best."""
        if self.done:
            return
        if self.found > MAX_TO_SCAN:
            self.stop = True
            return
        b = self.best
        if b is None or b[2] < self.need:
            return
        if (finish_group or self.found > MIN_TO_SCAN) and b[0] == g:
            self.use(*b)


def order2(need: int, max_order: int) -> int:
    """ac_2order: the request's order when it is a power of two of order >= s_mb_order2_reqs."""
    i = need.bit_length()
    if ORDER2_REQS <= i <= max_order + 1 and need & ~(1 << (i - 1)) == 0:
        return i - 1
    return 0


class Scanner:
    """ext4_mb_regular_allocator over `ngroups` groups; `group(g)` gives a `Group` (or None
    when the group has nothing free) and `free(g)` its free count without reading it."""

    def __init__(self, ngroups: int, max_order: int, flex_size: int, group, free):
        self.ngroups = ngroups
        self.max_order = max_order
        self.flex_size = flex_size
        self.group = group
        self.free = free

    def goal(self, g: int, start: int, need: int) -> tuple[int, int, int] | None:
        """ext4_mb_find_by_goal: the goal itself when `need` blocks are free from it."""
        grp = self.group(g)
        if grp is not None and grp.extent(start, need) >= need:
            return g, start, need
        return None

    def search(self, goal_group: int, need: int, data: bool) -> tuple[int, int, int]:
        """(group, start in group, length <= need) or NoSpace."""
        ac = Search(need)
        k = order2(need, self.max_order)
        for cr in range(0 if k else 1, 4):
            for i in range(self.ngroups):
                g = (goal_group + i) % self.ngroups
                grp = self._good(g, cr, need, k, data)
                if grp is None:
                    continue
                if cr == 0:
                    self._simple(ac, g, grp, k)
                else:
                    self._complex(ac, g, grp)
                if ac.done or ac.stop:
                    break
            if ac.done or ac.stop:
                break
        if ac.best is None:
            raise NoSpace()
        if not ac.done:                          # ext4_mb_try_best_found
            ac.use(*ac.best)
        return ac.best

    def _good(self, g: int, cr: int, need: int, k: int, data: bool):
        """ext4_mb_good_group: the group (read) if worth scanning at this criterion."""
        free = self.free(g)
        if free <= 0:
            return None
        if cr == 0:
            if data and self.flex_size >= FLEX_SIZE_DIR_ALLOC_SCHEME and g % self.flex_size == 0:
                return None
            if free < need:
                return None
        elif cr == 2 and free < need:
            return None
        grp = self.group(g)
        if grp is None or not grp.fragments:
            return None
        if cr == 0 and grp.largest_free_order() < k:
            return None
        if cr == 1 and grp.free // grp.fragments < need:
            return None
        return grp

    @staticmethod
    def _simple(ac: Search, g: int, grp: Group, k: int) -> None:
        """ext4_mb_simple_scan_group: the first buddy of order k, else of a higher order."""
        for i in range(k, len(grp.ladder)):
            free = grp.buddy(i)
            j = int(free.argmax())
            if free[j]:
                ac.found += 1
                ac.use(g, j << i, 1 << i)
                return

    @staticmethod
    def _complex(ac: Search, g: int, grp: Group) -> None:
        """ext4_mb_complex_scan_group: the group's free extents from its start, measured."""
        for s, n in zip(grp.starts.tolist(), grp.lengths.tolist()):
            pos, end = s, s + n
            while pos < end:
                length = min(grp.extent(pos, ac.need), end - pos)
                ac.measure(g, pos, length)
                if ac.done or ac.stop:
                    return
                pos += length
        ac.limits(g, True)
