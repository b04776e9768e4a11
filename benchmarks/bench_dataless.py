"""Data-less images vs normal: image disk usage and wall time of unpacking a generated tree.

Run: python -m benchmarks.bench_dataless [--files 2000] [--size 200M] [--image-size 4G]

The tree (experiments.workload, seed 1) is unpacked in-process into a fresh image, once
normally and once with `dataless`, alternating (normal, dataless, normal, dataless; the
faster of each pair of runs is shown), then read back cold. Simulated time must be the same
in both modes (the benchmark fails if not); what differs is the real cost: the image's
allocated size (st_blocks) and wall time. Real time on a shared machine is noisy: compare
the columns side by side, not against a fixed figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_timing import load_tree, readback, unpack


def run(image: Path, tree: list, size: int, dataless: bool) -> dict:
    from simfs.fs.volume import Volume, VolumeOptions
    from simfs.ondisk.mkfs import mkfs
    t = time.perf_counter()
    mkfs(image, size, block_size=4096, uuid=bytes(16), hash_seed=bytes(16), now=1_000_000_000)
    mkfs_wall = time.perf_counter() - t
    opts = VolumeOptions(alloc="first-free", writeback="sync", dataless=dataless)
    t = time.perf_counter()
    with Volume.open(image, opts) as vol:
        unpack(vol, tree)
        vol.sync()
        sim = vol.clock.now
    unpack_wall = time.perf_counter() - t
    t = time.perf_counter()
    with Volume.open(image, VolumeOptions(alloc="first-free", writeback="sync", dataless=dataless, read_only=True)) as vol:
        readback(vol)
        sim_read = vol.clock.now
    read_wall = time.perf_counter() - t
    st = os.stat(image)
    return {"mkfs_wall": mkfs_wall, "unpack_wall": unpack_wall, "read_wall": read_wall,
            "sim_unpack": sim, "sim_read": sim_read, "allocated": st.st_blocks * 512,
            "apparent": st.st_size}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--size", default="200M", help="total size of the tree's files")
    ap.add_argument("--image-size", default="4G", help="size of the file system")
    a = ap.parse_args(argv)
    from experiments.workload import generate_tree
    from simfs.units import parse_size
    with tempfile.TemporaryDirectory(prefix="simfs-bench-dl-") as tmp:
        tmp = Path(tmp)
        summary = generate_tree(tmp / "src", seed=1, files=a.files, total_size=a.size)
        tree = load_tree(tmp / "src")
        results: dict[bool, list[dict]] = {False: [], True: []}
        for dataless in (False, True, False, True):
            img = tmp / "img"
            results[dataless].append(run(img, tree, parse_size(a.image_size), dataless))
            img.unlink()
    best = {m: {k: min(r[k] for r in rs) for k in rs[0]} for m, rs in results.items()}
    n, d = best[False], best[True]
    print(f"tree: {summary.files:,} files, {summary.dirs:,} dirs, {summary.total_bytes / 2**20:.1f} MiB; "
          f"image {a.image_size}")
    print(f"{'':<26}{'normal':>12}{'dataless':>12}{'ratio':>8}")
    for key, label, unit in (("allocated", "image allocated", "MiB"), ("mkfs_wall", "mkfs wall", "s"),
                             ("unpack_wall", "unpack wall", "s"), ("read_wall", "read-back wall", "s"),
                             ("sim_unpack", "unpack simulated", "s"), ("sim_read", "read-back simulated", "s")):
        scale = 2**20 if unit == "MiB" else 1
        ratio = n[key] / d[key] if d[key] else float("inf")
        print(f"{label + ' (' + unit + ')':<26}{n[key] / scale:>12.2f}{d[key] / scale:>12.2f}{ratio:>7.1f}x")
    same = all(r["sim_unpack"] == n["sim_unpack"] and r["sim_read"] == n["sim_read"]
               for rs in results.values() for r in rs)
    print("simulated time identical in both modes:", "yes" if same else "NO")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
