"""Where Linux ext2's Orlov puts inodes (policies/linux_ialloc.py), stated from
fs/ext2/ialloc.c find_group_orlov / find_group_other, on hypothesis-made volumes (per-group
used inodes, directories and blocks; tests/unit/placement_helpers.py).

A top-level directory goes to a group with at least the average free inodes and free blocks,
none of which has fewer directories; a deeper directory to the first group from its
parent's, cyclically, under the directory, debt, inode and block limits; a file to its
parent's group while it has a free inode and block, else along the quadratic hash from
(parent group + parent inode), else the next group with a free inode. Each takes the
lowest free inode of its group.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import policies
from tests.unit.placement_helpers import fresh_space

GROUPS = 8
#: fs/ext2/ialloc.c's constants, stated here (not imported: a changed constant must show)
INODE_COST, BLOCK_COST, ROOT_INO = 64, 256, 2


@pytest.fixture(scope="module")
def space0(tmp_path_factory):
    return fresh_space(tmp_path_factory.mktemp("orlov"), groups=GROUPS)


def _fill(space, rng, inode_density, block_density, dirs):
    geo = space.geometry
    ipg = geo.inodes_per_group
    for g in range(geo.groups):
        seg = space.inode_used[g * ipg:(g + 1) * ipg]
        seg |= rng.random(ipg) < inode_density[g]
        s, e = space.group_range(g)
        space.block_used[s:e] |= rng.random(e - s) < block_density[g]
        space.dirs[g] += dirs[g]


def _group_of(space, ino):
    return (ino - 1) // space.geometry.inodes_per_group


def _cyclic(start, ng):
    return [(start + i) % ng for i in range(ng)]


class Expect:
    """The rules, per call, from the volume's counts (debts kept as ext2 keeps s_debts)."""

    def __init__(self, space):
        self.space = space
        self.debts = [0] * space.geometry.groups

    def averages(self):
        s, ng = self.space, self.space.geometry.groups
        return s.free_inodes // ng, s.free_blocks // ng

    def top_level_ok(self, g):
        s = self.space
        avefreei, avefreeb = self.averages()
        eligible = [x for x in range(s.geometry.groups) if s.group_free_inodes(x)
                    and s.group_free_inodes(x) >= avefreei and s.group_free_blocks(x) >= avefreeb
                    and s.group_used_dirs(x) < s.geometry.inodes_per_group]    # best_ndir's start
        if not eligible:
            return None                                   # the fallback decides
        fewest = min(s.group_used_dirs(x) for x in eligible)
        return g in eligible and s.group_used_dirs(g) == fewest

    def nested_dir(self, parent_group):
        s, geo = self.space, self.space.geometry
        ng, ipg, bpg = geo.groups, geo.inodes_per_group, geo.blocks_per_group
        avefreei, avefreeb = self.averages()
        ndirs = s.used_dirs or 1
        blocks_per_dir = (geo.blocks_count - s.free_blocks) // ndirs
        max_dirs = ndirs // ng + ipg // 16
        max_debt = bpg // max(blocks_per_dir, BLOCK_COST)
        max_debt = min(max_debt, ipg // INODE_COST, 255) or 1
        for g in _cyclic(parent_group, ng):
            if (s.group_free_inodes(g) and self.debts[g] < max_debt and s.group_used_dirs(g) < max_dirs
                    and s.group_free_inodes(g) >= avefreei - ipg // 4
                    and s.group_free_blocks(g) >= avefreeb - bpg // 4):
                return g
        return self.fallback(parent_group)

    def fallback(self, parent_group):
        s, ng = self.space, self.space.geometry.groups
        avefreei, _ = self.averages()
        for ave in ((avefreei, 0) if avefreei else (0,)):
            for g in _cyclic(parent_group, ng):
                if s.group_free_inodes(g) and s.group_free_inodes(g) >= ave:
                    return g
        return -1

    def file(self, parent_ino):
        s, ng = self.space, self.space.geometry.groups
        pg = _group_of(s, parent_ino)
        if s.group_free_inodes(pg) and s.group_free_blocks(pg):
            return pg
        g = (pg + parent_ino) % ng
        i = 1
        while i < ng:
            g = (g + i) % ng
            if s.group_free_inodes(g) and s.group_free_blocks(g):
                return g
            i *= 2
        for g in _cyclic(pg + 1, ng):
            if s.group_free_inodes(g):
                return g
        return -1


DENSITY = st.sampled_from([0.0, 0.3, 0.8, 1.0])


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(inode_density=st.lists(DENSITY, min_size=GROUPS, max_size=GROUPS),
       block_density=st.lists(DENSITY, min_size=GROUPS, max_size=GROUPS),
       dirs=st.lists(st.integers(0, 80), min_size=GROUPS, max_size=GROUPS),
       seed=st.integers(0, 2**31),
       calls=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 10_000)), min_size=1, max_size=30))
