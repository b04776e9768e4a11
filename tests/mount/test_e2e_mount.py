"""Mounted behaviour of the front end: the control directory, fault isolation, lookup counts
(unlinked-but-open files), readdir, statfs, permissions, read-only, and the daemon's life
cycle (umount waits, busy umount, SIGTERM, foreground)."""

import errno
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from simfs.fuse.daemon import _alive, image_locked, wait_for_daemon
from tests.conftest import (SimfsMount, e2fsck, fuse_mounts, make_image, run, run_simfs,
                            simfs_argv)

pytestmark = pytest.mark.mount

MiB = 1 << 20


def _wait(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


# the control directory -------------------------------------------------------------------------
def test_control_dir_hidden_resolvable_and_stats(simfs_mount):
    m = simfs_mount
    ctl = m.mnt / ".simfs"
    assert ".simfs" not in os.listdir(m.mnt)
    assert ".simfs" not in run(["ls", "-a", m.mnt]).stdout.split()
    assert ctl.is_dir()
    names = set(os.listdir(ctl))
    assert {"stats", "info", "sync"} <= names and "fault" not in names
    assert not (ctl / "fault").exists()

    (m.mnt / "f").write_bytes(b"x" * (3 * MiB))
    assert (m.mnt / "f").read_bytes() == b"x" * (3 * MiB)
    (m.mnt / "f").unlink()
    # the inode (and its blocks) is freed when the kernel forgets it, soon after the unlink
    assert _wait(lambda: m.stats()["counters"].get("inodes_freed", 0) >= 1)
    doc = m.stats()
    for key in ("bytes_read", "bytes_written", "blocks_allocated", "blocks_freed",
                "inodes_allocated", "inodes_freed"):
        assert key in doc["counters"], key
    assert doc["counters"]["bytes_written"] >= 3 * MiB
    assert doc["counters"]["bytes_read"] >= 3 * MiB
    assert doc["counters"]["inodes_allocated"] >= 1 and doc["counters"]["inodes_freed"] >= 1
    assert doc["ops"]["create"] >= 1 and doc["ops"]["write"] >= 1 and doc["ops"]["unlink"] == 1
    assert doc["unexpected_exceptions"] == 0
    # requests on the control files are not counted (the path walk's getattr of / is)
    again = m.stats()
    assert {k: v for k, v in again["ops"].items() if k != "getattr"} == \
        {k: v for k, v in doc["ops"].items() if k != "getattr"}

    table = run_simfs("stats", m.mnt).stdout
    assert "ops" in table and "counters" in table and "bytes_written" in table
    assert json.loads(run_simfs("stats", "--json", m.mnt).stdout)["ops"]["unlink"] == 1
    info = m.info()
    assert info["image"] == str(m.image) and _alive(info["pid"])

    # the name cannot be taken over or removed
    with pytest.raises(FileExistsError):
        os.mkdir(m.mnt / ".simfs")
    with pytest.raises(PermissionError):
        os.rmdir(ctl)
    with pytest.raises(PermissionError):
        (ctl / "new").write_text("x")
    with pytest.raises(PermissionError):
        os.rename(m.mnt / "lost+found", ctl)


def test_sync_writes_the_image(simfs_mount):
    m = simfs_mount
    (m.mnt / "hello.txt").write_text("hello, image\n")
    (m.mnt / ".simfs" / "sync").write_text("1\n")
    r = subprocess.run(["debugfs", "-R", "cat /hello.txt", str(m.image)], capture_output=True, text=True)
    assert r.stdout == "hello, image\n", r.stderr


def test_handler_exception_answers_eio_and_mount_survives(simfs_factory):
    m = simfs_factory(options="debug_faults")
    fault = m.mnt / ".simfs" / "fault"
    (m.mnt / "data").write_bytes(b"payload")

    fault.write_text("mkdir\n")
    r = subprocess.run(["mkdir", str(m.mnt / "d")], capture_output=True, text=True)
    assert r.returncode != 0 and "Input/output error" in r.stderr
    os.mkdir(m.mnt / "d")                                   # the next one works

    # the kernel retries a failed read-ahead with a synchronous read, so arm a few
    fault.write_text("read 5\n")
    r = subprocess.run(["cat", str(m.mnt / "data")], capture_output=True)
    assert r.returncode != 0 and b"Input/output error" in r.stderr
    fault.write_text("clear\n")
    assert (m.mnt / "data").read_bytes() == b"payload"

    with pytest.raises(OSError) as e:
        fault.write_text("no_such_handler\n")
    assert e.value.errno == errno.EINVAL

    log = m.log_text()
    assert log.count("Traceback (most recent call last)") >= 2
    assert "InjectedFault: simfs: injected fault in mkdir" in log
    assert "injected fault in read" in log
    doc = m.stats()
    assert doc["unexpected_exceptions"] >= 2 and doc["errors"]["EIO"] == doc["unexpected_exceptions"]
    assert sorted(os.listdir(m.mnt)) == ["d", "data", "lost+found"]
    m.remount()
    assert (m.mnt / "data").read_bytes() == b"payload"


# lookup counts, readdir, statfs ----------------------------------------------------------------
def _freed(m) -> int:
    return m.stats()["counters"].get("inodes_freed", 0)


def test_unlinked_but_open_file_lives_until_closed(simfs_mount):
    m = simfs_mount
    p = m.mnt / "tmpfile"
    data = os.urandom(MiB + 123)
    with open(p, "w+b") as f:
        f.write(data)
        f.flush()
        freed = _freed(m)
        os.unlink(p)
        assert not p.exists()
        assert os.fstat(f.fileno()).st_nlink == 0
        f.seek(0)
        assert f.read() == data
        f.write(b"more")                                  # still writable
        assert _freed(m) == freed
    assert _wait(lambda: _freed(m) == freed + 1), "inode not freed after the last close"

    # rename over a file that is still open
    q, r = m.mnt / "q", m.mnt / "r"
    q.write_bytes(b"old contents")
    r.write_bytes(b"new")
    with open(q, "rb") as f:
        os.rename(r, q)
        assert f.read() == b"old contents"
    assert q.read_bytes() == b"new"
    m.remount()
    assert q.read_bytes() == b"new" and not p.exists()


def test_what_outlives_an_unlink_without_opening_still_sees_its_inode(simfs_mount):
    """simfs frees an unlinked inode nobody has open when the unlink ends (not at the kernel's
    asynchronous FORGET); a removed working directory and an O_PATH descriptor still stat it,
    with no link left, as on ext2."""
    m = simfs_mount
    d, f = m.mnt / "gone", m.mnt / "file"
    d.mkdir()
    f.write_bytes(b"x" * 5000)
    freed = _freed(m)
    out = run(["bash", "-c", f"cd {d} && rmdir {d} && stat -c %h ."])
    assert out.stdout.split() == ["0"], out
    fd = os.open(f, os.O_PATH)
    try:
        os.unlink(f)
        assert _freed(m) == freed + 2                   # both freed already
        assert os.fstat(fd).st_nlink == 0
    finally:
        os.close(fd)
    (m.mnt / "new").write_bytes(b"y")
    assert (m.mnt / "new").read_bytes() == b"y"


def test_readdir_large_directory_stable(simfs_mount):
    m = simfs_mount
    d = m.mnt / "big"
    d.mkdir()
    n = 3000
    for i in range(n):
        (d / f"file-{i:05d}-{'x' * (i % 40)}").touch()
    names = os.listdir(d)
    assert len(names) == n and len(set(names)) == n
    assert int(run(["sh", "-c", f"ls -f '{d}' | wc -l"]).stdout) == n + 2
    # delete while iterating: nothing reported twice, nothing that stays is missed
    seen = []
    with os.scandir(d) as it:
        for k, e in enumerate(it):
            seen.append(e.name)
            if k % 2 == 0:
                os.unlink(e.path)
    assert len(seen) == len(set(seen))
    left = set(os.listdir(d))
    assert left <= set(seen)
    run(["rm", "-rf", d])
    assert not d.exists()


def test_statfs_and_name_max(simfs_mount):
    m = simfs_mount
    s = os.statvfs(m.mnt)
    assert s.f_namemax == 255 and s.f_bsize == 4096 and s.f_blocks > 0 and s.f_files > 0
    assert os.pathconf(m.mnt, "PC_NAME_MAX") == 255
    (m.mnt / "blob").write_bytes(b"\1" * (8 * MiB))
    s2 = os.statvfs(m.mnt)
    assert s.f_bfree - s2.f_bfree >= 8 * MiB // 4096
    assert s.f_ffree - s2.f_ffree == 1
    (m.mnt / ("n" * 255)).touch()
    with pytest.raises(OSError) as e:
        (m.mnt / ("n" * 256)).touch()
    assert e.value.errno == errno.ENAMETOOLONG
    out = run(["df", "-P", m.mnt]).stdout
    assert out.splitlines()[1].split()[0] == str(m.image)     # the source is the image


def test_permissions_checked_by_kernel_for_other_users(tmp_path):
    """Mounted by root with allow_other + default_permissions: another user can read what
    the modes allow and is refused the rest."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv")
    image = make_image(tmp_path / "p.img", "64M")
    mnt = Path(tempfile.mkdtemp(prefix="simfs-perm-", dir="/tmp"))
    os.chmod(mnt, 0o755)
    m = SimfsMount(image, mnt)
    try:
        m.mount()
        (mnt / "public").write_text("for all\n")
        (mnt / "secret").write_text("root only\n")
        os.chmod(mnt / "secret", 0o600)
        nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        r = subprocess.run(nobody + ["cat", str(mnt / "public")], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout == "for all\n", r.stderr
        r = subprocess.run(nobody + ["cat", str(mnt / "secret")], capture_output=True, text=True)
        assert r.returncode != 0 and "Permission denied" in r.stderr
        r = subprocess.run(nobody + ["touch", str(mnt / "new")], capture_output=True, text=True)
        assert r.returncode != 0 and "Permission denied" in r.stderr
        os.mkdir(mnt / "drop", 0o777)
        os.chmod(mnt / "drop", 0o777)
        r = subprocess.run(nobody + ["touch", str(mnt / "drop" / "mine")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        st = os.stat(mnt / "drop" / "mine")
        assert (st.st_uid, st.st_gid) == (65534, 65534)
        m.umount()
        rc, out = e2fsck(image)
        assert rc == 0, out
    finally:
        m.force_cleanup()
        os.rmdir(mnt)


def test_read_only_mount(simfs_factory):
    m = simfs_factory()
    (m.mnt / "keep").write_text("kept\n")
    m.umount()
    m.mount("ro")
    assert (m.mnt / "keep").read_text() == "kept\n"
    for action in (lambda: (m.mnt / "new").write_text("x"),
                   lambda: os.mkdir(m.mnt / "dir"),
                   lambda: os.unlink(m.mnt / "keep")):
        with pytest.raises(OSError) as e:
            action()
        assert e.value.errno == errno.EROFS


# the daemon's life cycle -------------------------------------------------------------------------
def test_umount_returns_after_daemon_exit(simfs_mount):
    m = simfs_mount
    (m.mnt / "f").write_bytes(b"z" * (16 * MiB))
    pid = m.info()["pid"]
    m.umount()
    assert not _alive(pid)
    assert not image_locked(m.image)
    assert "written back and closed" in m.log_text()
    r = run_simfs("umount", m.mnt, check=False)
    assert r.returncode == 2 and "not mounted" in r.stderr


def test_the_daemon_keeps_none_of_its_caller_s_descriptors(tmp_path):
    """`flock LOCK simfs mount ...` held LOCK for as long as the mount lived: the daemon kept
    every descriptor its caller passed down."""
    import fcntl
    image = make_image(tmp_path / "a.img", "64M")
    mnt = tmp_path / "m"
    mnt.mkdir()
    lock = tmp_path / "lock"
    m = SimfsMount(image, mnt)
    try:
        with open(lock, "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            run_simfs("mount", image, mnt, pass_fds=(f.fileno(),))
        pid = m.info()["pid"]
        held = {os.readlink(f"/proc/{pid}/fd/{n}") for n in os.listdir(f"/proc/{pid}/fd")}
        assert str(lock) not in held, held
        with open(lock) as g:
            fcntl.flock(g, fcntl.LOCK_EX | fcntl.LOCK_NB)             # free again
    finally:
        m.force_cleanup()


def test_busy_umount_is_refused_then_works(simfs_mount):
    m = simfs_mount
    f = open(m.mnt / "open-file", "w")
    try:
        r = run_simfs("umount", m.mnt, check=False)
        assert r.returncode == 1 and "busy" in r.stderr.lower()
        assert len(r.stderr.strip().splitlines()) == 1
        assert os.path.realpath(m.mnt) in fuse_mounts()
    finally:
        f.close()
    m.umount()


def test_sigterm_unmounts_cleanly(simfs_mount):
    m = simfs_mount
    (m.mnt / "f").write_bytes(b"y" * MiB)
    pid = m.info()["pid"]
    os.kill(pid, signal.SIGTERM)
    assert _wait(lambda: os.path.realpath(m.mnt) not in fuse_mounts(), 30)
    assert wait_for_daemon(pid, str(m.image), timeout=60, quiet=True)
    m.mounted = False
    rc, out = e2fsck(m.image)
    assert rc == 0, out
    m.mount()
    assert (m.mnt / "f").read_bytes() == b"y" * MiB


def test_foreground_mount(tmp_path):
    image = make_image(tmp_path / "fg.img", "64M")
    mnt = tmp_path / "fg.mnt"
    mnt.mkdir()
    proc = subprocess.Popen(simfs_argv() + ["mount", "--foreground", str(image), str(mnt)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    m = SimfsMount(image, mnt)
    try:
        assert _wait(lambda: os.path.realpath(mnt) in fuse_mounts(), 20), proc.stderr
        assert _wait(lambda: (mnt / ".simfs" / "info").exists(), 10)
        (mnt / "fg.txt").write_text("foreground\n")
        m.umount()
        assert proc.wait(timeout=60) == 0
        err = proc.stderr.read()
        assert "mounted on" in err
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.stdout.close()
        proc.stderr.close()
        m.force_cleanup()
    rc, out = e2fsck(image)
    assert rc == 0, out
    r = subprocess.run(["debugfs", "-R", "cat /fg.txt", str(image)], capture_output=True, text=True)
    assert r.stdout == "foreground\n"


def test_control_mark_reset_drop_caches(simfs_mount):
    m = simfs_mount
    ctl = m.mnt / ".simfs"
    names = set(os.listdir(ctl))
    assert {"mark", "reset", "drop_caches"} <= names, f"control files missing: {sorted(names)}"
    (m.mnt / "a").write_bytes(b"a" * 100_000)
    (ctl / "mark").write_text("readback\n")
    (ctl / "drop_caches").write_text("1\n")
    assert (m.mnt / "a").read_bytes() == b"a" * 100_000
    doc = m.stats()
    phases = [p["name"] for p in doc["time"]["phases"]]
    assert phases[-1] == "readback"
    last = doc["time"]["phases"][-1]
    assert last["counters"].get("cache_misses", 0) > 0        # the cache really was cold
    with pytest.raises(OSError) as e:
        (ctl / "mark").write_text("\n")
    assert e.value.errno == errno.EINVAL
    (ctl / "reset").write_text("1\n")
    doc = m.stats()
    assert doc["ops"].get("write", 0) == 0 and [p["name"] for p in doc["time"]["phases"]] == ["all"]
    assert "simulated time" in run_simfs("stats", m.mnt).stdout


def test_umount_after_daemon_was_killed(tmp_path):
    """A daemon killed with SIGKILL leaves a dead mount (ENOTCONN): simfs umount clears it,
    and the mount point can be used again; the image, left "not clean", is refused read-write
    until `simfs fsck --repair`."""
    image = make_image(tmp_path / "k.img", "64M")
    mnt = tmp_path / "k.mnt"
    mnt.mkdir()
    m = SimfsMount(image, mnt)
    try:
        m.mount()
        pid = m.info()["pid"]
        os.kill(pid, signal.SIGKILL)
        assert _wait(lambda: not _alive(pid))
        r = run_simfs("mount", image, mnt, check=False)
        assert r.returncode == 2 and "already a mount point" in r.stderr
        r = run_simfs("umount", mnt)
        assert "daemon gone" in r.stderr
        assert os.path.realpath(mnt) not in fuse_mounts()
        r = run_simfs("mount", image, mnt, check=False)
        assert r.returncode == 2 and "not cleanly unmounted" in r.stderr and "--repair" in r.stderr
        assert os.path.realpath(mnt) not in fuse_mounts()
        r = run_simfs("fsck", "--repair", image, check=False)
        assert r.returncode in (0, 1) and r.stdout.startswith("clean after e2fsck -fy"), r.stdout
        m.mount()
        m.umount()
    finally:
        m.force_cleanup()
