"""Tree descriptions carry FIFOs and devices (tar archives them; simfs verb unpack used to drop
them silently), from a directory and from a tarball alike, and sockets not at all (tar skips
them)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess

import pytest

from simfs.inprocess.treedesc import fuse_rdev, from_directory, from_tarball


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


def test_a_tarball_is_read_without_a_table_of_its_members(tmp_path):
    """Seed scale: from_tarball keeps nothing per member (tarfile's own list of members would
    hold one TarInfo each: 2 MB per 5,000, gigabytes for seed 001's two million). The peak
    does not grow with the archive: twice the members, about the same peak."""
    import io
    import tarfile
    import tracemalloc

    def peak(n: int) -> int:
        p = tmp_path / f"{n}.tar"
        with tarfile.open(p, "w") as tf:
            for i in range(n):
                tf.addfile(tarfile.TarInfo(f"d/f{i:05d}"), io.BytesIO(b""))
        tracemalloc.start()
        try:
            for e in from_tarball(str(p)):
                last = e.path
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            assert last == [b"d", f"f{n - 1:05d}".encode()]
    small, large = peak(4000), peak(8000)
    assert large - small < 200_000, f"peak {small} bytes for 4,000 members, {large} for 8,000"
