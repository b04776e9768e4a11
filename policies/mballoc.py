"""`mballoc`: ext4's multi-block allocator (fs/ext4/mballoc.c), for immediate and delayed allocation.

One request (ext4_mb_new_blocks) asks for `len` blocks of a file from logical block `lblk`
with a goal; `mballoc` places each data block as it is written (ext4 mounted ``nodelalloc``:
a request per block), `mballoc-delalloc` a whole delayed extent at write-back (up to 2048
blocks, ext4_writepages -> ext4_map_blocks -> ext4_mb_new_blocks).

Goal (fs/ext4/extents.c ext4_ext_find_goal, ext4_ext_search_left/right)
    The physical block at the logical distance from the file's nearest extent before lblk
    (pblk + lblk - ee_block; from the extents this allocator placed while the inode is in
    core, else the block before lblk + 1, else ext2's nearest earlier pointer or indirect
    block, as ext4_find_near), else ext4_inode_to_goal_block: the first block of the inode's
    group - with flex groups of 4 or more, of its flex group's first group, and of the
    second one for a regular file. The colour (pid % 16) is that of pid 0.
Group or file (ext4_mb_group_or_file)
    Data requests of a file whose logical end (or i_size) is at most s_mb_stream_request = 16
    blocks use the locality group: its preallocations (one CPU modelled), normalised to
    s_mb_group_prealloc = 512 blocks, handed out from their start in turn to every small
    file; larger files use per-inode preallocation and stream allocation (a search from the
    group the last stream allocation used, s_mb_last_group) - unless the file is closed
    (no writer: BlockRequest.writing, which only delayed allocation's write-back after the
    last close makes False) and the request reaches its last block: then neither
    (EXT4_MB_HINT_NOPREALLOC), the request is not normalised and is searched for as it is
    from the goal's group, so closed files written back one after another lie end to end.
Preallocation (ext4_mb_use_preallocated, ext4_mb_use_inode_pa, ext4_mb_use_group_pa)
    An inode preallocation maps its logical range onto its physical one: lblk goes to
    pa_pstart + (lblk - pa_lstart). A locality-group preallocation is used from the one
    closest to the goal with enough left (ext4_mb_check_group_pa); they are kept in lists by
    order, at most 8 per order (ext4_mb_add_n_trim, trimmed back to 5).
Normalisation (ext4_mb_normalize_request)
    The request grows to a window of the file chosen by its size: 16, 32, 64 ... 1024 KiB from
    offset 0, then 2, 4 or 8 MiB aligned to their size; clipped to the group's size, to the
    file's neighbouring extents and to the inode's other preallocations; with a left (right)
    neighbour adjacent the goal becomes the block after (before) it and is tried exactly
    first (EXT4_MB_HINT_TRY_GOAL). What the search finds beyond the request becomes the
    preallocation (ext4_mb_new_inode_pa, ext4_mb_new_group_pa).
Search: policies.mbsearch (the goal, then the criteria passes cr0..cr3 over the buddies).

Preallocated blocks stay free on the image (simfs's volume takes a block only when it is
handed out); this allocator keeps them out of every search of its own, so none is handed out
twice. An inode's preallocations go at truncate and at its writer's last close
(ext4_discard_preallocations), and when its in-core inode goes; all go when a search finds no
room (ext4_mb_discard_preallocations, then once more). Non-data blocks (directories,
symlinks, indirect and xattr blocks) are neither normalised nor preallocated, as for ext4
(they have no EXT4_MB_HINT_DATA); an xattr block's goal is its inode's group start.
"""

import dataclasses
import weakref
from bisect import bisect_right

import numpy as np

from .base import BlockAllocator, BlockRequest, NoSpace, SpaceView
from .delayed import DelayedState
from .ext4goal import clamp, find_goal
from .groupscan import group_bits
from .mbsearch import Group, Scanner

