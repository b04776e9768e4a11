"""renameat2's RENAME_WHITEOUT in-process (xfstests generic/078, generic/626): the old name is
left naming a whiteout, a 0:0 character device with mode 0 made in the same operation, as
ext4's ext4_whiteout_for_rename makes it. Oracles: e2fsck -fn, and the kernel's ext2 driver on
a read-only loop mount; an op log with a whiteout replays to the same statistics."""

import errno
import os
import shutil
import stat

import pytest

from simfs.inprocess.oplog import RecordingVolume, iter_ops
from simfs.inprocess.replay import replay
from simfs.errors import FSError
from simfs.fs.types import RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_WHITEOUT
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, fill_volume, kernel_mount, needs_e2fsprogs

pytestmark = needs_e2fsprogs


def _is_whiteout(a, uid=0, gid=0) -> bool:
    return (stat.S_ISCHR(a.st_mode) and stat.S_IMODE(a.st_mode) == 0 and a.st_rdev == 0
            and a.st_nlink == 1 and (a.st_uid, a.st_gid) == (uid, gid))


@pytest.mark.serial
def test_whiteout_left_at_the_old_name(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=1024)
    with Volume.open(img, VolumeOptions(disk="ideal")) as vol:
        r = vol.root_ino
        a, b = (vol.mkdir(r, name, 0o755, 0, 0).st_ino for name in (b"a", b"b"))
        f = vol.create(a, b"f", 0o644, 0, 0).st_ino
        vol.write(f, 0, b"data")
        free = vol.statfs().f_ffree
        wh = vol.rename(a, b"f", b, b"g", RENAME_WHITEOUT, 1000, 1001)
        assert _is_whiteout(wh, 1000, 1001)
        assert vol.lookup(b, b"g").st_ino == f and vol.read(f, 0, 10) == b"data"
        assert vol.lookup(a, b"f") == wh and vol.statfs().f_ffree == free - 1
        # a directory moved out with a whiteout: the old parent loses its ".." link only
        d = vol.mkdir(a, b"d", 0o755, 0, 0).st_ino
        links = vol.getattr(a).st_nlink, vol.getattr(b).st_nlink
        vol.rename(a, b"d", b, b"d", RENAME_WHITEOUT | RENAME_NOREPLACE)
        assert _is_whiteout(vol.lookup(a, b"d"))
        assert (vol.getattr(a).st_nlink, vol.getattr(b).st_nlink) == (links[0] - 1, links[1] + 1)
        assert vol.lookup(d, b"..").st_ino == b
        # over an existing name: the target goes, the source's name becomes a whiteout
        vol.create(r, b"src", 0o600, 0, 0)
        victim = vol.create(r, b"dst", 0o600, 0, 0).st_ino
        vol.rename(r, b"src", r, b"dst", RENAME_WHITEOUT)
        assert _is_whiteout(vol.lookup(r, b"src")) and vol.lookup(r, b"dst").st_ino != victim
        for flags, err in ((RENAME_WHITEOUT | RENAME_EXCHANGE, errno.EINVAL), (RENAME_WHITEOUT | 8, errno.EINVAL),
                           (RENAME_WHITEOUT | RENAME_NOREPLACE, errno.EEXIST)):
            with pytest.raises(FSError) as e:
                vol.rename(b, b"g", r, b"dst", flags)
            assert e.value.errno == err
        assert vol.lookup(b, b"g").st_ino == f
        with pytest.raises(FSError) as e:       # a whiteout is removed like any device node
            vol.rename(r, b"src", r, b"src2", RENAME_WHITEOUT, -1, 0)
        assert e.value.errno == errno.EINVAL
        vol.unlink(r, b"src")
    assert_fsck_clean(img)
    with kernel_mount(img, tmp_path / "k") as k:
        st = os.lstat(k / "a" / "f")
        assert stat.S_ISCHR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0 and st.st_rdev == 0
        assert (st.st_uid, st.st_gid) == (1000, 1001)
        assert stat.S_ISCHR(os.lstat(k / "a" / "d").st_mode) and os.path.isdir(k / "b" / "d")
        assert (k / "b" / "g").read_bytes() == b"data" and not os.path.exists(k / "src")


def test_no_room_for_the_new_name_leaves_no_whiteout(tmp_path):
    """ENOSPC adding the new name (its directory needs a block): nothing changed, the
    whiteout's inode given back (ext4_rename's end_rename path)."""
    img = tmp_path / "img"
    mkfs(img, 4 << 20, block_size=1024)
    with Volume.open(img) as vol:
        r = vol.root_ino
        full = vol.mkdir(r, b"full", 0o755, 0, 0).st_ino
        vol.create(r, b"f", 0o644, 0, 0)
        for n in range(4):      # its one block: ".", ".." and 4 records of 208 bytes, 168 left
            vol.create(full, b"%0200d" % n, 0o644, 0, 0)
        assert vol.getattr(full).st_size == 1024
        fill_volume(vol)
        free = vol.statfs().f_ffree
        with pytest.raises(FSError) as e:
            vol.rename(r, b"f", full, b"x" * 250, RENAME_WHITEOUT)
        assert e.value.errno == errno.ENOSPC
        assert vol.statfs().f_ffree == free and stat.S_ISREG(vol.lookup(r, b"f").st_mode)
    assert_fsck_clean(img)


def test_a_whiteout_replays_from_the_op_log(tmp_path):
    img, log = tmp_path / "a.img", tmp_path / "run.log"
    mkfs(img, 8 << 20, block_size=4096)
    shutil.copyfile(img, tmp_path / "pristine.img")
    opts = VolumeOptions(disk="sata7200", stats=str(tmp_path / "a.json"))
    vol = RecordingVolume.start(Volume.open(img, opts), str(log), "test")
    r = vol.root_ino
    vol.create(r, b"f", 0o644, 0, 0)
    vol.rename(r, b"f", r, b"g", RENAME_WHITEOUT, 7, 8)
    wh = vol.lookup(r, b"f")
    vol.setattr(wh.st_ino, uid=9)
    vol.unlink(r, b"f")
    vol.close()
    rec = next(rec for _, rec in iter_ops(str(log)) if rec[0] == "rename_whiteout")
    assert rec[1] == 2 and rec[-2:] == [7, 8]       # the whiteout's handle; its owner
    got = replay(str(log), str(tmp_path / "pristine.img"), VolumeOptions(disk="sata7200"))
    import json
    assert got["time"] == json.loads((tmp_path / "a.json").read_text())
    assert_fsck_clean(tmp_path / "pristine.img")
