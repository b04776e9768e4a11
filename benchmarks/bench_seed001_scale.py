"""Seed 001's tree at growing sizes, in-process: real time per file of unpack + cold find.

Run: python -m benchmarks.bench_seed001_scale [--files 10000 100000 1000000 2000000]
                                              [--first-runs 3]

N is the number of regular files of the tree (working files and their .svn metadata, as seed
001 counts them: 1,978,149 files and 844,008 directories). Each size is
`python -m experiments.seed001_full --orders hash --phases unpack,find-d` in a fresh process,
with the seed's tree shape (directories of 2 to 9 entries) and its bytes per file (54 GB at
the full size), on a data-less image. Printed per size: files, directories, real seconds of
the unpack and of the cold find, simulated seconds, real µs per file (unpack + find) and its
ratio to the smallest size's (the median of --first-runs runs of it), the same for CPU seconds
of unpack + find (which a busy machine inflates much less than real time), the volume
operations per file the two verbs issue (a deeper tree asks more of them: more path components
to look up), find's own CPU µs per file (find asks the same five operations per file at every
size, so its growth is the engine's alone), peak RSS. Targets (issue 14): unpack + find under
30 minutes at 2M files, peak RSS under 4 GiB, µs per file at 1M within 1.3x of 10k.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from experiments import argtypes, seed001_full
from simfs.units import parse_size

SEED_FILES = 1_976_820          # what seed001_full's default size gives (the seed: 1,978,149)


def run_size(n_files: int, work: Path) -> dict:
    working = round(seed001_full.WORKING_FILES * n_files / SEED_FILES)
    total = parse_size(seed001_full.SEED_TOTAL) * n_files // SEED_FILES
    out = work / f"n{n_files}"
    p = subprocess.run([sys.executable, "-m", "experiments.seed001_full", "--files", str(working),
                        "--total-size", str(total), "--orders", "hash", "--phases", "unpack,find-d",
                        "--out", str(out), "--work", str(work)], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"seed001_full failed at {n_files:,} files:\n{p.stderr[-2000:]}")
    doc = json.loads((out / "results.json").read_text())
    rows = {r["phase"]: r for r in doc["rows"]}
    tree = doc["tree"]
    files = tree.get("file", 0) + tree.get("hardlink", 0)
    real = rows["unpack"]["real"] + rows["find-d"]["real"]
    cpu = rows["unpack"]["cpu"] + rows["find-d"]["cpu"]
    ops = rows["unpack"]["operations"] + rows["find-d"]["operations"]
    return {"files": files, "dirs": tree.get("dir", 0) + 1, "unpack_s": rows["unpack"]["real"],
            "find_s": rows["find-d"]["real"], "sim_unpack": rows["unpack"]["sim"],
            "sim_find": rows["find-d"]["sim"], "us_per_file": 1e6 * real / max(1, files),
            "cpu_us_per_file": 1e6 * cpu / max(1, files), "ops_per_file": ops / max(1, files),
            "find_cpu_us_per_file": 1e6 * rows["find-d"]["cpu"] / max(1, files),
            "rss_mib": max(r["rss_mib"] for r in doc["rows"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=argtypes.positive, nargs="+",
                    default=[10_000, 100_000, 1_000_000, 2_000_000])
    ap.add_argument("--dir", type=argtypes.directory, default="/var/tmp",
                    help="where the (sparse) images go")
    ap.add_argument("--first-runs", type=argtypes.positive, default=3,
                    help="runs of the first (smallest) size, the median taken: the ratios' base "
                         "is a run of seconds, which the host's speed moves by a fifth or more "
                         "from one run to the next (default 3)")
    a = ap.parse_args(argv)
    print("| files | directories | unpack s | find s | simulated s (unpack + find) | µs/file | "
          "vs first | CPU µs/file | vs first | operations/file | find CPU µs/file | vs first | "
          "peak RSS MiB |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|", flush=True)
    first = first_cpu = first_find = None
    with tempfile.TemporaryDirectory(prefix="simfs-s001-", dir=a.dir) as tmp:
        for i, n in enumerate(a.files):
            runs = sorted((run_size(n, Path(tmp)) for _ in range(a.first_runs if i == 0 else 1)),
                          key=lambda r: r["us_per_file"])
            r = runs[len(runs) // 2]
            first = first or r["us_per_file"]
            first_cpu = first_cpu or r["cpu_us_per_file"]
            first_find = first_find or r["find_cpu_us_per_file"]
            print(f"| {r['files']:,} | {r['dirs']:,} | {r['unpack_s']:.0f} | {r['find_s']:.0f} | "
                  f"{r['sim_unpack']:.0f} + {r['sim_find']:.0f} | {r['us_per_file']:.0f} | "
                  f"{r['us_per_file'] / first:.2f}x | {r['cpu_us_per_file']:.0f} | "
                  f"{r['cpu_us_per_file'] / first_cpu:.2f}x | {r['ops_per_file']:.1f} | "
                  f"{r['find_cpu_us_per_file']:.0f} | {r['find_cpu_us_per_file'] / first_find:.2f}x | "
                  f"{r['rss_mib']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
