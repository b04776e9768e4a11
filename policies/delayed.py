"""`delayed`: ext4-style delayed allocation with an mballoc-like stream allocator.

Nothing is placed at write time: dirty pages of unallocated blocks wait in the cache. When
write-back takes them, the volume hands each inode's pending blocks over in logical order
(ext4_writepages → mpage_prepare_extent_to_map), as runs of logically consecutive blocks of
at most 2048 (MAX_WRITEPAGES_EXTENT_LEN), and `allocate_run` places each run:

* goal (ext4_ext_find_goal): next to the file's nearest extent, at the offset the logical
  distance asks for (pblk + (lblk - ee_block)), so blocks written out of order still end up
  in file order; with no extent yet, the first free block of the inode's group plus the
  logical offset;
* the goal itself if the run fits there, else the first free extent at least as long as the
  run at or after the goal (group by group, wrapping), else the longest pieces available;
* the inode's preallocation (ext4_mb_normalize_request, ext4_mb_use_inode_pa) for files
  past 1 MiB: a run is normalised to a window of the file chosen by its size - 2, 4 and then
  8 MiB, aligned to their size - and the first run in a window takes a
  free extent of the whole window's length at the goal or after it; every later run in that
  window goes to its own offset there (phys = window's start + (lblk - window's first lblk))
  if those blocks are still free. So pages written back in any order land in file order within
  a window (ext4's 30-40 extents for seed 004's 1 GiB random fill). Unlike ext4, the window's
  unused blocks are not withheld from other files (a later run whose place was taken falls
  back to the rules above). The windows are dropped when the last writer closes the file
  (ext4_release_file discards the inode's preallocations).

Blocks that are not a regular file's data are placed at write time.

* A directory's, symlink's or xattr block (and a directory's own indirect or tree block) as
  ext4 places it (ext4_bread -> ext4_map_blocks for a directory, ext4_xattr_block_set): the
  goal is policies.ext4goal's (ext4_ext_find_goal, else ext4_inode_to_goal_block: the start
  of the group - with flex groups of 4 or more of the flex group's first group - and no
  colour under delayed allocation); mballoc serves such a request (no EXT4_MB_HINT_DATA: no
  normalisation, no preallocation, and no EXT4_MB_HINT_TRY_GOAL, so ext4_mb_find_by_goal
  does not try the goal block itself) from the goal's group, whose free extents
  ext4_mb_complex_scan_group measures from bb_first_free: the group's lowest free block, else
  the next group's. Directories made one after another get ascending blocks, which a cold
  `find` reads forwards (issue 43; until this rule they were placed from the group's top
  downwards and read backwards, a near-full revolution each).
* A regular file's indirect or extent-tree block: the highest free block of the inode's
  group. ext4 places a tree block (ext4_ext_new_meta_block) by the same rule as above, but its
  search skips the file's preallocated blocks (ext4_mb_generate_from_pa marks them in use),
  so it lands outside the file's windows; this policy does not withhold its windows, and the
  lowest free block of the group would be inside them (seed 004's quick mmap fill: 1,394
  data extents instead of 1). The group's top keeps such blocks out of the data, as ext4's
  preallocation does.
"""

import dataclasses
from bisect import bisect_right

import numpy as np

from .base import BlockAllocator, BlockRequest, NoSpace, SpaceView
from .ext4goal import find_goal

#: ext4_mb_normalize_request's table for requests of files past 1 MiB: (file size up to,
#: window bytes), windows aligned to their size, 8 MiB beyond
NORMALIZE = ((4 << 20, 2 << 20), (8 << 20, 4 << 20))
NORMALIZE_MAX = 8 << 20


def pa_window(lblk: int, count: int, size: int, block_size: int) -> tuple[int, int] | None:
    """The preallocation window (first lblk, blocks) mballoc normalises a run to; None for a
    file of at most 1 MiB (mballoc's window from 0, not modelled: such files are placed as
    before, normally in one run)."""
    end = max(size, (lblk + count) * block_size)
    if end <= 1 << 20:
        return None
    win = NORMALIZE_MAX
    for limit, w in NORMALIZE:
        if end <= limit:
            win = w
            break
    nb = win // block_size
    return lblk // nb * nb, nb


class DelayedState:
    """A file's extents as allocated so far: sorted starts, and (lblk, phys, length); its
    preallocation windows: first lblk -> physical start."""

    __slots__ = ("starts", "extents", "windows")

    def __init__(self):
        self.starts: list[int] = []
        self.extents: list[tuple[int, int, int]] = []
        self.windows: dict[int, int] = {}

    def nearest(self, lblk: int):
        i = bisect_right(self.starts, lblk) - 1
        if i >= 0:
            return self.extents[i]
        return self.extents[0] if self.extents else None

    def add(self, lblk: int, phys: int, n: int) -> None:
        i = bisect_right(self.starts, lblk)
        if i > 0:
            l0, p0, n0 = self.extents[i - 1]
            if l0 + n0 == lblk and p0 + n0 == phys:      # extends its predecessor
                self.extents[i - 1] = (l0, p0, n0 + n)
                return
        self.starts.insert(i, lblk)
        self.extents.insert(i, (lblk, phys, n))


def _free_runs(used: np.ndarray):
    """(starts, lengths) of the free runs in a bool 'used' array."""
    free = np.concatenate(([False], ~used, [False])).astype(np.int8)
    d = np.diff(free)
    starts = np.flatnonzero(d == 1)
    return starts, np.flatnonzero(d == -1) - starts


