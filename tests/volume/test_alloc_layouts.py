"""The layouts the allocators exist to reproduce, checked through Volume and the image.

* ext2fs-2010: a fresh copy of a generated source tree leaves dumpe2fs "Free blocks:" lists
  with the repeating 1-used-7-free pattern (seed 000), produced by the algorithm;
* ext2fs-2010-fixed, sequential (and ext2, cg-2010): a sequentially written file is one
  extent (its data and indirect blocks one contiguous run, data in logical order);
* cg / ext2: top-level directories spread over groups, a file's blocks sit in its
  directory's group;
* cg-2010 vs cg-2013: where the first indirect block goes on an aged group.
"""

import re
import subprocess
from pathlib import Path

import pytest

from simfs.ondisk.mkfs import mkfs
from simfs.fs.volume import Volume, VolumeOptions
from tests.helpers import assert_fsck_clean, block_map, copy_tree_into, needs_e2fsprogs, write_file

from experiments.workload import generate_tree


def free_ranges(dumpe2fs_out: str) -> dict[int, list[tuple[int, int]]]:
    """Group -> list of (first, last) free-block ranges, from `dumpe2fs IMAGE`."""
    out, group = {}, None
    for line in dumpe2fs_out.splitlines():
        m = re.match(r"Group (\d+):", line)
        if m:
            group = int(m.group(1))
            continue
        m = re.match(r"\s+Free blocks: (.*)", line)
        if m and group is not None:
            ranges = []
            for part in filter(None, (p.strip() for p in m.group(1).split(","))):
                a, _, b = part.partition("-")
                ranges.append((int(a), int(b or a)))
            out[group] = ranges
    return out


def longest_stripe(ranges: list[tuple[int, int]]) -> int:
    """The longest sequence of consecutive free ranges of exactly 7 blocks, each separated
    from the next by exactly one used block (seed 000's "1 block used, 7 free")."""
    best = run = 0
    for (a, b), (c, _) in zip(ranges, ranges[1:]):
        if b - a + 1 == 7 and c == b + 2:
            run += 1
            best = max(best, run)
        else:
            run = 0
    return best


@pytest.fixture(scope="module")
def src_tree(tmp_path_factory):
    top = tmp_path_factory.mktemp("tree") / "src"
    if generate_tree is not None:
        generate_tree(top, seed=1, files=300)
    else:                                   # pragma: no cover
        for d in range(20):
            (top / f"d{d}").mkdir(parents=True)
            for f in range(15):
                (top / f"d{d}" / f"f{f}.c").write_bytes(b"x" * (1000 + 997 * ((d * 15 + f) % 40)))
    return top


def _image(tmp_path: Path, block_size: int, size: int, bpg: int, name="img") -> str:
    img = str(tmp_path / name)
    mkfs(img, size, block_size=block_size, blocks_per_group=bpg)
    return img


# seed 000 ------------------------------------------------------------------------------------
@needs_e2fsprogs
def test_ext2fs_2010_leaves_one_block_used_seven_free(tmp_path, src_tree):
    img = _image(tmp_path, 4096, 128 << 20, 8192)
    with Volume.open(img, VolumeOptions(alloc="ext2fs-2010")) as vol:
        assert copy_tree_into(vol, src_tree) >= 100
    assert_fsck_clean(img)
    out = subprocess.run(["dumpe2fs", img], capture_output=True, text=True, check=True).stdout
    stripes = {g: longest_stripe(r) for g, r in free_ranges(out).items()}
    assert max(stripes.values()) >= 100, stripes       # e.g. "265-271, 273-279, 281-287, ..."


@needs_e2fsprogs
@pytest.mark.parametrize("alloc", ["ext2fs-2010-fixed", "sequential", "cg-2010", "ext2"])
def test_no_stripes_without_the_defects(tmp_path, src_tree, alloc):
    img = _image(tmp_path, 4096, 128 << 20, 8192)
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        copy_tree_into(vol, src_tree)
    assert_fsck_clean(img)
    out = subprocess.run(["dumpe2fs", img], capture_output=True, text=True, check=True).stdout
    assert max(longest_stripe(r) for r in free_ranges(out).values()) < 3


def test_ext2fs_2010_strides_by_eight(tmp_path):
    """The mechanism: goal = lbn (never recorded), taken -> bit 0 of the next all-free byte."""
    img = _image(tmp_path, 4096, 64 << 20, 8192)
    with Volume.open(img, VolumeOptions(alloc="ext2fs-2010")) as vol:
        ino = write_file(vol, vol.root_ino, b"f", 10 * 4096)
        data, _ = block_map(vol, ino)
    assert [b - a for a, b in zip(data, data[1:])] == [8] * 9
    assert all(b % 8 == 0 for b in data)


