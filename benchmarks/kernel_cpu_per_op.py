"""The kernel's own CPU per system call for the seeds' commands, and per kind of call (issue 50,
item 4: the measurement simfs.fs.cpucost's table is taken from).

    sudo flock /tmp/simfs-mount.lock python -m benchmarks.kernel_cpu_per_op [--files 20000] [--json]
    sudo flock /tmp/simfs-mount.lock python -m benchmarks.kernel_cpu_per_op --per-kind [--json]

A generated svn-like tree (experiments/workload, seed 1) as a tarball; an ext4 image with the
ext4 profile's features and no journal (benchmarks/kernel_layout.MKFS_EXT4) in /dev/shm, on a
loop device, so that the device costs no waiting. The sequence unpack (tar xf), find -type d,
find -type f, tar cf /dev/zero, cp -a, rm -rf runs twice on fresh images: once for the time (the
children's user and system seconds, getrusage; caches dropped before each read phase and a
`sync -f` after each write phase, inside the timing), once under `strace -c -f` for the system
calls each made. The loop device's own copying runs in the kernel's loop worker, not in the
command: it is not in these seconds. Printed: per phase, system calls, system and user
microseconds per call.

--per-kind: on the same kind of image (ext4, no journal, /dev/shm, loop device, noatime), loops
of one system call each (stat, lookup of a missing name, getdents, read, write, create, mkdir,
unlink, rename, chmod, xattrs, ...) from this process, timed by its own system seconds
(getrusage RUSAGE_SELF: Python's own work is user time); each the median of REPEATS rounds, in
microseconds per call. Warm unless named cold (after drop_caches). What each figure becomes in
simfs's charge is simfs.fs.cpucost's business.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.kernel_layout import MKFS_EXT4, Failed, sh

PHASES = [  # name, command (run in the work directory, tree under mnt/), writes
    ("unpack", "mkdir mnt/tree && tar -xpf src.tar -C mnt/tree", True),
    ("find-d", "find mnt/tree -type d > /dev/null", False),
    ("find-f", "find mnt/tree -type f > /dev/null", False),
    ("tar", "tar -cf /dev/zero -C mnt tree", False),
    ("cp-a", "cp -a mnt/tree mnt/copy", True),
    ("rm-rf", "rm -rf mnt/tree", True),
]


def children() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime, r.ru_stime


def strace_calls(path: Path) -> int:
    """The total of `strace -c`'s calls column."""
    for line in path.read_text().splitlines():
        if line.strip().endswith("total"):
            return int(line.split()[3])       # % time, seconds, usecs/call, calls, [errors,] total
    raise Failed(f"{path}: no total line in strace -c's summary")


def sequence(work: Path, size: str, traced: bool) -> dict:
    img, mnt = Path("/dev/shm") / f"cpu-per-op-{os.getpid()}.img", work / "mnt"
    mnt.mkdir(exist_ok=True)
    sh(["truncate", "-s", size, img])
    sh(MKFS_EXT4 + [img])
    dev = sh(["losetup", "-f", "--show", img]).strip()
    out = {}
    try:
        sh(["mount", "-t", "ext4", "-o", "noatime", dev, mnt])
        try:
            for name, cmd, writes in PHASES:
                if not writes:
                    os.sync()
                    Path("/proc/sys/vm/drop_caches").write_text("3")
                so = work / f"{name}.strace"
                argv = (["strace", "-c", "-f", "-o", str(so), "sh", "-c", cmd] if traced else ["sh", "-c", cmd])
                u0, s0 = children()
                t0 = time.monotonic()
                subprocess.run(argv, cwd=work, check=True, stdout=subprocess.DEVNULL)
                if writes:
                    subprocess.run(["sync", "-f", str(mnt)], check=True)
                u1, s1 = children()
                out[name] = ({"calls": strace_calls(so)} if traced else
                             {"user": u1 - u0, "system": s1 - s0, "wall": time.monotonic() - t0})
        finally:
            sh(["umount", mnt])
    finally:
        sh(["losetup", "-d", dev])
        img.unlink(missing_ok=True)
    return out