STREAM_REQUEST = 16         # s_mb_stream_request (blocks)
GROUP_PREALLOC = 512        # s_mb_group_prealloc (blocks)
PREALLOC_TB_SIZE = 10       # lg_prealloc_list orders
LG_LIST_MAX = 8             # ext4_mb_add_n_trim: a list past 8 entries ...
LG_LIST_KEEP = 5            # ... is trimmed back to 5 (ext4_mb_discard_lg_preallocations)


class PA:
    """struct ext4_prealloc_space: a physical run held for an inode or the locality group;
    `avail` marks its blocks not yet handed out."""

    __slots__ = ("lstart", "pstart", "avail", "free", "group", "order")

    def __init__(self, lstart: int, pstart: int, n: int, group: int):
        self.lstart, self.pstart, self.group = lstart, pstart, group
        self.avail = np.ones(n, dtype=bool)
        self.free = n
        self.order = -1             # the locality group's list it is in (-1: none)

    def take(self, off: int, n: int) -> list[int]:
        self.avail[off:off + n] = False
        self.free -= n
        return list(range(self.pstart + off, self.pstart + off + n))


class MbState(DelayedState):
    """A file's extents placed so far (the goal and the neighbours) and its preallocations."""

    __slots__ = ("pas", "owner")

    def __init__(self, owner=None):
        super().__init__()
        self.pas: list[PA] = []
        self.owner = owner          # weak reference to the allocator holding the PAs' blocks

    def add(self, lblk: int, phys: int, n: int) -> None:
        i = bisect_right(self.starts, lblk) - 1
        if i >= 0 and self.extents[i][0] + self.extents[i][2] > lblk:
            return                  # recorded already (delayed allocation reports it again)
        super().add(lblk, phys, n)

    def neighbours(self, lblk: int):
        """(lleft, pleft, lright, pright): the last mapped block before lblk and the first after
        it (0s: none), as ext4_ext_search_left/right find them."""
        i = bisect_right(self.starts, lblk) - 1
        lleft = pleft = lright = pright = 0
        if i >= 0:
            l0, p0, n0 = self.extents[i]
            last = min(l0 + n0 - 1, lblk - 1)
            lleft, pleft = last, p0 + (last - l0)
        if i + 1 < len(self.extents):
            lright, pright = self.extents[i + 1][0], self.extents[i + 1][1]
        return lleft, pleft, lright, pright

    def __del__(self):
        """The in-core inode is gone: its preallocations go too (ext4_clear_inode)."""
        try:
            alloc = self.owner() if self.owner is not None else None
            if alloc is not None:
                alloc.discard(self)
        except Exception:           # interpreter shutdown: nothing left to give back to
            pass


