"""The kernel's own CPU per system call for the seeds' commands (issue 50, item 4: the
measurement; simfs does not use it yet).

    sudo flock /tmp/simfs-mount.lock python -m benchmarks.kernel_cpu_per_op [--files 20000] [--json]

A generated svn-like tree (experiments/workload, seed 1) as a tarball; an ext4 image with the
ext4 profile's features and no journal (benchmarks/kernel_layout.MKFS_EXT4) in /dev/shm, on a
loop device, so that the device costs no waiting. The sequence unpack (tar xf), find -type d,
find -type f, tar cf /dev/zero, cp -a, rm -rf runs twice on fresh images: once for the time (the
children's user and system seconds, getrusage; caches dropped before each read phase and a
`sync -f` after each write phase, inside the timing), once under `strace -c -f` for the system
calls each made. The loop device's own copying runs in the kernel's loop worker, not in the
command: it is not in these seconds. Printed: per phase, system calls, system and user
microseconds per call.
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


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.kernel_cpu_per_op", description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=20000, help="files in the generated tree (default 20000)")
    ap.add_argument("--size", default="2G", help="image size in /dev/shm (default 2G)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("kernel_cpu_per_op: needs root (loop devices, mount, drop_caches)", file=sys.stderr)
        return 2
    try:
        res = run(a.files, a.size)
    except (Failed, subprocess.CalledProcessError, OSError) as e:
        print(f"kernel_cpu_per_op: {e}", file=sys.stderr)
        return 2
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
