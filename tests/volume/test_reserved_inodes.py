"""Reserved inodes (1-10) are never handed out, even when the image's bitmap says they are
free (simfs.fs.freespace marks them in use whatever the bitmap holds)."""

from __future__ import annotations

import subprocess

from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import needs_e2fsprogs


@needs_e2fsprogs
def test_a_bitmap_that_frees_reserved_inodes_does_not_hand_them_out(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=1024, blocks_per_group=1024, inodes_per_group=64)
    for ino in range(3, 11):                       # every reserved inode but the root (2), and 1
        subprocess.run(["debugfs", "-w", "-R", f"freei <{ino}>", str(img)], capture_output=True, check=True)
    with Volume.open(img, VolumeOptions(alloc="first-free")) as vol:
        made = [vol.create(vol.root_ino, b"f%d" % i, 0o644, 0, 0).st_ino for i in range(12)]
    assert min(made) >= 12, made                   # 11 is lost+found
