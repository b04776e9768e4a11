"""Requests per second the disk models service in Python, for typical streams.

    .venv/bin/python -m benchmarks.bench_disk_models [--requests N] [--repeat R] [--disks a,b]

The model sits under every block I/O of the FUSE daemon, so its cost per request matters:
sequential continuation and cache hits take a fast path (aim: >= 100,000 req/s).  Rates are
from process CPU time (best of --repeat).  Beside each rate: the simulated service (MB/s or ms
per request) so a fast but wrong path would show, and the ratio to the `ideal` disk (the cost
of the call itself).
"""

from __future__ import annotations

import argparse
import random
import time

from disk_models import make_disk


def stream(kind: str, n: int, sectors: int, seed: int = 1):
    """(op, lba, count, sync) tuples; LBAs are fractions of the disk, scaled per disk."""
    rng = random.Random(seed)
    if kind == "seq-read-4k":
        return [("R", i * 8, 8, False) for i in range(n)]
    if kind == "seq-read-128k":
        return [("R", i * 256, 256, False) for i in range(n)]
    if kind == "rand-read-4k":
        return [("R", rng.randrange(sectors // 8 - 1) * 8, 8, False) for _ in range(n)]
    if kind == "seq-write-4k":
        return [("W", i * 8, 8, False) for i in range(n)]
    if kind == "rand-write-4k":
        return [("W", rng.randrange(sectors // 8 - 1) * 8, 8, False) for _ in range(n)]
    if kind == "rand-sync-write-4k+512":
        return [("W", rng.randrange((1 << 21) - 1) * 8 + 1, 8, True) for _ in range(n)]
    raise ValueError(kind)


KINDS = ["seq-read-4k", "seq-read-128k", "rand-read-4k", "seq-write-4k", "rand-write-4k", "rand-sync-write-4k+512"]


def run(spec: str, reqs, repeat: int) -> tuple[float, float, int]:
    """(best CPU seconds, simulated seconds, bytes) for a closed-loop run of reqs."""
    disk = make_disk(spec)
    best, sim = float("inf"), 0.0
    for _ in range(repeat):
        disk.reset()
        submit = disk.submit
        t = 0.0
        c0 = time.process_time()
        for op, lba, n, sync in reqs:
            t = submit(op, lba, n, t, sync).finish
        t = disk.flush(t)
        best = min(best, time.process_time() - c0)
        sim = t
    return best, sim, sum(r[2] for r in reqs) * 512


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--disks", default="sata7200,wd-ears,wd1200jb")
    args = ap.parse_args(argv)
    disks = args.disks.split(",")
    sectors = min(make_disk(d).sectors for d in disks)
    print(f"{'stream':<24} {'disk':<10} {'req/s':>10} {'x ideal':>8} {'simulated':>16}")
    for kind in KINDS:
        n = args.requests if kind.startswith("seq") or kind == "rand-read-4k" else args.requests // 10
        reqs = stream(kind, n, sectors)
        base_cpu, _, _ = run("ideal", reqs, args.repeat)
        for d in disks:
            cpu, sim, nbytes = run(d, reqs, args.repeat)
            shown = (f"{nbytes / sim / 1e6:8.1f} MB/s" if kind.startswith("seq")
                     else f"{sim / n * 1e3:8.2f} ms/req")
            print(f"{kind:<24} {d:<10} {n / cpu:>10.0f} {cpu / base_cpu:>8.1f} {shown:>16}")
    print(f"\nideal disk: the cost of the call and result object alone; x ideal = CPU time relative to it."
          f"\nrandom streams span the first {sectors * 512 / 1e9:.0f} GB (the smallest disk listed); "
          f"the 4K+512 FUA writes a 1 GiB span.")


if __name__ == "__main__":
    main()
