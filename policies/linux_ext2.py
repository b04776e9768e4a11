"""Linux ext2 block allocation with reservation windows (2.6.19 and later; ext3 is the same).

Replicates fs/ext2/inode.c `ext2_find_goal`, `ext2_find_near`, `ext2_alloc_blocks`,
`ext2_splice_branch` and fs/ext2/balloc.c `ext2_new_blocks`, `ext2_try_to_allocate_with_rsv`,
`alloc_new_reservation`, `find_next_reservable_window`, `search_reserve_window`,
`ext2_try_to_allocate`, `find_next_usable_block` (torvalds/linux, 2.6.2x; the ext3 functions
of docs/reference/allocation-policies.md §2.3 are the same algorithm with ext3_ prefixes).

Goal (ext2_find_goal, once per get_block branch)
    regular file and lblk == last_alloc_logical_block + 1 (and a last physical block):
    last_alloc_physical_block + 1; else ext2_find_near: the nearest non-zero earlier pointer in
    the same map (as is, not +1), else the indirect block holding the pointer, else
    group_first_block(inode group) + (pid % 16) * (blocks_per_group / 16) -- the "colour".
    The indirect blocks and the data block of one branch are allocated together
    (ext2_alloc_blocks): here each following block of the branch asks for the previous + 1.
    After the data block, last_alloc_{logical,physical}_block are set (ext2_splice_branch).
Reservation windows (regular files only: i_block_alloc_info exists for S_ISREG)
    Per-inode window [start, end] of rsv_goal_size blocks (EXT2_DEFAULT_RESERVE_BLOCKS = 8),
    kept in one volume-wide ordered set (the rb-tree, with its [0, 0] head). A block is taken
    inside the inode's window; a new window is made (alloc_new_reservation) when there is
    none, the goal is outside it, or the last attempt in it failed: the first gap of `size`
    blocks at or after the goal between other windows that holds a free block; the size
    doubles (up to EXT2_MAX_RESERVE_BLOCKS = 1027) when more than half the old window was
    used. Inside a window the goal is taken if free, else the next free block in the window
    (ext2_try_to_allocate scans forward from the goal); without a goal find_next_usable_block:
    a free bit up to the next 64-bit boundary, else a free byte, else any free bit; without a
    window it then backs up over at most 7 free bits. ext2_new_blocks tries the goal's group,
    then every other group in order (skipping those with <= window/2 free blocks), and
    finally again without the reservation.

Window life cycle: ext2 discards the window on truncate, on last close of a writer, and when
the in-core inode goes (ext2_discard_reservation). The volume calls `release(state)` (if it
does) for the first two; the third happens by itself here because the window is dropped when
the per-inode state object is garbage-collected with its in-core inode.

pid: the colour uses current->pid, which the volume does not pass; one writer process is
modelled, with `pid` (default 0) as a class attribute.
"""

import bisect
import weakref
from operator import sub

import numpy as np

from .base import BlockAllocator, BlockRequest, NoSpace, SpaceView
from .groupscan import first_free, group_bits

DEFAULT_RESERVE_BLOCKS = 8      # EXT2_DEFAULT_RESERVE_BLOCKS
MAX_RESERVE_BLOCKS = 1027       # EXT2_MAX_RESERVE_BLOCKS
NOT_ALLOCATED = 0               # EXT2_RESERVE_WINDOW_NOT_ALLOCATED
CHAIN_AFTER = 12                # _reserve: retries before the rest is computed at once
CHAIN_SLICE = 64                # _chain: windows in its first slice of the tree


class Window:
    """struct ext2_reserve_window_node."""

    __slots__ = ("start", "end", "goal_size", "alloc_hit", "__weakref__")

    def __init__(self, goal_size: int = DEFAULT_RESERVE_BLOCKS):
        self.start = NOT_ALLOCATED
        self.end = NOT_ALLOCATED
        self.goal_size = goal_size
        self.alloc_hit = 0

    @property
    def empty(self) -> bool:
        return self.end == NOT_ALLOCATED


