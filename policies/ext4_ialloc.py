"""ext4 inode placement: find_group_orlov over flex groups for directories, find_group_other for
everything else, then the first free inode of the group (fs/ext4/ialloc.c `__ext4_new_inode`,
`find_group_orlov`, `get_orlov_stats`, `find_group_other`; Linux 5.x/6.x).

Flex groups (s_log_groups_per_flex; `geometry.groups_per_flex`, 1 without flex_bg): Orlov
works on flex groups - their free inodes, free blocks and directories summed - and then
takes the first group of the chosen flex group with a free inode, so a flex group's inodes
are packed at the start of its inode tables.

find_group_orlov(parent)
    top level (the parent is the root; EXT4_TOPDIR_FL is not modelled): from a start the
    kernel takes from the half-MD4 hash of the name (the name is not part of the placer's
    question here: a seeded random start, as the kernel does without a name), the flex group
    with the fewest directories among those with free inodes >= avefreei and free blocks >=
    avefreec; none -> fallback.
    otherwise: max_dirs = ndirs / ngroups + ipg * flex / 16, min_inodes = avefreei - ipg *
    flex / 4 (at least 1), min_clusters = avefreec - bpg * flex / 4; the first flex group from
    the one the parent last allocated in (i_last_alloc_group), else the parent's, with
    used_dirs < max_dirs, free_inodes >= min_inodes and free blocks >= min_clusters.
    fallback: the first group (not flex group) from the parent's with free inodes >= the
    average; then with any.
find_group_other(parent)
    flex groups: the first group of the parent's flex group with a free inode, then of the
    flex group the parent last allocated in; else Orlov's non-top-level search (a new flex
    group). Without flex groups: as ext2 (parent's group, quadratic hash, linear).
Every inode made sets the parent's i_last_alloc_group. ext2's s_debts are gone in ext4; with
flex size 1 the rest agrees with ext2's Orlov (policies.linux_ialloc) where the code does.

The averages are the kernel's: freei, freec and ndirs come from the file system's per-CPU
counters (s_freeinodes_counter, s_freeclusters_counter, s_dirs_counter) read as
percpu_counter_read_positive reads them, the global count without the CPUs' pending deltas;
a CPU folds its delta into the global count once it reaches percpu_counter_batch = 32
(max(32, 2 x CPUs), percpu_counter_add_batch). So the average lags up to 31 inodes behind the
flex groups' exact counts (atomic), and which flex group passes `free inodes >= avefreei`
depends on how many inodes were made since the last fold: a top-level directory of a small
untar goes to the fallback group or to the other flex group as the kernel's does. One CPU is
modelled (one writer), as mballoc models one locality group; the changes between two
questions (every new inode is one) are applied as one addition.
"""

import random
from collections import OrderedDict

from .base import InodePlacer, NoSpace, SpaceView
from .linux_ialloc import ROOT_INO, Orlov

LAST_ALLOC_KEPT = 8192      # i_last_alloc_group lives in the in-core inode: kept for this many
PERCPU_BATCH = 32           # percpu_counter_batch: max(32, 2 * num_online_cpus())


class PercpuCounter:
    """struct percpu_counter with one CPU: `count` (what percpu_counter_read sees) and the
    CPU's pending delta, folded in when it reaches the batch (percpu_counter_add_batch)."""

    __slots__ = ("count", "local", "exact")

    def __init__(self, exact: int):
        self.count, self.local, self.exact = exact, 0, exact    # percpu_counter_init: exact

    def follow(self, exact: int) -> int:
        """The counter after the file system's changes up to `exact` (one addition);
        percpu_counter_read_positive's answer."""
        amount, self.exact = exact - self.exact, exact
        if amount:
            total = self.local + amount
            if abs(total) >= PERCPU_BATCH:
                self.count += total
                self.local = 0
            else:
                self.local = total
        return max(self.count, 0)


