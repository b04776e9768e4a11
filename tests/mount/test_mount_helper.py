"""Mounting like any file system: `mount -t fuse.simfs`, an fstab line (`mount -T`, never the
machine's /etc/fstab), `simfs ctl`, the summary at unmount and `simfs stats --diff`.

The helper is put in /sbin by `simfs install-helper` (what `make venv` does as root) for this
module and the previous state restored afterwards. Run under `flock /tmp/simfs-mount.lock`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from simfs.fs.types import VolumeOptions
from simfs.fuse.daemon import in_utab
from tests.conftest import e2fsck, fuse_mounts, make_image, run, run_simfs

pytestmark = pytest.mark.mount
HELPER = Path("/sbin/mount.fuse.simfs")


@pytest.fixture(scope="module")
def helper():
    if shutil.which("mount") is None:
        pytest.skip("mount(8) not installed")
    old = HELPER.read_text() if HELPER.exists() else None
    if old is not None and "simfs install-helper" not in old:
        pytest.skip(f"{HELPER} exists and was not written by simfs")
    run_simfs("install-helper")
    assert "simfs.cli.helper" in HELPER.read_text()
    yield HELPER
    if old is None:
        HELPER.unlink(missing_ok=True)
    else:
        HELPER.write_text(old)


def source_and_flags(mnt: Path) -> tuple[str, list[str]]:
    """The mount's source (fsname) and its mount flags, from /proc/self/mountinfo."""
    real = os.path.realpath(mnt)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if left.split()[4] == real:
                return right.split()[1], left.split()[5].split(",")
    raise AssertionError(f"{mnt} is not mounted")


def released(image: Path) -> None:
    from simfs.fuse.daemon import wait_for_daemon
    assert wait_for_daemon(None, str(image), timeout=120, quiet=True), "daemon did not exit"


def cleanup(mnt: Path, image: Path) -> None:
    if os.path.realpath(mnt) in fuse_mounts():
        subprocess.run(["umount", str(mnt)], capture_output=True)
        if os.path.realpath(mnt) in fuse_mounts():
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)
    released(image)


def phase(doc: dict, name: str) -> dict:
    return next(p for p in doc["time"]["phases"] if p["name"] == name)


def test_mount_t_ctl_summary_and_diff(helper, tmp_path):
    image, mnt = make_image(tmp_path / "d.img", "64M"), tmp_path / "mnt"
    mnt.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}   # the helper finds simfs itself
    try:
        trace = tmp_path / "trace.csv"
        run(["mount", "-t", "fuse.simfs", image, mnt, "-o", f"alloc=cg,disk=wd1200jb,trace={trace}"], env=env)
        source, flags = source_and_flags(mnt)
        d = VolumeOptions()
        assert source == str(image)            # the image, as a device: findmnt and mount -a know it
        assert "nosuid" not in flags and "nodev" not in flags   # mount(8)'s defaults, as for ext2
        r = run(["findmnt", "-n", "-o", "TARGET,FSTYPE", "--source", image])
        assert r.stdout.split() == [str(mnt), "fuse.simfs"]
        pol = json.loads(run_simfs("stats", "--json", mnt).stdout)["policies"]
        assert "alloc=cg" in pol and "disk=wd1200jb" in pol
        assert f"writeback={d.writeback}" in pol and f"dirorder={d.dirorder}" in pol   # defaults
        assert "noatime" in flags and "relatime" not in flags
        info = json.loads((mnt / ".simfs" / "info").read_bytes())
        opts = info["options"]
        assert opts["alloc"] == "cg" and opts["disk"] == "wd1200jb"
        assert opts["writeback"] == d.writeback and opts["cache"] == d.cache and opts["maxio"] == d.maxio
        assert info["stats"] == f"{image}.stats.json"

        data = os.urandom(256 << 10)   # fits in one of the drive's segments
        (mnt / "f").write_bytes(data)
        run_simfs("ctl", mnt, "sync")
        for name in ("cold1", "cold2"):             # the same cold read twice
            run_simfs("ctl", mnt, "drop-caches")
            run_simfs("ctl", mnt, "mark", name)
            assert (mnt / "f").read_bytes() == data
        doc = json.loads((mnt / ".simfs" / "stats").read_bytes())
        c1, c2 = phase(doc, "cold1")["counters"], phase(doc, "cold2")["counters"]
        assert c1["disk_reads"] > 0 and c1["seeks"] >= 0 and "drive_cache_hits" in c1
        assert c2["cache_misses"] > 0

        before = tmp_path / "before.json"
        before.write_text(run_simfs("stats", "--json", mnt).stdout)
        r = run_simfs("umount", mnt)
        assert "write-back at unmount" in r.stdout and "cold2" in r.stdout and "total" in r.stdout
        assert os.path.realpath(mnt) not in fuse_mounts()
    finally:
        cleanup(mnt, image)
    # drop-caches emptied the drive's buffer too: each cold phase's first read goes to the
    # media (here, had the drive kept what was read before, the directory block would be a hit)
    from simfs.blockio.trace import read_trace
    t = read_trace(trace)
    for name in ("cold1", "cold2"):
        first = next(i for i, (p, op) in enumerate(zip(t["phase"], t["op"])) if p == name and op == "R")
        assert t["cache_hit"][first] == 0 and t["transfer"][first] > 0, name
    final = json.loads(Path(f"{image}.stats.json").read_text())
    um = final["unmount"]
    assert um["elapsed"] >= 0 and final["total"]["counters"]["seeks"] >= um["counters"]["seeks"]
    r = run_simfs("stats", "--diff", before, f"{image}.stats.json", "--json")
    rows = {x["name"]: x for x in json.loads(r.stdout)["rows"]}
    assert rows["disk writes"]["diff"] == um["counters"]["disk_writes"]    # only the write-back
    r = run_simfs("stats", "--diff", before, f"{image}.stats.json")
    assert "| disk writes" in r.stdout and "B - A" in r.stdout
    rc, out = e2fsck(image)
    assert rc == 0, out


