"""Mounted: renameat2(RENAME_WHITEOUT) through the kernel's FUSE client, and file handles of a
freed and reused inode (open_by_handle_at gives ESTALE: the inode's generation differs), also
across a remount. The kernel's ext2 driver on a read-only loop mount is the oracle for the
image."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from tests.helpers import kernel_mount
from tests.mount.test_kernel_interfaces import name_to_handle, open_by_handle, renameat2

pytestmark = pytest.mark.mount
RENAME_WHITEOUT = 4


def test_rename_whiteout(simfs_factory, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("RENAME_WHITEOUT needs CAP_MKNOD")
    m = simfs_factory(size="64M")
    (m.mnt / "d").mkdir()
    (m.mnt / "d" / "f").write_bytes(b"moved")
    renameat2(m.mnt / "d" / "f", m.mnt / "g", RENAME_WHITEOUT)
    st = os.lstat(m.mnt / "d" / "f")
    assert stat.S_ISCHR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0 and st.st_rdev == 0
    assert (m.mnt / "g").read_bytes() == b"moved"
    assert sorted(os.listdir(m.mnt / "d")) == ["f"]
    with pytest.raises(OSError) as e:
        renameat2(m.mnt / "g", m.mnt / "d" / "f", RENAME_WHITEOUT | 2)     # with EXCHANGE
    assert e.value.errno == errno.EINVAL
    m.umount()
    m.assert_clean()
    with kernel_mount(m.image, tmp_path / "k") as k:
        kst = os.lstat(k / "d" / "f")
        assert (kst.st_mode, kst.st_rdev, kst.st_ino) == (st.st_mode, 0, st.st_ino)
        assert (k / "g").read_bytes() == b"moved"


def test_a_handle_to_a_reused_inode_is_stale(simfs_factory):
    """A freed inode number handed out again gets a new generation, so a handle to the old
    file is ESTALE, not the new file, in the same mount and after a remount."""
    if os.geteuid() != 0:
        pytest.skip("open_by_handle_at needs CAP_DAC_READ_SEARCH")
    # 16 inodes: with the 10 reserved ones, lost+found and 4 more taken, "old" holds the last
    # free number, so "new" gets it again in the same mount although the kernel still refers
    # to "old" (Volume: stale), as it does after a remount
    m = simfs_factory(size="64M", mkfs_args=("--inodes-per-group", "16"))
    for i in range(4):
        (m.mnt / f"filler{i}").write_bytes(b"")
    seen = set()
    for rnd in range(2):
        if rnd:
            m.umount()
            m.mount()
        (m.mnt / "old").write_bytes(b"old")
        ino = os.stat(m.mnt / "old").st_ino
        handle = name_to_handle(m.mnt / "old")
        os.unlink(m.mnt / "old")
        if rnd:
            m.umount()
            m.mount()
        (m.mnt / "new").write_bytes(b"new")
        assert os.stat(m.mnt / "new").st_ino == ino, "the number was not reused: no test"
        assert handle not in seen
        seen.add(handle)
        seen.add(name_to_handle(m.mnt / "new"))
        with pytest.raises(OSError) as e:
            os.close(open_by_handle(m.mnt, handle))
        assert e.value.errno == errno.ESTALE
        fd = open_by_handle(m.mnt, name_to_handle(m.mnt / "new"))
        try:
            assert os.read(fd, 10) == b"new"
        finally:
            os.close(fd)
        os.unlink(m.mnt / "new")
