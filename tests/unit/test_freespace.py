"""simfs.fs.freespace: the block and inode bitmaps as arrays, mirrored into the image.

Every take/release must change the array, the bit in the group's bitmap block (in the
buffer cache, dirty), the group descriptor and its copy in the descriptor-table block, and the
totals; a FreeSpace loaded afresh from those blocks must see the same thing. The searches
(first_free_block, first_free_inode) are checked against plain loops, is_metadata against the
layout mkfs wrote.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simfs.fs.freespace import FreeSpace
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.constants import FIRST_INO, GROUP_DESC_SIZE, STATE_ERROR
from simfs.ondisk.groupdesc import GroupDesc, unpack_table
from simfs.ondisk.mkfs import mkfs


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    img = tmp_path_factory.mktemp("space") / "s.img"
    mkfs(img, 6 << 20, block_size=1024, blocks_per_group=1024)        # 6 groups, backups in 1, 3, 5
    return img


def bit(raw: bytes, i: int) -> bool:
    return bool(raw[i >> 3] >> (i & 7) & 1)


def reloaded(vol) -> FreeSpace:
    """A FreeSpace read from the bitmap and descriptor blocks as the cache holds them once the
    changed descriptors are packed (as before a commit)."""
    geo = vol.geo
    vol.space.pack()
    descs = unpack_table(vol.cache.peek(geo.first_data_block + 1, geo.gdt_blocks), geo.groups)
    return FreeSpace(geo, descs, vol.cache, vol.stats)


def test_loaded_maps_match_the_descriptors(image):
    with Volume.open(image, VolumeOptions(disk="ideal", read_only=True)) as vol:
        s, geo = vol.space, vol.geo
        assert (geo.groups, geo.inodes_per_group) == (6, 128) and s.block_used[: geo.first_data_block].all()
        for g, d in enumerate(s.descs):
            start, n = geo.group_start(g), geo.group_blocks(g)
            assert d.free_blocks == n - s.block_used[start:start + n].sum() == s.group_free_blocks(g)
            ipg = geo.inodes_per_group
            assert d.free_inodes == ipg - s.inode_used[g * ipg:(g + 1) * ipg].sum() == s.group_free_inodes(g)
        assert s.free_blocks == sum(d.free_blocks for d in s.descs) == vol.sb.free_blocks_count
        assert s.free_inodes == sum(d.free_inodes for d in s.descs) == vol.sb.free_inodes_count
        assert s.used_dirs == sum(d.used_dirs for d in s.descs)
        assert s.inode_used[: FIRST_INO].all() and not s.inode_used[FIRST_INO:].any()   # 1..11 taken
        assert s.group_used_dirs(0) == 2


def test_is_metadata_is_what_mkfs_laid_out(image):
    with Volume.open(image, VolumeOptions(disk="ideal", read_only=True)) as vol:
        s = vol.space
        data = {p for ino in (2, 11) for _, p in vol.filemap.blocks(vol.inodes.get(ino))}   # root, lost+found
        used = set(np.flatnonzero(s.block_used).tolist())
        meta = {b for b in range(vol.geo.blocks_count) if s.is_metadata(b)}
        assert meta == used - data
        assert s.is_metadata(0) and s.is_metadata(1) and s.is_metadata(1 + 3 * 1024)     # backups
        assert s.descs[3].block_bitmap == 1 + 3 * 1024 + 2                               # after super + table
        assert s.descs[2].block_bitmap == 1 + 2 * 1024                                   # group 2: no backup


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(0, 6143), min_size=1, max_size=60), st.lists(st.booleans(), max_size=60),
       st.lists(st.integers(FIRST_INO + 1, 6 * 128), max_size=30))
def test_every_change_reaches_bitmap_descriptor_and_table(image, blocks, releases, inodes):
    with Volume.open(image, VolumeOptions(disk="ideal")) as vol:
        s, geo, cache = vol.space, vol.geo, vol.cache
        stats0 = dict(vol.counters)
        free0, ifree0, dirs0 = s.free_blocks, s.free_inodes, [d.used_dirs for d in s.descs]
        taken = []
        for b in dict.fromkeys(blocks):
            if s.block_used[b]:
                with pytest.raises(AssertionError, match="handed out twice"):
                    s.take_block(b)
                continue
            s.take_block(b)
            taken.append(b)
        released = [b for b, r in zip(taken, releases) if r]
        for b in released:
            s.release_block(b)
        held = set(taken) - set(released)
        dirs = {}
        for k, ino in enumerate(dict.fromkeys(inodes)):
            is_dir = k % 2 == 0
            s.take_inode(ino, is_dir)
            dirs[ino] = is_dir
        for ino in list(dirs)[::3]:
            s.release_inode(ino, dirs.pop(ino))
        # totals and counters
        assert s.free_blocks == free0 - len(held) and s.free_inodes == ifree0 - len(dirs)
        assert s.used_dirs == sum(dirs0) + sum(dirs.values())                 # what Orlov reads
        assert (s.free_blocks, s.free_inodes, s.used_dirs) == (
            sum(d.free_blocks for d in s.descs), sum(d.free_inodes for d in s.descs),
            sum(d.used_dirs for d in s.descs))
        c = vol.counters
        assert c.get("blocks_allocated", 0) - stats0.get("blocks_allocated", 0) == len(taken)
        assert c.get("blocks_freed", 0) - stats0.get("blocks_freed", 0) == len(released)
        # the bitmap blocks, the descriptors and the descriptor table (packed, as before a
        # commit) say the same
        s.pack()
        table = unpack_table(cache.peek(geo.first_data_block + 1, geo.gdt_blocks), geo.groups)
        for g, d in enumerate(s.descs):
            start, n = geo.group_start(g), geo.group_blocks(g)
            bmap = cache.peek(d.block_bitmap)
            assert [bit(bmap, i) for i in range(n)] == s.block_used[start:start + n].tolist(), g
            ipg = geo.inodes_per_group
            imap = cache.peek(d.inode_bitmap)
            assert [bit(imap, i) for i in range(ipg)] == s.inode_used[g * ipg:(g + 1) * ipg].tolist(), g
            assert d.free_blocks == n - int(s.block_used[start:start + n].sum())
            assert table[g].pack() == d.pack()
            new_dirs = sum(1 for ino, isd in dirs.items() if isd and (ino - 1) // ipg == g)
            assert d.used_dirs == dirs0[g] + new_dirs
        touched = {geo.group_of_block(b) for b in taken} | {(i - 1) // geo.inodes_per_group for i in inodes}
        for g in touched:
            assert cache.is_dirty(s.descs[g].block_bitmap) or cache.is_dirty(s.descs[g].inode_bitmap)
            assert cache.is_dirty(geo.gdt_block(g))
        again = reloaded(vol)
        assert np.array_equal(again.block_used, s.block_used) and np.array_equal(again.inode_used, s.inode_used)
        assert (again.free_blocks, again.free_inodes) == (s.free_blocks, s.free_inodes)
        # put everything back, so the image stays as mkfs made it
        for b in held:
            s.release_block(b)
        for ino, isd in dirs.items():
            s.release_inode(ino, isd)
        assert (s.free_blocks, s.free_inodes) == (free0, ifree0)


def test_refusals(image, tmp_path):
    """Handing out a block or inode twice is a bug of simfs (an assertion); freeing what is not
    allocated is what a corrupted image asks for: reported as an inconsistency (recorded in
    the superblock's error state, as ext2_free_blocks' "bit already cleared"), nothing changed."""
    copy = tmp_path / "r.img"
    copy.write_bytes(image.read_bytes())
    with Volume.open(copy, VolumeOptions(disk="ideal")) as vol:
        s = vol.space
        d = s.descs[1]
        before = (s.block_used.copy(), s.inode_used.copy(), s.free_blocks, s.free_inodes)
        assert not s.release_block(d.inode_table)               # metadata
        free = s.first_free_block(2000, 3000)
        assert not s.release_block(free)                        # free already
        s.release_inode(500, False)                             # free
        assert vol.sb.error_count == 3 and vol.mount_state & STATE_ERROR
        after = (s.block_used, s.inode_used, s.free_blocks, s.free_inodes)
        assert all(np.array_equal(x, y) for x, y in zip(before, after))
        with pytest.raises(AssertionError, match="handed out twice"):
            s.take_inode(5, False)                              # reserved inode
        with pytest.raises(AssertionError, match="handed out twice"):
            s.take_inode(11, False)                             # lost+found
        with pytest.raises(AssertionError, match="handed out twice"):
            s.take_block(d.inode_table)                         # metadata


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(1, 6143), max_size=200), st.lists(st.tuples(st.integers(0, 6200), st.integers(0, 6200)),
                                                              min_size=1, max_size=20))
def test_first_free_block_is_the_lowest_free_in_range(image, used, ranges):
    with Volume.open(image, VolumeOptions(disk="ideal", read_only=True)) as vol:
        s = vol.space
        s.block_used = s.block_used.copy()
        s.block_used[used] = True                               # a search only reads the array
        n = len(s.block_used)
        d = s.descs[1]
        ranges = ranges + [(d.inode_table, d.inode_table + vol.geo.inode_table_blocks), (0, 3), (7, 7), (9, 2)]
        for a, b in ranges:
            a, b = min(a, n), min(b, n)
            want = next((i for i in range(a, b) if not s.block_used[i]), -1)
            assert s.first_free_block(a, b) == want, (a, b)


def test_first_free_inode_per_group(image):
    with Volume.open(image, VolumeOptions(disk="ideal")) as vol:
        s = vol.space
        ipg = vol.geo.inodes_per_group
        assert s.first_free_inode(0) == FIRST_INO + 1          # 12: 1..11 are taken
        assert s.first_free_inode(2) == 2 * ipg + 1
        s.take_inode(2 * ipg + 1, False)
        s.take_inode(2 * ipg + 2, True)
        assert s.first_free_inode(2) == 2 * ipg + 3
        saved = s.inode_used.copy()
        s.inode_used[3 * ipg:4 * ipg] = True
        assert s.first_free_inode(3) == -1
        s.inode_used[:] = saved                                 # in place: inode_in_use views it
        s.release_inode(2 * ipg + 1, False)
        assert s.first_free_inode(2) == 2 * ipg + 1
        s.release_inode(2 * ipg + 2, True)


def test_descriptor_copy_sits_at_its_slot_in_the_table(image):
    with Volume.open(image, VolumeOptions(disk="ideal")) as vol:
        s, geo = vol.space, vol.geo
        b = s.first_free_block(geo.group_start(4), geo.group_start(5))
        s.take_block(b)
        assert vol.cache.is_dirty(geo.gdt_block(4)) and 4 in s.unpacked     # dirty now, packed later
        vol.commit()                                                          # packs it
        assert not s.unpacked
        raw = vol.cache.peek(geo.gdt_block(4))
        off = 4 * GROUP_DESC_SIZE % geo.block_size
        assert GroupDesc.unpack(raw[off:off + GROUP_DESC_SIZE]).free_blocks == s.descs[4].free_blocks
        assert GroupDesc.unpack(raw[off - 32:off]).free_blocks == s.descs[3].free_blocks   # neighbour intact
        s.release_block(b)
