"""Writes that run out of space (issue 11, item 4): a write that wrote nothing changes
nothing (size, mtime, blocks), a short write grows the file by what it wrote, and blocks
allocated for a write that then failed (indirect blocks too) are free again; the image
stays e2fsck-clean and says the same after a remount.
"""

import errno

import pytest

from simfs.errors import FSError
from simfs.ondisk.mkfs import mkfs
from simfs.fs.volume import Volume, VolumeOptions
from tests.helpers import assert_fsck_clean, fill_volume, free_blocks, needs_e2fsprogs

BS = 1024
FAR = 1 << 30            # a triple-indirect block with 1 KiB blocks: three indirect blocks first
ALLOCATORS = ["first-free", "delayed"]


def _open(img, alloc):
    return Volume.open(img, VolumeOptions(alloc=alloc, disk="ideal"))


@needs_e2fsprogs
@pytest.mark.parametrize("alloc", ALLOCATORS)
def test_a_write_that_wrote_nothing_changes_nothing(tmp_path, alloc):
    img = tmp_path / "img"
    mkfs(img, 2 << 20, block_size=BS)
    with _open(img, alloc) as vol:
        ino = vol.create(vol.root_ino, b"x", 0o644, 0, 0).st_ino
        vol.write(ino, 0, b"x" * 10)
        fill_volume(vol)
        before, free = vol.getattr(ino), vol.statfs().f_bfree
        for offset in (BS, 5 * BS, FAR):             # past EOF: each needs a new block
            with pytest.raises(FSError) as exc:
                vol.write(ino, offset, b"z" * 4096)
            assert exc.value.errno == errno.ENOSPC
            after = vol.getattr(ino)
            assert (after.st_size, after.st_mtime_ns, after.st_blocks) == \
                   (before.st_size, before.st_mtime_ns, before.st_blocks), offset
            assert vol.statfs().f_bfree == free
    assert_fsck_clean(img)
    with _open(img, alloc) as vol:
        ino = vol.lookup(vol.root_ino, b"x").st_ino
        assert vol.getattr(ino).st_size == 10
        assert vol.read(ino, 0, 100) == b"x" * 10


@needs_e2fsprogs
@pytest.mark.parametrize("free", [1, 2, 3])
def test_indirect_blocks_of_a_failed_write_are_freed(tmp_path, free):
    """Immediate allocation maps a block far out top down: the triple, double and single
    indirect blocks, then the data block. When room runs out on the way, the indirect
    blocks already added are freed (they map nothing and would sit past EOF)."""
    img = tmp_path / "img"
    mkfs(img, 2 << 20, block_size=BS)
    with _open(img, "first-free") as vol:
        free_blocks(vol, fill_volume(vol), free)
        ino = vol.create(vol.root_ino, b"x", 0o644, 0, 0).st_ino
        with pytest.raises(FSError) as exc:
            vol.write(ino, FAR, b"x" * BS)
        assert exc.value.errno == errno.ENOSPC
        assert vol.statfs().f_bfree == free
        a = vol.getattr(ino)
        assert (a.st_size, a.st_blocks) == (0, 0)
        assert vol.extents(ino)["indirect"] == []
    assert_fsck_clean(img)


@needs_e2fsprogs
@pytest.mark.parametrize("alloc", ALLOCATORS)
@pytest.mark.parametrize("offset", [0, 5000, FAR])
def test_a_short_write_grows_the_file_by_what_it_wrote(tmp_path, alloc, offset):
    img = tmp_path / "img"
    mkfs(img, 2 << 20, block_size=BS)
    data = bytes(range(1, 256)) * 400                        # 100 KB, no zero byte
    with _open(img, alloc) as vol:
        free_blocks(vol, fill_volume(vol), 40)
        ino = vol.create(vol.root_ino, b"x", 0o644, 0, 0).st_ino
        n = vol.write(ino, offset, data)
        assert 0 < n < len(data)
        assert vol.getattr(ino).st_size == offset + n
        assert vol.read(ino, offset, len(data)) == data[:n]
        with pytest.raises(FSError) as exc:                  # nothing left for the rest
            vol.write(ino, offset + n, data[n:])
        assert exc.value.errno == errno.ENOSPC
        assert vol.getattr(ino).st_size == offset + n
    assert_fsck_clean(img)
    with _open(img, alloc) as vol:
        ino = vol.lookup(vol.root_ino, b"x").st_ino
        assert vol.getattr(ino).st_size == offset + n
        assert vol.read(ino, offset, len(data)) == data[:n]
        assert vol.read(ino, 0, min(offset, 4096)) == bytes(min(offset, 4096))
