"""Access times on read: noatime (the default), strictatime (`atime`) and relatime, as Linux
updates them (relatime_need_update: only when the access time is not later than the
modification or change time, or is a day old)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from simfs.fs.fileio import _relatime_due
from simfs.fs.volume import Volume, VolumeOptions
from simfs.fuse import mountopts
from simfs.ondisk.mkfs import mkfs

DAY = 24 * 3600 * 10**9


def _reads(tmp_path, **opts) -> list[int]:
    """A file's access time after its creation and after each of two reads, the coarse
    clock moved on before each."""
    img = tmp_path / "a.img"
    mkfs(img, 8 << 20, block_size=4096)
    vol = Volume.open(img, VolumeOptions(disk="ideal", **opts))
    try:
        a = vol.create(2, b"f", 0o100644, 0, 0)
        vol.write(a.st_ino, 0, b"x" * 100)
        seen = [vol.getattr(a.st_ino).st_atime_ns]
        for _ in range(2):
            time.sleep(0.05)
            vol.read(a.st_ino, 0, 100)
            seen.append(vol.getattr(a.st_ino).st_atime_ns)
        return seen
    finally:
        vol.close()


def test_noatime_never_updates(tmp_path):
    created, first, second = _reads(tmp_path)
    assert created == first == second


def test_strictatime_updates_at_every_read(tmp_path):
    created, first, second = _reads(tmp_path, atime=True)
    assert created < first < second


def test_relatime_updates_once_after_a_change(tmp_path):
    created, first, second = _reads(tmp_path, atime=True, relatime=True)
    assert created < first            # atime not later than mtime after the write: updated
    assert second == first            # later than mtime and ctime: left alone


def test_relatime_updates_a_day_old_access_time():
    i = SimpleNamespace(atime_ns=10 * DAY, mtime_ns=5 * DAY, ctime_ns=5 * DAY)
    assert not _relatime_due(i, 10 * DAY + DAY - 1) and _relatime_due(i, 11 * DAY)
    assert _relatime_due(SimpleNamespace(atime_ns=5, mtime_ns=5, ctime_ns=1), 6)
    assert _relatime_due(SimpleNamespace(atime_ns=5, mtime_ns=1, ctime_ns=7), 8)


@pytest.mark.parametrize("flags, atime, relatime, kernel", [
    ("relatime", True, True, None), ("strictatime", True, False, None), ("atime", True, False, None),
    ("relatime,noatime", False, True, "noatime"), ("", False, False, "noatime"),
    ("relatime,strictatime", True, False, None)])
def test_atime_flags(flags, atime, relatime, kernel):
    """The kernel's flag: noatime, or none (libfuse 3.14 takes neither relatime nor
    strictatime, and failed the mount on `-o atime`)."""
    m = mountopts.parse([flags])
    assert (m.volume.atime, m.volume.relatime) == (atime, relatime)
    given = m.fuse_options("/i.img") & {"noatime", "strictatime", "relatime"}
    assert given == ({kernel} if kernel else set())


@pytest.mark.parametrize("flag", ["nodiratime", "lazytime", "nolazytime"])
def test_flags_libfuse_refuses_are_taken_not_passed(flag):
    """libfuse 3.14 fails fuse_session_new on these: taken, never handed to it."""
    m = mountopts.parse([flag])
    assert flag in m.kernel_flags and flag not in m.fuse_options("/i.img")


def test_diratime_is_refused_in_one_line():
    with pytest.raises(mountopts.OptionError, match="did you mean 'nodiratime'"):
        mountopts.parse(["diratime"])
