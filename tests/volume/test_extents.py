"""Extent-mapped files on the ext4 profile (simfs.fs.extentmap), with the real tools as oracles.

Random writes, holes and truncates (hypothesis) against a byte model; then `e2fsck -fn` must
be clean and the kernel's own ext4 (read-only loop mount) must read every file back byte for
byte. 1 KiB blocks keep trees small enough to grow: a leaf block holds 84 extents, the root 4,
so a few hundred one-block extents need index blocks (depth 2). Damaged trees: EUCLEAN at the
operation, the error recorded, never a traceback; freeing a damaged file ends.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simfs.errors import FSError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.constants import EXTENTS_FL
from simfs.ondisk.extent import root_of
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, can_loop_mount, e2fsck, kernel_mount, needs_e2fsprogs

BS = 1024
pytestmark = needs_e2fsprogs


def make(img, **kw):
    mkfs(img, 24 << 20, block_size=BS, profile="ext4", uuid=bytes(16), hash_seed=bytes(16), **kw)
    return img


def new_file(vol, name: bytes) -> int:
    ino = vol.create(vol.root_ino, name, stat.S_IFREG | 0o644, 0, 0).st_ino
    vol.hold(ino)
    return ino


def depth(vol, ino: int) -> int:
    return root_of(vol.inodes.get(ino).block)[0].depth


def apply(vol, ino: int, model: bytearray, op) -> None:
    kind, a, b = op
    if kind == "write":                     # b bytes at block a, a byte pattern of its own
        data = bytes([(a * 7 + b) % 251 + 1]) * b
        vol.write(ino, a * BS + a % 97, data)
        off = a * BS + a % 97
        model.extend(bytes(max(0, off + b - len(model))))
        model[off:off + b] = data
    elif kind == "scatter":                 # one-block extents: every other block from a, b of them
        for i in range(b):
            off = (a + 2 * i) * BS
            vol.write(ino, off, b"\x5a" * BS)
            model.extend(bytes(max(0, off + BS - len(model))))
            model[off:off + BS] = b"\x5a" * BS
    else:                                   # truncate to a * BS + b
        size = a * BS + b
        vol.setattr(ino, size=size)
        if size < len(model):
            del model[size:]
        else:
            model.extend(bytes(size - len(model)))


OPS = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 3000), st.integers(1, 5 * BS)),
    st.tuples(st.just("scatter"), st.integers(0, 2000), st.integers(1, 220)),
    st.tuples(st.just("truncate"), st.integers(0, 3000), st.integers(0, BS - 1)),
)


def kernel_reads(img, tmp, files: dict[bytes, bytes]) -> None:
    """The kernel's ext4 (read-only loop mount) reads every file as the model has it."""
    mnt = tmp / f"k{next(_mounts)}"
    with kernel_mount(img, mnt, fstype="ext4"):
        for name, data in files.items():
            with open(mnt / os.fsdecode(name), "rb") as f:
                assert f.read() == data, name


_mounts = iter(range(10**9))


@pytest.mark.serial
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(alloc=st.sampled_from(["ext2", "cg-2010", "delayed", "mballoc", "mballoc-delalloc"]),
       ops=st.lists(st.tuples(st.integers(0, 1), OPS), min_size=1, max_size=14))
def test_random_writes_holes_and_truncates_keep_the_tree_valid(tmp_path, alloc, ops):
    """(cg-2010 moves dirty clusters: re-pointing extents, which may take tree blocks)"""
    img = make(tmp_path / f"x{next(_mounts)}.img")
    models = {b"a": bytearray(), b"b": bytearray()}
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        inos = {name: new_file(vol, name) for name in models}
        for which, op in ops:
            name = (b"a", b"b")[which]
            apply(vol, inos[name], models[name], op)
        for name, ino in inos.items():
            assert vol.inodes.get(ino).flags & EXTENTS_FL
            size = len(models[name])
            assert vol.read(ino, 0, size + 1) == bytes(models[name])
            vol.drop(ino)
    assert_fsck_clean(img)
    if can_loop_mount() is None:
        kernel_reads(img, tmp_path, {n: bytes(m) for n, m in models.items()})
    img.unlink()