def test_orlov_spreads_top_level_directories_and_keeps_the_rest_near_their_parent(
        space0, inode_density, block_density, dirs, seed, calls):
    space = space0.copy()
    _fill(space, np.random.default_rng(seed), inode_density, block_density, dirs)
    placer = policies.INODE_PLACERS["orlov"]()
    expect = Expect(space)
    ipg = space.geometry.inodes_per_group
    for kind, pick in calls:
        if not space.free_inodes:
            break
        used = np.flatnonzero(space.inode_used[11:]) + 12
        parent = ROOT_INO if kind == 0 or not len(used) else int(used[pick % len(used)])
        is_dir = kind < 2
        if is_dir and parent == ROOT_INO:
            want = None
        elif is_dir:
            want = expect.nested_dir(_group_of(space, parent))
        else:
            want = expect.file(parent)
        ino = placer.choose(space, parent, is_dir)
        g = _group_of(space, ino)
        if want is None:
            ok = expect.top_level_ok(g)
            if ok is not None:
                assert ok, f"top-level directory in group {g}: not one with the fewest directories"
        else:
            assert want >= 0 and g == want, f"{'directory' if is_dir else 'file'} of {parent} in group {g}, not {want}"
        seg = space.inode_used[g * ipg:(g + 1) * ipg]
        assert not space.inode_used[ino - 1] and ino == g * ipg + int(seg.argmin()) + 1, "not the group's lowest free inode"
        space.inode_used[ino - 1] = True
        if is_dir:
            space.dirs[g] += 1
            expect.debts[g] = min(expect.debts[g] + 1, 255)
        elif expect.debts[g]:
            expect.debts[g] -= 1


def test_top_level_directories_go_to_different_groups(space0):
    """On an empty volume, top-level directories in a row land in different groups (each time
    the groups with no directory yet are the fewest): 7 of them in groups 1-7 (group 0, with
    the root directory and lost+found, has fewer free blocks than the average)."""
    space = space0.copy()
    placer = policies.INODE_PLACERS["orlov"]()
    groups = []
    for _ in range(GROUPS - 1):
        ino = placer.choose(space, ROOT_INO, True)
        g = _group_of(space, ino)
        groups.append(g)
        space.inode_used[ino - 1] = True
        space.dirs[g] += 1
    assert sorted(groups) == list(range(1, GROUPS)), groups


def test_a_group_takes_max_debt_directories_in_a_row_then_the_next_one(tmp_path):
    """s_debts: a directory raises its group's debt; once the debt reaches max_debt =
    blocks_per_group / max(blocks per directory, BLOCK_COST) = 1024 / 256 = 4 (under
    inodes_per_group / INODE_COST = 512 / 64 = 8), the next subdirectory goes to the next
    group. 48 directories spread over the groups keep the blocks per directory under 256."""
    space = fresh_space(tmp_path, groups=GROUPS, ipg=512)
    space.dirs += 6
    ipg = space.geometry.inodes_per_group
    parent = 3 * ipg + 20
    space.inode_used[parent - 1] = True
    blocks_per_dir = (space.geometry.blocks_count - space.free_blocks) // space.used_dirs
    assert blocks_per_dir < BLOCK_COST
    placer = policies.INODE_PLACERS["orlov"]()
    groups = []
    for _ in range(5):
        ino = placer.choose(space, parent, True)
        g = _group_of(space, ino)
        groups.append(g)
        space.inode_used[ino - 1] = True
        space.dirs[g] += 1
    assert groups == [3, 3, 3, 3, 4]


def _with_free_inodes(space, free):
    """Group g keeps exactly free[g] free inodes (the highest ones)."""
    ipg = space.geometry.inodes_per_group
    for g, n in enumerate(free):
        space.inode_used[g * ipg:(g + 1) * ipg - n] = True
        space.inode_used[(g + 1) * ipg - n:(g + 1) * ipg] = False


def test_a_group_at_exactly_min_inodes_takes_the_subdirectory(space0):
    """find_group_orlov skips a group with `free_inodes < min_inodes`: one with exactly
    min_inodes = avefreei - ipg/4 = 37 - 16 = 21 free inodes (the parent's) is taken."""
    space = space0.copy()
    _with_free_inodes(space, [40, 40, 40, 21, 40, 40, 40, 40])
    assert space.free_inodes // GROUPS - 64 // 4 == 21
    ipg = space.geometry.inodes_per_group
    placer = policies.INODE_PLACERS["orlov"]()
    assert _group_of(space, placer.choose(space, 3 * ipg + 1, True)) == 3


def test_the_fallback_takes_a_group_at_exactly_the_average(space0):
    """The fallback's first pass takes a group with `free_inodes >= avefreei`: free inodes
    only in groups 3 (4 of them) and 5 (28), whose blocks are all used (both under
    min_blocks, so the search for a subdirectory fails): avefreei = 32 / 8 = 4, and the
    parent's group 3, at exactly the average, takes it."""
    space = space0.copy()
    _with_free_inodes(space, [0, 0, 0, 4, 0, 28, 0, 0])
    for g in (3, 5):
        space.fill(g)
    ipg = space.geometry.inodes_per_group
    placer = policies.INODE_PLACERS["orlov"]()
    assert _group_of(space, placer.choose(space, 3 * ipg + 1, True)) == 3
