"""Real tools through a mounted simfs versus the local disk: unpack, `tar cf /dev/null`, find.

Run: python -m benchmarks.bench_mount [--files 2000] [--json] [-o MOUNTOPTS]

One run each, wall-clock seconds, on a generated source-like tree (experiments.workload,
seed 1): `tar xf` of its tarball, `tar cf /dev/null` (GNU tar reads no file data for
/dev/null: metadata only), `tar cf - | cat >/dev/null` (reads every byte), and `find`.
The local copy lives in the same temporary directory as the image. Page caches are dropped
before each read phase when running as root. Real time on a shared machine is noisy: the
ratios are for orientation (the cost of a Python FUSE daemon), not a target.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _simfs() -> list[str]:
    exe = Path(sys.executable).with_name("simfs")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "simfs.cli"]


def drop_caches() -> None:
    os.sync()
    if os.geteuid() == 0:
        try:
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
        except OSError:
            pass


def timed(cmd: str) -> float:
    """Real seconds of a shell command, the host's caches dropped first."""
    drop_caches()
    t = time.monotonic()
    subprocess.run(["sh", "-c", cmd], check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t


def phases(root: Path, tarball: Path) -> dict[str, float]:
    q = lambda p: "'" + str(p) + "'"   # noqa: E731  (paths from tempfile: no quotes inside)
    out = {"unpack (tar xf)": timed(f"tar xf {q(tarball)} -C {q(root)}")}
    out["tar cf /dev/null"] = timed(f"tar cf /dev/null -C {q(root)} .")
    out["tar cf - | cat (reads data)"] = timed(f"tar cf - -C {q(root)} . | cat >/dev/null")
    out["find"] = timed(f"find {q(root)} >/dev/null")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("-o", dest="options", default="", help="simfs mount options")
    a = ap.parse_args(argv)

    from experiments.workload import generate_tree

    simfs = _simfs()
    with tempfile.TemporaryDirectory(prefix="simfs-bench-") as tmp:
        tmp = Path(tmp)
        summary = generate_tree(tmp / "src", seed=1, files=a.files)
        tarball = tmp / "src.tar"
        subprocess.run(["tar", "cf", str(tarball), "-C", str(tmp / "src"), "."], check=True)

        local = tmp / "local"
        local.mkdir()
        t_local = phases(local, tarball)

        image, mnt = tmp / "bench.img", tmp / "mnt"
        mnt.mkdir()
        subprocess.run(simfs + ["mkfs", "-q", str(image), "--size", "1G"], check=True)
        subprocess.run(simfs + ["mount", str(image), str(mnt)] + (["-o", a.options] if a.options else []),
                       check=True)
        try:
            t_simfs = phases(mnt, tarball)
            stats = json.loads((mnt / ".simfs" / "stats").read_bytes())
        finally:
            r = subprocess.run(simfs + ["umount", str(mnt)])
            if r.returncode != 0:
                subprocess.run(["fusermount3", "-u", "-z", str(mnt)])

    rows = [{"phase": k, "local_s": round(t_local[k], 3), "simfs_s": round(t_simfs[k], 3),
             "ratio": round(t_simfs[k] / t_local[k], 1) if t_local[k] > 0 else None}
            for k in t_local]
    result = {"files": summary.files, "dirs": summary.dirs, "bytes": summary.total_bytes,
              "fuse_requests": stats.get("ops_total"), "rows": rows}
    if a.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"tree: {summary.files:,} files, {summary.dirs:,} dirs, {summary.symlinks} symlinks, "
          f"{summary.hardlinks} hard links, {summary.total_bytes / 2**20:.1f} MiB; "
          f"{stats.get('ops_total', 0):,} FUSE requests")
    print(f"{'phase':<30}{'local s':>10}{'simfs s':>10}{'ratio':>8}")
    for r in rows:
        print(f"{r['phase']:<30}{r['local_s']:>10.3f}{r['simfs_s']:>10.3f}{r['ratio']:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
