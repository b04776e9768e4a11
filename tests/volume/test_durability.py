"""Real durability, in-process: commits, the journal, the image's clean state.

The image file is written only by commits (simfs.blockio.imagefile), between operations, through a
journal; so a copy of the image taken at any moment is a consistent ext2 file system
(e2fsck -fn clean once an interrupted commit is finished), and commits never change
simulated time.
"""

import os
import random
import shutil

import pytest

from simfs.errors import FSError, ImageError
from simfs.blockio import imagefile
from simfs.blockio.imagefile import ImageFile, journal_path, pending_journal, recover
from simfs.ondisk.constants import ERRORS_RO, STATE_ERROR, STATE_VALID, SUPERBLOCK_OFFSET
from simfs.ondisk.mkfs import mkfs
from simfs.ondisk.superblock import Superblock
from simfs.fs.volume import Volume, VolumeOptions
from tests.helpers import assert_fsck_clean, e2fsck, needs_e2fsprogs

pytestmark = needs_e2fsprogs


def _superblock(img) -> Superblock:
    with open(img, "rb") as f:
        f.seek(SUPERBLOCK_OFFSET)
        return Superblock(f.read(1024))


def _set_state(img, state: int, errors: int | None = None) -> None:
    sb = _superblock(img)
    sb.state = state
    if errors is not None:
        sb.errors = errors
    with open(img, "r+b") as f:
        f.seek(SUPERBLOCK_OFFSET)
        f.write(sb.pack())


@pytest.fixture
def img(tmp_path):
    path = str(tmp_path / "d.img")
    mkfs(path, 32 << 20, block_size=1024, inodes_per_group=512)
    return path


# the journal -------------------------------------------------------------------------------
def _image_with_commit(tmp_path, blocks: dict[int, bytes]):
    path = str(tmp_path / "j.img")
    with open(path, "wb") as f:
        f.truncate(64 * 1024)
    fd = os.open(path, os.O_RDWR)
    im = ImageFile(path, fd, 1024, writable=True)
    for b, data in blocks.items():
        im.note(b, bytearray(data))
    return path, fd, im


def test_commit_writes_in_place_and_empties_the_journal(tmp_path):
    path, fd, im = _image_with_commit(tmp_path, {3: b"a" * 1024, 4: b"b" * 1024, 9: b"c" * 1024})
    assert im.commit() == 3
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[3072:5120] == b"a" * 1024 + b"b" * 1024 and raw[9216:10240] == b"c" * 1024
    assert os.path.getsize(journal_path(path)) == 0 and pending_journal(path) is None
    im.close()
    os.close(fd)
    assert not os.path.exists(journal_path(path))


def test_a_short_vectored_write_is_finished(tmp_path, monkeypatch):
    """pwritev may write less than asked (a signal, a full host disk half-way): the commit
    writes the rest, so journal and image still hold every block."""
    path, fd, im = _image_with_commit(tmp_path, {b: bytes([65 + b]) * 1024 for b in range(3, 9)})
    real = os.pwritev
    monkeypatch.setattr(os, "pwritev", lambda f, pieces, off: real(f, [bytes(pieces[0])[:100]], off))
    assert im.commit() == 6
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[3072:9216] == b"".join(bytes([65 + b]) * 1024 for b in range(3, 9))
    os.close(fd)


def _crash_before_the_image(commit, fd: int) -> None:
    """Run a commit that "crashes" after its journal, at its first write to the image fd
    (pwrite or pwritev) after one to the journal (blocks free at the last commit go to the
    image before the journal)."""
    real = os.pwrite, os.pwritev
    journaled = []

    def guarded(write):
        def no_in_place(f, data, off):
            if f == fd and journaled:
                raise KeyboardInterrupt
            if f != fd:
                journaled.append(f)
            return write(f, data, off)
        return no_in_place

    os.pwrite, os.pwritev = map(guarded, real)
    try:
        with pytest.raises(KeyboardInterrupt):
            commit()
    finally:
        os.pwrite, os.pwritev = real


def _journal_of(tmp_path, blocks) -> tuple[str, bytes]:
    """A complete journal for `blocks`, captured before it was applied in place."""
    path, fd, im = _image_with_commit(tmp_path, blocks)
    _crash_before_the_image(im.commit, fd)
    with open(journal_path(path), "rb") as f:
        journal = f.read()
    os.close(fd)
    return path, journal


