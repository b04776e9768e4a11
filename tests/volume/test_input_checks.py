"""Bad input refused before anything is written: mkfs arguments, corrupt images at open."""

import os

import pytest

from simfs.errors import ImageError
from simfs.ondisk.mkfs import mkfs, plan
from simfs.fs.volume import Volume, VolumeOptions
from tests.conftest import run_simfs
from tests.helpers import assert_fsck_clean, needs_e2fsprogs

M = 1 << 20


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


# mkfs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("size,kw,match", [
    (64 * M, dict(reserved_ratio=2.0), "reserved blocks must be 0 to 50 percent"),
    (64 * M, dict(reserved_ratio=-0.01), "reserved blocks must be 0 to 50 percent"),
    (64 * M, dict(reserved_ratio=float("nan")), "reserved blocks must be 0 to 50 percent"),
    (64 * M, dict(block_size=2048), "block size must be 1024 or 4096"),
    (64 * M, dict(inode_size=512), "inode size must be 128 or 256"),
    (64 * M, dict(bytes_per_inode=0), "bytes per inode must be from 1024 to 64M"),
    (64 * M, dict(bytes_per_inode=128 * M), "bytes per inode must be from 1024 to 64M"),
    (64 * M, dict(blocks_per_group=0), "blocks per group must be a multiple of 8 from 256 to 32768"),
    (64 * M, dict(blocks_per_group=260), "blocks per group must be a multiple of 8"),
    (64 * M, dict(inodes_per_group=0), "inodes per group must be from 16 to 32768"),
    (64 * M, dict(inodes_per_group=15), "inodes per group must be from 16"),
    (64 * M, dict(block_size=1024, blocks_per_group=256, inodes_per_group=8000),
     "inodes per group must be from 16 to 928 with 256 blocks in the first group"),
    (64 * M, dict(label=b"x" * 17), "at most 16"),
    (1000, {}, "image too small"),
    (300 << 10, dict(inodes_per_group=8192), "from 16 to 1056 with 75 blocks in the first group"),
    (4 << 30, dict(block_size=1024, blocks_per_group=256), "cannot hold 512 descriptor blocks"),
    (1 << 45, {}, "image too large for ext2"),
    ((1 << 44) - 4096, dict(bytes_per_inode=4096), "too many inodes"),
])
def test_mkfs_arguments_refused(size, kw, match):
    """These crashed (ZeroDivisionError, IndexError, struct.error) or made images e2fsck
    calls corrupt (-m 200, an inode table larger than the image)."""
    with pytest.raises(ImageError, match="^[^\n]*$") as e:
        plan(size, **kw)
    assert match in str(e.value)


@needs_e2fsprogs
@pytest.mark.parametrize("size,kw", [
    (64 * M, dict(reserved_ratio=0.5)),
    (64 * M, dict(reserved_ratio=0.0, label=b"x" * 16)),
    (64 * M, dict(block_size=1024, blocks_per_group=256, inodes_per_group=928)),
    (300 << 10, dict(inodes_per_group=1056)),
    (300 << 10, dict(inodes_per_group=1024)),
    (65 << 10, dict(block_size=1024)),
    (256 << 10, dict(bytes_per_inode=1024, inode_size=128)),
    (8 * M, dict(inodes_per_group=16, bytes_per_inode=64 * M)),
])
def test_mkfs_limits_make_clean_images(tmp_path, size, kw):
    img = tmp_path / "edge.img"
    mkfs(img, size, **kw)
    assert_fsck_clean(img)


@pytest.mark.parametrize("args,match", [
    (["-m", "200"], "reserved blocks must be 0 to 50 percent"),
    (["-m", "nan"], "reserved blocks must be 0 to 50 percent"),
    (["-i", "0"], "bytes per inode"),
    (["--inodes-per-group", "0"], "inodes per group"),
    (["--blocks-per-group", "0"], "blocks per group"),
    (["-L", "x" * 17], "at most 16"),
    (["--disk", "sata7200,capacity=100000"], "does not fit the disk"),
    (["--disk", "ideal", "--maxio", "0"], "--maxio must be from 4K to 64M"),
])
def test_mkfs_cli_refuses_before_writing(tmp_path, args, match):
    img = tmp_path / "x.img"
    r = run_simfs("mkfs", img, "--size", "64M", *args, check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and match in lines[0], r.stderr
    assert not img.exists()


def test_mkfs_cli_failed_plan_keeps_the_old_image(tmp_path):
    """--force with bad arguments: the existing image must survive (it was truncated first)."""
    img = tmp_path / "x.img"
    img.write_bytes(b"precious")
    r = run_simfs("mkfs", img, "--size", "64M", "--force", "--disk", "ideal", "-m", "60", check=False)
    assert r.returncode == 2 and img.read_bytes() == b"precious"


def test_mkfs_cli_path_too_long(tmp_path):
    r = run_simfs("mkfs", tmp_path / ("z" * 300), "--size", "64M", check=False)
    assert r.returncode == 2 and "longer than 255 bytes" in r.stderr, r.stderr


@needs_e2fsprogs
@pytest.mark.parametrize("request_", ["clri <2>", "sif <2> mode 0100644"])
def test_a_corrupt_root_inode_is_refused(tmp_path, request_):
    """As the kernel's ext2_fill_super ("corrupt root inode, run e2fsck"): the root must be
    a directory with blocks, or nothing of the image can be walked (layout used to stop with
    a traceback, a verb ran on it and wrote to it)."""
    import subprocess
    img = tmp_path / "r.img"
    mkfs(img, 8 << 20, block_size=4096)
    subprocess.run(["debugfs", "-w", "-R", request_, str(img)], check=True, capture_output=True)
    before = img.read_bytes()
    with pytest.raises(ImageError, match="corrupt root inode: run `simfs fsck --repair"):
        Volume.open(img, VolumeOptions(disk="ideal"))
    assert img.read_bytes() == before
