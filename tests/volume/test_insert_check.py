"""A name is inserted into a directory block only after the records the kernel checks there
are sound (issue 38, the corpus's de-root-dotdot-inode-beyond): ext4_find_dest_de runs
ext4_check_dir_entry on each record up to the one it takes, and on every record of a block it
passes over, and answers EUCLEAN (recorded in the superblock) for an entry naming an inode past
the inode count. A record after the one taken is not checked, there or here."""

from __future__ import annotations

import errno
import struct

import pytest

from simfs.errors import FSError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.volume.test_containment import Image, _entry_offsets, assert_error_recorded, superblock

OPTS = VolumeOptions(disk="ideal")
ROOT = 2


def _image(tmp_path):
    """d holds ".", "..", a, b, c; a removed (its room joins ".."'s record), c then names
    inode 99999."""
    img = str(tmp_path / "i.img")
    mkfs(img, 8 << 20, block_size=1024)
    with Volume.open(img, OPTS) as v:
        d = v.mkdir(ROOT, b"d", 0o755, 0, 0).st_ino
        for n in (b"a", b"b", b"c"):
            v.create(d, n * 40, 0o644, 0, 0)
        v.unlink(d, b"a" * 40)
    raw = Image(img)
    c = [e for e in _entry_offsets(raw, d) if e[3] == b"c" * 40][0]
    raw.write(c[0], struct.pack("<I", 99999))
    return img, d


def test_a_record_before_the_slot_naming_a_wild_inode_is_euclean(tmp_path):
    img, d = _image(tmp_path)
    with Volume.open(img, OPTS) as v:
        assert v.dirs.lookup(v.inodes.get(d), b"x") is None     # a lookup checks only a match
        with pytest.raises(FSError) as e:                       # too long for ".."'s slack
            v.create(d, b"x" * 60, 0o644, 0, 0)
        assert e.value.errno == errno.EUCLEAN
        with pytest.raises(FSError) as e:
            v.mkdir(d, b"y" * 200, 0o755, 0, 0)                 # fits nowhere: a new block
        assert e.value.errno == errno.EUCLEAN
    assert_error_recorded(img)


def test_a_record_after_the_slot_is_not_checked(tmp_path):
    img, d = _image(tmp_path)
    with Volume.open(img, OPTS) as v:
        v.create(d, b"x", 0o644, 0, 0)          # into ".."'s slack, before the wild record
        assert v.lookup(d, b"x").st_nlink == 1
    assert superblock(img).error_count == 0
