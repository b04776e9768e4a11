"""`simfs umount` with a copy of the mount alive in another mount namespace (`unshare -m sleep
600 &` while mounted): it used to wait without limit, saying nothing useful. Now it gives up
within its bound, names the process whose namespace holds the copy (one line, exit status 2),
and once that process goes the daemon writes the image back and exits by itself.
Run under `flock /tmp/simfs-mount.lock`."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from simfs.fuse.daemon import wait_for_daemon
from tests.conftest import e2fsck, fuse_mounts, make_image, run_simfs

pytestmark = pytest.mark.mount


def _copy_made(pid: int, mnt: str, seconds: float = 20) -> bool:
    """The namespace of `pid` is not ours and holds its copy of the mount on `mnt`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if os.readlink(f"/proc/{pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt"):
                with open(f"/proc/{pid}/mountinfo") as f:
                    if any(line.split()[4] == mnt for line in f):
                        return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("timeout", [None, 3])
def test_umount_names_the_namespace_that_holds_the_mount(tmp_path, timeout):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1)")
    image, mnt = make_image(tmp_path / "d.img", "64M"), tmp_path / "mnt"
    mnt.mkdir()
    real = os.path.realpath(mnt)
    run_simfs("mount", image, mnt)
    holder = None
    try:
        (mnt / "f").write_bytes(b"x" * 100000)
        holder = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sleep", "600"])
        assert _copy_made(holder.pid, real), "unshare made no copy of the mount"
        t0 = time.monotonic()
        args = ["--timeout", str(timeout)] if timeout is not None else []
        r = run_simfs("umount", *args, mnt, check=False, timeout=120)
        took = time.monotonic() - t0
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, (r.returncode, r.stderr)
        assert f"held by pid {holder.pid} (sleep) at {real}" in lines[0], lines[0]
        assert f"nsenter -t {holder.pid} -m umount {real}" in lines[0], lines[0]
        assert took < (timeout or 10) + 8, took          # bounded: 10 s once seen held, or --timeout
        assert real not in fuse_mounts()                  # ours is gone; the daemon lives on
        holder.kill()                                     # the way out the message names
        holder.wait()
        holder = None
        assert wait_for_daemon(None, str(image), timeout=60, quiet=True), "daemon did not exit"
        assert e2fsck(image)[0] == 0
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        if real in fuse_mounts():
            subprocess.run(["fusermount3", "-u", "-z", real], capture_output=True)
        wait_for_daemon(None, str(image), timeout=60, quiet=True)
