"""Linux ext2/ext3 inode placement: find_group_orlov for directories, find_group_other for
everything else, then the first free inode of the group (fs/ext2/ialloc.c `ext2_new_inode`,
2.6.x; ext3's ialloc.c is the same; docs/reference/allocation-policies.md §2.2).

find_group_orlov(parent)
    top level (parent is the root; EXT2_TOPDIR_FL is not modelled): from a random group, the
    group with the fewest directories among those with free_inodes >= avefreei and
    free_blocks >= avefreeb; none -> fallback.
    otherwise: blocks_per_dir = (blocks_count - free_blocks) / ndirs,
    max_dirs = ndirs/ngroups + ipg/16, min_inodes = avefreei - ipg/4,
    min_blocks = avefreeb - bpg/4, max_debt = bpg / max(blocks_per_dir, BLOCK_COST=256)
    (capped so max_debt * INODE_COST(64) <= ipg, and at 255; at least 1); the first group from
    the parent's, cyclically, with s_debts < max_debt, used_dirs < max_dirs,
    free_inodes >= min_inodes and free_blocks >= min_blocks.
    fallback: the first group from the parent's with free_inodes >= avefreei; then with 0.
find_group_other(parent)
    the parent's group if it has a free inode and a free block; else a quadratic hash from
    (parent_group + parent_ino) % ngroups for a group with both; else linear from the
    parent's group + 1 for any free inode.
s_debts[g] is raised by each directory and lowered by each other inode made in g (0..255).

The random start uses a seeded generator (deterministic runs); the counters are exact here
where the kernel's percpu counters are approximate.
"""

import random

from .base import InodePlacer, NoSpace, SpaceView

INODE_COST = 64
BLOCK_COST = 256
ROOT_INO = 2


class Orlov(InodePlacer):
    name = "orlov"
    summary = ("Linux ext2/ext3 ext2_new_inode: find_group_orlov for directories (top-level "
               "spread, s_debts), find_group_other for files, first free inode of the group")

    def __init__(self, seed: int = 2002):
        self.rng = random.Random(seed)      # stands for get_random_bytes(); seeded: deterministic
        self.debts: list[int] | None = None

    def choose(self, space: SpaceView, parent_ino: int, is_dir: bool) -> int:
        geo = space.geometry
        if self.debts is None:
            self.debts = [0] * geo.groups
        group = self._orlov(space, parent_ino) if is_dir else self._other(space, parent_ino)
        if group < 0:
            raise NoSpace()
        ipg = geo.inodes_per_group
        for _ in range(geo.groups):         # ext2_new_inode: first zero bit, else the next group
            seg = space.inode_used[group * ipg:(group + 1) * ipg]
            i = int(seg.argmin())
            if not seg[i]:
                if is_dir:
                    self.debts[group] = min(self.debts[group] + 1, 255)
                elif self.debts[group]:
                    self.debts[group] -= 1
                return group * ipg + i + 1
            group = (group + 1) % geo.groups
        raise NoSpace()

    def _orlov(self, space, parent_ino: int) -> int:
        geo = space.geometry
        ng = geo.groups
        ipg = geo.inodes_per_group
        bpg = geo.blocks_per_group
        free_i, free_b, dirs = space.group_free_inodes, space.group_free_blocks, space.group_used_dirs
        # the volume's totals, as the kernel reads its percpu counters (equal to the sums of
        # the groups' counts): no pass over every group before the search
        freei = space.free_inodes
        free_blocks = space.free_blocks
        avefreei = freei // ng
        avefreeb = free_blocks // ng
        ndirs = space.used_dirs
        parent_group = geo.group_of_inode(parent_ino)
        if parent_ino == ROOT_INO:
            parent_group = self.rng.randrange(2**32) % ng
            best_group, best_ndir = -1, ipg
            for i in range(ng):
                g = (parent_group + i) % ng
                fi, nd = free_i(g), dirs(g)
                if not fi or nd >= best_ndir or fi < avefreei or free_b(g) < avefreeb:
                    continue
                best_group, best_ndir = g, nd
            if best_group >= 0:
                return best_group
        else:
            ndirs = ndirs or 1
            blocks_per_dir = (geo.blocks_count - free_blocks) // ndirs
            max_dirs = ndirs // ng + ipg // 16
            min_inodes = avefreei - ipg // 4
            min_blocks = avefreeb - bpg // 4
            max_debt = bpg // max(blocks_per_dir, BLOCK_COST)
            if max_debt * INODE_COST > ipg:
                max_debt = ipg // INODE_COST
            max_debt = min(max_debt, 255) or 1
            debts = self.debts
            for i in range(ng):
                g = (parent_group + i) % ng
                fi = free_i(g)
                if not fi or debts[g] >= max_debt or dirs(g) >= max_dirs:
                    continue
                if fi < min_inodes or free_b(g) < min_blocks:
                    continue
                return g
        for ave in ((avefreei, 0) if avefreei else (0,)):    # fallback
            for i in range(ng):
                g = (parent_group + i) % ng
                fi = free_i(g)
                if fi and fi >= ave:
                    return g
        return -1

    @staticmethod
    def _other(space, parent_ino: int) -> int:
        geo = space.geometry
        ng = geo.groups
        parent_group = geo.group_of_inode(parent_ino)
        g = parent_group
        if space.group_free_inodes(g) and space.group_free_blocks(g):
            return g
        g = (g + parent_ino) % ng
        i = 1
        while i < ng:
            g += i
            if g >= ng:
                g -= ng
            if space.group_free_inodes(g) and space.group_free_blocks(g):
                return g
            i <<= 1
        g = parent_group
        for _ in range(ng):
            g += 1
            if g >= ng:
                g = 0
            if space.group_free_inodes(g):
                return g
        return -1