def test_fstab_line(helper, tmp_path):
    image, mnt = make_image(tmp_path / "f.img", "64M"), tmp_path / "mnt"
    mnt.mkdir()
    fstab = tmp_path / "fstab"
    fstab.write_text("# a temporary fstab: the machine's /etc/fstab is never touched\n"
                     f"{image} {mnt} fuse.simfs noauto,_netdev,nofail,x-simfs-test=1,user,"
                     "disk=sata7200,rpm=5400,dirorder=hash,nostats 0 0\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        run(["mount", "-T", fstab, mnt], env=env)
        source, flags = source_and_flags(mnt)
        assert source == str(image)
        pol = json.loads((mnt / ".simfs" / "info").read_bytes())["options"]["policies"]
        assert "disk=sata7200+rpm=5400" in pol and "dirorder=hash" in pol
        auto = tmp_path / "fstab.auto"      # mount -a knows the line is mounted: no second mount
        auto.write_text(f"{image} {mnt} fuse.simfs disk=sata7200,rpm=5400,dirorder=hash,nostats 0 0\n")
        run(["mount", "-a", "-T", auto], env=env)
        assert fuse_mounts().count(os.path.realpath(mnt)) == 1
        assert {"noexec", "nosuid", "nodev"} <= set(flags)          # what `user` implies
        info = json.loads((mnt / ".simfs" / "info").read_bytes())
        assert info["options"]["disk"] == "sata7200,rpm=5400" and info["options"]["dirorder"] == "hash"
        assert info["stats"] is None
        (mnt / "x").write_text("hello\n")
        run(["umount", mnt])
        released(image)
    finally:
        cleanup(mnt, image)
    assert not Path(f"{image}.stats.json").exists()        # nostats
    run(["mount", "-T", fstab, mnt], env=env)
    try:
        assert (mnt / "x").read_text() == "hello\n"
        assert in_utab(mnt)                          # libmount keeps _netdev,user,x-simfs-test=1
        r = run_simfs("umount", mnt)
        assert r.stdout == ""                        # nostats: no summary to give
        assert not in_utab(mnt)                      # simfs umount went through umount(8)
    finally:
        cleanup(mnt, image)
    rc, out = e2fsck(image)
    assert rc == 0, out


def test_foreground_mount_has_the_last_word(tmp_path):
    """A foreground mount prints the summary when it ends (here: `simfs umount` from outside)."""
    import time

    from tests.conftest import simfs_argv
    image, mnt = make_image(tmp_path / "g.img", "64M"), tmp_path / "mnt"
    mnt.mkdir()
    p = subprocess.Popen(simfs_argv() + ["mount", "--foreground", str(image), str(mnt)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while os.path.realpath(mnt) not in fuse_mounts():
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read() if p.poll() else "timeout"
            time.sleep(0.05)
        (mnt / "a").write_text("x" * 10000)
        r = run_simfs("umount", "-q", mnt)
        assert r.stdout == ""                                  # -q: no summary from umount
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
        cleanup(mnt, image)
    assert p.returncode == 0, err
    assert "write-back at unmount" in out and "total" in out and f"{image}.stats.json" in out
    assert json.loads(Path(f"{image}.stats.json").read_text())["unmount"]["counters"]["disk_writes"] > 0


def test_remount_read_only_and_back(helper, tmp_path):
    """`mount -o remount,ro MNT` (mount(8) hands it to the helper; it was refused, 'unknown
    mount option remount'): writes get EROFS, the daemon writes its dirty blocks back, and
    `remount,rw` makes the mount writable again. A mount made with -o ro stays read-only."""
    import errno
    image, mnt = make_image(tmp_path / "r.img", "64M"), tmp_path / "mnt"
    mnt.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        run(["mount", "-t", "fuse.simfs", image, mnt, "-o", "nostats"], env=env)
        (mnt / "a").write_bytes(os.urandom(1 << 20))
        dirty = lambda: json.loads((mnt / ".simfs" / "stats").read_bytes())["time"]["dirty_blocks"]
        assert dirty() > 0                          # not yet written back (the syncer's 30 s)
        run(["mount", "-o", "remount,ro", mnt], env=env)
        assert "ro" in source_and_flags(mnt)[1]
        with pytest.raises(OSError) as e:
            (mnt / "b").write_text("x")
        assert e.value.errno == errno.EROFS
        assert dirty() == 0                         # written back on going read-only
        assert (mnt / "a").stat().st_size == 1 << 20
        run(["mount", "-o", "remount,rw", mnt], env=env)
        assert "rw" in source_and_flags(mnt)[1]
        (mnt / "b").write_text("x")
        run_simfs("umount", mnt)
        run(["mount", "-t", "fuse.simfs", image, mnt, "-o", "ro,nostats"], env=env)
        r = subprocess.run(["mount", "-o", "remount,rw", str(mnt)], capture_output=True, text=True, env=env)
        assert r.returncode != 0 and "mounted with -o ro" in r.stderr, r.stderr
        assert "ro" in source_and_flags(mnt)[1] and (mnt / "b").read_text() == "x"
        run_simfs("umount", mnt)
    finally:
        cleanup(mnt, image)
    rc, out = e2fsck(image)
    assert rc == 0, out
