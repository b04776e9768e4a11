"""Where FreeBSD's FFS allocators put blocks (policies/ffs_alloc.py: cg-2010, cg-2013, cg),
stated from sys/ufs/ffs/ffs_alloc.c, with the allocator driven by hand on a map the test
fills (tests/unit/placement_helpers.py).

ffs_hashalloc: the preferred group, then the quadratic rehash (cg + 1, + 2, + 4 ... from
the last, with no preference), then every group from icg + 2 on. ffs_alloccgblk: the
preferred block if it is free, else the first free block after it in its group (ffs_mapsearch,
wrapping); in a group reached with no preference, the search starts at cg_rotor, the block
the last search in that group found (cg-2013 moves the rotor only for data-area blocks).
ffs_clusteralloc (cluster reallocation): the first run of free blocks long enough at or after
the preference in its group, never before it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import policies
from policies.base import BlockRequest
from policies.groupscan import data_start
from tests.unit.placement_helpers import first_free_wrapping, fresh_space

GROUPS = 8
ALLOCS = ["cg-2010", "cg-2013", "cg"]


@pytest.fixture(scope="module")
def space0(tmp_path_factory):
    return fresh_space(tmp_path_factory.mktemp("ffs"), groups=GROUPS)


def _copy(space0):
    return space0.copy()


def hash_order(ngroups: int, icg: int) -> list[int]:
    """ffs_hashalloc's visiting order: icg; icg+1, icg+3, icg+7, ... (mod ngroups) while the
    step stays below ngroups; then icg+2, icg+3, ... for ngroups-2 groups."""
    order, cg, i = [icg], icg, 1
    while i < ngroups:
        cg = (cg + i) % ngroups
        order.append(cg)
        i *= 2
    order += [(icg + 2 + k) % ngroups for k in range(ngroups - 2)]
    return order


def _data_req(block: int, space) -> BlockRequest:
    """A data block of a file whose previous block is `block` (slot 5 of i_block: ffs_blkpref
    gives bap[indx-1] + 1)."""
    geo = space.geometry
    return BlockRequest(ino=12, inode_group=geo.group_of_block(block), lblk=5, slot=5, map_prev=block,
                        prev_phys=block)


class Model:
    """ffs_alloc -> ffs_hashalloc -> ffs_alloccgblk for a full-block request with preference
    pref (in its group), with each group's cg_rotor."""

    def __init__(self, space, version: int):
        self.space, self.version = space, version
        self.rotor = [0] * space.geometry.groups

    def cgdata(self, g: int) -> int:
        """cgdata: the data area after the metadata area of fs_metaspace = bpg * minfree/2 %."""
        geo = self.space.geometry
        s, e = self.space.group_range(g)
        return min(data_start(self.space, g) + geo.blocks_per_group * 8 // 200, e - 1)

    def alloc(self, pref: int) -> int:
        geo = self.space.geometry
        icg = geo.group_of_block(pref)
        for n, g in enumerate(hash_order(geo.groups, icg)):
            if not self.space.group_free_blocks(g):
                continue
            s, e = self.space.group_range(g)
            used = self.space.block_used[s:e]
            if n == 0 and not used[pref - s]:
                return pref                              # the preferred block is free
            start = pref - s if n == 0 else self.rotor[g]
            if self.version == 2013 and n > 0 and not used[start]:
                return s + start                         # (cg-2013 tries the rotor's block first)
            rel = first_free_wrapping(used, start)
            if self.version == 2010 or s + rel >= self.cgdata(g):
                self.rotor[g] = rel
            return s + rel
        raise AssertionError("no free block anywhere")


@st.composite
def scenarios(draw):
    full = draw(st.sets(st.integers(0, GROUPS - 1), min_size=1, max_size=GROUPS - 1))
    density = {g: draw(st.sampled_from([0.0, 0.3, 0.9, 0.995])) for g in range(GROUPS) if g not in full}
    steps = draw(st.lists(st.tuples(st.sampled_from(sorted(full)), st.integers(0, 1000),
                                    st.booleans()), min_size=1, max_size=25))
    return full, density, steps, draw(st.integers(0, 2**31))


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(alloc=st.sampled_from(ALLOCS), sc=scenarios())
def test_a_full_preferred_group_sends_the_block_along_the_rehash_from_the_rotor(space0, alloc, sc):
    """Preferences in full groups (the file's previous block + 1): each block lands in the
    first group of ffs_hashalloc's order with a free block, at the first free block at or
    after that group's rotor; some requests prefer a block in a group with room instead (the
    block itself if free, else the next free one after it). The rotor is then where the last
    search in the group ended, so later blocks there never go back before it."""
    full, density, steps, seed = sc
    space = _copy(space0)
    rng = np.random.default_rng(seed)
    for g in full:
        space.fill(g)
    for g, d in density.items():
        s, e = space.group_range(g)
        space.block_used[s:e] |= rng.random(e - s) < d
    allocator = policies.make_allocator(alloc)
    model = Model(space, 2010 if alloc == "cg-2010" else 2013)
    open_groups = sorted(density)
    for g_full, off, elsewhere in steps:
        if not space.free_blocks:
            break
        g = open_groups[off % len(open_groups)] if elsewhere else g_full
        s, e = space.group_range(g)
        prev = s + off % (e - s - 1)                      # its +1 stays in group g
        if prev < space.geometry.first_data_block:
            continue
        want = model.alloc(prev + 1)
        got = allocator.allocate(space, _data_req(prev, space), allocator.new_inode_state())
        assert got == want, f"pref {prev + 1} (group {g}, {'full' if g in full else 'open'})"
        space.take(got)


@pytest.mark.parametrize("alloc", ALLOCS)
def test_rehash_goes_on_from_the_rotor_not_from_the_group_start(space0, alloc):
    """Group 0 full; group 1 (its first rehash) has room at two places. The first block the
    rehash brings there is the first free one; the rotor stays on it, so after a block before
    it is freed the next one still comes after it (cg-2013: in the data area)."""
    space = _copy(space0)
    space.fill(0)
    s, e = space.group_range(1)
    space.block_used[s:e] = True
    a, b = s + 200, s + 700
    space.block_used[[a, a + 1, b, b + 1]] = False
    allocator = policies.make_allocator(alloc)
    pref_prev = space.group_range(0)[0] + 300
    got = [allocator.allocate(space, _data_req(pref_prev, space), None)]
    space.take(got[0])
    space.block_used[a + 1] = True                       # the run after the rotor is used up
    space.block_used[s + 100] = False                    # and a hole opens before it
    got.append(allocator.allocate(space, _data_req(pref_prev, space), None))
    assert got == [a, b], "the second search did not start at the rotor"


@pytest.mark.parametrize("alloc", ALLOCS)
def test_quadratic_rehash_then_brute_force(space0, alloc):
    """Groups 3, 4, 6 and 2 full (the first three of the rehash from 3: 3, 4, 6, 2): the block
    goes to group 5 (brute force from icg + 2 = 5), not to the emptier groups 0, 1, 7."""
    space = _copy(space0)
    for g in (3, 4, 6, 2):
        space.fill(g)
    assert hash_order(8, 3)[:5] == [3, 4, 6, 2, 5]       # (2 is the rehash's 4th; then brute force)
    allocator = policies.make_allocator(alloc)
    b = allocator.allocate(space, _data_req(space.group_range(3)[0] + 50, space), None)
    assert space.geometry.group_of_block(b) == 5


@st.composite
def clusters(draw):
    n = draw(st.integers(2, 8))
    start = draw(st.integers(0, 1024 - n - 2))
    holes = draw(st.lists(st.tuples(st.integers(0, 1023), st.integers(1, 12)), max_size=12))
    return n, start, holes


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(alloc=st.sampled_from(["cg-2010", "cg-2013"]), c=clusters())
def test_cluster_reallocation_takes_the_first_run_at_or_after_the_preference(space0, alloc, c):
    """ffs_reallocblks with ffs_clusteralloc: the new blocks are free, contiguous, in one
    group, and the first run of that length at or after the preference (the block after the
    cluster's predecessor) in its group; None only when that group and every other has no
    such run."""
    n, start, holes = c
    space = _copy(space0)
    g = 2
    s, e = space.group_range(g)
    space.block_used[s:e] = True
    for h, ln in holes:
        space.block_used[s + h:min(s + h + ln, e)] = space.meta[s + h:min(s + h + ln, e)]
    for other in range(GROUPS):
        if other != g:
            space.fill(other)
    prev = s + start                                    # the cluster's predecessor (lblk 4)
    cluster = [(5 + i, s + start + 1 + i) for i in range(n)]
    space.block_used[[p for _, p in cluster] + [prev]] = True
    req = BlockRequest(ino=12, inode_group=g, lblk=5, slot=5, map_prev=prev, prev_phys=prev)
    allocator = policies.make_allocator(alloc)
    new = allocator.reallocate(space, req, allocator.new_inode_state(), cluster)
    used = space.block_used[s:e]
    free = ~used
    runs = [i for i in range(start + 1, e - s - n + 1) if free[i:i + n].all()]
    if not runs:
        assert new is None
        return
    assert new == list(range(s + runs[0], s + runs[0] + n))


@pytest.fixture(scope="module")
def space8k(tmp_path_factory):
    return fresh_space(tmp_path_factory.mktemp("ffs8k"), groups=4, bpg=8192, block_size=4096)


def test_cg_2013_areas_metadata_then_data(space8k):
    """r248623's metadata area: a directory's first block goes to cgmeta (the first block
    after the inode table), a regular file's to cgdata = cgmeta + fs_metaspace, where newfs
    makes fs_metaspace half of minfree (8 %) of the group: 8192 * 8 / 200 = 327 blocks.
    cg-2010 has no such area: both go to the group's first free block."""
    for g in (1, 2):
        cgmeta = data_start(space8k, g)
        for alloc, is_dir, want in (("cg-2013", True, cgmeta), ("cg-2013", False, cgmeta + 327),
                                    ("cg-2010", False, cgmeta), ("cg-2010", True, cgmeta)):
            space = space8k.copy()
            allocator = policies.make_allocator(alloc)
            req = BlockRequest(ino=12, inode_group=g, lblk=0, kind="dir" if is_dir else "data", is_dir=is_dir)
            assert allocator.allocate(space, req, allocator.new_inode_state()) == want, (alloc, is_dir, g)


@pytest.mark.parametrize("alloc", ALLOCS)
@pytest.mark.parametrize("lbn,skip_full", [(268, False), (268, True), (524, False), (780, False)])
def test_a_new_section_starts_in_the_group_lbn_over_maxbpg_after_the_inodes(space0, alloc, lbn, skip_full):
    """ffs_blkpref past the first indirect block's range, at a section start (the first slot
    of an indirect block, no previous block): startcg = inode cg + lbn / maxbpg (maxbpg =
    NINDIR = 256 here), then the first group from there, wrapping, with at least the average
    free blocks; its first block (cg-2010: cgbase + 1; cg-2013: the data area)."""
    space = space0.copy()
    inocg = 2
    start = (inocg + lbn // 256) % GROUPS
    if skip_full:                                        # below the average: passed over
        s, e = space.group_range(start)
        space.block_used[s:e - 10] = True
        start = (start + 1) % GROUPS
    allocator = policies.make_allocator(alloc)
    req = BlockRequest(ino=12, inode_group=inocg, lblk=lbn, slot=0, map_block=space.group_range(inocg)[0] + 500)
    b = allocator.allocate(space, req, allocator.new_inode_state())
    assert space.geometry.group_of_block(b) == start
    first_free = space.first_free_block(space.group_range(start)[0] + 1, space.group_range(start)[1])
    if alloc == "cg-2010":
        assert b == first_free
    else:
        assert b == data_start(space, start) + 1024 * 8 // 200


@pytest.mark.parametrize("alloc", ["cg-2013", "cg"])
def test_data_block_12_written_after_13_follows_the_indirect_block(tmp_path, alloc):
    """cg-2013's ffs_blkpref for lbn == NDADDR (not the block of the branch just allocated):
    di_ib[0] + 1 when the indirect block lies in the inode group's data area, so block 12
    written after block 13 goes to the first free block after the indirect block."""
    from simfs.fs.volume import Volume, VolumeOptions
    from simfs.ondisk.mkfs import mkfs
    from tests.helpers import block_map
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=1024, blocks_per_group=1024, inodes_per_group=64)
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        f = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        vol.write(f, 0, b"a" * 12 * 1024)                  # d0..d11
        vol.write(f, 13 * 1024, b"b" * 1024)               # the indirect block, then d13
        vol.write(f, 12 * 1024, b"c" * 1024)               # d12
        data, ind = block_map(vol, f)
        assert ind[0] == data[11] + 1 and data[13] == ind[0] + 1
        assert data[12] == data[13] + 1, "d12 not at the first free block after di_ib[0] + 1"


@pytest.mark.parametrize("alloc", ["cg-2010", "cg-2013"])
def test_cluster_after_the_last_block_searches_from_group_0(space0, alloc):
    """ffs_reallocblks: a preference past the last block (the predecessor is the volume's
    last block) is no preference: ffs_hashalloc starts from group 0 (0, then 1, 3, 7, then
    2, 3, 4 ...), not from the last group (7, then 0, 2, 6): with room only in groups 4 and
    6, group 4's first run."""
    space = space0.copy()
    geo = space.geometry
    last = geo.blocks_count - 1
    for g in range(GROUPS):
        space.fill(g)
    for g in (4, 6):
        s, _ = space.group_range(g)
        space.block_used[s + 300:s + 310] = False
    cluster = [(5, last - 3), (6, last - 2), (7, last - 1)]
    req = BlockRequest(ino=12, inode_group=GROUPS - 1, lblk=5, slot=5, map_prev=last, prev_phys=last)
    allocator = policies.make_allocator(alloc)
    new = allocator.reallocate(space, req, allocator.new_inode_state(), cluster)
    s4, _ = space.group_range(4)
    assert new == [s4 + 300, s4 + 301, s4 + 302]
