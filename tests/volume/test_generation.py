"""Inode generations (i_generation), in-process: a new inode's differs from the one its number
had before, in the same mount and after a remount, whatever the wall clock does (they were a
counter from s_wtime, which a remount within the same second restarted); they are the same for
the same image and operations, and stored in the inode (debugfs shows them)."""

import re
import shutil
import subprocess
import time

from simfs.fs.namespace import Namespace
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, needs_e2fsprogs

pytestmark = needs_e2fsprogs
UUID = "00112233-4455-6677-8899-aabbccddeeff"


def _sit_out(vol) -> None:
    """Let a freed number out of Namespace.REUSE_AFTER's window (allocations and frees of other
    files; their own numbers, freed last, stay in it)."""
    names = [b"x%d" % i for i in range(Namespace.REUSE_AFTER)]
    for name in names:
        vol.create(vol.root_ino, name, 0o644, 0, 0)
    for name in names:
        vol.unlink(vol.root_ino, name)


def _reuse(img) -> list[tuple[int, int]]:
    """(inode, generation) of a file, of its number's next user in the same mount, and of the
    one after a remount; the number is the same each time (the placer takes the lowest free once
the number is out of the reuse window)."""
    out = []
    for remount in (False, False, True):
        vol = Volume.open(img, VolumeOptions(disk="ideal"))
        try:
            a = vol.create(vol.root_ino, b"f", 0o644, 0, 0)
            out.append((a.st_ino, a.generation))
            vol.unlink(vol.root_ino, b"f")
            if not remount:
                _sit_out(vol)
                b = vol.create(vol.root_ino, b"g", 0o644, 0, 0)
                out.append((b.st_ino, b.generation))
                vol.unlink(vol.root_ino, b"g")
        finally:
            vol.close()
    return out


def test_a_reused_number_gets_a_new_generation_across_remounts(tmp_path, monkeypatch):
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.0)    # a remount in the same second
    img = tmp_path / "a.img"
    mkfs(img, 8 << 20, block_size=1024, uuid=UUID, hash_seed=UUID)
    shutil.copyfile(img, tmp_path / "b.img")
    got = _reuse(img)
    assert len({ino for ino, _ in got}) == 1, got
    assert len({gen for _, gen in got}) == len(got), f"a generation came back: {got}"
    assert _reuse(tmp_path / "b.img") == got, "the same image and operations, other generations"
    assert_fsck_clean(img)


def test_the_generation_is_stored_in_the_inode(tmp_path):
    img = tmp_path / "a.img"
    mkfs(img, 8 << 20, block_size=1024)
    with Volume.open(img, VolumeOptions(disk="ideal")) as vol:
        a = vol.create(vol.root_ino, b"f", 0o644, 0, 0)
    out = subprocess.run(["debugfs", "-R", "stat /f", str(img)], capture_output=True, text=True).stdout
    assert int(re.search(r"Generation: (\d+)", out).group(1)) == a.generation
    with Volume.open(img, VolumeOptions(disk="ideal", read_only=True)) as vol:
        assert vol.lookup(vol.root_ino, b"f").generation == a.generation
