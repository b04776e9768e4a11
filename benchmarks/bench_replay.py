"""Record and replay: the same work mounted (without and with -o oplog=) and replayed in-process.

Run: python -m benchmarks.bench_replay [--files 2000] [--image-size 512M]

A generated tree (experiments.workload, seed 1) is unpacked with `tar xf` into a fresh mounted
image, then `.simfs/drop_caches`, `find -type f -exec cat`, `rm -rf`, unmount: once without and
once with `-o oplog=run.log.gz` (wall clock from mount to the end of unmount). The log is then
replayed with `simfs replay` on a copy of the image made before the recording mount. The
replay's statistics must equal the recorded run's (the benchmark fails if not); what differs
is real time. One run each; real time on a shared machine is noisy: compare the columns side
by side, not against a fixed figure.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_mount import _simfs


def _sh(*cmd) -> None:
    subprocess.run([str(c) for c in cmd], check=True, stdout=subprocess.DEVNULL)


def mounted(image: Path, mnt: Path, tarball: Path, opts: str) -> float:
    """Mount, tar xf, drop caches, read every file, rm -rf, unmount: wall seconds."""
    t = time.monotonic()
    _sh(*_simfs(), "mount", image, mnt, "-o", opts)
    try:
        _sh("tar", "xf", tarball, "-C", mnt)
        (mnt / ".simfs" / "drop_caches").write_text("1\n")
        _sh("sh", "-c", f"find '{mnt}' -path '{mnt}/.simfs' -prune -o -type f -exec cat {{}} + >/dev/null")
        for entry in mnt.iterdir():
            if entry.name not in (".simfs", "lost+found"):
                _sh("rm", "-rf", entry)
    finally:
        _sh(*_simfs(), "umount", mnt)
    return time.monotonic() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--image-size", default="512M", help="size of the file system")
    a = ap.parse_args(argv)
    from experiments.workload import generate_tree
    with tempfile.TemporaryDirectory(prefix="simfs-bench-replay-", dir="/var/tmp") as tmp:
        tmp = Path(tmp)
        summary = generate_tree(tmp / "src", seed=1, files=a.files)
        tarball = tmp / "src.tar"
        _sh("tar", "cf", tarball, "-C", tmp / "src", ".")
        mnt = tmp / "mnt"
        mnt.mkdir()
        wall = {}
        for name in ("plain", "recorded"):
            _sh(*_simfs(), "mkfs", tmp / f"{name}.img", "--size", a.image_size,
                "--uuid", "00112233-4455-6677-8899-aabbccddeeff")
        shutil.copyfile(tmp / "recorded.img", tmp / "copy.img")
        wall["mounted"] = mounted(tmp / "plain.img", mnt, tarball, f"stats={tmp / 'plain.json'}")
        log = tmp / "run.log.gz"
        wall["mounted, -o oplog="] = mounted(tmp / "recorded.img", mnt, tarball,
                                             f"oplog={log},stats={tmp / 'recorded.json'}")
        t = time.monotonic()
        _sh(*_simfs(), "replay", log, tmp / "copy.img", "--stats", tmp / "replayed.json")
        wall["simfs replay"] = time.monotonic() - t
        same = filecmp.cmp(tmp / "recorded.json", tmp / "replayed.json", shallow=False)
        print(f"tree: {summary.files:,} files, {summary.dirs:,} dirs, "
              f"{summary.total_bytes / 2**20:.1f} MiB; log {log.stat().st_size / 1024:.0f} KiB")
        print(f"{'':<22}{'wall s':>8}{'vs replay':>11}")
        for k, v in wall.items():
            print(f"{k:<22}{v:>8.2f}{v / wall['simfs replay']:>10.1f}x")
        print("replayed statistics identical to the recorded run's:", "yes" if same else "NO")
        return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
