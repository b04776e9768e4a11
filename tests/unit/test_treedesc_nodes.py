"""Tree descriptions carry FIFOs and devices (tar archives them; simfs verb unpack used to drop
them silently), from a directory and from a tarball alike, and sockets not at all (tar skips
them)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess

import pytest

from simfs.engine.treedesc import fuse_rdev, from_directory, from_tarball


def test_fuse_rdev_is_the_kernels_new_encode_dev():
    assert fuse_rdev(7, 0) == os.makedev(7, 0)             # small numbers: the same as glibc's
    assert fuse_rdev(300, 70000) == (70000 & 0xFF) | (300 << 8) | ((70000 & ~0xFF) << 12)


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of devices needs root")
def test_nodes_come_from_a_directory_and_from_its_tarball(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    os.mkfifo(src / "ff", 0o640)
    os.mknod(src / "cdev", 0o600 | stat.S_IFCHR, os.makedev(300, 70000))
    os.mknod(src / "bdev", 0o644 | stat.S_IFBLK, os.makedev(7, 1))
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(src / "sock"))
    s.close()
    want = {(b"bdev", "blk", 0o644, fuse_rdev(7, 1)), (b"cdev", "chr", 0o600, fuse_rdev(300, 70000)),
            (b"ff", "fifo", 0o640, 0)}
    got = {(e.path[-1], e.kind, e.mode, e.rdev) for e in from_directory(str(src)) if e.path}
    assert got == want
    tar = tmp_path / "t.tar"
    subprocess.run(["tar", "--sort=name", "-cf", str(tar), "-C", str(src), "."], check=True,
                   capture_output=True)
    got = {(e.path[-1], e.kind, e.mode, e.rdev) for e in from_tarball(str(tar)) if e.path}
    assert got == want
