"""The image's own host file system full (or failing) while a volume is open.

A sparse image on a small disk meets ENOSPC when a commit writes the journal or the image in
place. Nothing written may be lost while the volume stays open, and the image must stay a
consistent ext2: a failed journal is emptied (its space back; never replayed), nothing noted
is dropped, every change is refused with ENOSPC until a commit succeeds (an fsync waiting for
the commit fails with it), reads go on; a later commit writes everything. A journal that went
out whole before the in-place writes failed stays for the next open to replay. The host's
failure is injected at the one place the image is written (imagefile._pwritev_all). The
in-process runs (verbs, replay) meet a real full host, a small tmpfs: they stop at once.
"""

import errno
import os
import random
import re
import shutil

import pytest

from simfs.blockio import imagefile
from simfs.blockio.imagefile import journal_path
from simfs.cli.main import main
from simfs.inprocess import verbs
from simfs.inprocess.treedesc import from_directory
from simfs.errors import FSError, ImageWriteError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.conftest import fill_host
from tests.helpers import assert_fsck_clean, needs_e2fsprogs
from pathlib import Path

pytestmark = needs_e2fsprogs

DATA = bytes(range(256)) * 64          # 16 KiB


@pytest.fixture
def img(tmp_path):
    path = str(tmp_path / "h.img")
    mkfs(path, 32 << 20, block_size=1024, inodes_per_group=512)
    return path


@pytest.fixture
def host(monkeypatch):
    """`host.full = "journal"` (or "image"): writes to that file fail with ENOSPC."""
    real = imagefile._pwritev_all

    class Host:
        full = ""
        image_fd = -1

        @staticmethod
        def pwritev_all(fd, pieces, offset):
            to_image = fd == Host.image_fd
            if (Host.full == "image" and to_image) or (Host.full == "journal" and not to_image):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            real(fd, pieces, offset)

    monkeypatch.setattr(imagefile, "_pwritev_all", Host.pwritev_all)
    return Host


def _open(img, host) -> Volume:
    vol = Volume.open(img, VolumeOptions(commit=3600.0))
    host.image_fd = vol.image.fd
    return vol


def _read_all(vol, ino: int, size: int) -> bytes:
    return vol.read(ino, 0, size)


