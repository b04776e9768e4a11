"""A writer's close drops the file's block reservation (Linux ext2_release_file), whatever
lookups still hold the inode; a reader's close does not. Before, the window lived until the
kernel forgot the inode, which a host with memory to spare never does during a run: every new
file then searched past the windows of all the files already closed."""

from __future__ import annotations

from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs


def _windows(vol) -> int:
    return len(vol.placement.allocator.tree.nodes)


def test_a_writers_close_discards_the_window(tmp_path):
    img = tmp_path / "r.img"
    mkfs(img, 64 << 20, block_size=4096)
    with Volume.open(img, VolumeOptions(alloc="ext2", disk="ideal")) as vol:
        empty = _windows(vol)
        inos = []
        for i in range(5):
            ino = vol.create(vol.root_ino, b"f%d" % i, 0o100644, 0, 0).st_ino
            vol.hold(ino)                       # the kernel's lookup reference
            vol.hold(ino)                       # the open file
            vol.write(ino, 0, b"x" * 20000)
            inos.append(ino)
        assert _windows(vol) == empty + 5
        vol.hold(inos[0])
        vol.release_file(inos[0], writer=False)  # a reader's close: the window stays
        assert _windows(vol) == empty + 5
        for ino in inos:
            vol.release_file(ino, writer=True)
        assert _windows(vol) == empty           # the lookups still hold every inode
        assert all(vol.holds[ino] == 1 for ino in inos)
