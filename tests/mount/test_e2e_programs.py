"""Programs that check their own bytes - git and SQLite - on a mount whose buffer cache is tiny
and whose image commits every 0.1 s, so that blocks, inodes and group descriptors are evicted,
written back and committed while the programs work. The oracles are the programs' own checks
(`git fsck --full`, `PRAGMA integrity_check`), e2fsck, and the kernel's ext2 reading the same
tree, byte for byte, from the image after the unmount.
"""

import os
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import manifest
from tests.helpers import kernel_mount

pytestmark = pytest.mark.mount

REPO = Path(__file__).resolve().parents[2]

CONFIGS = {   # id: (mount options, mkfs arguments)
    "delayed-softdep": ("alloc=delayed,writeback=softdep,cache=1M,commit=0.1", ()),
    "ext2fs-2010-1k-sync": ("alloc=ext2fs-2010,writeback=sync,cache=1M,commit=0.1", ("--block-size", "1024")),
}


#: where the image goes: a tmpfs where there is one. With commit=0.1 the daemon fsyncs the image
#: and its journal ten times a second, and git and SQLite fsync on top: on a disk shared with
#: other work that was a third of the time (66.6 s against 45.3 s, back to back), and what is
#: checked here is the bytes, not the host's durability
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@pytest.fixture
def tmp_path(tmp_path_factory):
    """This module's tmp_path (simfs_factory's too): on SCRATCH, removed afterwards."""
    if SCRATCH is None:
        yield tmp_path_factory.mktemp("programs")
        return
    d = Path(tempfile.mkdtemp(prefix="simfs-programs-", dir=SCRATCH))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def git(*args, cwd=None) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, f"git {' '.join(args)} exited {r.returncode}:\n{r.stderr}"
    return r.stdout


def sqlite_work(path: Path, journal: str) -> int:
    """Transactions of inserts, a delete and a VACUUM (which rewrites the whole file); the rows
    left, after SQLite's own integrity check."""
    db = sqlite3.connect(path)
    try:
        db.execute(f"PRAGMA journal_mode={journal}")    # WAL: a MAP_SHARED -shm file on the mount
        db.execute("CREATE TABLE t (a INTEGER PRIMARY KEY, b BLOB)")
        for i in range(8):
            with db:
                db.executemany("INSERT INTO t (b) VALUES (?)",
                               ((os.urandom(64 + (j * 37 + i) % 400),) for j in range(1500)))
        with db:
            db.execute("DELETE FROM t WHERE a % 3 = 0")
        db.execute("VACUUM")
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return db.execute("SELECT count(*) FROM t").fetchone()[0]
    finally:
        db.close()


@pytest.mark.skipif(not shutil.which("git") or not (REPO / ".git").exists(),
                    reason="needs git and this repository's history")
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_git_and_sqlite_keep_their_bytes(simfs_factory, tmp_path, config):
    options, mkfs_args = CONFIGS[config]
    m = simfs_factory(options, size="1G", mkfs_args=mkfs_args)
    repo = m.mnt / "repo"
    git("clone", "-q", "--no-local", str(REPO), str(repo))      # index-pack writes the pack
    git("fsck", "--full", "--strict", cwd=repo)
    for p in sorted(repo.rglob("*.py"))[:40]:                    # a commit of changed files
        p.write_text(p.read_text() + "\n# changed on the mount\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "changed", cwd=repo)
    git("repack", "-q", "-a", "-d", cwd=repo)                    # a new pack, the old ones removed
    git("fsck", "--full", "--strict", cwd=repo)
    assert sqlite_work(m.mnt / "rollback.db", "DELETE") == 8000
    assert sqlite_work(m.mnt / "wal.db", "WAL") == 8000
    want = manifest(m.mnt, skip_top=("lost+found", ".simfs"))

    m.umount()
    m.assert_clean()
    with kernel_mount(m.image, tmp_path / "kernel") as ro:
        got = manifest(ro)
    assert got == want
    m.mount()                                                    # and simfs reads it back alike
    assert manifest(m.mnt, skip_top=("lost+found", ".simfs")) == want
    git("fsck", "--full", "--strict", cwd=repo)
