"""simfs.fs.inodes: a changed inode marks its inode-table block dirty at once, and its fields
reach the block's bytes before anything can read them there.

The bytes are packed late (once per inode, not once per change), so each way a block's bytes
are read is checked: the image after a commit (read back with the ext2 decoder and with
debugfs), an in-core copy dropped by the LRU and read back from its block, a freed inode,
and the in-core copies dropped all at once (drop_caches).
"""

from __future__ import annotations

import shutil
import stat
import subprocess

import pytest

from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.inode import Inode
from simfs.ondisk.mkfs import mkfs


@pytest.fixture
def vol(tmp_path):
    img = tmp_path / "i.img"
    mkfs(img, 8 << 20, block_size=1024)
    with Volume.open(img, VolumeOptions(disk="ideal")) as v:
        yield v


def in_block(vol, ino: int) -> Inode:
    """The inode as the bytes of its cached inode-table block hold it now."""
    geo = vol.geo
    off = (ino - 1) % geo.inodes_per_group % geo.inodes_per_block * geo.inode_size
    return Inode.unpack(ino, vol.cache.peek(vol.inodes.block_of(ino))[off:off + geo.inode_size])


def test_a_change_dirties_the_block_at_once_and_the_commit_writes_the_fields(vol, tmp_path):
    ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
    block = vol.inodes.block_of(ino)
    vol.commit()
    vol.setattr(ino, mode=0o600, uid=4242, gid=77, size=12345)
    assert vol.cache.is_dirty(block)                      # the model sees the change at once
    assert ino in vol.inodes.unpacked                     # the bytes follow later
    vol.commit()
    assert not vol.inodes.unpacked
    on_image = in_block(vol, ino)
    assert (stat.S_IMODE(on_image.mode), on_image.uid, on_image.gid, on_image.size) == (0o600, 4242, 77, 12345)
    if shutil.which("debugfs"):
        out = subprocess.run(["debugfs", "-R", "stat <%d>" % ino, str(vol.path)], capture_output=True,
                             text=True, check=True).stdout
        assert "User:  4242" in out and "Group:    77" in out and "Size: 12345" in out


def test_an_inode_dropped_from_the_lru_reads_back_with_its_changes(vol):
    vol.inodes.capacity = 4
    inos = [vol.create(vol.root_ino, b"f%d" % i, 0o644, 0, 0).st_ino for i in range(3)]
    vol.setattr(inos[0], uid=1234)
    for i in range(20):                                   # push inos[0] out of the in-core LRU
        vol.create(vol.root_ino, b"g%d" % i, 0o644, 0, 0)
    assert inos[0] not in vol.inodes.lru and inos[0] not in vol.inodes.unpacked
    assert vol.getattr(inos[0]).st_uid == 1234            # read back from the block's bytes


def test_a_freed_inode_is_in_its_block_as_freed(vol):
    ino = vol.create(vol.root_ino, b"gone", 0o644, 0, 0).st_ino
    vol.unlink(vol.root_ino, b"gone")
    assert ino not in vol.inodes.unpacked
    freed = in_block(vol, ino)
    assert freed.links == 0 and freed.dtime != 0


def test_dropping_the_in_core_copies_keeps_every_change(vol):
    ino = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
    vol.setattr(ino, mtime_ns=1_234_567_891_000_000_000)
    vol.inodes.drop_all()                                 # as drop_caches does, after its sync
    assert not vol.inodes.unpacked and not vol.inodes.lru
    assert vol.getattr(ino).st_mtime_ns == 1_234_567_891_000_000_000