class BlockAllocInfo:
    """struct ext2_block_alloc_info (+ the branch being built by one get_block call)."""

    __slots__ = ("last_lblk", "last_phys", "rsv", "branch_lblk", "branch_last", "owner")

    def __init__(self, owner=None):
        self.last_lblk = 0
        self.last_phys = 0
        self.rsv = Window()
        self.branch_lblk = -1
        self.branch_last = 0
        self.owner = owner          # a weak reference to the allocator whose tree holds rsv

    def __del__(self):
        """The in-core inode (and its state) is gone: drop its window (ext2 does it in iput)."""
        alloc = self.owner() if self.owner is not None else None
        if alloc is not None and not self.rsv.empty:
            try:
                alloc.tree.remove(self.rsv)
            except (IndexError, ValueError):
                pass


class WindowTree:
    """The per-filesystem reservation tree: windows ordered by start, never overlapping."""

    def __init__(self):
        head = Window()                 # s_rsv_window_head, [0, 0], always present
        self.starts = [head.start]
        self.ends = [head.end]          # in step with starts (searched a slice at a time)
        self.nodes = [head]

    def index(self, w: Window) -> int:
        i = bisect.bisect_left(self.starts, w.start)
        while self.nodes[i] is not w:
            i += 1
        return i

    def search(self, goal: int) -> int:
        """search_reserve_window: the window with the greatest start <= goal (index)."""
        return bisect.bisect_right(self.starts, goal) - 1

    def add(self, w: Window) -> None:
        i = bisect.bisect_left(self.starts, w.start)
        self.starts.insert(i, w.start)
        self.ends.insert(i, w.end)
        self.nodes.insert(i, w)

    def remove(self, w: Window) -> None:
        i = self.index(w)
        del self.starts[i]
        del self.ends[i]
        del self.nodes[i]
        w.start = w.end = NOT_ALLOCATED


