"""The model decides from the operation sequence, not from when the host's FORGETs come
(issue 51, item 2): the kernel sends FORGET for an unlinked inode when its forget batching lets
it (up to 8 requests late, by how its queues raced), so an inode number handed out again at the
FORGET made the next file's number, and its inode-table block, depend on the host. A freed
number sits out Namespace.REUSE_AFTER inode allocations and frees whenever its FORGET comes."""

from __future__ import annotations

from simfs.fs.volume import Volume
from simfs.ondisk.mkfs import mkfs


def _numbers(img, forget_at: int) -> list[int]:
    """Create f (three kernel references), unlink it, then create ten files; the FORGET of f's
    references arrives after `forget_at` of them. The new files' inode numbers."""
    mkfs(img, 8 << 20, block_size=4096)
    got = []
    with Volume.open(img) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        vol.hold(ino, 3)
        vol.unlink(vol.root_ino, b"f")
        for i in range(10):
            if i == forget_at:
                vol.drop(ino, 3)
            a = vol.create(vol.root_ino, b"g%d" % i, 0o644, 0, 0)
            vol.hold(a.st_ino)
            got.append(a.st_ino)
    return got


def test_a_late_forget_changes_no_choice(tmp_path):
    runs = [_numbers(tmp_path / f"img{k}", k) for k in (0, 1, 5, 10)]
    assert all(r == runs[0] for r in runs), runs


def test_a_freed_number_comes_back_after_reuse_after_events(tmp_path):
    """...and then it is handed out again, as ext2 would have at once."""
    from simfs.fs.namespace import Namespace
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=4096)
    with Volume.open(img) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        vol.unlink(vol.root_ino, b"f")
        made = [vol.create(vol.root_ino, b"g%d" % i, 0o644, 0, 0).st_ino
                for i in range(Namespace.REUSE_AFTER + 1)]
        assert ino not in made[:-1] and made[-1] == ino
