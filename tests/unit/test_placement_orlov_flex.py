"""Where ext4's Orlov puts inodes over flex groups (policies/ext4_ialloc.py), stated from
fs/ext4/ialloc.c find_group_orlov / get_orlov_stats / find_group_other, on hypothesis-made
volumes of 64 groups in 4 flex groups of 16 (tests/unit/placement_helpers.py).

Every choice is read on a fresh placer (the per-CPU counters then equal the exact totals, and
no i_last_alloc_group is remembered). A top-level directory goes to a flex group with at
least the average free inodes and blocks and fewer directories than inodes_per_group
(best_ndir's start), none of which has fewer directories; a deeper one
to the first flex group from its parent's under max_dirs, min_inodes and min_clusters;
either to the first group of that flex group with a free inode. A file goes to the first
group of its parent's flex group with a free inode. Otherwise the fallback: the first group
from the parent's with at least the average free inodes, then with any.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import policies
from tests.unit.placement_helpers import fresh_space

GROUPS, FLEX = 64, 16
NFLEX = GROUPS // FLEX
ROOT_INO = 2


@pytest.fixture(scope="module")
def space0(tmp_path_factory):
    space = fresh_space(tmp_path_factory.mktemp("orlovflex"), groups=GROUPS, bpg=1024, profile="ext4")
    assert space.geometry.groups_per_flex == FLEX and space.geometry.groups == GROUPS
    return space


def stats(space, fg):
    gs = range(fg * FLEX, (fg + 1) * FLEX)
    return (sum(space.group_free_inodes(g) for g in gs), sum(space.group_free_blocks(g) for g in gs),
            sum(space.group_used_dirs(g) for g in gs))


def first_with_inode(space, fg):
    return next((g for g in range(fg * FLEX, (fg + 1) * FLEX) if space.group_free_inodes(g)), None)


def fallback(space, parent_ino):
    geo = space.geometry
    pg = (parent_ino - 1) // geo.inodes_per_group
    ave = space.free_inodes // GROUPS
    for a in ((ave, 0) if ave else (0,)):
        for i in range(GROUPS):
            g = (pg + i) % GROUPS
            if space.group_free_inodes(g) and space.group_free_inodes(g) >= a:
                return g
    return -1


def nested(space, parent_ino):
    geo = space.geometry
    ipg, bpg = geo.inodes_per_group, geo.blocks_per_group
    avefreei, avefreec = space.free_inodes // NFLEX, space.free_blocks // NFLEX
    max_dirs = space.used_dirs // NFLEX + ipg * FLEX // 16
    min_inodes = max(avefreei - ipg * FLEX // 4, 1)
    min_clusters = avefreec - bpg * FLEX // 4
    pfg = (parent_ino - 1) // ipg // FLEX
    for i in range(NFLEX):
        fg = (pfg + i) % NFLEX
        fi, fc, nd = stats(space, fg)
        if nd < max_dirs and fi >= min_inodes and fc >= min_clusters:
            g = first_with_inode(space, fg)
            return g if g is not None else fallback(space, parent_ino)
    return fallback(space, parent_ino)


DENSITY = st.sampled_from([0.0, 0.5, 0.9, 1.0])


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(idens=st.lists(DENSITY, min_size=NFLEX, max_size=NFLEX), bdens=st.lists(DENSITY, min_size=NFLEX, max_size=NFLEX),
       dirs=st.lists(st.integers(0, 300), min_size=NFLEX, max_size=NFLEX), seed=st.integers(0, 2**31),
       kind=st.sampled_from(["top", "nested", "file"]), pick=st.integers(0, 10**6))
def test_orlov_over_flex_groups(space0, idens, bdens, dirs, seed, kind, pick):
    space = space0.copy()
    rng = np.random.default_rng(seed)
    ipg = space.geometry.inodes_per_group
    for g in range(GROUPS):
        fg = g // FLEX
        seg = space.inode_used[g * ipg:(g + 1) * ipg]
        seg |= rng.random(ipg) < idens[fg]
        s, e = space.group_range(g)
        space.block_used[s:e] |= rng.random(e - s) < bdens[fg]
        space.dirs[g] += dirs[fg] // FLEX + (g % FLEX < dirs[fg] % FLEX)
    if not space.free_inodes:
        return
    parent = ROOT_INO if kind == "top" else 11 + pick % (GROUPS * ipg - 11)
    placer = policies.INODE_PLACERS["orlov-flex"]()
    try:
        ino = placer.choose(space, parent, kind != "file")
    except policies.NoSpace:
        raise AssertionError("no inode chosen while some are free")
    g = (ino - 1) // ipg
    assert ino == space.first_free_inode(g), "not the group's first free inode"
    if kind == "top":
        avefreei, avefreec = space.free_inodes // NFLEX, space.free_blocks // NFLEX
        ok = [fg for fg in range(NFLEX) if stats(space, fg)[0] and stats(space, fg)[0] >= avefreei
              and stats(space, fg)[1] >= avefreec and stats(space, fg)[2] < ipg]   # best_ndir starts at ipg
        if ok:
            fewest = min(stats(space, fg)[2] for fg in ok)
            assert g // FLEX in ok and stats(space, g // FLEX)[2] == fewest, "not a flex group with the fewest directories"
            assert g == first_with_inode(space, g // FLEX)
        else:
            assert g == fallback(space, parent)
    elif kind == "nested":
        assert g == nested(space, parent)
    else:
        pfg = (parent - 1) // ipg // FLEX
        want = first_with_inode(space, pfg)
        assert g == (want if want is not None else nested(space, parent))


def test_a_subdirectory_goes_to_the_first_group_of_flex_group_0(space0):
    """The parent (in group 5) is in flex group 0, which passes the limits: the directory
    goes to that flex group's first group with a free inode (group 0), not through the
    fallback (which would start at the parent's group 5, nearly full, and take group 6)."""
    space = space0.copy()
    ipg = space.geometry.inodes_per_group
    space.inode_used[5 * ipg:6 * ipg - 1] = True
    parent = 5 * ipg + 1
    placer = policies.INODE_PLACERS["orlov-flex"]()
    ino = placer.choose(space, parent, True)
    assert (ino - 1) // ipg == 0


def test_the_counters_orlov_reads_move_in_batches_of_32():
    """find_group_orlov reads percpu_counter_read_positive: with one CPU the count moves when
    the CPU's pending delta reaches percpu_counter_batch = max(32, 2 * CPUs) = 32."""
    from policies.ext4_ialloc import PercpuCounter
    c = PercpuCounter(1000)
    assert c.follow(1000 - 31) == 1000                   # 31 inodes made: not folded yet
    assert c.follow(1000 - 32) == 968                    # the 32nd: folded
    assert c.follow(1000 - 32 + 31) == 968
    assert c.follow(1000) == 1000
    low = PercpuCounter(10)
    assert low.follow(10 - 40) == 0                      # never below zero


def test_one_free_inode_is_enough_for_a_flex_group(space0):
    """min_inodes = avefreei - ipg * flex / 4, at least 1 (ext4's find_group_orlov): on an
    almost full volume (free inodes only in groups 16 and 48), a subdirectory of a directory
    in group 17 takes group 16's, the first of its own flex group; the fallback would start at
    group 17 and find group 48's."""
    space = space0.copy()
    ipg = space.geometry.inodes_per_group
    space.inode_used[:] = True
    space.inode_used[16 * ipg + 5] = False
    space.inode_used[48 * ipg + 5] = False
    placer = policies.INODE_PLACERS["orlov-flex"]()
    ino = placer.choose(space, 17 * ipg + 1, True)
    assert ino == 16 * ipg + 6
