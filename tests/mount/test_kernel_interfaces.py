"""System calls xfstests exercises where ext2 has the feature and FUSE carries it, through the
real calls (os, ctypes): open_by_handle_at, renameat2's flags, copy_file_range's errors.

(O_TMPFILE is not carried: the manual's list of differences says why. RENAME_WHITEOUT and
reused inodes' handles: test_whiteout_and_handles.py; POSIX ACLs: test_acl_mount.py.)
"""

from __future__ import annotations

import ctypes
import errno
import os

import pytest

pytestmark = pytest.mark.mount

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
MAX_HANDLE_SZ = 128


class FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_ubyte * MAX_HANDLE_SZ)]


def _check(r: int) -> int:
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def name_to_handle(path) -> bytes:
    fh = FileHandle(handle_bytes=MAX_HANDLE_SZ)
    mount_id = ctypes.c_int()
    _check(libc.name_to_handle_at(AT_FDCWD, os.fsencode(path), ctypes.byref(fh),
                                  ctypes.byref(mount_id), 0))
    return bytes(fh)


def open_by_handle(mnt, handle: bytes, flags=os.O_RDONLY) -> int:
    mfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return _check(libc.open_by_handle_at(mfd, ctypes.byref(FileHandle.from_buffer_copy(handle)), flags))
    finally:
        os.close(mfd)


def renameat2(old, new, flags: int) -> None:
    _check(libc.renameat2(AT_FDCWD, os.fsencode(old), AT_FDCWD, os.fsencode(new), ctypes.c_uint(flags)))


def test_open_by_handle_after_the_inode_left_the_cache(simfs_factory):
    """Handles outlive the kernel's inode cache (here: an unmount and mount): the kernel looks
    the node up by "." then, which simfs answered ENOTDIR for every non-directory, so
    open_by_handle_at gave ESTALE on files (xfstests' open_by_handle tests on linked files)."""
    if os.geteuid() != 0:
        pytest.skip("open_by_handle_at needs CAP_DAC_READ_SEARCH")
    m = simfs_factory(size="64M")
    (m.mnt / "linked").write_bytes(b"two names")
    os.link(m.mnt / "linked", m.mnt / "other")
    (m.mnt / "single").write_bytes(b"one name")
    (m.mnt / "gone").write_bytes(b"removed")
    (m.mnt / "dir").mkdir()
    handles = {n: name_to_handle(m.mnt / n) for n in ("linked", "single", "gone", "dir")}
    m.umount()
    m.mount()
    os.unlink(m.mnt / "gone")
    for name, want in (("linked", b"two names"), ("single", b"one name")):
        fd = open_by_handle(m.mnt, handles[name])
        try:
            assert os.read(fd, 100) == want, name
            assert os.fstat(fd).st_ino == os.stat(m.mnt / name).st_ino
        finally:
            os.close(fd)
    os.close(open_by_handle(m.mnt, handles["dir"], os.O_RDONLY | os.O_DIRECTORY))
    with pytest.raises(OSError) as e:
        open_by_handle(m.mnt, handles["gone"])
    assert e.value.errno == errno.ESTALE


def test_renameat2_noreplace_and_exchange(simfs_mount):
    m = simfs_mount
    (m.mnt / "a").write_text("A")
    (m.mnt / "b").write_text("B")
    with pytest.raises(OSError) as e:
        renameat2(m.mnt / "a", m.mnt / "b", RENAME_NOREPLACE)
    assert e.value.errno == errno.EEXIST
    assert (m.mnt / "a").read_text() == "A" and (m.mnt / "b").read_text() == "B"
    renameat2(m.mnt / "a", m.mnt / "c", RENAME_NOREPLACE)
    assert not (m.mnt / "a").exists() and (m.mnt / "c").read_text() == "A"
    renameat2(m.mnt / "b", m.mnt / "c", RENAME_EXCHANGE)
    assert (m.mnt / "b").read_text() == "A" and (m.mnt / "c").read_text() == "B"


def test_copy_file_range_with_a_fifo_is_einval(simfs_mount):
    """generic/564's FIFO cases, both directions."""
    m = simfs_mount
    (m.mnt / "file").write_bytes(b"a" * (128 << 10))
    os.mkfifo(m.mnt / "fifo")
    f = os.open(m.mnt / "file", os.O_RDWR)
    p = os.open(m.mnt / "fifo", os.O_RDWR | os.O_NONBLOCK)
    try:
        for src, dst in ((f, p), (p, f)):
            with pytest.raises(OSError) as e:
                os.copy_file_range(src, dst, 32 << 10)
            assert e.value.errno == errno.EINVAL
        assert os.copy_file_range(f, f, 32 << 10, 0, 64 << 10) == 32 << 10   # a file: copies
    finally:
        os.close(f)
        os.close(p)