def test_a_complete_journal_is_replayed(tmp_path):
    path, journal = _journal_of(tmp_path, {5: b"x" * 1024, 6: b"y" * 1024})
    with open(path, "rb") as f:
        assert f.read()[5120:7168] == bytes(2048)          # the crash left the image untouched
    assert pending_journal(path) == "complete"
    fd = os.open(path, os.O_RDWR)
    assert recover(path, fd) == 1                           # one record: two contiguous blocks
    os.close(fd)
    with open(path, "rb") as f:
        assert f.read()[5120:7168] == b"x" * 1024 + b"y" * 1024
    assert not os.path.exists(journal_path(path))


def test_blocks_free_at_the_last_commit_skip_the_journal(tmp_path):
    """data=ordered: a block taken since the last commit, free in the committed image, is
    written in place (and made durable) before the journal, which holds only the rest; a block
    in use at the last commit, freed and taken again, still goes through the journal."""
    path, fd, im = _image_with_commit(tmp_path, {})
    im.freed(7)                                     # in use at the last commit
    for b in (5, 6, 7):
        im.allocated(b)
    im.freed(6)                                     # still free in the committed image
    im.allocated(6)
    for b in (3, 5, 6, 7):
        im.note(b, bytearray(bytes([60 + b]) * 1024))
    _crash_before_the_image(im.commit, fd)          # stops at the journal's in-place writes
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[5120:7168] == bytes([65]) * 1024 + bytes([66]) * 1024     # 5, 6 already there
    assert raw[3072:4096] == raw[7168:8192] == bytes(1024)                # 3, 7 not yet
    with open(journal_path(path), "rb") as f:
        journal = f.read()
    assert bytes([63]) * 1024 in journal and bytes([67]) * 1024 in journal
    assert bytes([65]) * 1024 not in journal and bytes([66]) * 1024 not in journal
    assert recover(path, fd) == 2
    with open(path, "rb") as f:
        raw = f.read()
    assert [raw[b * 1024:(b + 1) * 1024] for b in (3, 5, 6, 7)] == [bytes([60 + b]) * 1024 for b in (3, 5, 6, 7)]
    os.close(fd)


def test_a_commit_is_owed_when_many_blocks_changed_hands(tmp_path, monkeypatch):
    """The blocks taken and freed since the last commit are remembered (which may skip the
    journal) only up to a bound: past it a commit is owed, which empties them."""
    monkeypatch.setattr(imagefile, "TRACKED_MAX_BLOCKS", 10)
    path, fd, im = _image_with_commit(tmp_path, {3: b"a" * 1024})
    for b in range(10, 19):
        im.allocated(b)
    assert not im.due()
    im.freed(30)
    assert im.due()
    im.commit()
    assert not im.fresh and not im.reused and not im.due()
    os.close(fd)


@pytest.mark.parametrize("damage", ["truncated", "bit flip", "foreign"])
def test_a_torn_or_foreign_journal_is_discarded(tmp_path, damage):
    path, journal = _journal_of(tmp_path, {5: b"x" * 1024})
    bad = {"truncated": journal[:-3],
           "bit flip": journal[:20] + bytes([journal[20] ^ 1]) + journal[21:],
           "foreign": b"not a journal at all" * 10}[damage]
    with open(journal_path(path), "wb") as f:
        f.write(bad)
    assert pending_journal(path) == "torn"
    fd = os.open(path, os.O_RDWR)
    assert recover(path, fd) == 0
    os.close(fd)
    with open(path, "rb") as f:
        assert f.read()[5120:6144] == bytes(1024)           # the previous commit, intact
    assert not os.path.exists(journal_path(path))


def test_a_stale_journal_is_never_replayed(tmp_path):
    """A journal left by a crash belongs to the image as it was then: once the image has
    moved on (repaired, used again, made anew: its superblock is another), replaying it would
    write old blocks over a newer file system, so it is discarded."""
    path, journal = _journal_of(tmp_path, {5: b"x" * 1024})
    with open(path, "r+b") as f:                            # the image moved on meanwhile
        f.seek(SUPERBLOCK_OFFSET)
        f.write(b"a later state")
        f.seek(5 * 1024)
        f.write(b"newer" * 200)
    assert pending_journal(path) == "stale"
    fd = os.open(path, os.O_RDWR)
    assert recover(path, fd) == 0
    os.close(fd)
    with open(path, "rb") as f:
        assert f.read()[5120:6120] == b"newer" * 200
    assert not os.path.exists(journal_path(path))


