"""Where Linux ext2's allocator and first-free put blocks (policies/linux_ext2.py,
policies/firstfree.py), stated from fs/ext2/inode.c and fs/ext2/balloc.c, with the allocator
driven by hand on a map the test fills (tests/unit/placement_helpers.py).

ext2_find_goal: the block after the last one allocated when the file goes on in order, else
the nearest earlier pointer, else the indirect block, else the group's first block (the
colour of pid 0). Reservation windows: each writer's blocks come from its own window of
goal_size blocks, the windows never overlap, the goal is taken when it is free and inside the
window, and a window more than half used is followed by one twice its size (up to 1027).
first-free: the lowest free block from the start of the inode's group, wrapping to the volume's
first data block.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import policies
from policies.base import BlockRequest
from tests.unit.placement_helpers import fresh_space

GROUPS = 8
#: EXT2_DEFAULT_RESERVE_BLOCKS, EXT2_MAX_RESERVE_BLOCKS (fs/ext2/ext2.h), stated, not imported
DEFAULT_RESERVE_BLOCKS, MAX_RESERVE_BLOCKS = 8, 1027


@pytest.fixture(scope="module")
def space0(tmp_path_factory):
    return fresh_space(tmp_path_factory.mktemp("ext2"), groups=GROUPS)


class Writer:
    """One file appended to block by block (i_block slots, then as if mapped by an indirect
    block at `ind`: ext2_find_near sees the previous pointer)."""

    def __init__(self, alloc, ino: int, group: int):
        self.alloc, self.ino, self.group = alloc, ino, group
        self.state = alloc.new_inode_state()
        self.blocks: list[int] = []

    def request(self) -> BlockRequest:
        lblk = len(self.blocks)
        prev = self.blocks[-1] if self.blocks else 0
        return BlockRequest(ino=self.ino, inode_group=self.group, lblk=lblk, slot=min(lblk, 11),
                            map_prev=prev, prev_phys=prev)


def _windows_are_disjoint(alloc):
    tree = alloc.tree
    assert tree.starts == sorted(tree.starts)
    assert [w.start for w in tree.nodes] == tree.starts and [w.end for w in tree.nodes] == tree.ends
    for (s0, e0), s1 in zip(zip(tree.starts, tree.ends), tree.starts[1:]):
        assert e0 < s1, "two reservation windows overlap"


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(nwriters=st.integers(1, 4), groups=st.lists(st.integers(0, GROUPS - 1), min_size=4, max_size=4),
       density=st.sampled_from([0.0, 0.2, 0.5]), seed=st.integers(0, 2**31),
       order=st.lists(st.integers(0, 3), min_size=1, max_size=120))
def test_writers_take_their_goal_inside_their_own_window(space0, nwriters, groups, density, seed, order):
    """Interleaved appending writers: each block is the goal (last + 1, or for a first block
    the group's first block) when that is free and inside the writer's window; otherwise a
    block inside a window placed at or after the goal; the windows never overlap and each
    spans its goal size (8, doubled up to 1027 as they fill)."""
    space = space0.copy()
    rng = np.random.default_rng(seed)
    first = space.geometry.first_data_block
    space.block_used[first:] |= rng.random(len(space.block_used) - first) < density
    alloc = policies.make_allocator("ext2")
    writers = [Writer(alloc, 12 + i, groups[i]) for i in range(nwriters)]
    sizes = {DEFAULT_RESERVE_BLOCKS}
    while max(sizes) < MAX_RESERVE_BLOCKS:
        sizes.add(min(max(sizes) * 2, MAX_RESERVE_BLOCKS))
    for k in order:
        w = writers[k % nwriters]
        req = w.request()
        geo = space.geometry
        goal = w.blocks[-1] + 1 if w.blocks else geo.group_start(w.group)
        rsv = w.state.rsv
        in_window = not rsv.empty and rsv.start <= goal <= rsv.end
        goal_free = goal < geo.blocks_count and not space.block_used[goal]
        b = alloc.allocate(space, req, w.state)
        space.take(b)
        w.blocks.append(b)
        _windows_are_disjoint(alloc)
        rsv = w.state.rsv
        assert not rsv.empty and rsv.start <= b <= rsv.end, f"block {b} outside its window"
        assert rsv.end - rsv.start + 1 == rsv.goal_size and rsv.goal_size in sizes
        if in_window and goal_free:
            assert b == goal, "the free goal inside the window was not taken"
        if geo.group_of_block(b) == geo.group_of_block(min(goal, geo.blocks_count - 1)):
            assert b >= goal or rsv.start >= goal or not in_window, "went back before the goal"


def test_a_lone_writer_doubles_its_window_each_time_it_fills_one(space0):
    """One file written in order on an empty group: one run from the group's first free
    block, in windows of 8, 16, 32, 64 and 128 blocks (248 in all: 200 blocks end in the
    fifth)."""
    space = space0.copy()
    alloc = policies.make_allocator("ext2")
    w = Writer(alloc, 12, 2)
    for _ in range(200):
        b = alloc.allocate(space, w.request(), w.state)
        space.take(b)
        w.blocks.append(b)
    s, _ = space.group_range(2)
    start = int(np.flatnonzero(~space0.block_used[s:])[0]) + s
    assert w.blocks == list(range(start, start + 200))
    assert w.state.rsv.goal_size == 128
    assert w.state.rsv.start == start + 8 + 16 + 32 + 64


def test_goal_rules_of_ext2_find_goal(space0):
    """In order: last + 1. Not in order (a hole): the nearest earlier pointer itself, so the
    block after it when that is free; no pointer but an indirect block: after the indirect
    block; nothing: the group's first block (colour of pid 0)."""
    space = space0.copy()
    alloc = policies.make_allocator("ext2")
    st_ = alloc.new_inode_state()
    g3 = space.geometry.group_start(3)
    free3 = int(np.flatnonzero(~space.block_used[g3:])[0]) + g3
    b0 = alloc.allocate(space, BlockRequest(ino=12, inode_group=3, lblk=0), st_)
    assert b0 == free3
    space.take(b0)
    b1 = alloc.allocate(space, BlockRequest(ino=12, inode_group=3, lblk=1, slot=1, map_prev=b0), st_)
    assert b1 == b0 + 1
    space.take(b1)
    alloc.release(st_)                                  # the window goes (last close)
    # a jump: lblk 7, nearest earlier pointer b1 (not last + 1): goal b1, taken: b1 + 1
    b7 = alloc.allocate(space, BlockRequest(ino=12, inode_group=3, lblk=7, slot=7, map_prev=b1), st_)
    assert b7 == b1 + 1
    space.take(b7)
    # another file, no pointer before but its indirect block at X: goal X
    other = alloc.new_inode_state()
    x = space.geometry.group_start(5) + 300
    space.take(x)
    b = alloc.allocate(space, BlockRequest(ino=13, inode_group=1, lblk=12, slot=0, map_block=x), other)
    assert b == x + 1


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(group=st.integers(0, GROUPS - 1), density=st.sampled_from([0.5, 0.95, 1.0]),
       full=st.sets(st.integers(0, GROUPS - 1)), seed=st.integers(0, 2**31), n=st.integers(1, 30))
def test_first_free_takes_the_lowest_free_block_from_the_inode_group(space0, group, density, full, seed, n):
    space = space0.copy()
    rng = np.random.default_rng(seed)
    first = space.geometry.first_data_block
    space.block_used[first:] |= rng.random(len(space.block_used) - first) < density
    for g in full:
        space.fill(g)
    alloc = policies.make_allocator("first-free")
    start = space.geometry.group_start(group)
    for i in range(n):
        free = np.flatnonzero(~space.block_used)
        free = free[free >= first]
        if not len(free):
            with pytest.raises(policies.NoSpace):
                alloc.allocate(space, BlockRequest(ino=12, inode_group=group, lblk=i), None)
            return
        later = free[free >= start]
        want = int(later[0] if len(later) else free[0])
        b = alloc.allocate(space, BlockRequest(ino=12, inode_group=group, lblk=i), None)
        assert b == want
        space.take(b)


def test_a_file_begun_past_block_0_and_a_group_whose_first_block_is_free(tmp_path):
    """On the ext4 profile (flex_bg: group 2's bitmaps and inode table live in group 0), group
    2's first block is free data: a file of that group whose first write is at lblk 1 (no
    earlier block, no pointer: the goal is the group's first block, colour 0) gets exactly
    that block, group-relative block 0; its next block follows."""
    space = fresh_space(tmp_path, groups=4, bpg=1024, profile="ext4")
    g2 = space.geometry.group_start(2)
    assert not space.block_used[g2], "group 2 starts with a free block on this profile"
    alloc = policies.make_allocator("ext2")
    st_ = alloc.new_inode_state()
    b1 = alloc.allocate(space, BlockRequest(ino=12, inode_group=2, lblk=1, slot=1), st_)
    assert b1 == g2
    space.take(b1)
    b2 = alloc.allocate(space, BlockRequest(ino=12, inode_group=2, lblk=2, slot=2, map_prev=b1, prev_phys=b1), st_)
    assert b2 == g2 + 1
