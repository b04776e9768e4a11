"""Paths of the extent tree's insert that test_extentmap_write.py and test_extents*.py leave
out, stated from Linux's fs/ext4/extents.c (ext4_ext_insert_extent): a new block that ends
where the next extent starts, on disk too, is merged into it (ext4_can_extents_be_merged with
`next`), whatever its place in the leaf; and a block after the last extent of a full leaf goes
into the next leaf when that one has room (ext4_ext_next_leaf_block), not into a new leaf.
In-process, first-free allocation, so that the test chooses where blocks land."""

from __future__ import annotations

import pytest

from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.extent import MAX_LEN
from simfs.ondisk.mkfs import mkfs

BS = 1024


@pytest.fixture
def vol(tmp_path):
    img = tmp_path / "e.img"
    mkfs(img, 8 << 20, block_size=BS, profile="ext4", uuid=bytes(16), hash_seed=bytes(16))
    v = Volume.open(img, VolumeOptions(alloc="first-free", writeback="sync"))
    yield v
    v.close()


def _file(vol, name, blocks=()):
    ino = vol.create(vol.root_ino, name, 0o644, 0, 0).st_ino
    for lblk in blocks:
        vol.write(ino, lblk * BS, bytes([lblk % 251 + 1]) * BS)
    return ino


def test_a_block_just_before_a_later_extent_joins_it(vol):
    f = _file(vol, b"f", [0])                   # extent A: lblk 0
    _file(vol, b"g", [0])
    _file(vol, b"h", [0])                       # its block: the one before f's next extent
    vol.write(f, 10 * BS, b"c" * 4 * BS)        # extent B: lblk 10..13, right after h's block
    (_, a, _, _), (s, b, n, _) = vol.extents(f)["leaf_extents"]
    assert (s, n) == (10, 4)
    hole = vol.extents(vol.lookup(vol.root_ino, b"h").st_ino)["runs"][0][1]
    assert hole == b - 1
    vol.unlink(vol.root_ino, b"h")              # first-free hands out b - 1 next
    vol.write(f, 9 * BS, b"d" * BS)
    assert vol.extents(f)["leaf_extents"] == [(0, a, 1, False), (9, b - 1, 5, False)]
    assert vol.read(f, 9 * BS, BS) == b"d" * BS and vol.read(f, 10 * BS, BS) == b"c" * BS


def _tree_blocks(vol, ino):
    ext = vol.extents(ino)
    data = sum(n for _, _, n, _ in ext["leaf_extents"])
    return ext["i_blocks"] // (BS // 512) - data


def test_a_block_after_a_full_leaf_goes_into_the_next_leaf(vol):
    per_leaf = (BS - 12) // 12                  # a 1 KiB leaf: 84 extents
    f = _file(vol, b"f", range(0, 2 * per_leaf, 2))     # every other block: one extent each
    assert len(vol.extents(f)["leaf_extents"]) == per_leaf and _tree_blocks(vol, f) == 1
    vol.write(f, 2 * per_leaf * BS, b"x" * BS)  # appended: the full leaf keeps its 84, a new leaf
    assert _tree_blocks(vol, f) == 2
    last = 2 * per_leaf - 1                     # after the full leaf's last extent, before the next
    vol.write(f, last * BS, b"y" * BS)
    leaves = vol.extents(f)["leaf_extents"]
    assert [s for s, _, _, _ in leaves[-3:]] == [last - 1, last, last + 1]
    assert leaves[-2][2] == 1 and leaves[-2][1] not in (leaves[-3][1] + 1, leaves[-1][1] - 1)
    assert _tree_blocks(vol, f) == 2, "the next leaf had room: no split"
    assert vol.read(f, last * BS, BS) == b"y" * BS


@pytest.mark.parametrize("alloc", ["cg-2010", "cg-2013"])
def test_a_cluster_reallocated_into_an_extent_file_is_one_extent(tmp_path, alloc):
    # FreeBSD's ffs_reallocblks (the cg policies) moves a dirty cluster whose next block could
    # not follow it to a free run: on an extent-mapped file each moved block is re-pointed
    img = tmp_path / "e.img"
    mkfs(img, 8 << 20, block_size=BS, profile="ext4", uuid=bytes(16), hash_seed=bytes(16))
    vol = Volume.open(img, VolumeOptions(alloc=alloc, writeback="async"))
    f = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
    g = vol.create(vol.root_ino, b"g", 0o644, 0, 0).st_ino
    vol.write(f, 0, b"a" * BS + b"b" * BS)
    vol.write(g, 0, b"g" * BS)                  # takes the block after f's two
    vol.write(f, 2 * BS, b"c" * BS)             # cannot follow: the cluster moves
    [(s, p, n, unwritten)] = vol.extents(f)["leaf_extents"]
    (_, gp, _, _), = vol.extents(g)["leaf_extents"]
    assert (s, n, unwritten) == (0, 3, False) and not p <= gp < p + 3
    assert vol.counters["clusters_reallocated"] >= 1
    vol.sync()
    vol.drop_caches()
    assert vol.read(f, 0, 3 * BS) == b"a" * BS + b"b" * BS + b"c" * BS
    vol.close()


def _make_unwritten(vol, ino, lblk):
    """Turn the blocks from lblk to the end of their extent into an unwritten extent (as
    fallocate leaves one), the part before it staying written: a written and an unwritten
    extent contiguous in the file and on disk."""
    ext = vol.filemap.ext
    inode = vol.inodes.get(ino)
    step = ext._find(inode, lblk)[-1]
    s, n, p = step.node.entries[step.pos]
    assert s < lblk and lblk + 4 <= s + n
    step.node.entries[step.pos:step.pos + 1] = [(s, lblk - s, p), (lblk, s + n - lblk + MAX_LEN, p + lblk - s)]
    ext._store(inode, step)
    vol.inodes.put(inode)
    return s, p, s + n


def test_a_write_inside_an_unwritten_extent_is_no_fast_path(vol):
    # ext4_ext_convert_to_initialized's fast path (the block joins the written extent before)
    # is for a block at the unwritten extent's start only; one inside it, under write-time
    # allocation and within i_size, zeroes the rest of the extent (at most 32 KiB) and writes it
    f = _file(vol, b"f")
    vol.write(f, 0, b"a" * 12 * BS)
    s, p, end = _make_unwritten(vol, f, 4)
    before = [e for e in vol.extents(f)["leaf_extents"] if e[0] < s]
    assert vol.extents(f)["leaf_extents"][len(before):] == [(s, p, 4 - s, False), (4, p + 4 - s, end - 4, True)]
    vol.write(f, 6 * BS, b"c" * BS)
    assert vol.extents(f)["leaf_extents"][len(before):] == [(s, p, end - s, False)]
    data = vol.read(f, 0, end * BS)
    assert [data[i * BS] for i in range(s, end)] == [ord("a")] * (4 - s) + [0, 0, ord("c")] + [0] * (end - 7)


def test_a_write_at_the_start_of_an_unwritten_extent_joins_the_written_one(vol):
    f = _file(vol, b"f")
    vol.write(f, 0, b"a" * 12 * BS)
    s, p, end = _make_unwritten(vol, f, 4)
    before = [e for e in vol.extents(f)["leaf_extents"] if e[0] < s]
    vol.write(f, 4 * BS, b"c" * BS)
    assert vol.extents(f)["leaf_extents"][len(before):] == [(s, p, 5 - s, False), (5, p + 5 - s, end - 5, True)]