class Ext2(BlockAllocator):
    name = "ext2"
    summary = ("Linux ext2/ext3 (2.6.19+): goal = last+1 if sequential else nearest earlier "
               "pointer/indirect/group colour (ext2_find_goal), 8-block reservation windows")
    placer = "orlov"
    pid = 0                             # current->pid for the colour (one writer modelled)

    def __init__(self):
        self.tree = WindowTree()

    # per-inode state ------------------------------------------------------------------------
    def new_inode_state(self) -> BlockAllocInfo:
        return BlockAllocInfo(weakref.ref(self))

    def release(self, state) -> None:
        """ext2_discard_reservation (truncate, last close of a writer)."""
        if isinstance(state, BlockAllocInfo):
            self._discard(state.rsv)

    def _discard(self, w: Window) -> None:
        if not w.empty:
            self.tree.remove(w)

    # get_block ------------------------------------------------------------------------------
    def allocate(self, space: SpaceView, req: BlockRequest, st) -> int:
        geo = space.geometry
        regular = not req.is_dir and req.kind != "symlink"
        info = st if (regular and isinstance(st, BlockAllocInfo)) else None
        if req.kind == "xattr":         # ext2_xattr_set2: goal = the inode group's first block
            return self._new_block(space, geo.group_start(req.inode_group), info)
        lbn = req.lblk
        if info is not None and info.branch_lblk == lbn and info.branch_last:
            goal = info.branch_last + 1                     # rest of the branch (ext2_alloc_blocks)
        elif info is not None and lbn == info.last_lblk + 1 and info.last_phys:
            goal = info.last_phys + 1                       # ext2_find_goal
        elif req.map_prev:                                  # ext2_find_near
            goal = req.map_prev
        elif req.map_block:
            goal = req.map_block
        else:
            goal = geo.group_start(req.inode_group) + (self.pid % 16) * (geo.blocks_per_group // 16)
        b = self._new_block(space, goal, info)
        if info is not None:
            if req.kind == "indirect":
                info.branch_lblk, info.branch_last = lbn, b
            else:
                info.branch_lblk, info.branch_last = -1, 0
                info.last_lblk, info.last_phys = lbn, b     # ext2_splice_branch
        return b

    # ext2_new_blocks ------------------------------------------------------------------------
    def _new_block(self, space, goal: int, info) -> int:
        geo = space.geometry
        bpg = geo.blocks_per_group
        fdb = geo.first_data_block
        my_rsv = info.rsv if info is not None and info.rsv.goal_size > 0 else None
        windowsz = my_rsv.goal_size if my_rsv is not None else 0
        if goal < fdb or goal >= geo.blocks_count:
            goal = fdb
        group = (goal - fdb) // bpg
        goal_group = group
        while True:
            free = space.group_free_blocks(group)
            if my_rsv is not None and free < windowsz and my_rsv.empty:
                my_rsv = None
            if free > 0:
                r = self._try_with_rsv(space, group, (goal - fdb) % bpg, my_rsv)
                if r >= 0:
                    return self._done(geo, group, r, my_rsv)
            for _ in range(geo.groups):
                group += 1
                if group >= geo.groups:
                    group = 0
                if space.group_free_blocks(group) <= windowsz // 2:
                    continue
                r = self._try_with_rsv(space, group, -1, my_rsv)
                if r >= 0:
                    return self._done(geo, group, r, my_rsv)
            if my_rsv is None:
                raise NoSpace()
            my_rsv, windowsz, group = None, 0, goal_group   # forget reservations, retry

    @staticmethod
    def _done(geo, group: int, r: int, my_rsv) -> int:
        if my_rsv is not None:
            my_rsv.alloc_hit += 1
        return geo.group_start(group) + r

    def _try_with_rsv(self, space, group: int, grp_goal: int, my_rsv) -> int:
        """ext2_try_to_allocate_with_rsv (count = 1)."""
        if my_rsv is None:
            return self._try_to_allocate(space, group, grp_goal, None)
        geo = space.geometry
        gfb = geo.group_start(group)
        ret = 0
        for _ in range(4 * geo.blocks_per_group + 8):     # each retry moves the window forward
            if my_rsv.empty or ret < 0 or not self._goal_in(geo, my_rsv, grp_goal, group):
                ret = self._alloc_new_reservation(space, my_rsv, grp_goal, group)
                if ret < 0:
                    return -1
                if not self._goal_in(geo, my_rsv, grp_goal, group):
                    grp_goal = -1
            if my_rsv.start > gfb + geo.blocks_per_group - 1 or my_rsv.end < gfb:
                raise AssertionError("reservation window outside its group")
            ret = self._try_to_allocate(space, group, grp_goal, my_rsv)
            if ret >= 0:
                return ret
        return -1

    @staticmethod
    def _goal_in(geo, rsv: Window, grp_goal: int, group: int) -> bool:
        """goal_in_my_reservation."""
        gfb = geo.group_start(group)
        glb = gfb + geo.blocks_per_group - 1
        if rsv.start > glb or rsv.end < gfb:
            return False
        if grp_goal >= 0 and not (rsv.start <= grp_goal + gfb <= rsv.end):
            return False
        return True

    def _alloc_new_reservation(self, space, my_rsv: Window, grp_goal: int, group: int) -> int:
        geo = space.geometry
        gfb = geo.group_start(group)
        gend = gfb + geo.blocks_per_group - 1
        start_block = gfb if grp_goal < 0 else grp_goal + gfb
        if not my_rsv.empty:
            if my_rsv.start <= gend < my_rsv.end and start_block >= my_rsv.start:
                return -1               # window crosses into the next group: keep it, move on
            if my_rsv.alloc_hit > (my_rsv.end - my_rsv.start + 1) // 2:
                my_rsv.goal_size = min(my_rsv.goal_size * 2, MAX_RESERVE_BLOCKS)
        bits = group_bits(space, group)
        return self._reserve(my_rsv, start_block, gfb, gend, bits, geo.blocks_per_group)

    def _reserve(self, my_rsv: Window, start_block: int, gfb: int, gend: int, bits,
                 bpg: int) -> int:
        """alloc_new_reservation's loop: find_next_reservable_window from the goal, then, while
        the window found holds no free block, again from the first free block after it.

        Computed in one forward pass over the tree (each retry of the kernel's loop starts
        where the previous window was put, and the only change the loop makes to the tree
        is my_rsv's place: taken out of its old place at the first retry, as the kernel's
        loop does, unless the first window tried was that place), and my_rsv put in once at
        the end: the same window as the kernel's loop, without re-inserting my_rsv at every
        retry. A retry jumps (bisect) over the windows that lie
        wholly before the free block it starts from (they can neither end the search nor
        move it: only the last of them may reach past that block)."""
        tree = self.tree
        nodes, starts = tree.nodes, tree.starts
        n = len(nodes)
        size = my_rsv.goal_size
        cur = start_block
        i = tree.search(start_block)
        end = nodes[i].end
        if cur <= end:
            cur = end + 1
        if cur > gend:
            self._discard(my_rsv)
            return -1
        ends = tree.ends
        retries = 0
        need = size + 1                         # a gap after window j: starts[j+1] - ends[j] >= need
        while True:
            # find_next_reservable_window from node i (cur is past it; the next window does
            # not start before cur, so every window passed moves cur to its end + 1)
            if i + 1 < n and cur + size > starts[i + 1]:
                j = i + 1
                chunk = 16
                while True:                     # first j >= i+1 with room after it, or the last
                    if j >= n - 1:
                        j = n - 1
                        break
                    stop = min(n - 1, j + chunk)
                    for k, gap in enumerate(map(sub, starts[j + 1:stop + 1], ends[j:stop])):
                        if gap >= need:
                            j += k
                            break
                    else:
                        j = stop
                        chunk *= 4
                        continue
                    break
                i = j
                cur = ends[j] + 1
                if cur > gend:
                    self._discard(my_rsv)
                    return -1
            ffb = first_free(bits, cur - gfb, bpg)
            if ffb < 0:
                self._discard(my_rsv)
                return -1
            ffb += gfb
            if ffb <= cur + size - 1:
                break
            cur = ffb
            retries += 1
            if retries == 1 and not my_rsv.empty and nodes[i] is not my_rsv:
                # the kernel's loop has moved my_rsv to the window just tried: its old place
                # (which may lie ahead, when the goal was before it) is no obstacle any more
                o = tree.index(my_rsv)
                tree.remove(my_rsv)
                n -= 1
                if o <= i:
                    i -= 1
            if retries == CHAIN_AFTER:
                r = self._chain(cur, i, size, gfb, gend, bits)
                if r is None:
                    self._discard(my_rsv)
                    return -1
                cur, i = r
                break
            k = bisect.bisect_left(starts, cur, i + 1, n)
            if k - 1 > i:                       # windows starting before cur: skip them
                i = k - 1
                end = nodes[i].end
                if cur <= end:
                    cur = end + 1
                    if cur > gend:
                        self._discard(my_rsv)
                        return -1
        self._place(my_rsv, cur, i, size)
        return 0

    def _chain(self, f: int, i: int, size: int, gfb: int, gend: int, bits):
        """The rest of _reserve's retries at once, from free block f with node i passed:
        (cur, i) of the window found, or None. Every retry passes a window j and then asks for
        the first free block after the first gap that fits; what follows depends on j only,
        so the successor of every window of a slice of the tree is computed with numpy and
        the chain is followed (slices of CHAIN_SLICE windows, then larger ones)."""
        starts, ends = self.tree.starts, self.tree.ends
        n = len(starts)
        m = bisect.bisect_right(starts, gend, i)         # first window starting past the group
        last = min(m, n - 1)                             # the last window that matters
        big = 1 << 62
        lo = f - gfb
        Fr = np.flatnonzero(~bits[lo:]) + (lo + gfb)     # free blocks from f on
        Fr_ext = np.append(Fr, big)
        width = CHAIN_SLICE
        state_free = True                                # state: at free block f (else: window j passed)
        j = 0
        base = i
        while True:
            if state_free:
                base = bisect.bisect_left(starts, f, base, last + 1) - 1
            top = min(last, base + width)                # windows base..top in this slice
            width *= 4
            S = np.array(starts[base:top + 1], dtype=np.int64)
            E = np.array(ends[base:top + 1], dtype=np.int64)
            L = len(S)
            Snext = np.empty(L, dtype=np.int64)
            Snext[:-1] = S[1:]
            Snext[-1] = big if top == last else starts[top + 1]
            good = np.flatnonzero(Snext - E >= size + 1)
            gi = np.searchsorted(good, np.arange(L))
            has = gi < len(good)                         # a window with room follows in the slice
            J = np.append(good, L)[gi]
            P = E[np.minimum(J, L - 1)] + 1
            Fn = Fr_ext[np.searchsorted(Fr, P)]
            k = np.searchsorted(S, Fn) - 1               # last window of the slice starting before Fn
            beyond = (k == L - 1) & (Fn >= Snext[L - 1]) & (top != last)
            kk_ = np.minimum(k, L - 1)
            inside = E[kk_] >= Fn
            fits = Fn + size <= Snext[kk_]
            if state_free:
                kk = int(np.searchsorted(S, f)) - 1
                if int(E[kk]) >= f:
                    j = kk
                elif f + size <= int(Snext[kk]):
                    return f, base + kk
                else:
                    j = kk + 1
                state_free = False
            while True:                                  # state: window j of the slice passed
                if j >= L or not has[j]:                 # no room before the slice ends
                    base, j = base + L, 0
                    break
                p = int(P[j])
                if p > gend:
                    return None
                fn = int(Fn[j])
                if fn >= big:
                    return None
                if fn < p + size:
                    return p, base + int(J[j])
                if beyond[j]:                            # the next free block lies past the slice
                    f = fn
                    state_free = True
                    break
                kk = int(k[j])
                if inside[j]:
                    j = kk
                elif fits[j]:
                    return fn, base + kk
                else:
                    j = kk + 1
            if not state_free and base > last:
                return None                              # cannot happen: the last window has room

    def _place(self, my_rsv: Window, cur: int, i: int, size: int) -> None:
        tree = self.tree
        nodes = tree.nodes
        # place my_rsv at [cur, cur + size - 1], after node i
        prev = nodes[i]
        if prev is my_rsv:                      # stays in place in the order
            tree.starts[i] = cur
            tree.ends[i] = cur + size - 1
            my_rsv.start, my_rsv.end = cur, cur + size - 1
        else:
            if not my_rsv.empty:
                tree.remove(my_rsv)
            my_rsv.start, my_rsv.end = cur, cur + size - 1
            tree.add(my_rsv)
        my_rsv.alloc_hit = 0

    # ext2_try_to_allocate -------------------------------------------------------------------
    def _try_to_allocate(self, space, group: int, grp_goal: int, rsv) -> int:
        geo = space.geometry
        bpg = geo.blocks_per_group
        bits = group_bits(space, group)
        if rsv is not None:
            gfb = geo.group_start(group)
            start = rsv.start - gfb if rsv.start >= gfb else 0
            end = min(rsv.end - gfb + 1, bpg)
            if start <= grp_goal < end:
                start = grp_goal
            else:
                grp_goal = -1
        else:
            start = grp_goal if grp_goal > 0 else 0
            end = bpg
        if grp_goal < 0:
            grp_goal = self._find_next_usable_block(bits, start, end)
            if grp_goal < 0:
                return -1
            if rsv is None:             # search back up to 7 free bits
                i = 0
                while i < 7 and grp_goal > start and not bits[grp_goal - 1]:
                    grp_goal -= 1
                    i += 1
        return first_free(bits, grp_goal, end)   # claim the goal or the next free bit after it

    @staticmethod
    def _find_next_usable_block(bits: np.ndarray, start: int, maxblocks: int) -> int:
        if start > 0:
            end_goal = min((start + 63) & ~63, maxblocks)
            here = first_free(bits, start, end_goal)
            if here >= 0:
                return here
        here = max(start, 0)
        lim = (maxblocks + 7) >> 3
        b0 = here >> 3
        if b0 < lim:
            used = bits[b0 * 8:lim * 8].reshape(-1, 8).any(axis=1)
            j = int(used.argmin())
            if not used[j]:    # type: ignore[index]  # any(axis=1) of a 2-D array: an array
                nxt = (b0 + j) * 8
                if here <= nxt < maxblocks:
                    return nxt
        return first_free(bits, here, maxblocks)
