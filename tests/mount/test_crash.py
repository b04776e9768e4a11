"""Crash tests: kill -9 of the daemon in the middle of an untar, for each write-back mode
(and delayed allocation, and 1 KiB blocks, with a cache small enough to write back throughout).

Afterwards: `simfs mount` refuses the image (not cleanly unmounted) and nothing is left
mounted; `simfs fsck --repair` leaves it e2fsck-clean; every file fsync'd before the kill is
intact; and every file tar had finished more than the durability bound (`commit=`, plus the
commit timer and a margin) before the kill is on the image with its contents.
"""

import hashlib
import os
import random
import signal
import subprocess
import threading
import time

import pytest

from tests.conftest import SimfsMount, e2fsck, fuse_mounts, make_image, run_simfs, sha256_file
from pathlib import Path

pytestmark = pytest.mark.mount

COMMIT = 1.0                   # -o commit=: the image trails what was written by at most this
BOUND = COMMIT + 0.25 + 0.75   # + the commit timer's period (commit/4) + a margin for the commit


def _kill_daemon(m: SimfsMount) -> None:
    pid = m.info()["pid"]
    os.kill(pid, signal.SIGKILL)
    for _ in range(500):
        if not os.path.exists(f"/proc/{pid}") or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            break
        time.sleep(0.01)
    subprocess.run(["fusermount3", "-u", "-z", str(m.mnt)], capture_output=True)
    m.mounted = False
    assert os.path.realpath(m.mnt) not in fuse_mounts()


def _write_fsynced(path, seed: int, size: int) -> str:
    data = random.Random(seed).randbytes(size)
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return hashlib.sha256(data).hexdigest()


def _recover_and_check(m: SimfsMount) -> None:
    r = run_simfs("mount", m.image, m.mnt, check=False)
    assert r.returncode == 2 and "not cleanly unmounted" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert os.path.realpath(m.mnt) not in fuse_mounts()
    r = run_simfs("fsck", "--repair", m.image, check=False)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    rc, out = e2fsck(m.image)
    assert rc == 0, out


@pytest.mark.parametrize("options, mkfs_args", [
    ("writeback=sync", ()), ("writeback=async", ()), ("writeback=softdep", ()),
    # a small cache keeps write-back going all through the untar: delayed pages placed at
    # write-back under soft updates; the 2010 allocator on 1 KiB blocks (indirect blocks
    # early), and delayed allocation there too
    ("alloc=delayed,writeback=softdep,cache=2M", ()),
    ("alloc=ext2fs-2010,writeback=async,cache=1M", ("-b", "1024")),
    ("alloc=delayed,writeback=async,cache=1M", ("-b", "1024")),
])
def test_kill_during_untar(tmp_path, source_tree, source_tarball, options, mkfs_args):
    src, _ = source_tree
    m = SimfsMount(make_image(tmp_path / "c.img", "512M", *mkfs_args), tmp_path / "mnt",
                   f"{options},commit={COMMIT:g}")
    m.mnt.mkdir()
    rng = random.Random(options)
    try:
        m.mount()
        digest = _write_fsynced(m.mnt / "fsynced", 1, 300_000)
        (m.mnt / "t").mkdir()
        tar = subprocess.Popen(["tar", "xvf", str(source_tarball), "-C", str(m.mnt / "t")],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        seen: list[tuple[float, str]] = []        # (when tar started it, name)

        def reader():
            for line in tar.stdout:
                seen.append((time.monotonic(), line.rstrip("\n")))
        t = threading.Thread(target=reader, daemon=True)
        t.start()
        delay = rng.uniform(2.5, 5.0)               # a random point of the untar
        time.sleep(delay)
        killed_at = time.monotonic()
        _kill_daemon(m)
        tar.wait(timeout=60)
        t.join(timeout=10)
        tar.stdout.close()
        # a file is finished once tar started the next one
        finished = [name for (_, name), (when, _) in zip(seen, seen[1:]) if when < killed_at - BOUND]
        files = [n for n in finished if os.path.isfile(src / n) and not os.path.islink(src / n)]
        assert len(files) > 20, f"only {len(files)} files old enough after {delay:.1f} s"

        _recover_and_check(m)
        m.mount("ro")
        assert sha256_file(m.mnt / "fsynced") == digest
        lost = [n for n in files if not os.path.isfile(m.mnt / "t" / n)
                or sha256_file(m.mnt / "t" / n) != sha256_file(src / n)]
        assert not lost, f"{len(lost)} of {len(files)} files finished > {BOUND} s before the kill " \
                         f"are missing or wrong on the image, e.g. {lost[:5]}"
        m.umount()
    finally:
        m.force_cleanup()
    rc, out = e2fsck(m.image)
    assert rc == 0, out


def test_fsync_and_sync_are_durable_with_a_long_commit_interval(tmp_path):
    """With commit=3600 only fsync and `simfs ctl`-style sync make data durable: an fsync'd
    file and data written before a sync survive the kill."""
    m = SimfsMount(make_image(tmp_path / "s.img", "64M"), tmp_path / "mnt", "commit=3600")
    m.mnt.mkdir()
    try:
        m.mount()
        digest = _write_fsynced(m.mnt / "fsynced", 2, 200_000)
        data = random.Random(3).randbytes(100_000)
        (m.mnt / "synced").write_bytes(data)
        (m.mnt / ".simfs" / "sync").write_text("1\n")
        (m.mnt / "late").write_bytes(b"x" * 50_000)          # after the sync: may be lost
        _kill_daemon(m)
        _recover_and_check(m)
        m.mount("ro")
        assert sha256_file(m.mnt / "fsynced") == digest
        assert (m.mnt / "synced").read_bytes() == data
        m.umount()
    finally:
        m.force_cleanup()
