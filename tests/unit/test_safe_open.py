"""Every file simfs opens beside an image goes through simfs.outfile's one safe open, for
reading (the journal a crash left, the final statistics `simfs umount` summarises) as for
writing (log, statistics, trace, op log, journal): a FIFO planted there never blocks, a link
to /dev/zero is never read, a second hard link or another user's file is refused, in one
line; nothing is read, written or removed. (No separate lock file: the image is locked with
flock on its own descriptor.)"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal

import pytest

from simfs import outfile
from simfs.blockio.imagefile import (ImageFile, JournalError, journal_limit, journal_path,
                                     pending_journal, recover)
from simfs.errors import ImageError

PLANTS = ["fifo", "zero", "hardlink", "other_user"]


@contextlib.contextmanager
def deadline(seconds: int = 10):
    """Fail (rather than hang the suite) if the call blocks, as a plain open() of a FIFO does."""
    def ring(*_):
        raise TimeoutError(f"blocked for {seconds} s")
    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def plant(path: str, how: str, tmp_path) -> None:
    if how == "fifo":
        os.mkfifo(path)
    elif how == "zero":
        os.symlink("/dev/zero", path)
    elif how == "hardlink":
        other = tmp_path / "someone-elses"
        other.write_bytes(b"keep")
        os.link(other, path)
    elif how == "other_user":
        if os.geteuid() != 0:
            pytest.skip("needs root to give the file away")
        with open(path, "wb") as f:
            f.write(b"theirs")
        os.chown(path, 65534, 65534)


WHY = {"fifo": "not a regular file", "zero": "symbolic link", "hardlink": "2 hard links",
       "other_user": "belongs to user 65534"}


def untouched(path: str, how: str) -> bool:
    st = os.lstat(path)
    if how == "fifo":
        return st.st_mode & 0o170000 == 0o010000
    if how == "zero":
        return os.readlink(path) == "/dev/zero"
    with open(path, "rb") as f:
        return f.read() in (b"keep", b"theirs")


# the reading side --------------------------------------------------------------------------
def test_own_file_is_read_and_a_missing_one_is_none(tmp_path):
    p = tmp_path / "own"
    p.write_bytes(b"abc")
    assert outfile.read_private(str(p), 10) == b"abc"
    assert outfile.read_private(str(tmp_path / "none"), 10) is None


@pytest.mark.parametrize("how", PLANTS)
def test_read_refuses_a_planted_file(tmp_path, how):
    p = str(tmp_path / "x")
    plant(p, how, tmp_path)
    with deadline(), pytest.raises(outfile.Refused, match=WHY[how]):
        outfile.read_private(p, 1 << 20)
    assert untouched(p, how)


def test_read_is_bounded(tmp_path):
    p = tmp_path / "big"
    p.write_bytes(b"x" * 1000)
    with pytest.raises(outfile.Refused, match="1000 bytes long, more than the 999"):
        outfile.read_private(str(p), 999)
    assert outfile.read_private(str(p), 1000) == b"x" * 1000


# the journal, read at mount and by simfs fsck ---------------------------------------------
def _image(tmp_path) -> str:
    path = str(tmp_path / "j.img")
    with open(path, "wb") as f:
        f.truncate(64 * 1024)
    return path


def _digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.mark.parametrize("how", PLANTS)
def test_a_planted_journal_is_refused_not_read(tmp_path, how):
    image = _image(tmp_path)
    before = _digest(image)
    plant(journal_path(image), how, tmp_path)
    with deadline():
        with pytest.raises(JournalError, match=f"refusing to read the journal: .*{WHY[how]}") as e:
            pending_journal(image)
        assert isinstance(e.value, ImageError) and "\n" not in str(e.value)
        fd = os.open(image, os.O_RDWR)
        try:
            with pytest.raises(JournalError, match=WHY[how]):
                recover(image, fd)
        finally:
            os.close(fd)
    assert untouched(journal_path(image), how) and _digest(image) == before


def test_a_journal_larger_than_the_image_can_hold_is_refused(tmp_path):
    image = _image(tmp_path)
    with open(journal_path(image), "wb") as f:
        f.truncate(journal_limit(64 * 1024) + 1)           # sparse: costs nothing
    with pytest.raises(JournalError, match="more than the"):
        pending_journal(image)


@pytest.mark.parametrize("how", PLANTS)
def test_a_journal_planted_before_the_first_commit_is_not_written(tmp_path, how):
    image = _image(tmp_path)
    plant(journal_path(image), how, tmp_path)
    fd = os.open(image, os.O_RDWR)
    im = ImageFile(image, fd, 1024, writable=True)
    im.note(40, bytearray(b"j" * 1024))
    try:
        with deadline(), pytest.raises(OSError, match=WHY[how]):
            im.commit()
    finally:
        os.close(fd)
    assert untouched(journal_path(image), how)


# the files written beside an image, and the statistics read back --------------------------
WRITERS = {
    "IMAGE.log": outfile.open_append,
    "IMAGE.stats.json": lambda p: outfile.write_whole(p, b"{}"),
    "trace": outfile.open_stream,
    "oplog": outfile.open_stream,
}


@pytest.mark.parametrize("name", sorted(WRITERS))
@pytest.mark.parametrize("how", PLANTS)
def test_written_files_refuse_a_planted_file(tmp_path, name, how):
    p = str(tmp_path / name.replace("IMAGE", "d.img"))
    plant(p, how, tmp_path)
    with deadline(), pytest.raises(outfile.Refused, match=WHY[how]):
        r = WRITERS[name](p)
        if isinstance(r, int):
            os.close(r)
    assert untouched(p, how)


@pytest.mark.parametrize("how", PLANTS)
def test_umount_summary_refuses_a_planted_statistics_file(tmp_path, how):
    """Swapped in after the daemon wrote IMAGE.stats.json, before `simfs umount` reads it."""
    from simfs.cli.mount import _load_own_stats
    from simfs.cli.stats import load_stats
    p = str(tmp_path / "d.img.stats.json")
    plant(p, how, tmp_path)
    with deadline(), pytest.raises(ValueError, match=f"refusing to read {p}: .*{WHY[how]}"):
        _load_own_stats(p, load_stats)
    assert untouched(p, how)


@pytest.mark.parametrize("cmd", [["fsck"], ["fsck", "--repair"], ["replay", "ops.log"]])
def test_commands_refuse_a_planted_journal_in_one_line(tmp_path, cmd):
    from tests.conftest import make_image, run_simfs
    image = make_image(tmp_path / "d.img", "16M")
    (tmp_path / "ops.log").write_text('{"format": "simfs-oplog"}\n')
    os.mkfifo(journal_path(str(image)))
    args = [tmp_path / cmd[1], image] if cmd[0] == "replay" else [*cmd[1:], image]
    r = run_simfs(cmd[0], *args, check=False, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "refusing to read the journal: not a regular file" in r.stderr


@pytest.mark.parametrize("how", PLANTS)
def test_umount_reads_the_daemons_last_words_only_from_its_own_log(tmp_path, how):
    """With the daemon gone (no /proc/PID/fd/2), the log's name is opened the safe way."""
    from simfs.fuse.daemon import open_daemon_log
    p = str(tmp_path / "d.img.log")
    plant(p, how, tmp_path)
    with deadline():
        assert open_daemon_log({"pid": 2 ** 22 + 1, "log": p}) is None
    assert untouched(p, how)
    os.unlink(p)
    with open(p, "w") as f:
        f.write("2026-12-07 13:00:00 42 ERROR simfs: x\n")
    fd = open_daemon_log({"pid": 2 ** 22 + 1, "log": p})
    assert fd is not None and os.read(fd, 10) == b"2026-12-07"
    os.close(fd)
