"""`make demo`: make an image, mount it, unpack a generated source tree with real tar, print
the statistics, unmount, fsck, and say what happened.

    python -m experiments.demo [--files 2000] [--size 512M] [--dir DIR] [--keep] [-o OPTIONS]

Every step is a real command (shown with a `$` prompt), so the demo doubles as a tour.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from simfs.units import format_mib


def _simfs() -> list[str]:
    exe = Path(sys.executable).with_name("simfs")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "simfs.cli"]


def _show(argv) -> str:
    shown = ["simfs" if a == _simfs()[0] else a for a in map(str, argv)]
    if shown[:3] == [sys.executable, "-m", "simfs.cli"]:
        shown = ["simfs"] + shown[3:]
    return " ".join(shlex.quote(a) for a in shown)


def step(argv, *, quiet=False, check=True) -> tuple[float, subprocess.CompletedProcess]:
    """Run one command, echoing it; (seconds, result)."""
    print(f"$ {_show(argv)}", flush=True)
    t = time.monotonic()
    r = subprocess.run([str(a) for a in argv], text=True,
                       capture_output=quiet)
    dt = time.monotonic() - t
    if check and r.returncode != 0:
        if quiet:
            sys.stderr.write(r.stdout + r.stderr)
        raise SystemExit(f"demo: `{_show(argv)}` failed with exit status {r.returncode}")
    return dt, r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=2000, help="files in the generated tree (default 2000)")
    ap.add_argument("--size", default="512M", help="image size (default 512M, sparse)")
    ap.add_argument("--dir", help="work directory (default: a new one under /tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (image, log, tree)")
    ap.add_argument("-o", dest="options", default="", help="mount options for the demo mount")
    a = ap.parse_args(argv)

    from experiments.workload import generate_tree

    work = Path(a.dir or tempfile.mkdtemp(prefix="simfs-demo-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    image, mnt, src, tarball = work / "demo.img", work / "mnt", work / "src", work / "src.tar"
    simfs = _simfs()
    mounted = False
    times = {}
    print(f"simfs demo in {work}\n")
    try:
        print(f"# 1. a deterministic source-like tree of {a.files} files on the local disk, as a tarball")
        t = time.monotonic()
        summary = generate_tree(src, seed=1, files=a.files)
        step(["tar", "cf", tarball, "-C", src, "."])
        times["generate"] = time.monotonic() - t
        print(summary.format(), "\n")

        print("# 2. an ext2 image, mounted with FUSE (the daemon runs in the background)")
        step(simfs + ["mkfs", image, "--size", a.size])
        mnt.mkdir(exist_ok=True)
        step(simfs + ["mount", image, mnt] + (["-o", a.options] if a.options else []))
        mounted = True
        print()

        print("# 3. unpack the tree into the mount with real tar, and compare")
        times["unpack"], _ = step(["tar", "xf", tarball, "-C", mnt])
        times["diff"], _ = step(["diff", "-r", "--no-dereference", "-x", "lost+found", src, mnt])
        print("identical\n")

        print("# 4. what simfs saw (the hidden control directory, read by `simfs stats`)")
        step(simfs + ["stats", mnt])
        print()

        print("# 5. unmount (returns once the image is fully written) and check it with e2fsck")
        times["umount"], _ = step(simfs + ["umount", mnt])
        mounted = False
        step(simfs + ["fsck", image])
        print()
    finally:
        if mounted:
            subprocess.run(simfs + ["umount", str(mnt)], capture_output=True)
            if os.path.ismount(mnt):
                subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)

    print("What happened:")
    print(f"  * generated {summary.files:,} files, {summary.dirs:,} directories, {summary.symlinks} symlinks, "
          f"{summary.hardlinks} hard links ({format_mib(summary.total_bytes)}) in {times['generate']:.1f} s;")
    print(f"  * made an ext2 image {image.name} ({a.size}, sparse), mounted it on {mnt.name}/;")
    print(f"  * `tar xf` unpacked the tree through FUSE in {times['unpack']:.1f} s and `diff -r` found "
          f"it identical ({times['diff']:.1f} s);")
    print(f"  * `simfs stats` showed the FUSE requests and block/inode counters from {mnt.name}/.simfs/stats;")
    print(f"  * `simfs umount` waited for the daemon to write the image back ({times['umount']:.1f} s), "
          f"and `e2fsck -fn` found it clean.")
    if a.keep:
        print(f"  Kept: {work} (image {image.name}, daemon log {image.name}.log, tree src/).")
        print(f"  Look inside: debugfs -R 'ls -l /' {image}   dumpe2fs -h {image}")
    else:
        shutil.rmtree(work, ignore_errors=True)
        print(f"  Removed {work} (use --keep to keep the image and the daemon log).")
    print("\nNext: docs/getting-started.md (a first mount, options, `simfs stats`), `make test` for the test suite.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
