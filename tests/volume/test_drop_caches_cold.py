"""drop_caches is cold for the inodes the kernel still references (issue 51, item 4): the host
kernel keeps the inodes it references whatever simfs drops, so a pinned in-core inode is read
again from its inode-table block at its next use, as after a fresh mount."""

from __future__ import annotations

from simfs.fs.types import VolumeOptions
from simfs.fs.volume import Volume
from simfs.ondisk.mkfs import mkfs

FILES = 40


def _walk(vol, held: bool) -> int:
    """Look up and stat every file of /d (holding each, as the kernel's lookups do); the
    inode-table requests that took."""
    vol.mark("walk")
    d = vol.lookup(vol.root_ino, b"d").st_ino
    for i in range(FILES):
        a = vol.lookup(d, b"f%d" % i)
        if held:
            vol.hold(a.st_ino)
        vol.getattr(a.st_ino)
    phase = [p for p in vol.stats_snapshot()["phases"] if p["name"] == "walk"][-1]
    return phase["counters"].get("disk_requests_inode", 0)


def test_held_inodes_are_read_again_after_drop_caches(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 16 << 20, block_size=1024)
    with Volume.open(img, VolumeOptions()) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        vol.hold(d)
        for i in range(FILES):
            vol.hold(vol.create(d, b"f%d" % i, 0o644, 0, 0).st_ino)   # the kernel keeps them
        vol.drop_caches()
        after_drop = _walk(vol, held=False)
        vol.drop_caches()
        again = _walk(vol, held=False)
    with Volume.open(img, VolumeOptions()) as vol:
        fresh = _walk(vol, held=True)
    assert fresh > FILES // 8            # one request per inode-table block at least
    assert after_drop == again == fresh
