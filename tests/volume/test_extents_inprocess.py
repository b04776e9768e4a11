"""The extent tree's deep paths in-process (simfs.fs.extentmap), with e2fsprogs as the oracle
and no mount: test_extents.py's random writes, holes and truncates and its grow-to-depth-2 case
run in `make test`'s serial part because they end with the kernel reading the files; here the
same operations (and overwrites, and reads after the caches are dropped) are checked by
`e2fsck -fn` (every extent, index and leaf block: order, counts, overlaps, i_blocks) and by
`debugfs -R dump`, which reads each file from the image through its tree.
"""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.constants import EXTENTS_FL
from tests.helpers import assert_fsck_clean, needs_e2fsprogs
from tests.volume.test_extents import BS, OPS, apply, depth, make, new_file

pytestmark = needs_e2fsprogs

OVERWRITE = st.tuples(st.just("write"), st.integers(0, 600), st.integers(1, 3 * BS))


def debugfs_blocks(img, name: bytes) -> list[int]:
    """debugfs's `blocks`: the tree blocks before what they map, and the data blocks, in
    logical order."""
    out = subprocess.run(["debugfs", "-R", f"blocks /{name.decode()}", str(img)], capture_output=True,
                         text=True, check=True).stdout
    return [int(b) for b in out.split()]


def listed_blocks(img, name: bytes) -> list[int]:
    """The same as simfs lists them (FileMap.blocks: ("ETB", phys) and (lblk, phys))."""
    with Volume.open(img, VolumeOptions(read_only=True)) as vol:
        ino = vol.lookup(vol.root_ino, name).st_ino
        return [p for _, p in vol.filemap.blocks(vol.inodes.get(ino))]


def dumped(img, tmp, name: bytes) -> bytes:
    out = tmp / ("dump-" + name.decode())
    subprocess.run(["debugfs", "-R", f"dump /{name.decode()} {out}", str(img)], capture_output=True, check=True)
    return out.read_bytes()


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(alloc=st.sampled_from(["ext2", "cg-2010", "mballoc", "mballoc-delalloc"]),
       ops=st.lists(st.tuples(st.integers(0, 1), st.one_of(OPS, OVERWRITE)), min_size=1, max_size=14),
       cold=st.booleans())
def test_random_writes_holes_and_truncates_read_back_through_the_tree(tmp_path_factory, alloc, ops, cold):
    tmp = tmp_path_factory.mktemp("ext")
    img = make(tmp / "x.img")
    models = {b"a": bytearray(), b"b": bytearray()}
    with Volume.open(img, VolumeOptions(alloc=alloc)) as vol:
        inos = {name: new_file(vol, name) for name in models}
        for i, (which, op) in enumerate(ops):
            name = (b"a", b"b")[which]
            apply(vol, inos[name], models[name], op)
            if cold and i % 4 == 3:
                vol.drop_caches()
        for name, ino in inos.items():
            assert vol.inodes.get(ino).flags & EXTENTS_FL
            assert vol.read(ino, 0, len(models[name]) + 1) == bytes(models[name])
            vol.drop(ino)
    assert_fsck_clean(img)
    for name, model in models.items():
        assert dumped(img, tmp, name) == bytes(model), name
        assert listed_blocks(img, name) == debugfs_blocks(img, name), name


@pytest.mark.parametrize("order", ["ascending", "descending", "interleaved"])
def test_tree_grows_to_depth_2_and_shrinks_back(tmp_path, order):
    """400 one-block extents (every other block), placed in three orders (appending at the
    right edge; inserting at the left, which corrects the index keys up the tree; filling
    the left and right halves in turn): depth 2, a valid tree, every block where debugfs
    reads it; truncating half of it, then to nothing, frees every tree block."""
    img = make(tmp_path / "deep.img")
    lblks = [2 * i for i in range(400)]
    if order == "descending":
        lblks.reverse()
    elif order == "interleaved":
        lblks = [x for pair in zip(lblks[:200], lblks[200:]) for x in pair]
    model = bytearray()
    with Volume.open(img, VolumeOptions()) as vol:
        free0 = vol.space.free_blocks
        ino = new_file(vol, b"deep")
        for lb in lblks:
            apply(vol, ino, model, ("scatter", lb, 1))
        assert depth(vol, ino) == 2
        vol.drop_caches()
        assert vol.read(ino, 0, len(model) + 1) == bytes(model)
        vol.drop(ino)
    assert_fsck_clean(img)
    assert dumped(img, tmp_path, b"deep") == bytes(model)
    assert listed_blocks(img, b"deep") == debugfs_blocks(img, b"deep")
    with Volume.open(img, VolumeOptions()) as vol:
        ino = vol.lookup(vol.root_ino, b"deep").st_ino
        vol.setattr(ino, size=401 * BS)
        del model[401 * BS:]
        assert vol.read(ino, 0, len(model) + 1) == bytes(model)
    assert_fsck_clean(img)
    assert dumped(img, tmp_path, b"deep") == bytes(model)
    with Volume.open(img, VolumeOptions()) as vol:
        ino = vol.lookup(vol.root_ino, b"deep").st_ino
        vol.setattr(ino, size=0)
        assert depth(vol, ino) == 0 and vol.inodes.get(ino).blocks == 0
        assert vol.space.free_blocks == free0
    assert_fsck_clean(img)