def _as_at_the_last_commit(vol, img, before: bytes) -> None:
    """The image holds the last commit: only blocks free in it (taken since, which a commit
    writes before its journal) may differ, and it is e2fsck-clean."""
    now, bs = Path(img).read_bytes(), vol.block_size
    changed = {i // bs for i in range(0, len(now), bs) if now[i:i + bs] != before[i:i + bs]}
    assert changed <= vol.image.fresh, sorted(changed - vol.image.fresh)
    assert_fsck_clean(img)


def test_a_full_journal_loses_nothing_while_open(img, host):
    vol = _open(img, host)
    a = vol.create(vol.root_ino, b"a", 0o100644, 0, 0)
    vol.write(a.st_ino, 0, DATA)
    vol.commit_soon()                                    # `a` is on the image
    before = Path(img).read_bytes()
    b = vol.create(vol.root_ino, b"b", 0o100644, 0, 0)
    vol.write(b.st_ino, 0, DATA[::-1])

    host.full = "journal"
    with pytest.raises(ImageWriteError, match="cannot write the journal"):
        vol.commit()
    _as_at_the_last_commit(vol, img, before)
    assert os.path.getsize(journal_path(img)) == 0       # the partial journal: its space back
    assert vol.unwritable is not None
    with pytest.raises(FSError) as e:                    # changes refused, with the host's errno
        vol.write(a.st_ino, 0, b"x")
    assert e.value.errno == errno.ENOSPC
    with pytest.raises(FSError):
        vol.create(vol.root_ino, b"c", 0o100644, 0, 0)
    with pytest.raises(FSError) as e:                    # an fsync cannot be made good
        vol.fsync(b.st_ino)
    assert e.value.errno == errno.ENOSPC
    assert _read_all(vol, b.st_ino, len(DATA)) == DATA[::-1]     # reads go on
    _as_at_the_last_commit(vol, img, before)

    host.full = ""                                       # space again: the next commit
    vol.fsync(b.st_ino)                                  # writes everything kept
    assert vol.unwritable is None
    vol.write(b.st_ino, len(DATA), b"tail")              # and changes are accepted again
    vol.close()
    assert_fsck_clean(img)
    vol = Volume.open(img, VolumeOptions(read_only=True))
    ino = vol.lookup(vol.root_ino, b"b").st_ino
    assert _read_all(vol, ino, len(DATA) + 4) == DATA[::-1] + b"tail"
    vol.close()


def test_closing_on_a_full_host_leaves_the_last_commit(img, host):
    vol = _open(img, host)
    a = vol.create(vol.root_ino, b"a", 0o100644, 0, 0)
    vol.write(a.st_ino, 0, DATA)
    vol.commit_soon()
    vol.create(vol.root_ino, b"lost", 0o100644, 0, 0)
    host.full = "journal"
    with pytest.raises(ImageWriteError) as e:
        vol.close()
    assert not e.value.in_place and "is as at its last commit" in e.value.strerror
    assert vol.closed and not os.path.exists(journal_path(img))   # closed, unlocked, no journal
    assert_fsck_clean(img)                               # consistent ("not clean": never unmounted)
    vol = Volume.open(img, VolumeOptions(read_only=True, force=True))
    assert vol.lookup(vol.root_ino, b"a").st_size == len(DATA)
    with pytest.raises(FSError):
        vol.lookup(vol.root_ino, b"lost")
    vol.close()


def test_new_blocks_that_cannot_be_written_leave_the_last_commit(img, host):
    """Blocks free at the last commit go to the image before the journal: if they cannot,
    there is no journal, and the image is the last commit."""
    vol = _open(img, host)
    a = vol.create(vol.root_ino, b"a", 0o100644, 0, 0)
    vol.write(a.st_ino, 0, DATA)
    host.full = "image"
    with pytest.raises(ImageWriteError) as e:
        vol.commit()
    assert not e.value.in_place and "is as at its last commit" in e.value.strerror
    assert not os.path.exists(journal_path(img)) or os.path.getsize(journal_path(img)) == 0
    host.full = ""
    vol.close()                                          # the next commit writes everything
    assert_fsck_clean(img)
    vol = Volume.open(img, VolumeOptions(read_only=True))
    assert _read_all(vol, vol.lookup(vol.root_ino, b"a").st_ino, len(DATA)) == DATA
    vol.close()


@pytest.mark.parametrize("room_again", [False, True])
def test_a_whole_journal_is_kept_when_the_image_cannot_be_written(img, host, room_again):
    """The journal went out whole, the in-place writes did not: the journal stays for the
    next open to replay while the image cannot be written; once it can, the next commit
    writes that journal in place and changes are accepted again."""
    vol = _open(img, host)
    a = vol.create(vol.root_ino, b"a", 0o100644, 0, 0)
    vol.write(a.st_ino, 0, DATA[::-1])
    vol.commit_soon()
    vol.write(a.st_ino, 0, DATA)                         # no new block: all through the journal
    host.full = "image"
    with pytest.raises(ImageWriteError) as e:
        vol.commit()
    assert e.value.in_place and "replays" in e.value.strerror
    if room_again:
        host.full = ""
        vol.commit()
        assert vol.unwritable is None and os.path.getsize(journal_path(img)) == 0
        vol.close()
        assert not os.path.exists(journal_path(img))
    else:
        with pytest.raises(ImageWriteError):
            vol.close()
        assert os.path.getsize(journal_path(img)) > 0
        host.full = ""
    vol = Volume.open(img, VolumeOptions(force=True))    # the open replays it (if still there)
    ino = vol.lookup(vol.root_ino, b"a").st_ino
    assert _read_all(vol, ino, len(DATA)) == DATA
    vol.close()
    assert_fsck_clean(img)


def test_an_operation_that_took_effect_is_not_failed_by_a_commit(img, host):
    """The commit due at the end of a write fails: the write took effect and returns its
    count (it is in memory, and will be committed); the error is the next change's."""
    vol = _open(img, host)
    a = vol.create(vol.root_ino, b"a", 0o100644, 0, 0)
    host.full = "journal"
    vol.image.commit_interval = 0.0                      # a commit is due, and checked for at
    vol.ops.countdown = 1                                # the end of the next operation
    assert vol.write(a.st_ino, 0, DATA) == len(DATA)
    assert vol.unwritable is not None
    assert vol.getattr(a.st_ino).st_size == len(DATA)
    host.full = ""
    vol.ops.countdown = 1
    vol.getattr(a.st_ino)                                # the next commit, due again: it goes
    assert vol.unwritable is None
    vol.close()
    assert_fsck_clean(img)


@pytest.fixture
def commits_every_mib(monkeypatch):
    """Commits owed every MiB noted: an in-process run meets its full host mid-run, not at close."""
    monkeypatch.setattr(imagefile, "COMMIT_MAX_BYTES", 1 << 20)


def _source(tmp_path, files: int = 24):
    src = tmp_path / "src"
    src.mkdir()
    rng = random.Random(5)
    for i in range(files):
        (src / f"f{i:02}").write_bytes(rng.randbytes(1 << 20))
    return src


def test_an_in_process_run_stops_at_the_first_commit_its_host_refuses(small_host, tmp_path,
                                                                       commits_every_mib, capsys, caplog):
    """A verb has nobody to free space and nothing to wait for: the first failed commit ends
    it, in one line (a mount would log it, refuse changes and retry); the image is the last
    commit."""
    img = small_host / "i.img"
    mkfs(img, 64 << 20, block_size=4096)
    fill_host(small_host, 4 << 20)
    assert main(["verb", "unpack", str(img), "t", "--from", str(_source(tmp_path))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("simfs verb: cannot write") and "is as at its last commit" \
        in err[0], err
    assert not caplog.records            # nothing logged besides (stderr, run from a shell)
    assert_fsck_clean(img)


def test_a_replay_names_the_operation_its_full_host_stopped(small_host, tmp_path, commits_every_mib, capsys,
                                                            caplog):
    img = small_host / "i.img"
    mkfs(img, 64 << 20, block_size=4096)
    rec = tmp_path / "rec.img"
    shutil.copyfile(img, rec)
    log = tmp_path / "run.log"
    verbs.run(str(rec), VolumeOptions(), "unpack", "t", mkdir=True, oplog=str(log),
              source=from_directory(str(_source(tmp_path)), with_data=True))
    fill_host(small_host, 4 << 20)
    assert main(["replay", str(log), str(img)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert re.match(r"simfs replay: stopped at operation \d+ \(\w+\); cannot write ", err[0]), err
    assert not caplog.records
    assert_fsck_clean(img)
