"""simfs.fs.filemap: a file's block map (direct, single, double and triple indirect).

The map is driven directly (map_for_write, bmap, truncate, locate, set_pointer) on an inode of
a small 1 KiB-block volume (256 pointers per indirect block: direct 0..11, single 12..267,
double 268..65803, triple from 65804), against a model: which logical blocks are mapped, and
which indirect blocks a map with exactly those blocks needs. Truncate must free exactly the
data blocks past the cut and the indirect blocks nothing below the cut needs any more.
"""

from __future__ import annotations

import errno
import stat

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simfs.errors import FSError
from simfs.fs.fileio import starts_map
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.inode import Inode
from simfs.ondisk.mkfs import mkfs

P = 256
D1, D2, D3 = 12, 12 + P, 12 + P + P * P          # first logical block of single / double / triple


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    img = tmp_path_factory.mktemp("filemap") / "fm.img"
    mkfs(img, 16 << 20, block_size=1024, blocks_per_group=8192)
    return img


_names = iter(range(10**9))


def fresh_file(vol):
    """A new regular file's in-core inode, held (pinned) like an open file."""
    ino = vol.create(vol.root_ino, b"f%d" % next(_names), stat.S_IFREG | 0o644, 0, 0).st_ino
    vol.hold(ino)
    return vol.inodes.get(ino)


