"""Bad input refused in-process, before anything is written: corrupt images at open."""

import os

import pytest

from simfs.errors import ImageError
from simfs.ondisk.mkfs import mkfs
from simfs.volume import Volume, VolumeOptions


def _corrupt_copy(tmp_path, offset: int, data: bytes):
    img = tmp_path / "bad.img"
    mkfs(img, 8 << 20, block_size=4096)
    with open(img, "r+b") as f:
        f.seek(offset)
        f.write(data)
    return img


def test_corrupt_descriptor_closes_the_image_exactly_once(tmp_path, monkeypatch):
    """_check_descs used to close the fd and Volume.open closed it again (EBADF, or worse,
    closing an unrelated file that had reused the number)."""
    img = _corrupt_copy(tmp_path, 4096, bytes(range(64)))
    closed, real_close = [], os.close
    monkeypatch.setattr(os, "close", lambda fd: (closed.append(fd), real_close(fd))[1])
    opened, real_open = [], os.open
    monkeypatch.setattr(os, "open", lambda *a, **k: opened.append(real_open(*a, **k)) or opened[-1])
    with pytest.raises(ImageError, match="corrupt group descriptor 0"):
        Volume.open(img, VolumeOptions(disk="ideal"))
    assert closed.count(opened[0]) == 1


@pytest.mark.parametrize("offset,value,size,match", [
    (1024 + 8, 5000, 4, "reserved block count 5000 > block count 2048"),
    (4096 + 4, 2, 4, "block bitmap at block 2 overlaps the inode bitmap"),
    (4096 + 8, 2040, 4, "inode table at block 2040, outside the group's blocks 2..2047"),
    (4096 + 12, 4000, 2, "4000 free blocks in a group of 2048"),
])
def test_corrupt_superblock_and_descriptors_refused(tmp_path, offset, value, size, match):
    img = _corrupt_copy(tmp_path, offset, value.to_bytes(size, "little"))
    before = img.read_bytes()
    with pytest.raises(ImageError, match="corrupt") as e:
        Volume.open(img, VolumeOptions(disk="ideal"))
    assert match in str(e.value) and "\n" not in str(e.value)
    assert img.read_bytes() == before