class OrlovFlex(InodePlacer):
    name = "orlov-flex"
    summary = ("ext4 __ext4_new_inode: find_group_orlov over flex groups for directories, "
               "find_group_other within the parent's flex group for files")

    def __init__(self, seed: int = 2002):
        self.rng = random.Random(seed)      # get_random_u32_below(): seeded, deterministic
        self.last: "OrderedDict[int, int]" = OrderedDict()     # parent ino -> i_last_alloc_group
        self.counters: tuple[PercpuCounter, PercpuCounter, PercpuCounter] | None = None

    def _totals(self, space) -> tuple[int, int, int]:
        """freei, freec, ndirs as find_group_orlov reads them (the per-CPU counters)."""
        exact = (space.free_inodes, space.free_blocks, space.used_dirs)
        if self.counters is None:                   # the mount: the counters from the groups
            self.counters = tuple(PercpuCounter(x) for x in exact)
        return tuple(c.follow(x) for c, x in zip(self.counters, exact))

    def choose(self, space: SpaceView, parent_ino: int, is_dir: bool) -> int:
        geo = space.geometry
        flex = max(1, getattr(geo, "groups_per_flex", 1))
        totals = self._totals(space)                # every inode made moves the counters
        group = self._orlov(space, parent_ino, flex, is_dir, totals) if is_dir else \
            self._other(space, parent_ino, flex, totals)
        if group < 0:
            raise NoSpace()
        for _ in range(geo.groups):         # __ext4_new_inode: first zero bit, else the next group
            ino = space.first_free_inode(group)
            if ino > 0:
                self._remember(parent_ino, group)
                return ino
            group = (group + 1) % geo.groups
        raise NoSpace()

    def _remember(self, parent_ino: int, group: int) -> None:
        self.last[parent_ino] = group
        self.last.move_to_end(parent_ino)
        if len(self.last) > LAST_ALLOC_KEPT:
            self.last.popitem(last=False)

    @staticmethod
    def _stats(space, fg: int, flex: int) -> tuple[int, int, int]:
        """get_orlov_stats: (free inodes, free blocks, directories) of flex group fg."""
        groups = range(fg * flex, min((fg + 1) * flex, space.geometry.groups))
        return (sum(space.group_free_inodes(g) for g in groups),
                sum(space.group_free_blocks(g) for g in groups),
                sum(space.group_used_dirs(g) for g in groups))

    def _orlov(self, space, parent_ino: int, flex: int, is_dir: bool, totals) -> int:
        geo = space.geometry
        real = geo.groups
        ng = -(-real // flex)
        ipg, bpg = geo.inodes_per_group, geo.blocks_per_group
        freei, freec, ndirs = totals
        avefreei, avefreec = freei // ng, freec // ng
        parent_fg = geo.group_of_inode(parent_ino) // flex
        grp = -1
        if is_dir and parent_ino == ROOT_INO:
            start = self.rng.randrange(2**32) % ng
            best = ipg
            for i in range(ng):
                fg = (start + i) % ng
                fi, fc, nd = self._stats(space, fg, flex)
                if fi and nd < best and fi >= avefreei and fc >= avefreec:
                    grp, best = fg, nd
        else:
            max_dirs = ndirs // ng + ipg * flex // 16
            min_inodes = max(avefreei - ipg * flex // 4, 1)
            min_clusters = avefreec - bpg * flex // 4
            last = self.last.get(parent_ino)
            start = last // flex if last is not None else parent_fg
            for i in range(ng):
                fg = (start + i) % ng
                fi, fc, nd = self._stats(space, fg, flex)
                if nd < max_dirs and fi >= min_inodes and fc >= min_clusters:
                    grp = fg
                    break
        if grp >= 0:
            if flex == 1:
                return grp
            for g in range(grp * flex, min(grp * flex + flex, real)):
                if space.group_free_inodes(g):
                    return g
        return self._fallback(space, parent_ino, freei // real)

    @staticmethod
    def _fallback(space, parent_ino: int, avefreei: int) -> int:
        geo = space.geometry
        parent_group = geo.group_of_inode(parent_ino)
        for ave in ((avefreei, 0) if avefreei else (0,)):
            for i in range(geo.groups):
                g = (parent_group + i) % geo.groups
                fi = space.group_free_inodes(g)
                if fi and fi >= ave:
                    return g
        return -1

    def _other(self, space, parent_ino: int, flex: int, totals) -> int:
        geo = space.geometry
        if flex == 1:
            return Orlov._other(space, parent_ino)
        parent_group = geo.group_of_inode(parent_ino)
        last = self.last.get(parent_ino)
        for base in (parent_group, last):
            if base is None:
                continue
            base &= ~(flex - 1)
            for g in range(base, min(base + flex, geo.groups)):
                if space.group_free_inodes(g):
                    return g
        return self._orlov(space, parent_ino, flex, False, totals)
