"""What an unprivileged user (uid 65534, through setpriv) can do to a mount root made.

The daemon runs as root; the image may sit in a directory that user can write to. Planting a
symbolic link (or a file of their own) as IMAGE.log, IMAGE.stats.json or a trace, before or
during the mount, must never make root write to another file: the mount is refused (one
line, exit status 2, nothing mounted), and at unmount the statistics are not written (one
line, exit status 1). The `.simfs` controls are the mounting user's alone.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import e2fsck, fuse_mounts, make_image, run_simfs

pytestmark = pytest.mark.mount

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
VICTIM_TEXT = "root's precious file\n"


def as_nobody(*cmd, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run(NOBODY + [str(c) for c in cmd], capture_output=True, text=True, timeout=60)
    if check:
        assert r.returncode == 0, (cmd, r.stderr)
    return r


@pytest.fixture
def place():
    """/tmp/X (root's, 0755): victim (root's, 0644), mnt, and home/ (nobody's own directory,
    where root's image lies), pub/ (mode 1777, like /tmp)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv")
    top = Path(tempfile.mkdtemp(prefix="simfs-unpriv-", dir="/tmp"))
    os.chmod(top, 0o755)
    victim = top / "victim"
    victim.write_text(VICTIM_TEXT)
    (top / "mnt").mkdir()
    home = top / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    pub = top / "pub"
    pub.mkdir()
    os.chmod(pub, 0o1777)
    yield top
    mnt = os.path.realpath(top / "mnt")
    if mnt in fuse_mounts():
        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
    shutil.rmtree(top, ignore_errors=True)


def image_in(d: Path) -> Path:
    img = make_image(d / "d.img", "64M")
    os.chmod(img, 0o644)
    return img


def assert_refused(r: subprocess.CompletedProcess, *words: str) -> None:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.parametrize("where", ["home", "pub"])
@pytest.mark.parametrize("name,opt", [("d.img.log", None), ("d.img.stats.json", None),
                                      ("t.csv", "trace"), ("ops.jsonl", "oplog"),
                                      ("s.json", "stats"), ("l.log", "log")])
def test_a_link_planted_before_the_mount_refuses_it(place, where, name, opt):
    d = place / where
    img = image_in(d)
    victim = place / "victim"
    as_nobody("ln", "-s", victim, d / name)
    args = ["-o", f"{opt}={d / name}"] if opt else []
    r = run_simfs("mount", img, place / "mnt", *args, check=False)
    assert_refused(r, str(d / name), "symbolic link")
    assert os.path.realpath(place / "mnt") not in fuse_mounts()
    assert victim.read_text() == VICTIM_TEXT and os.lstat(d / name).st_uid == 65534
    assert e2fsck(img)[0] == 0


@pytest.mark.parametrize("plant,why", [(["mkfifo"], "not a regular file"),
                                       (["ln", "-s", "/dev/zero"], "symbolic link"),
                                       (["sh", "-c", "echo theirs >"], "belongs to user 65534")])
def test_a_journal_planted_before_the_mount_is_refused_not_read(place, plant, why):
    """A FIFO at IMAGE.journal hung root's mount (the daemon blocked opening it, holding the
    image's lock); a link to /dev/zero read until MemoryError; another user's journal would be
    replayed into root's image. Now: one line, exit 2, nothing mounted, the image as it was."""
    d = place / "pub"
    img = image_in(d)
    before = img.read_bytes()
    journal = d / "d.img.journal"
    if plant[0] == "sh":
        as_nobody("sh", "-c", f"{plant[2]} {journal}")
    else:
        as_nobody(*plant, journal)
    r = run_simfs("mount", img, place / "mnt", check=False, timeout=60)
    assert_refused(r, str(journal), "refusing to read the journal", why)
    assert os.path.realpath(place / "mnt") not in fuse_mounts()
    assert img.read_bytes() == before and os.lstat(journal).st_uid == 65534
    assert not (d / "d.img.log").exists()                   # nothing left behind


def test_another_users_file_is_not_written(place):
    """In a sticky directory (like /tmp) too: a file another user made is not root's to fill."""
    d = place / "pub"
    img = image_in(d)
    as_nobody("sh", "-c", f"echo mine > {d / 'd.img.stats.json'}")
    r = run_simfs("mount", img, place / "mnt", check=False)
    assert_refused(r, "belongs to user 65534", "-o nostats")
    assert (d / "d.img.stats.json").read_text() == "mine\n"
    assert not (d / "d.img.log").exists()                   # nothing left behind


def test_a_hard_link_is_not_written(place):
    """root's own file, given a second name: appending to it would change the other name."""
    img = image_in(place)
    os.link(place / "victim", place / "second")
    r = run_simfs("mount", img, place / "mnt", "-o", f"log={place / 'second'}", check=False)
    assert_refused(r, "2 hard links")
    assert (place / "victim").read_text() == VICTIM_TEXT


def test_links_planted_during_the_mount_are_not_followed(place):
    d = place / "home"
    img = image_in(d)
    victim, mnt = place / "victim", place / "mnt"
    run_simfs("mount", img, mnt, "-o", f"trace={d / 't.csv'}")
    try:
        (mnt / "f").write_bytes(os.urandom(1 << 20))
        as_nobody("mv", d / "d.img.log", d / "old.log")
        as_nobody("mv", d / "t.csv", d / "old.csv")
        for name in ("d.img.log", "d.img.stats.json", "t.csv"):
            as_nobody("ln", "-s", victim, d / name)
        run_simfs("ctl", mnt, "sync")
        (mnt / "g").write_bytes(os.urandom(1 << 20))
    finally:
        r = run_simfs("umount", mnt, check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert f"cannot write the stats file {d / 'd.img.stats.json'}" in lines[0], lines[0]
    assert "symbolic link" in lines[0] and "the image is written back" in lines[0], lines[0]
    assert os.path.realpath(mnt) not in fuse_mounts()
    assert victim.read_text() == VICTIM_TEXT
    assert "mounting" in (d / "old.log").read_text()        # the daemon kept its own log
    assert (d / "old.csv").read_text().startswith("issue,")
    assert e2fsck(img)[0] == 0


def test_control_files_are_the_mounting_users(place):
    img = image_in(place)
    mnt = place / "mnt"
    run_simfs("mount", img, mnt)
    try:
        ctl = mnt / ".simfs"
        writable = [p for p in ctl.iterdir() if os.stat(p).st_mode & 0o222]
        assert {p.name for p in writable} >= {"sync", "reset", "mark", "drop_caches"}
        for p in writable:
            st = os.stat(p)
            assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) & 0o077 == 0, (p, oct(st.st_mode))
            r = as_nobody("sh", "-c", f"echo x > {p}", check=False)
            assert r.returncode != 0 and "Permission denied" in r.stderr, (p, r.stderr)
        assert '"ops"' in as_nobody("cat", ctl / "stats").stdout      # reading is for all
        with open(ctl / "sync", "w") as f:                            # the owner may
            f.write("1")
    finally:
        run_simfs("umount", mnt)
    assert e2fsck(img)[0] == 0


def test_control_files_refuse_other_users_in_the_daemon_too():
    """The daemon checks the caller itself as well as the kernel (default_permissions)."""
    from simfs.errors import FSError
    from simfs.fuse import control
    cd = control.ControlDir(1, uid=1000, gid=1000)
    cd.add("sync", write=lambda data: None)
    ino = cd.files[b"sync"].ino
    assert stat.S_IMODE(cd.getattr(ino).st_mode) == 0o200
    for uid in (65534, 1001):
        with pytest.raises(FSError) as e:
            cd.open(ino, os.O_WRONLY, uid=uid)
        assert e.value.errno == errno.EACCES
    for uid in (1000, 0):
        cd.release(cd.open(ino, os.O_WRONLY, uid=uid))
