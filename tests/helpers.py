"""Shared test helpers: external oracles (e2fsck, debugfs, the kernel's ext2) and image fixtures."""

import contextlib
import os
import shutil
import subprocess

import pytest

needs_e2fsprogs = pytest.mark.skipif(shutil.which("e2fsck") is None, reason="e2fsprogs not installed")


def e2fsck(image) -> tuple[int, str]:
    """Run `e2fsck -fn` (check everything, change nothing); (exit status, output)."""
    r = subprocess.run(["e2fsck", "-fn", str(image)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def assert_fsck_clean(image) -> None:
    rc, out = e2fsck(image)
    assert rc == 0, f"e2fsck -fn {image} exited {rc}:\n{out}"



def write_file(vol, parent: int, name: bytes, size: int, chunk: int = 8192) -> int:
    ino = vol.create(parent, name, 0o644, 0, 0).st_ino
    vol.hold(ino)                      # open ... close (drop): the allocator's release
    off = 0
    while off < size:
        n = min(chunk, size - off)
        vol.write(ino, off, bytes([off // chunk % 251]) * n)
        off += n
    vol.drop(ino)
    return ino


def block_map(vol, ino: int):
    """(data blocks in logical order, indirect blocks) of a file."""
    data, ind = [], []
    for key, phys in vol.filemap.blocks(vol.inodes.get(ino)):
        if isinstance(key, str):
            ind.append(phys)
        else:
            data.append((key, phys))
    return [p for _, p in sorted(data)], ind


def copy_tree_into(vol, src, parent=None, chunk: int = 65536) -> int:
    """Copy a real directory tree into a Volume in-process, as an unpacking tar would
    (mkdir, create, open, sequential writes, close, symlinks, hard links, then times).
    Returns files copied."""
    import os
    import stat as st
    parent = parent or vol.root_ino
    seen = {}
    count = 0
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        s = os.lstat(path)
        bname = os.fsencode(name)
        if st.S_ISDIR(s.st_mode):
            ino = vol.mkdir(parent, bname, st.S_IMODE(s.st_mode), 0, 0).st_ino
            count += copy_tree_into(vol, path, ino, chunk)
        elif st.S_ISLNK(s.st_mode):
            vol.symlink(parent, bname, os.fsencode(os.readlink(path)), 0, 0)
        elif (s.st_dev, s.st_ino) in seen:
            vol.link(seen[(s.st_dev, s.st_ino)], parent, bname)
        else:
            ino = vol.create(parent, bname, st.S_IMODE(s.st_mode), 0, 0).st_ino
            vol.hold(ino)                       # open ... close: the allocator sees the last close
            with open(path, "rb") as f:
                off = 0
                while data := f.read(chunk):
                    vol.write(ino, off, data)
                    off += len(data)
            vol.drop(ino)
            vol.setattr(ino, mtime_ns=s.st_mtime_ns, atime_ns=s.st_atime_ns)
            if s.st_nlink > 1:
                seen[(s.st_dev, s.st_ino)] = ino
            count += 1
    return count


def fill_volume(vol, name=b"fill", bs: int = 1024) -> int:
    """Write a file until even one block (of bs bytes) more does not fit, even after
    write-back (which places delayed blocks and gives back what their reservation
    overestimated). Returns its inode."""
    import errno
    from simfs.errors import FSError
    ino = vol.create(vol.root_ino, name, 0o644, 0, 0).st_ino
    size, chunk = 0, 64 * bs
    while True:
        try:
            size += vol.write(ino, size, b"f" * chunk)
            continue
        except FSError as e:
            assert e.errno == errno.ENOSPC
        if chunk > bs:
            chunk = bs
            continue
        vol.sync()
        try:
            size += vol.write(ino, size, b"f" * bs)
        except FSError:
            return ino


def free_blocks(vol, fill: int, blocks: int, bs: int = 1024) -> None:
    """Shorten the fill file (blocks of bs bytes) until `blocks` blocks are free."""
    size = vol.getattr(fill).st_size
    while vol.statfs().f_bfree < blocks:
        size -= bs
        vol.setattr(fill, size=size)
    vol.sync()


def refused_by(run, capsys, *argv, words=()) -> str:
    """Run a command-line entry point `run(ARGV)`: it must exit 2 with one line on stderr
    (containing each of `words`) and no traceback; that line is returned."""
    status = run([str(a) for a in argv])
    err = capsys.readouterr().err
    assert status == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def can_loop_mount() -> str | None:
    """Why the kernel's ext2 cannot loop-mount an image here (None if it can)."""
    if os.geteuid() != 0:
        return "loop-mounting needs root"
    if not os.path.exists("/dev/loop-control"):
        return "no loop devices on this machine (/dev/loop-control missing)"
    if shutil.which("mount") is None:
        return "mount(8) not installed"
    return None


def serial_only(what: str) -> None:
    """Fail a test that mounts from a pytest-xdist worker (make test's parallel part): mounts
    belong to the serial part, one at a time (tests/conftest.py); the test lacks its mark."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.fail(f"{what} in a pytest-xdist worker: mounts run one at a time, in the serial "
                    f"part (mark the test `serial`; run those without -n)")


@contextlib.contextmanager
def kernel_mount(img, mnt, rw: bool = False, fstype: str = "ext2", options: str = ""):
    """The image mounted read-only (or `rw`) by the kernel's own ext2 driver, or with
    fstype="ext4" its ext4 driver (an ext4-profile image), with more mount `options`; skips
    where it cannot be."""
    why = can_loop_mount()
    if why:
        pytest.skip(why)
    serial_only("a loop mount")
    mnt.mkdir()
    opts = ",".join(o for o in ("loop" if rw else "loop,ro", options) if o)
    r = subprocess.run(["mount", "-o", opts, "-t", fstype, str(img), str(mnt)],
                       capture_output=True, text=True)
    if r.returncode:
        pytest.skip(f"kernel refused the loop mount here: {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def tree_ab_job(name: str, size: str, allocs: tuple[str, str]) -> str:
    """A small two-allocator job file (a 40-file tree unpacked, then found, twice each) for the
    tests that run it fresh and on aged images."""
    return f"""
[job]
name = "{name}"
repetitions = 2

[workload]
kind = "tree"
seed = 1
files = 40

[mkfs]
size = "{size}"

[mount]
writeback = "async"
dirorder = "linear"

[matrix]
alloc = ["{allocs[0]}", "{allocs[1]}"]

[[phase]]
name = "unpack"
verb = "unpack"
path = "tree"

[[phase]]
name = "find"
verb = "find"
path = "tree"
args = {{type = "f"}}
"""


def run_job_sims(job, out, cache) -> dict:
    """`python -m experiments.jobcli JOB --out OUT` with its aged images cached in CACHE: each
    record's simulated seconds by (configuration, repetition, phase), mkfs left out."""
    import json
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(repo), SIMFS_AGED_CACHE=str(cache), COLUMNS="200")
    r = subprocess.run([sys.executable, "-m", "experiments.jobcli", str(job), "--out", str(out), "--no-plots"],
                       capture_output=True, text=True, timeout=400, cwd=repo, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return {(x["config"], x["rep"], x["phase"]): x["sim"] for x in json.loads((out / "results.json").read_text())["records"]
            if x["phase"] != "mkfs"}


class ProcessTable:
    """A process tree a test writes, as simfs.fuse.processes asks /proc for it: pid -> (ppid,
    start time); the shell 10 and its two children 11 and 12 to begin with."""

    def __init__(self):
        self.procs = {10: (1, 100), 11: (10, 101), 12: (10, 102)}

    def __call__(self, pid):
        return self.procs.get(pid)


def fuse_ctx(pid):
    """The request context pyfuse3 hands a handler, for process `pid` as root."""
    from types import SimpleNamespace
    return SimpleNamespace(uid=0, gid=0, pid=pid, umask=0o022)


def run_op(ops, name, *args):
    """Run one pyfuse3 handler of `ops` to its end, outside a mount."""
    import trio
    return trio.run(getattr(ops, name), *args)