def test_a_journal_is_replayed_once_its_superblock_is_in_place(tmp_path):
    """A crash after the commit's own superblock reached the image still finishes it."""
    sb = b"S" * 1024
    path, fd, im = _image_with_commit(tmp_path, {5: b"x" * 1024})
    im.note_bytes(SUPERBLOCK_OFFSET, sb)
    _crash_before_the_image(im.commit, fd)
    os.pwrite(fd, sb, SUPERBLOCK_OFFSET)                    # in place, then the crash
    assert pending_journal(path) == "complete"
    assert recover(path, fd) == 2
    assert os.pread(fd, 1024, 5 * 1024) == b"x" * 1024
    os.close(fd)


def test_a_commit_that_failed_in_place_is_finished_once_the_host_has_room(tmp_path, monkeypatch):
    """The journal went out whole, then the image's in-place writes failed (a sparse image on
    a host that filled up): the next commit writes that journal in place again and goes on,
    instead of refusing every change until the image is detached. Blocks the finished commit
    put in use no longer skip the journal."""
    from simfs.errors import ImageWriteError
    path, fd, im = _image_with_commit(tmp_path, {3: b"a" * 1024})
    im.allocated(5)
    im.note(5, bytearray(b"f" * 1024))
    real = os.pwritev

    def full(f, pieces, off):
        if f == fd and off == 3 * 1024:
            raise OSError(28, "No space left on device")
        return real(f, pieces, off)
    monkeypatch.setattr(os, "pwritev", full)
    with pytest.raises(ImageWriteError) as e:
        im.commit()
    assert e.value.in_place
    with pytest.raises(ImageWriteError):                    # still full: the journal stays
        im.commit()
    assert pending_journal(path) == "complete"
    im.note(4, bytearray(b"b" * 1024))
    monkeypatch.setattr(os, "pwritev", lambda f, p, o: real(f, p, o) if f == fd else full(fd, p, 3 * 1024))
    with pytest.raises(ImageWriteError) as e:               # room in place, not for the new journal
        im.commit()
    assert not e.value.in_place
    assert [os.pread(fd, 1024, b * 1024) for b in (3, 5)] == [b"a" * 1024, b"f" * 1024]
    assert 5 in im.reused and not im.fresh                  # in use at the finished commit
    monkeypatch.setattr(os, "pwritev", real)
    assert im.commit() == 3 and im.failure is None
    assert os.pread(fd, 1024, 4 * 1024) == b"b" * 1024 and pending_journal(path) is None
    im.close()
    os.close(fd)


def test_a_symbolic_link_to_the_image_finds_its_journal(tmp_path):
    path, _ = _journal_of(tmp_path, {5: b"x" * 1024})
    link = tmp_path / "elsewhere" / "link.img"
    link.parent.mkdir()
    link.symlink_to(path)
    assert journal_path(str(link)) == journal_path(path) and pending_journal(str(link)) == "complete"


def test_mkfs_removes_an_old_image_s_journal(tmp_path):
    """`simfs mkfs --force` over an image a crash left a journal for: the journal goes with
    the old file system (the first mount would otherwise see it)."""
    from simfs.cli.main import main
    path, _ = _journal_of(tmp_path, {5: b"x" * 1024})
    assert main(["mkfs", "-q", "--force", path, "8M"]) == 0
    assert not os.path.exists(journal_path(path))
    assert_fsck_clean(path)


# consistent at every moment ------------------------------------------------------------------
def _workload(vol, rng: random.Random, steps: int, snapshot) -> None:
    """Random namespace and data operations; `snapshot()` is called at random moments."""
    root = vol.root_ino
    dirs = [root]
    files = []
    for i in range(steps):
        r = rng.random()
        if r < 0.15:
            dirs.append(vol.mkdir(rng.choice(dirs), b"d%d" % i, 0o755, 0, 0).st_ino)
        elif r < 0.55 or not files:
            parent = rng.choice(dirs)
            ino = vol.create(parent, b"f%d" % i, 0o644, 0, 0).st_ino
            vol.hold(ino)
            size = rng.choice([100, 5000, 40000, 300000])
            for off in range(0, size, 65536):
                vol.write(ino, off, bytes([i % 251]) * min(65536, size - off))
            vol.drop(ino)
            files.append((parent, b"f%d" % i, ino))
        elif r < 0.7:
            parent, name, ino = files.pop(rng.randrange(len(files)))
            vol.unlink(parent, name)
        elif r < 0.8:
            parent, name, ino = rng.choice(files)
            vol.setattr(ino, size=rng.choice([0, 1500, 70000]))
        elif r < 0.9:
            parent, name, ino = files.pop(rng.randrange(len(files)))
            vol.rename(parent, name, root, b"r%d" % i)
            files.append((root, b"r%d" % i, ino))
        else:
            parent, name, ino = rng.choice(files)
            vol.symlink(parent, b"l%d" % i, b"t" * rng.choice([10, 200]), 0, 0)
        if rng.random() < 0.2:
            snapshot()


