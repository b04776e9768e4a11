"""The op log's records, line for line, for a short session on an image that already holds files
(simfs/inprocess/oplog.py's format: handles by first appearance, readdir states by their ids,
rename's flags and fsync's datasync as asked), and the reader's line numbers in its messages.

test_replay.py's workload starts on an empty image and passes every argument explicitly; these
cases take the defaults the FUSE layer relies on and an inode the log has not seen yet.
"""

from __future__ import annotations

import pytest

from simfs.fs.types import RENAME_WHITEOUT
from simfs.fs.volume import Volume, VolumeOptions
from simfs.inprocess.oplog import LogError, RecordingVolume, image_identity, iter_ops, scan
from simfs.inprocess.replay import OPS, image_of
from simfs.ondisk.mkfs import mkfs


@pytest.fixture
def image(tmp_path):
    """An 8 MiB image with /old (3 bytes), made without recording."""
    img = tmp_path / "a.img"
    mkfs(img, 8 << 20, block_size=1024)
    vol = Volume.open(img, VolumeOptions())
    ino = vol.create(vol.root_ino, b"old", 0o644, 0, 0).st_ino
    vol.write(ino, 0, b"abc")
    vol.close()
    return img


def test_a_session_is_logged_line_for_line(image, tmp_path):
    log = tmp_path / "s.log"
    vol = RecordingVolume.start(Volume.open(image, VolumeOptions()), str(log), "test")
    old = vol.lookup(vol.root_ino, b"old").st_ino        # an inode the log has not seen
    st = vol.opendir_state()
    vol.readdir(vol.root_ino, 0, state=st)
    vol.release_state(st)
    vol.rename(vol.root_ino, b"old", vol.root_ino, b"new")   # flags left at their default
    vol.fsync(old)                                          # datasync left at its default
    assert vol.read(old, 0, 10) == b"abc"
    vol.close()
    ops = [rec for _, rec in iter_ops(str(log))]
    assert ops[0] == ["lookup", 1, 0, "old"], "the first inode seen gets handle 1"
    assert ops[1] == ["opendir", 0], "readdir states are numbered from 0"
    assert ops[2][0] == "readdir" and ops[2][2:] == [0, 0, 0]     # root, cookie 0, state 0
    assert ops[3] == ["releasedir", 0]
    assert ops[4] == ["rename", None, 0, "old", 0, "new", 0], "no flags asked: 0, not NOREPLACE"
    assert ops[5] == ["fsync", None, 1, False], "fsync, not fdatasync"
    assert ops[6] == ["read", 3, 1, 0, 10]
    assert ops[-1] == ["close", None]


def test_the_reader_names_the_line_of_a_bad_record(tmp_path, image):
    log = tmp_path / "s.log"
    vol = RecordingVolume.start(Volume.open(image, VolumeOptions()), str(log), "test")
    vol.statfs()
    vol.close()
    lines = log.read_bytes().splitlines(keepends=True)
    assert scan(str(log), OPS) == (2, True)
    (tmp_path / "bad.log").write_bytes(lines[0] + b"{not json\n" + b"".join(lines[1:]))
    with pytest.raises(LogError, match=r": line 2 is not JSON$"):
        scan(str(tmp_path / "bad.log"), OPS)
    (tmp_path / "odd.log").write_bytes(lines[0] + lines[1] + b'["nosuchop",null]\n' + lines[2])
    with pytest.raises(LogError, match=r": line 3 is not an operation simfs records"):
        scan(str(tmp_path / "odd.log"), OPS)


def test_image_of_reads_the_superblock(image, tmp_path):
    vol = Volume.open(image, VolumeOptions())
    want = image_identity(vol.sb)
    vol.close()
    assert image_of(str(image)) == want
    short = tmp_path / "short.img"
    short.write_bytes(image.read_bytes()[:1500])            # the superblock cut short
    assert image_of(str(short)) is None
    assert image_of(str(tmp_path / "missing.img")) is None


def test_a_whiteout_rename_without_an_owner_is_roots(image, tmp_path):
    # the FUSE layer passes the caller's uid and gid only when it has a context: else root's
    log = tmp_path / "s.log"
    vol = RecordingVolume.start(Volume.open(image, VolumeOptions()), str(log), "test")
    vol.rename(vol.root_ino, b"old", vol.root_ino, b"new", RENAME_WHITEOUT)
    wh = vol.lookup(vol.root_ino, b"old")
    assert (wh.st_uid, wh.st_gid) == (0, 0)
    vol.close()
    rec = next(r for _, r in iter_ops(str(log)) if r[0] == "rename_whiteout")
    assert rec[1] == 1 and rec[2:] == [0, "old", 0, "new", RENAME_WHITEOUT, 0, 0]
