"""Corrupted images contained, through a real mount and real tools (issue 38, items 4 and 6).

A directory entry naming an unused inode must not cut `ls` short (simfs answered ENOENT for
its attributes and glibc took that as the end: 197 of 571 names); a mkdir refused for lack of
space must leave an image e2fsck finds clean (it left a "zero-length directory").
"""

import errno
import os
import struct
import subprocess

import pytest

from tests.conftest import SimfsMount, e2fsck, make_image
from tests.volume.test_containment import Image, _entry_offsets

pytestmark = pytest.mark.mount


@pytest.fixture
def mount(tmp_path):
    made = []

    def factory(size: str, *mkfs_args) -> SimfsMount:
        img = make_image(tmp_path / "c.img", size, *mkfs_args)
        mnt = tmp_path / "c.mnt"
        mnt.mkdir()
        m = SimfsMount(img, mnt)
        made.append(m)
        return m
    yield factory
    for m in made:
        m.force_cleanup()


def test_ls_lists_every_good_name_past_an_entry_naming_an_unused_inode(mount):
    m = mount("16M", "--block-size", "1024")
    m.mount()
    d = m.mnt / "d"
    d.mkdir()
    names = [f"file-with-a-longish-name-{i:04d}" for i in range(571)]
    for n in names:
        (d / n).write_bytes(b"x")
    ino = os.stat(d).st_ino
    m.umount()
    m.assert_clean()
    raw = Image(m.image)
    entries = [e for e in _entry_offsets(raw, ino) if e[3] not in (b".", b"..")]
    victim = entries[100]                               # an early one: 470 names come after it
    raw.write(victim[0], struct.pack("<I", raw.geo.inodes_count - 5))    # an unused inode
    m.mount()
    r = subprocess.run(["ls", "-1", str(d)], capture_output=True, text=True, timeout=120)
    listed = r.stdout.split()
    assert sorted(listed) == sorted(names), r.stderr        # the bad name too, as ext2 lists it
    r = subprocess.run(["stat", str(d / victim[3].decode())], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "Structure needs cleaning" in r.stderr
    m.umount()
    sb = Image(m.image).sb
    assert sb.state & 2 and sb.error_count >= 1          # recorded: e2fsck -p will check it
    rc, out = e2fsck(m.image)
    assert rc == 4 and "deleted/unused inode" in out            # the oracle sees the same entry


def test_mkdir_refused_for_lack_of_space_leaves_a_clean_image(mount):
    m = mount("4M", "--block-size", "1024")
    m.mount()
    d = m.mnt / "d"
    d.mkdir()
    try:
        with open(m.mnt / "fill", "wb") as f:
            while True:
                f.write(b"f" * 65536)
                f.flush()
    except OSError as e:
        assert e.errno == errno.ENOSPC
    try:                                     # the directory's blocks are full too
        for i in range(10000):
            (d / (f"n{i:04d}-" + "x" * 200)).mkdir()
    except OSError as e:
        assert e.errno == errno.ENOSPC
    for name in ("last-dir-" + "y" * 200, "again-" + "z" * 200):
        with pytest.raises(OSError) as e:
            (d / name).mkdir()
        assert e.value.errno == errno.ENOSPC
    m.umount()
    m.assert_clean()