@pytest.mark.parametrize("writeback,alloc", [("sync", "first-free"), ("async", "cg"),
                                             ("softdep", "ext2"), ("async", "delayed")])
def test_the_image_is_consistent_whenever_it_is_copied(tmp_path, img, writeback, alloc):
    """A copy of the image (and its journal) taken at any moment, as a crash would leave it,
    is e2fsck-clean after recovery, whatever the write-back mode holds dirty in the model."""
    vol = Volume.open(img, VolumeOptions(writeback=writeback, alloc=alloc, cache=256 << 10, disk="ideal"))
    vol.image.commit_interval = 0.0                 # a commit after every operation
    copies = []

    def snapshot():
        n = len(copies)
        dst = str(tmp_path / f"crash{n}.img")
        shutil.copyfile(img, dst)
        if os.path.exists(journal_path(img)):
            shutil.copyfile(journal_path(img), journal_path(dst))
        copies.append(dst)

    _workload(vol, random.Random(f"{writeback}-{alloc}"), 120, snapshot)
    vol.close()
    assert_fsck_clean(img)
    assert copies
    for dst in copies:
        fd = os.open(dst, os.O_RDWR)
        recover(dst, fd)
        os.close(fd)
        rc, out = e2fsck(dst)
        assert rc == 0, f"{os.path.basename(dst)} (crash copy): e2fsck -fn exited {rc}:\n{out}"
        assert not _superblock(dst).state & STATE_VALID       # it was taken while mounted


def _crash_at_write(commit, n: int) -> bool:
    """Run a commit that "crashes" at its n-th write or fsync (of the image or the journal);
    False if it finished first."""
    real = os.pwrite, os.pwritev, os.fsync
    calls = [0]

    def counted(fn):
        def call(*args):
            calls[0] += 1
            if calls[0] == n:
                raise KeyboardInterrupt
            return fn(*args)
        return call

    os.pwrite, os.pwritev, os.fsync = map(counted, real)
    try:
        commit()
        return False
    except KeyboardInterrupt:
        return True
    finally:
        os.pwrite, os.pwritev, os.fsync = real


def test_a_crash_anywhere_in_a_commit_leaves_one_commit_or_the_other(tmp_path, img):
    """A commit with new files (their blocks skip the journal), a rewritten file and removed
    ones (their blocks reused), crashed at each of its writes in turn: the image recovers
    e2fsck-clean and holds the previous commit or this one, every byte."""
    vol = Volume.open(img, VolumeOptions(commit=86400.0, cache=256 << 10, disk="ideal"))
    old = {b"a%d" % i: bytes([i + 1]) * (3000 * (i + 1)) for i in range(6)}
    for name, data in old.items():
        vol.write(vol.create(vol.root_ino, name, 0o644, 0, 0).st_ino, 0, data)
    vol.close()
    base = str(tmp_path / "base.img")
    shutil.copyfile(img, base)
    new = dict(old)
    for i in range(4):
        new[b"b%d" % i] = bytes([100 + i]) * 20000
    new[b"a0"] = b"rewritten" * 1000
    del new[b"a1"], new[b"a2"]
    crashes = 0
    for n in range(1, 100):
        shutil.copyfile(base, img)
        vol = Volume.open(img, VolumeOptions(commit=86400.0, cache=256 << 10, disk="ideal"))
        vol.unlink(vol.root_ino, b"a1")
        vol.unlink(vol.root_ino, b"a2")
        vol.setattr(vol.lookup(vol.root_ino, b"a0").st_ino, size=0)
        vol.write(vol.lookup(vol.root_ino, b"a0").st_ino, 0, new[b"a0"])
        for i in range(4):
            vol.write(vol.create(vol.root_ino, b"b%d" % i, 0o644, 0, 0).st_ino, 0, new[b"b%d" % i])
        crashed = _crash_at_write(vol.commit, n)
        os.close(vol.fd)                                   # nothing else is written
        if vol.image._journal_fd is not None:
            os.close(vol.image._journal_fd)
        if not crashed:
            break
        crashes += 1
        fd = os.open(img, os.O_RDWR)
        recover(img, fd)
        os.close(fd)
        rc, out = e2fsck(img)
        assert rc == 0, f"crash at write {n}: e2fsck -fn exited {rc}:\n{out}"
        _set_state(img, STATE_VALID)
        vol = Volume.open(img, VolumeOptions(read_only=True))
        names = {name for name, _, _ in vol.readdir(vol.root_ino)} - {b".", b"..", b"lost+found"}
        want = new if b"b0" in names else old
        assert names == set(want), f"crash at write {n}: {sorted(names)}"
        for name, data in want.items():
            ino = vol.lookup(vol.root_ino, name).st_ino
            assert vol.read(ino, 0, len(data) + 1) == data, f"crash at write {n}: {name} differs"
        vol.close()
    assert crashes >= 4                 # in place before the journal, journal, its fsync, in place