@pytest.mark.serial
def test_tree_grows_to_index_blocks_and_shrinks_back(tmp_path):
    """400 one-block extents are more than 4 leaves of 84 hold: the tree grows to depth 2
    (ext4_ext_grow_indepth twice, splits between); debugfs and the kernel read it; truncating to nothing frees
    every tree block and leaves an empty depth-0 root, as ext4 leaves it."""
    img = make(tmp_path / "deep.img")
    with Volume.open(img, VolumeOptions()) as vol:
        free0 = vol.space.free_blocks
        ino = new_file(vol, b"deep")
        model = bytearray()
        apply(vol, ino, model, ("scatter", 0, 400))
        assert depth(vol, ino) == 2
        tree = [p for k, p in vol.filemap.blocks(vol.inodes.get(ino)) if k == "ETB"]
        assert len(tree) >= 1 + 400 // 84
        vol.drop(ino)
    assert_fsck_clean(img)
    debugfs = subprocess.run(["debugfs", "-R", "ex /deep", str(img)], capture_output=True, text=True).stdout
    assert " 2/ 2 " in debugfs and " 0/ 2 " in debugfs, debugfs      # levels as debugfs counts them
    if can_loop_mount() is None:
        kernel_reads(img, tmp_path, {b"deep": bytes(model)})
    with Volume.open(img, VolumeOptions()) as vol:
        ino = vol.lookup(vol.root_ino, b"deep").st_ino
        vol.setattr(ino, size=0)
        assert depth(vol, ino) == 0 and vol.inodes.get(ino).blocks == 0
        assert vol.space.free_blocks == free0             # every data and tree block back
    assert_fsck_clean(img)


def test_appending_makes_one_extent_per_contiguous_run(tmp_path):
    img = make(tmp_path / "seq.img")
    with Volume.open(img, VolumeOptions()) as vol:
        ino = new_file(vol, b"seq")
        for i in range(300):
            vol.write(ino, i * BS, b"s" * BS)
        e = vol.extents(ino)
        assert len(e["runs"]) == 1 and e["runs"][0][2] == 300 and not e["indirect"]
        vol.drop(ino)
    assert_fsck_clean(img)


@pytest.mark.parametrize("damage", ["magic", "entries", "block"])
def test_corrupt_extent_leaf_is_euclean_at_the_read_and_unlink_ends(tmp_path, damage):
    img = make(tmp_path / "bad.img")
    with Volume.open(img, VolumeOptions()) as vol:
        ino = new_file(vol, b"deep")
        apply(vol, ino, bytearray(), ("scatter", 0, 100))
        assert depth(vol, ino) == 1
        leaf = vol.filemap.ext._find(vol.inodes.get(ino), 150)[-1].blk
        vol.drop(ino)
    with open(img, "r+b") as f:                   # the leaf's header: magic, entries, max, depth
        f.seek(leaf * BS)
        if damage == "magic":
            f.write(b"\x0b\xad")
        elif damage == "entries":
            f.seek(leaf * BS + 2)
            f.write((999).to_bytes(2, "little"))
        else:                                      # the first extent's start: the superblock
            f.seek(leaf * BS + 12 + 8)
            f.write((1).to_bytes(4, "little"))
    with Volume.open(img, VolumeOptions()) as vol:
        ino = vol.lookup(vol.root_ino, b"deep").st_ino
        with pytest.raises(FSError) as e:
            vol.read(ino, 150 * BS, BS)
        assert e.value.errno == errno.EUCLEAN
        assert vol.sb.error_count >= 1
        vol.unlink(vol.root_ino, b"deep")          # ends: the bad leaf is not followed
    rc, out = e2fsck(img)
    assert rc in (4, 1), out                       # e2fsck finds what simfs reported


def test_corrupt_root_header_is_euclean_at_lookup(tmp_path):
    img = make(tmp_path / "root.img")
    with Volume.open(img, VolumeOptions()) as vol:
        ino = new_file(vol, b"f")
        vol.write(ino, 0, b"x" * 3000)
        where = vol.inodes._where(ino)
        vol.drop(ino)
    blk, off = where
    with open(img, "r+b") as f:                   # i_block at offset 40 of the inode: the magic
        f.seek(blk * BS + off + 40)
        f.write(b"\x00\x00")
    with Volume.open(img, VolumeOptions()) as vol:
        with pytest.raises(FSError) as e:
            vol.lookup(vol.root_ino, b"f")
        assert e.value.errno == errno.EUCLEAN and "extent" in str(e.value)


def test_block_mapped_files_of_an_extent_image_keep_their_map(tmp_path):
    """A file without EXTENTS_FL on an extent file system (made before the feature was on,
    or by an ext2 driver) is still read and written through its block map."""
    img = make(tmp_path / "mixed.img")
    with Volume.open(img, VolumeOptions()) as vol:
        ino = new_file(vol, b"old")
        inode = vol.inodes.get(ino)
        inode.flags &= ~EXTENTS_FL
        inode.block = [0] * 15
        vol.inodes.put(inode)
        vol.write(ino, 0, b"m" * (20 * BS))
        assert inode.block[12] and not inode.flags & EXTENTS_FL      # an indirect block
        assert vol.read(ino, 0, 20 * BS) == b"m" * (20 * BS)
        vol.drop(ino)
    assert_fsck_clean(img)