class Delayed(BlockAllocator):
    name = "delayed"
    summary = ("ext4 delayed allocation: blocks placed at write-back in logical runs of up to 2048, "
               "goal next to the nearest extent (ext4_ext_find_goal, mballoc stream allocation)")
    decides = "flush"
    max_run = 2048          # MAX_WRITEPAGES_EXTENT_LEN: the longest run placed at once
    placer = "orlov"

    def new_inode_state(self):
        return DelayedState()

    def release(self, state: DelayedState) -> None:
        """Last writer's close or a truncate: the preallocation windows go (the extents stay)."""
        state.windows.clear()

    def allocate(self, space: SpaceView, req: BlockRequest, state) -> int:
        """Write-time placement: a directory's, symlink's or xattr block as ext4 places it
        (the lowest free block of the goal's group, else of the next group with one); a
        regular file's indirect or extent-tree block at the highest free block of the inode's
        group, out of the windows this policy does not withhold."""
        geo = space.geometry
        mapping = req.kind == "indirect" and not req.is_dir
        g0 = req.inode_group if mapping else geo.group_of_block(find_goal(geo, req))
        for i in range(geo.groups):
            g = (g0 + i) % geo.groups
            if not space.group_free_blocks(g):
                continue
            start, n = geo.group_start(g), geo.group_blocks(g)
            if not mapping:
                b = space.first_free_block(start, start + n)
                if b >= 0:
                    return b
                continue
            free = np.flatnonzero(~space.block_used[start:start + n])
            if len(free):
                return start + int(free[-1])
        raise NoSpace()

    def allocate_run(self, space: SpaceView, req: BlockRequest, state: DelayedState, count: int) -> list[int]:
        """Physical blocks for lblk req.lblk .. req.lblk+count-1 (not necessarily contiguous)."""
        taken: list[tuple[int, int]] = []        # runs found so far: the volume takes them later
        out: list[int] = []
        lblk, need = req.lblk, count
        while need:                              # one part per preallocation window it crosses
            window = pa_window(lblk, need, req.size, space.geometry.block_size)
            n = min(need, window[0] + window[1] - lblk) if window else need
            out += self._place(space, dataclasses.replace(req, lblk=lblk), state, n, window, taken)
            lblk, need = lblk + n, need - n
        return out

    def _place(self, space: SpaceView, req: BlockRequest, state: DelayedState, count: int,
               window: tuple[int, int] | None, taken: list[tuple[int, int]]) -> list[int]:
        geo = space.geometry
        ext = state.nearest(req.lblk)
        if ext is not None:
            goal = ext[1] + (req.lblk - ext[0])
        else:
            base = space.first_free_block(geo.group_start(req.inode_group), geo.blocks_count)
            goal = (base if base >= 0 else geo.first_data_block) + req.lblk
        goal = min(max(goal, geo.first_data_block), geo.blocks_count - 1)
        if window:
            wstart, wlen = window
            pa = state.windows.get(wstart)
            if pa is None:
                wgoal = min(max(goal - (req.lblk - wstart), geo.first_data_block), geo.blocks_count - 1)
                try:
                    start, n = self._find(space, wgoal, wlen, taken)
                except NoSpace:
                    n = 0
                if n == wlen:
                    pa = state.windows[wstart] = start
            if pa is not None:
                goal = pa + (req.lblk - wstart)
        out: list[int] = []
        need = count
        while need:
            start, n = self._find(space, goal, need, taken)
            out.extend(range(start, start + n))
            taken.append((start, n))
            need -= n
            goal = start + n
        return out

    @staticmethod
    def _used(space: SpaceView, lo: int, hi: int, taken: list[tuple[int, int]]) -> np.ndarray:
        """block_used[lo:hi] with the runs this call has already found marked in use: the
        space's own array when none falls inside, else a copy (the maps are read-only)."""
        seg = space.block_used[lo:hi]
        hi = lo + len(seg)
        mine = [(s, n) for s, n in taken if s < hi and s + n > lo]
        if not mine:
            return seg
        seg = seg.copy()
        for s, n in mine:
            seg[max(s, lo) - lo:min(s + n, hi) - lo] = True
        return seg

    def _find(self, space: SpaceView, goal: int, need: int, taken: list[tuple[int, int]]) -> tuple[int, int]:
        geo = space.geometry
        if not self._used(space, goal, goal + need, taken).any() and goal + need <= geo.blocks_count:
            return goal, need
        g0 = geo.group_of_block(goal)
        best = None
        for i in range(geo.groups + 1):
            g = (g0 + i) % geo.groups
            lo = goal if i == 0 else geo.group_start(g)
            hi = geo.group_start(g) + geo.group_blocks(g)
            if i == geo.groups:                  # the goal group's part before the goal
                lo, hi = geo.group_start(g0), goal
            if lo >= hi or not space.group_free_blocks(g):
                continue
            starts, lengths = _free_runs(self._used(space, lo, hi, taken))
            if not len(starts):
                continue
            fit = np.flatnonzero(lengths >= need)
            if len(fit):
                return lo + int(starts[fit[0]]), need
            k = int(np.argmax(lengths))
            if best is None or lengths[k] > best[1]:
                best = (lo + int(starts[k]), int(lengths[k]))
        if best is None:
            raise NoSpace()
        return best