def test_commits_do_not_change_simulated_time(tmp_path):
    """Committing after every operation or never: the same statistics, bit for bit."""
    docs = []
    for commit in (0.0, 86400.0):                   # (0: below what the mount takes, set on the image)
        path = str(tmp_path / f"c{commit}.img")
        mkfs(path, 32 << 20, block_size=1024, inodes_per_group=512)
        vol = Volume.open(path, VolumeOptions(commit=86400.0, cache=256 << 10))
        vol.image.commit_interval = commit
        _workload(vol, random.Random(7), 100, lambda: None)
        vol.sync()
        docs.append(vol.stats_snapshot())
        vol.close()
        assert_fsck_clean(path)
    assert docs[0] == docs[1]


def test_fsync_and_sync_reach_the_image(img):
    vol = Volume.open(img, VolumeOptions(commit=86400.0))
    ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
    vol.hold(ino)
    vol.write(ino, 0, b"durable!" * 512)
    vol.fsync(ino)
    with open(img, "rb") as f:
        assert b"durable!" * 512 in f.read()
    vol.write(ino, 4096, b"synced!!" * 512)
    with open(img, "rb") as f:
        assert b"synced!!" * 512 not in f.read()       # not yet: the interval is long
    vol.sync()
    with open(img, "rb") as f:
        assert b"synced!!" * 512 in f.read()
    vol.drop(ino)
    vol.close()


# the clean state -----------------------------------------------------------------------------
def test_an_unclean_image_is_refused_read_write_unless_forced(img):
    _set_state(img, 0)
    with pytest.raises(ImageError, match=r"not cleanly unmounted.*simfs fsck --repair.*-o force"):
        Volume.open(img)
    ro = Volume.open(img, VolumeOptions(read_only=True))
    assert any("unchecked" in w for w in ro.warnings)
    ro.close()
    vol = Volume.open(img, VolumeOptions(force=True))
    assert any("unchecked" in w for w in vol.warnings)
    vol.mkdir(vol.root_ino, b"x", 0o755, 0, 0)
    vol.close()
    assert not _superblock(img).state & STATE_VALID       # still unchecked, as the kernel leaves it
    assert_fsck_clean(img)


def test_mounting_marks_not_clean_on_the_image_and_unmount_restores_it(img):
    before = _superblock(img).mnt_count
    vol = Volume.open(img)
    assert not _superblock(img).state & STATE_VALID       # on the image while mounted
    vol.close()
    sb = _superblock(img)
    assert sb.state & STATE_VALID and sb.mnt_count == before + 1


def test_errors_are_recorded_and_remount_read_only(img):
    _set_state(img, STATE_VALID, errors=ERRORS_RO)
    vol = Volume.open(img)
    vol.fs_error("test: a detected inconsistency")
    assert _superblock(img).state & STATE_ERROR            # on the image at once
    with pytest.raises(FSError):
        vol.mkdir(vol.root_ino, b"x", 0o755, 0, 0)
    vol.close()
    assert _superblock(img).state & STATE_ERROR
    with pytest.raises(ImageError, match="errors recorded"):
        Volume.open(img)


def test_an_interrupted_commit_is_finished_at_the_next_open(img):
    """A crash after the journal was written, before the image: a read-only open refuses
    (it would show the image without the commit), a read-write open finishes it."""
    vol = Volume.open(img, VolumeOptions(commit=86400.0))
    vol.mkdir(vol.root_ino, b"x", 0o755, 0, 0)
    _crash_before_the_image(vol.commit, vol.fd)
    with open(journal_path(img), "rb") as f:
        journal = f.read()
    os.close(vol.fd)                                   # the "crash": nothing else is written
    os.close(vol.image._journal_fd)
    assert pending_journal(img) == "complete" and len(journal) > 1024
    with pytest.raises(ImageError, match="interrupted"):
        Volume.open(img, VolumeOptions(read_only=True))
    vol = Volume.open(img, VolumeOptions(force=True))  # recovers, then mounts
    assert vol.lookup(vol.root_ino, b"x")
    vol.close()
    assert_fsck_clean(img)