def normalize(lblk: int, length: int, isize: int, bs: int, bpg: int, nb,
              pas: list[PA], blocks_count: int, first_data_block: int):
    """ext4_mb_normalize_request: (first lblk, length, exact goal or None) of the goal extent.
    `nb` = (lleft, pleft, lright, pright)."""
    bsbits = bs.bit_length() - 1
    size = max((lblk + length) << bsbits, isize)
    start_off = 0
    for limit in (16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20):
        if size <= limit:
            size = limit
            break
    else:
        if size <= 4 << 20:
            start_off, size = (lblk >> (21 - bsbits)) << 21, 2 << 20
        elif size <= 8 << 20:
            start_off, size = (lblk >> (22 - bsbits)) << 22, 4 << 20
        elif length <= (8 << 20) >> bsbits:
            start_off, size = (lblk >> (23 - bsbits)) << 23, 8 << 20
        else:
            start_off, size = lblk << bsbits, length << bsbits
    size >>= bsbits
    start = max(start_off >> bsbits, lblk // bpg * bpg)
    lleft, pleft, lright, pright = nb
    if pleft and start <= lleft:
        size -= lleft + 1 - start
        start = lleft + 1
    if pright and start + size - 1 >= lright:
        size = lright - start
    size = min(size, bpg)
    end = start + size
    for pa in pas:                                  # ext4_mb_pa_adjust_overlap
        ps, pe = pa.lstart, pa.lstart + len(pa.avail)
        if pe <= start or ps >= end:
            continue
        if pe <= lblk:
            start = pe
        elif ps > lblk:
            end = ps
    size = end - start
    if not start <= lblk < end:
        return lblk, length, None
    goal = None
    if pright and lright == start + size and pright >= size and pright - size >= first_data_block:
        goal = pright - size                        # merge to the right
    if pleft and lleft + 1 == start and pleft + 1 < blocks_count:
        goal = pleft + 1                            # merge to the left
    return start, size, goal


def group_or_file(end: int, isize: int, writing: bool) -> tuple[bool, bool]:
    """ext4_mb_group_or_file for a data request ending at logical block `end` of a file of
    `isize` blocks: (locality group, inode preallocation eligible). No inode preallocation
    for a closed file whose request reaches its end (nothing more will come; the file system
    is taken as not busy, ext4_fs_is_busy); the locality group while the larger of the two
    is at most s_mb_stream_request. Neither: EXT4_MB_HINT_NOPREALLOC - the request exactly,
    searched from the goal's group."""
    inode_pa = not (end == isize and not writing)
    return max(end, isize) <= STREAM_REQUEST, inode_pa


class Mballoc(BlockAllocator):
    name = "mballoc"
    summary = ("ext4 mballoc (nodelalloc): goal from the extents (ext4_ext_find_goal), request "
               "normalisation, inode and locality-group preallocation, buddy criteria passes")
    placer = "orlov-flex"
    pid = 0                     # current->pid for ext4_inode_to_goal_block's colour

    def __init__(self):
        self.by_group: dict[int, list[PA]] = {}     # live preallocations per block group
        self.held: dict[int, int] = {}              # per group: blocks they (and `pending`) hold
        self.lg: list[list[PA]] = [[] for _ in range(PREALLOC_TB_SIZE)]
        self.last_group = 0                         # s_mb_last_group (stream allocation)
        self.pending: list[tuple[int, int]] = []    # blocks handed out in this allocate_run

    def new_inode_state(self) -> MbState:
        return MbState(weakref.ref(self))

    def release(self, state) -> None:
        """Truncate or the writer's last close: ext4_discard_preallocations; the extents
        remembered for goals go too (the map is the truth from now on)."""
        if isinstance(state, MbState):
            self.discard(state)
            state.starts.clear()
            state.extents.clear()

    # preallocations -------------------------------------------------------------------------
    def _hold(self, pa: PA, n: int) -> None:
        self.held[pa.group] = self.held.get(pa.group, 0) + n

    def _add_pa(self, pa: PA) -> None:
        self.by_group.setdefault(pa.group, []).append(pa)
        self._hold(pa, pa.free)

    def _drop_pa(self, pa: PA) -> None:
        """Give the preallocation's unused blocks back (ext4_mb_release_inode_pa): deleted."""
        pas = self.by_group.get(pa.group, [])
        if pa in pas:
            pas.remove(pa)
            self._hold(pa, -pa.free)
        pa.avail[:] = False
        pa.free = 0

    def _take(self, pa: PA, off: int, n: int) -> list[int]:
        self._hold(pa, -n)
        out = pa.take(off, n)
        if pa.free == 0:
            self._drop_pa(pa)
        return out

    def discard(self, state: MbState) -> None:
        for pa in state.pas:
            self._drop_pa(pa)
        state.pas.clear()

    def discard_all(self) -> None:
        """ext4_mb_discard_preallocations: every group's preallocations (no room was found)."""
        for pas in list(self.by_group.values()):
            for pa in list(pas):
                self._drop_pa(pa)
        for lst in self.lg:
            for pa in lst:
                pa.order = -1
            lst.clear()

    def _use_inode_pa(self, st: MbState, lblk: int, length: int) -> list[int]:
        for pa in st.pas:
            off = lblk - pa.lstart
            if 0 <= off < len(pa.avail):
                if not pa.avail[off]:            # handed out before (and freed since): spent
                    self._drop_pa(pa)
                    st.pas.remove(pa)
                    return []
                seg = pa.avail[off:off + length]
                n = int(seg.argmin()) if not seg.all() else len(seg)
                out = self._take(pa, off, n)
                if not pa.free:                  # used up: deleted (ext4_mb_put_pa)
                    st.pas.remove(pa)
                return out
        return []

    def _use_group_pa(self, goal: int, length: int) -> list[int]:
        order = min(length.bit_length() - 1, PREALLOC_TB_SIZE - 1)
        best, dist = None, 0
        for lst in self.lg[order:]:
            for pa in lst:
                if pa.free >= length:
                    d = abs(goal - self._cursor(pa))
                    if best is None or d < dist:
                        best, dist = pa, d
        if best is None:
            return []
        return self._use_lg(best, length)

    @staticmethod
    def _cursor(pa: PA) -> int:
        return pa.pstart + len(pa.avail) - pa.free

    def _use_lg(self, pa: PA, length: int) -> list[int]:
        """ext4_mb_use_group_pa and ext4_mb_release_context: from the cursor, then into the
        list of its new order (ext4_mb_add_n_trim)."""
        if pa.order >= 0:
            self.lg[pa.order].remove(pa)
            pa.order = -1
        out = self._take(pa, len(pa.avail) - pa.free, length)
        if pa.free:
            order = min(pa.free.bit_length() - 1, PREALLOC_TB_SIZE - 1)
            lst = self.lg[order]
            i = next((i for i, o in enumerate(lst) if pa.free < o.free), len(lst))
            lst.insert(i, pa)
            pa.order = order
            if len(lst) > LG_LIST_MAX:
                for o in [o for o in lst if o is not pa][:len(lst) - LG_LIST_KEEP]:
                    lst.remove(o)
                    o.order = -1
                    self._drop_pa(o)
        return out

    # the request ----------------------------------------------------------------------------
    def allocate(self, space: SpaceView, req: BlockRequest, state) -> int:
        st = state if isinstance(state, MbState) else MbState()
        b = self._new_blocks(space, req, st, req.lblk, 1)[0]
        if req.kind == "data" and not req.is_dir:
            st.add(req.lblk, b, 1)
        return b

    def _goal(self, space: SpaceView, req: BlockRequest, st: MbState, lblk: int):
        """ext4_ext_find_goal (or ext4_find_near) for lblk (req describes lblk's first request
        block), and the neighbours for normalisation."""
        geo = space.geometry
        pid = None if self.decides == "flush" else self.pid
        if req.kind == "xattr":
            return find_goal(geo, req, pid), (0, 0, 0, 0)
        nb = st.neighbours(lblk)
        if not nb[1] and req.prev_phys:
            nb = (lblk - 1, req.prev_phys, nb[2], nb[3])
        ext = st.nearest(lblk)
        if ext is None:
            return find_goal(geo, req, pid), nb
        return clamp(geo, ext[1] + (lblk - ext[0])), nb

    def _new_blocks(self, space: SpaceView, req: BlockRequest, st: MbState, lblk: int,
                    length: int) -> list[int]:
        """ext4_mb_new_blocks: blocks for lblk.. (at least one, at most `length`, contiguous)."""
        geo = space.geometry
        bs = geo.block_size
        data = req.kind == "data" and not req.is_dir
        goal, nb = self._goal(space, req, st, lblk)
        small, inode_pa = group_or_file(lblk + length, -(-req.size // bs), req.writing)
        if data:
            got = self._use_inode_pa(st, lblk, length) or (small and self._use_group_pa(goal, length))
            if got:
                return got
        exact = None
        if not data or (not small and not inode_pa):     # EXT4_MB_HINT_NOPREALLOC: as asked
            glblk, glen = lblk, length
            data = data and small
        elif small:
            glblk, glen = lblk, GROUP_PREALLOC
        else:
            glblk, glen, exact = normalize(lblk, length, req.size, bs, geo.blocks_per_group, nb, st.pas,
                                           geo.blocks_count, geo.first_data_block)
        g, s, n = self._search(space, goal, glen, exact, req.kind == "data" and not req.is_dir,
                               data and not small)
        start = geo.group_start(g) + s
        if not data or n <= length:
            return list(range(start, start + min(n, length)))
        if small:                                    # ext4_mb_new_group_pa
            pa = PA(start, start, n, g)
            self._add_pa(pa)
            return self._use_lg(pa, length)
        if n < glen:                                 # ext4_mb_new_inode_pa: cover the request
            b = glblk + glen - n
            if lblk < b:
                b = glblk if lblk + length <= glblk + n else lblk
        else:
            b = glblk
        pa = PA(b, start, n, g)
        self._add_pa(pa)
        st.pas.append(pa)
        return self._use_inode_pa(st, lblk, length)

    def _search(self, space: SpaceView, goal: int, glen: int, exact, data: bool, stream: bool):
        """ext4_mb_regular_allocator, with the preallocations discarded and a second try when
        nothing is found."""
        for attempt in (0, 1):
            scan = self._scanner(space)
            geo = space.geometry
            if exact is not None:
                g = geo.group_of_block(exact)
                hit = scan.goal(g, exact - geo.group_start(g), glen)
                if hit is not None:
                    return self._found(hit, stream)
            gg = self.last_group if stream else geo.group_of_block(goal)
            try:
                return self._found(scan.search(gg, glen, data), stream)
            except NoSpace:
                if attempt or not any(self.held.values()):
                    raise
                self.discard_all()
        raise NoSpace()

    def _found(self, hit, stream: bool):
        if stream:
            self.last_group = hit[0]
        return hit

    def _scanner(self, space: SpaceView) -> Scanner:
        geo = space.geometry
        bpg = geo.blocks_per_group
        max_order = geo.block_size.bit_length()      # MB_NUM_ORDERS - 1 = blocksize_bits + 1
        while bpg % (1 << max_order):
            max_order -= 1
        groups: dict[int, Group] = {}

        def group(g: int) -> Group:
            grp = groups.get(g)
            if grp is None:
                grp = groups[g] = Group(self._bits(space, g), max_order)
            return grp

        def free(g: int) -> int:
            return space.group_free_blocks(g) - self.held.get(g, 0)

        return Scanner(geo.groups, max_order, getattr(geo, "groups_per_flex", 1), group, free)

    def _bits(self, space: SpaceView, g: int) -> np.ndarray:
        """Group g's bitmap with the preallocated blocks (and this call's) shown in use."""
        bits = group_bits(space, g)
        pas = self.by_group.get(g)
        gs = space.geometry.group_start(g)
        mine = [(s, n) for s, n in self.pending if gs <= s < gs + len(bits)]
        if not pas and not mine:
            return bits
        bits = bits.copy()
        for pa in pas or ():
            o = pa.pstart - gs
            bits[o:o + len(pa.avail)] |= pa.avail
        for s, n in mine:
            bits[s - gs:s - gs + n] = True
        return bits


class MballocDelalloc(Mballoc):
    name = "mballoc-delalloc"
    summary = ("ext4 mballoc under delayed allocation: each delayed extent (up to 2048 blocks) "
               "placed at write-back by one ext4_mb_new_blocks request")
    decides = "flush"
    max_run = 2048              # MAX_WRITEPAGES_EXTENT_LEN

    def allocate_run(self, space: SpaceView, req: BlockRequest, state, count: int) -> list[int]:
        st = state if isinstance(state, MbState) else MbState()
        out: list[int] = []
        try:
            while len(out) < count:
                lblk = req.lblk + len(out)
                got = self._new_blocks(space, dataclasses.replace(req, prev_phys=out[-1] if out else req.prev_phys),
                                       st, lblk, count - len(out))
                g = space.geometry.group_of_block(got[0])
                self.pending.append((got[0], len(got)))
                self.held[g] = self.held.get(g, 0) + len(got)
                st.add(lblk, got[0], len(got))
                out += got
        finally:
            for s, n in self.pending:
                g = space.geometry.group_of_block(s)
                self.held[g] -= n
            self.pending.clear()
        return out