# one extent ----------------------------------------------------------------------------------
@pytest.mark.parametrize("alloc", ["ext2fs-2010-fixed", "sequential", "ext2", "cg-2010", "cg-2013"])
@pytest.mark.parametrize("block_size", [1024, 4096])
def test_sequential_file_is_one_extent(tmp_path, alloc, block_size):
    """Data blocks in logical order with the indirect blocks between them, all in one
    contiguous run; at 1 KiB into the double-indirect range (lblk 268+), except for FFS,
    which starts a new section in another group there (ffs_blkpref, lbn >= NDADDR+NINDIR)."""
    size = (200 if alloc.startswith("cg") else 400) * 1024 if block_size == 1024 else 3 << 20
    img = _image(tmp_path, block_size, 32 << 20, 8 * block_size)
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        write_file(vol, vol.root_ino, b"small", 3 * block_size)      # not the first file
        ino = write_file(vol, vol.root_ino, b"big", size)
        data, ind = block_map(vol, ino)
    assert data == sorted(data)
    if alloc == "cg-2010":
        # cluster_write → ffs_reallocblks moves d0..d12 to one new run and strands the first
        # indirect block outside it (what r242520 fixed; seed 002)
        run = data[:13]
        assert run == list(range(run[0], run[0] + len(run)))
        assert not data[11] < ind[0] < data[12]
    else:
        everything = sorted(data + ind)
        assert everything == list(range(everything[0], everything[0] + len(everything))), alloc
        assert ind[0] == data[11] + 1
    assert_fsck_clean(img)


# group placement -------------------------------------------------------------------------------
@pytest.mark.parametrize("alloc", ["cg", "cg-2010", "ext2", "ext2fs-2010-fixed"])
def test_top_level_dirs_spread_and_files_stay_in_their_directory_group(tmp_path, alloc):
    img = _image(tmp_path, 1024, 16 << 20, 1024)            # 16 groups
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        geo = vol.geo
        tops = [vol.mkdir(vol.root_ino, b"top%d" % i, 0o755, 0, 0).st_ino for i in range(8)]
        groups = {geo.group_of_inode(d) for d in tops}
        assert len(groups) >= 7, (alloc, sorted(groups))
        for d in tops:
            for j in range(3):
                f = write_file(vol, d, b"f%d" % j, (j + 1) * 5000)
                assert geo.group_of_inode(f) == geo.group_of_inode(d)
                data, ind = block_map(vol, f)
                assert {geo.group_of_block(b) for b in data + ind} == {geo.group_of_inode(d)}, alloc
    assert_fsck_clean(img)


def test_sequential_places_inodes_in_creation_order(tmp_path):
    img = _image(tmp_path, 1024, 8 << 20, 1024)
    with Volume.open(img, VolumeOptions(alloc="sequential")) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        inos = [d] + [write_file(vol, d, b"f%d" % i, 2000) for i in range(20)]
        assert inos == list(range(inos[0], inos[0] + 21))


# first indirect block: seed 002 ----------------------------------------------------------------
@pytest.mark.parametrize("alloc", ["cg-2010", "cg-2013"])
def test_first_indirect_block_on_an_aged_group(tmp_path, alloc):
    """2010: the indirect block goes to the first free block of the group -- on an aged group
    a hole far from d11. 2013: right after d11, d12 right after it."""
    img = _image(tmp_path, 4096, 64 << 20, 8192)
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        a = write_file(vol, vol.root_ino, b"a", 4 * 4096)
        write_file(vol, vol.root_ino, b"b", 40 * 4096)
        big = vol.create(vol.root_ino, b"big", 0o644, 0, 0).st_ino
        vol.write(big, 0, b"1" * 12 * 4096)                  # d0..d11 after b
        hole, _ = block_map(vol, a)
        vol.unlink(vol.root_ino, b"a")                       # a hole near the group start
        vol.write(big, 12 * 4096, b"2" * 52 * 4096)
        data, ind = block_map(vol, big)
    if alloc == "cg-2010":     # the indirect block in the hole; cluster reallocation then
        assert ind[0] in hole     # pulls d12 back next to d11, stranding the indirect block
        assert data[12] == data[11] + 1
        assert data[11] - ind[0] > 12
    else:
        assert ind[0] == data[11] + 1 and data[12] == ind[0] + 1
    assert_fsck_clean(img)


def test_cg_2013_puts_directories_and_later_indirects_in_the_metadata_area(tmp_path):
    img = _image(tmp_path, 1024, 16 << 20, 1024)
    with Volume.open(img, VolumeOptions(alloc="cg-2013")) as vol:
        alloc, space = vol.placement.allocator, vol.space
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        g = vol.geo.group_of_inode(d)
        meta, data_zone = alloc._cgmeta(space, g), alloc._cgdata(space, g)
        dblocks, _ = block_map(vol, d)
        assert all(meta <= b < data_zone for b in dblocks)
        f = write_file(vol, d, b"f", 300 * 1024)              # into the double-indirect range
        data, ind = block_map(vol, f)
        assert all(b >= data_zone for b in data[:12])
        assert ind[0] == data[11] + 1                         # first indirect inline
        assert all(meta <= b < data_zone for b in ind[1:])    # DIND and its child: metadata area