def run(files: int, size: str) -> dict:
    from experiments.workload import generate_tree
    with tempfile.TemporaryDirectory(prefix="cpu-per-op-") as tmp:
        work = Path(tmp)
        generate_tree(work / "src", seed=1, files=files, svn=True)
        sh(["tar", "--sort=name", "-cf", work / "src.tar", "-C", work / "src", "."])
        timed = sequence(work, size, False)
        counted = sequence(work, size, True)
    rows = {}
    for name, _, _ in PHASES:
        t, c = timed[name], counted[name]
        n = c["calls"]
        rows[name] = {**t, "calls": n, "system_us_per_call": 1e6 * t["system"] / n if n else None,
                      "user_us_per_call": 1e6 * t["user"] / n if n else None}
    return {"files": files, "kernel": os.uname().release, "cpu": cpu_model(), "rows": rows}


REPEATS = 3


def _sys() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


def _per_call(fn, n: int, prepare=None) -> float:
    """Median over REPEATS rounds of this process's system microseconds per call of fn(i),
    i in range(n) (fn(i, round) when it takes two arguments: fresh names each round);
    prepare(round), untimed, before each round."""
    two = fn.__code__.co_argcount == 2
    out = []
    for r in range(REPEATS):
        if prepare is not None:
            prepare(r)
        s0 = _sys()
        if two:
            for i in range(n):
                fn(i, r)
        else:
            for i in range(n):
                fn(i)
        out.append(1e6 * (_sys() - s0) / n)
    return sorted(out)[len(out) // 2]


def _drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3")


def _missing(path: str) -> None:
    try:
        os.stat(path)
    except FileNotFoundError:
        return
    raise Failed(f"{path} exists")


def kinds(m: Path, n: int) -> dict:
    """The per-kind loops on the mounted file system at m (see the module's docstring); every
    descriptor left open by a loop that failed is closed, so that m can be unmounted."""
    before = set(os.listdir("/proc/self/fd"))
    try:
        return _kinds(m, n)
    finally:
        for fd in set(os.listdir("/proc/self/fd")) - before:
            try:
                os.close(int(fd))
            except OSError:
                pass
        os.chdir("/")


def _kinds(m: Path, n: int) -> dict:
    os.chdir(m)
    for d in ("hot", "cold", "big", "mk", "ln", "x", "deep/a/b/c/d/e/f/g/h"):
        os.makedirs(d)
    for i in range(1000):
        Path(f"hot/f{i}").touch()
    for i in range(n):
        Path(f"cold/f{i}").touch()
    for i in range(10):
        Path(f"x/f{i}").touch()
    Path("deep/a/b/c/d/e/f/g/h/f").touch()
    with open("big/data", "wb") as f:
        for _ in range(512):
            f.write(b"\x01" * (128 << 10))       # 64 MiB
    os.sync()
    r: dict[str, float] = {}
    fd = os.open("hot/f0", os.O_RDWR)
    r["syscall"] = _per_call(lambda i: os.getppid(), 400_000)       # entry and exit alone
    r["fstat"] = _per_call(lambda i: os.fstat(fd), 400_000)
    r["stat"] = _per_call(lambda i: os.stat(f"hot/f{i % 1000}"), 200_000)       # 2 components
    r["stat_deep"] = _per_call(lambda i: os.stat("deep/a/b/c/d/e/f/g/h/f"), 200_000)   # 10
    r["lookup_negative"] = _per_call(lambda i, k: _missing(f"hot/n{k}-{i}"), 100_000)
    r["open_close"] = _per_call(lambda i: os.close(os.open(f"hot/f{i % 1000}", os.O_RDONLY)), 200_000)
    r["opendir_close"] = _per_call(lambda i: os.close(os.open("x", os.O_RDONLY | os.O_DIRECTORY)), 200_000)
    r["listdir_10"] = _per_call(lambda i: os.listdir("x"), 50_000)
    r["listdir_1000"] = _per_call(lambda i: os.listdir("hot"), 2_000)
    r["listdir_cold_dir"] = _per_call(lambda i: os.listdir("cold"), max(1, 2_000_000 // n))
    r["read_1"] = _per_call(lambda i: os.pread(fd, 1, 0), 400_000)
    os.pwrite(fd, b"\0" * (128 << 10), 0)
    r["read_128k"] = _per_call(lambda i: os.pread(fd, 128 << 10, 0), 20_000)
    r["write_1"] = _per_call(lambda i: os.pwrite(fd, b"x", 0), 400_000)
    r["write_128k"] = _per_call(lambda i: os.pwrite(fd, b"y" * (128 << 10), 0), 20_000)
    os.close(fd)
    for k in range(REPEATS):
        Path(f"big/append{k}").touch()
    afd = {}

    def append(i, k):
        if i == 0:
            afd[k] = os.open(f"big/append{k}", os.O_WRONLY)
        os.write(afd[k], b"z" * (128 << 10))
    r["write_append_128k"] = _per_call(append, 512)                  # 64 MiB, new pages
    for k in afd.values():
        os.close(k)
    r["chmod"] = _per_call(lambda i: os.chmod(f"hot/f{i % 1000}", 0o600 | (i & 1) << 2), 200_000)
    fd = os.open("big/data", os.O_RDONLY)
    r["statfs"] = _per_call(lambda i: os.statvfs("hot"), 200_000)
    fd1 = os.open("hot/f1", os.O_RDONLY)
    r["fsync_clean"] = _per_call(lambda i: os.fsync(fd1), 100_000)
    os.close(fd1)
    r["setxattr"] = _per_call(lambda i: os.setxattr(f"hot/f{i % 1000}", "user.k", b"v%d" % (i & 7)), 100_000)
    r["getxattr"] = _per_call(lambda i: os.getxattr(f"hot/f{i % 1000}", "user.k"), 200_000)
    r["listxattr"] = _per_call(lambda i: os.listxattr(f"hot/f{i % 1000}"), 200_000)
    # one name (in the inode, as setxattr's) on each of the cold directory's files, set again
    # (untimed) before each round: n calls a round (1,000 on hot/ gave 0 on the loop image: too
    # few for the system time's resolution); stat_cold drops the caches before it reads them
    r["removexattr"] = _per_call(lambda i, k: os.removexattr(f"cold/f{i}", "user.k"), n,
                                 prepare=lambda k: [os.setxattr(f"cold/f{i}", "user.k", b"v") for i in range(n)])
    r["create_close"] = _per_call(lambda i, k: os.close(os.open(f"mk/c{k}-{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)), 20_000)
    r["rename"] = _per_call(lambda i, k: os.rename(f"mk/c{k}-{i}", f"mk/r{k}-{i}"), 20_000)
    r["link"] = _per_call(lambda i, k: os.link(f"mk/r{k}-{i}", f"ln/l{k}-{i}"), 20_000)
    r["unlink"] = _per_call(lambda i, k: os.unlink(f"ln/l{k}-{i}"), 20_000)
    r["symlink"] = _per_call(lambda i, k: os.symlink("target", f"ln/s{k}-{i}"), 20_000)
    r["readlink"] = _per_call(lambda i: os.readlink(f"ln/s0-{i % 20_000}"), 200_000)
    r["mkdir"] = _per_call(lambda i, k: os.mkdir(f"mk/d{k}-{i}"), 20_000)
    r["rmdir"] = _per_call(lambda i, k: os.rmdir(f"mk/d{k}-{i}"), 20_000)
    _drop_caches()
    r["stat_cold"] = _per_call(lambda i, k: os.stat(f"cold/f{i}"), n, prepare=lambda k: _drop_caches())
    r["read_cold_128k"] = _per_call(lambda i, k: os.pread(fd, 128 << 10, i << 17), 512,
                                    prepare=lambda k: _drop_caches())     # 64 MiB, from disk
    os.close(fd)
    os.chdir("/")
    return r


def per_kind(n: int, size: str, where: Path | None = None) -> dict:
    """Mount a fresh image and run `kinds` on it (or run them in a new directory under `where`)."""
    if where is not None:
        with tempfile.TemporaryDirectory(prefix="cpu-per-kind-", dir=where) as tmp:
            try:
                rows = kinds(Path(tmp), n)
            finally:
                os.chdir("/")
        fs = sh(["findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "-T", where]).strip()
        return {"kernel": os.uname().release, "cpu": cpu_model(), "repeats": REPEATS, "cold_files": n,
                "fs": fs, "us_per_call": {k: round(v, 4) for k, v in rows.items()}}
    with tempfile.TemporaryDirectory(prefix="cpu-per-kind-") as tmp:
        img, mnt = Path("/dev/shm") / f"cpu-per-kind-{os.getpid()}.img", Path(tmp) / "mnt"
        mnt.mkdir()
        sh(["truncate", "-s", size, img])
        sh(MKFS_EXT4 + [img])
        dev = sh(["losetup", "-f", "--show", img]).strip()
        try:
            sh(["mount", "-t", "ext4", "-o", "noatime", dev, mnt])
            try:
                rows = kinds(mnt, n)
            finally:
                os.chdir("/")
                sh(["umount", mnt])
        finally:
            sh(["losetup", "-d", dev])
            img.unlink(missing_ok=True)
    return {"kernel": os.uname().release, "cpu": cpu_model(), "repeats": REPEATS, "cold_files": n,
            "fs": "ext4 " + " ".join(MKFS_EXT4[1:]) + f", {size} in /dev/shm, loop device, noatime",
            "us_per_call": {k: round(v, 4) for k, v in rows.items()}}


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.kernel_cpu_per_op", description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=20000, help="files in the generated tree (default 20000)")
    ap.add_argument("--size", default=None, help="image size in /dev/shm (default 2G; 8G with --per-kind, "
                    "whose loops make about 200,000 inodes)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--per-kind", action="store_true", help="loops of one system call each (--files: "
                    "the files of the cold-lookup directory)")
    ap.add_argument("--dir", type=Path, help="--per-kind in a new directory under DIR, on the file system "
                    "it is on, instead of an image on a loop device (nothing mounted)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("kernel_cpu_per_op: needs root (loop devices, mount, drop_caches)", file=sys.stderr)
        return 2
    try:
        res = (per_kind(a.files, a.size or "8G", a.dir) if a.per_kind else run(a.files, a.size or "2G"))
    except (Failed, subprocess.CalledProcessError, OSError) as e:
        print(f"kernel_cpu_per_op: {e}", file=sys.stderr)
        return 2
    if a.per_kind:
        if a.json:
            print(json.dumps(res, indent=1))
        else:
            print(f"kernel {res['kernel']}, {res['cpu']}; system us per call, median of {res['repeats']}")
            for k, v in res["us_per_call"].items():
                print(f"{k:20} {v:8.3f}")
        return 0
    if a.json:
        print(json.dumps(res, indent=1))
        return 0
    print(f"{res['files']} files, kernel {res['kernel']}, {res['cpu']}")
    print("| phase | system calls | system s | user s | system us/call | user us/call |")
    print("|---|--:|--:|--:|--:|--:|")
    for name, r in res["rows"].items():
        print(f"| {name} | {r['calls']:,} | {r['system']:.3f} | {r['user']:.3f} | "
              f"{r['system_us_per_call']:.2f} | {r['user_us_per_call']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