def needed_indirect(lblks) -> int:
    """Indirect blocks a map holding exactly these logical blocks has."""
    ind = set()
    for b in lblks:
        if D1 <= b < D2:
            ind.add(("IND",))
        elif D2 <= b < D3:
            n = b - D2
            ind |= {("DIND",), ("DIND", n // P)}
        elif b >= D3:
            n = b - D3
            ind |= {("TIND",), ("TIND", n // (P * P)), ("TIND", n // (P * P), (n // P) % P)}
    return len(ind)


def test_path_boundaries(image):
    with Volume.open(image, VolumeOptions(disk="ideal")) as vol:
        fm = vol.filemap
        assert fm.path(0) == (0, []) and fm.path(11) == (11, [])
        assert fm.path(D1) == (12, [0]) and fm.path(D2 - 1) == (12, [P - 1])
        assert fm.path(D2) == (13, [0, 0]) and fm.path(D2 + P + 3) == (13, [1, 3])
        assert fm.path(D3 - 1) == (13, [P - 1, P - 1])
        assert fm.path(D3) == (14, [0, 0, 0]) and fm.path(D3 + P * P + P + 1) == (14, [1, 1, 1])
        assert fm.max_blocks == D3 + P ** 3
        with pytest.raises(FSError) as e:
            fm.path(fm.max_blocks)
        assert e.value.errno == errno.EFBIG


INTERESTING = st.one_of(st.integers(0, 11), st.integers(D1, D1 + 3), st.integers(D2 - 3, D2 + 3),
                        st.integers(D2 + P - 2, D2 + 3 * P), st.integers(D3 - 2, D3 + 2),
                        st.integers(D3 + P * P - 1, D3 + P * P + P + 1), st.integers(0, D3 + 70_000))


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(INTERESTING, min_size=1, max_size=40), st.data())
def test_map_and_truncate_against_a_model(image, lblks, data):
    with Volume.open(image, VolumeOptions(disk="ideal")) as vol:
        fm, space = vol.filemap, vol.space
        inode = fresh_file(vol)
        spb = 2
        free0, blocks0 = space.free_blocks, inode.blocks
        model: dict[int, int] = {}
        for b in lblks:
            phys, new = fm.map_for_write(inode, b)
            if b in model:
                assert (phys, new) == (model[b], False)
            else:
                assert new and phys not in model.values() and space.block_used[phys]
                model[b] = phys
        n_ind = needed_indirect(model)
        listing = list(fm.blocks(inode))
        assert sorted((k, p) for k, p in listing if isinstance(k, int)) == sorted(model.items())
        indirect = [p for k, p in listing if isinstance(k, str)]
        assert len(indirect) == n_ind and not set(indirect) & set(model.values())
        assert all(space.block_used[p] for p in indirect)
        assert space.free_blocks == free0 - len(model) - n_ind
        assert inode.blocks - blocks0 == spb * (len(model) + n_ind)
        probes = set(model) | {b + 1 for b in model} | {max(0, b - 1) for b in model} | {0, D1, D2, D3}
        for b in probes:
            assert fm.bmap(inode, b) == model.get(b, 0), b

        keep = data.draw(st.sampled_from(sorted({0, D1, D2, D3} | {b for b in model} | {b + 1 for b in model})))
        gone = {b: p for b, p in model.items() if b >= keep}
        fm.truncate(inode, keep)
        kept = {b: p for b, p in model.items() if b < keep}
        listing = list(fm.blocks(inode))
        assert sorted((k, p) for k, p in listing if isinstance(k, int)) == sorted(kept.items())
        still = [p for k, p in listing if isinstance(k, str)]
        assert len(still) == needed_indirect(kept)
        freed_ind = set(indirect) - set(still)
        assert space.free_blocks == free0 - len(kept) - len(still)          # freed exactly
        assert not any(space.block_used[p] for p in gone.values()) and not any(space.block_used[p] for p in freed_ind)
        assert all(space.block_used[p] for p in list(kept.values()) + still)
        assert inode.blocks - blocks0 == spb * (len(kept) + len(still))
        assert all(p not in vol.cache for p in list(gone.values()) + list(freed_ind))   # forgotten, not written
        for b in probes:
            assert fm.bmap(inode, b) == kept.get(b, 0), b
        fm.truncate(inode, 0)
        assert space.free_blocks == free0 and inode.block == [0] * 15 and inode.blocks == blocks0
        vol.drop(inode.ino)


def test_writes_into_an_existing_map_reuse_it_and_holes_stay_holes(image):
    with Volume.open(image, VolumeOptions(disk="ideal")) as vol:
        fm = vol.filemap
        inode = fresh_file(vol)
        a, _ = fm.map_for_write(inode, D2 + 5)
        before = vol.space.free_blocks
        b, new = fm.map_for_write(inode, D2 + 6)                       # same IND under the same DIND
        assert new and vol.space.free_blocks == before - 1
        assert fm.bmap(inode, D2 + 4) == 0 and fm.bmap(inode, D1) == 0 and fm.bmap(inode, 0) == 0
        fm.truncate(inode, 0)
        vol.drop(inode.ino)


def test_locate_and_set_pointer(image):
    with Volume.open(image, VolumeOptions(disk="ideal")) as vol:
        fm, space = vol.filemap, vol.space
        inode = fresh_file(vol)
        for lblk in (3, D1 + 7, D2 + P + 9):
            old, _ = fm.map_for_write(inode, lblk)
            slot, map_block = fm.locate(inode, lblk)
            if lblk < D1:
                assert (slot, map_block) == (3, 0)
            else:
                ind = [p for k, p in fm.blocks(inode) if k == "IND"]
                assert slot == fm.path(lblk)[1][-1] and map_block in ind
            new = space.first_free_block(old + 1, space.geometry.blocks_count)
            space.take_block(new)
            fm.set_pointer(inode, lblk, new)
            space.release_block(old)
            assert fm.bmap(inode, lblk) == new
            if map_block:
                assert vol.cache.is_dirty(map_block)
                raw = vol.cache.peek(map_block)
                assert int.from_bytes(raw[slot * 4:slot * 4 + 4], "little") == new
            else:                                          # in the table once packed (before a commit)
                vol.inodes.pack()
                geo = vol.geo
                off = (inode.ino - 1) % geo.inodes_per_group % geo.inodes_per_block * geo.inode_size
                raw = vol.cache.peek(vol.inodes.block_of(inode.ino))[off:off + geo.inode_size]
                assert Inode.unpack(inode.ino, raw).block[3] == new
        fm.truncate(inode, 0)
        vol.drop(inode.ino)


def test_no_space_is_enospc_and_takes_nothing(image):
    with Volume.open(image, VolumeOptions(disk="ideal")) as vol:
        fm, space = vol.filemap, vol.space
        inode = fresh_file(vol)
        space.reserved = space.free_blocks                                  # all promised elsewhere
        free, blocks = space.free_blocks, inode.blocks
        with pytest.raises(FSError) as e:
            fm.map_for_write(inode, 0)
        assert e.value.errno == errno.ENOSPC
        assert (space.free_blocks, inode.blocks, inode.block[0]) == (free, blocks, 0)
        space.reserved = space.free_blocks - 1                              # room for the DIND block only
        with pytest.raises(FSError) as e:
            fm.map_for_write(inode, D2 + 5)
        assert e.value.errno == errno.ENOSPC                                # the map blocks it added go back
        assert (space.free_blocks, inode.blocks, inode.block[13]) == (free, blocks, 0)
        space.reserved = 0
        vol.drop(inode.ino)


def test_a_block_placed_beforehand_is_linked(image):
    """Delayed allocation takes the data block itself, then has it linked (phys=)."""
    with Volume.open(image, VolumeOptions(disk="ideal")) as vol:
        fm, space = vol.filemap, vol.space
        inode = fresh_file(vol)
        target = space.first_free_block(5000, space.geometry.blocks_count)
        space.take_block(target)
        free, blocks = space.free_blocks, inode.blocks
        got, new = fm.map_for_write(inode, D1 + 2, phys=target)
        assert (got, new) == (target, True) and fm.bmap(inode, D1 + 2) == target
        ind = [p for k, p in fm.blocks(inode) if k == "IND"]
        assert len(ind) == 1 and ind[0] != target                           # the map block was allocated
        assert space.free_blocks == free - 1                                 # only the map block was taken
        assert inode.blocks == blocks + 2 * 2                                # both count in i_blocks
        fm.truncate(inode, 0)
        assert not space.block_used[target] and space.free_blocks == free + 1
        vol.drop(inode.ino)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(INTERESTING.filter(lambda b: b >= 1))
def test_starts_map_is_where_a_lookup_needs_another_map_block(image, lblk):
    """starts_map(lblk): lblk's pointer is in a different map block (or level) than lblk - 1's,
    so a block-map run (ext2_bmaparray) must end before it; never for a direct block."""
    with Volume.open(image, VolumeOptions(disk="ideal")) as vol:
        fm = vol.filemap
        (s0, i0), (s1, i1) = fm.path(lblk - 1), fm.path(lblk)
        other_map = lblk >= D1 and (s0 != s1 or i0[:-1] != i1[:-1])
        assert starts_map(fm, lblk) == other_map
        assert starts_map(fm, lblk) == (lblk in (D1, D2, D3) or (lblk > D1 and i1[-1] == 0))
