"""How an in-process run stops: a signal waits for the operation it arrives in to end (the image
closes clean and consistent); an operation that fails half-way on anything but an FSError (a
policy's bug) records a file-system error on the image, as ext2_error does, so the image is
not closed as clean; an output file that is the image (or its journal, or the op log being
replayed) is refused before anything is written; an abstract policy class is refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from simfs.inprocess import treedesc, verbs
from simfs.fs.operation import Interrupted, deferred_signals
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.constants import STATE_ERROR, STATE_VALID
from simfs.ondisk.mkfs import mkfs
from plugin_registry import PluginError
from tests.helpers import assert_fsck_clean

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _state(img) -> int:
    with Volume.open(str(img), VolumeOptions(read_only=True)) as vol:
        return vol.sb.state


def _entries(n: int, every: int = 0, signum: int = signal.SIGTERM):
    """n small files; with `every`, this process gets `signum` while the n//2-th is described
    (the verb is then between operations or inside one: either way it must stop cleanly)."""
    for i in range(n):
        if every and i == n // 2:
            os.kill(os.getpid(), signum)
        yield treedesc.Entry([b"f%04d" % i], "file", size=5000)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_stops_the_run_between_operations_and_the_image_is_clean(tmp_path, signum):
    img = tmp_path / "s.img"
    mkfs(str(img), 64 << 20, block_size=4096)
    with pytest.raises(Interrupted) as e:
        with deferred_signals():
            verbs.run(str(img), VolumeOptions(), "unpack", "t", mkdir=True, source=_entries(400, 1, signum))
    assert e.value.signum == signum
    assert _state(img) == STATE_VALID
    assert_fsck_clean(img)
    with Volume.open(str(img), VolumeOptions()) as vol:      # what was made before the signal is there
        t = vol.lookup(vol.root_ino, b"t")
        names = {n for n, _, _ in vol.readdir(t.st_ino, 0)} - {b".", b".."}
    assert 100 <= len(names) <= 400
    assert signal.getsignal(signum) is not None        # the previous handler is back


def test_a_signal_outside_any_run_is_left_to_the_old_handler():
    with deferred_signals():
        pass
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


class _Failing:
    """Wraps an allocator: the 30th block allocation raises, half-way through a write."""

    def __init__(self, inner):
        self.inner, self.n = inner, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def allocate(self, space, req, st):
        self.n += 1
        if self.n == 30:
            raise ValueError("a policy's bug")
        return self.inner.allocate(space, req, st)


def test_an_operation_that_fails_half_way_records_an_error_on_the_image(tmp_path, monkeypatch):
    img = tmp_path / "f.img"
    mkfs(str(img), 64 << 20, block_size=4096)
    opened = Volume.open

    def open_failing(*a, **k):
        vol = opened(*a, **k)
        vol.placement.allocator = _Failing(vol.placement.allocator)
        return vol
    monkeypatch.setattr(Volume, "open", staticmethod(open_failing))
    with pytest.raises(ValueError, match="a policy's bug") as e:
        verbs.run(str(img), VolumeOptions(), "unpack", "t", mkdir=True, source=_entries(20))
    assert any("fsck --repair" in n for n in e.value.__notes__)
    monkeypatch.undo()
    assert _state(img) & STATE_ERROR                        # not closed as clean
    with pytest.raises(Exception, match="errors recorded"):
        Volume.open(str(img), VolumeOptions())


def test_an_fserror_records_nothing(tmp_path):
    img = tmp_path / "e.img"
    mkfs(str(img), 64 << 20, block_size=4096)
    with pytest.raises(OSError):
        verbs.run(str(img), VolumeOptions(), "find", "missing")
    assert _state(img) == STATE_VALID


def _simfs(*args):
    return subprocess.run([sys.executable, "-m", "simfs.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT)


@pytest.mark.parametrize("how", ["--stats IMG", "-o stats=IMG", "-o trace=LINK", "--stats IMG.journal"])
def test_an_output_file_that_is_the_image_is_refused(tmp_path, how):
    img = tmp_path / "x.img"
    mkfs(str(img), 16 << 20, block_size=4096)
    (tmp_path / "link.img").symlink_to(img)
    before = img.read_bytes()
    flag, value = how.split(" ")
    value = value.replace("IMG", str(img)).replace("LINK", str(tmp_path / "link.img"))
    r = _simfs("verb", "find", img, ".", flag, value)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "give each its own file" in r.stderr
    assert img.read_bytes() == before
    assert not (tmp_path / "x.img.journal").exists()


def test_replay_refuses_statistics_over_its_own_log(tmp_path):
    img = tmp_path / "r.img"
    mkfs(str(img), 16 << 20, block_size=4096)
    log = tmp_path / "run.log"
    verbs.run(str(img), VolumeOptions(), "find", ".", oplog=str(log))
    before = log.read_bytes()
    r = _simfs("replay", log, img, "--stats", log)
    assert r.returncode == 2 and "is also the log file" in r.stderr, r.stderr
    assert log.read_bytes() == before


@pytest.mark.parametrize("spec", ["policies.base:BlockAllocator"])
def test_the_abstract_allocator_is_not_an_allocator(spec):
    from policies import ALLOCATORS
    with pytest.raises(PluginError, match="abstract"):
        ALLOCATORS.resolve(spec)


def test_a_verb_warns_as_a_mount_would(tmp_path):
    """An image used data-less before: the verb says so (a mount warns the same)."""
    img = tmp_path / "w.img"
    mkfs(str(img), 16 << 20, block_size=4096)
    with Volume.open(str(img), VolumeOptions(dataless=True)) as vol:   # drops file data
        vol.write(vol.create(vol.root_ino, b"f", 0o100644, 0, 0).st_ino, 0, b"x" * 8192)
    r = _simfs("verb", "find", img, ".")
    assert r.returncode == 0
    assert "simfs verb: warning: image was mounted data-less before" in r.stderr


def test_a_directory_is_not_an_image_even_read_only(tmp_path):
    from simfs.errors import ImageError
    for ro in (True, False):
        with pytest.raises(ImageError, match="is a directory"):
            Volume.open(str(tmp_path), VolumeOptions(read_only=ro))
