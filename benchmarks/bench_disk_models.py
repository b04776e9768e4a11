"""Requests per second the disk models service in Python, for typical streams.

    .venv/bin/python -m benchmarks.bench_disk_models [--requests N] [--repeat R] [--disks a,b]
        [--against REV]

The model sits under every block I/O of the FUSE daemon, so its cost per request matters:
sequential continuation and cache hits take a fast path (aim: >= 100,000 req/s).  Rates are
from process CPU time (best of --repeat).  Beside each rate: the simulated service (MB/s or ms
per request) so a fast but wrong path would show, and the ratio to the `ideal` disk (the cost
of the call itself).

--against REV adds, side by side in the same run, disk_models as of git revision REV (copied
into a temporary package, imported from source) and the new code's drive queue at depth 1
(disk_models.queue.DriveQueue, submit then pop): their rates over this tree's `submit`, and
whether the simulated times are identical. Compare like with like: the copy is never compiled,
so run with SIMFS_PURE=disk_models... (or SIMFS_PURE=1) to time this tree from source too.
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


def run(spec: str, reqs, repeat: int, make=make_disk) -> tuple[float, float, int]:
    """(best CPU seconds, simulated seconds, bytes) for a closed-loop run of reqs."""
    disk = make(spec)
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


def old_package(rev: str, where: str):
    """disk_models as of git revision `rev`, importable as its own package (from source)."""
    import importlib
    import io
    import os
    import subprocess
    import sys
    import tarfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    data = subprocess.run(["git", "archive", rev, "disk_models"], cwd=root, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(where, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(where)
    name = "disk_models_" + "".join(c for c in rev if c.isalnum())
    os.rename(os.path.join(where, "disk_models"), os.path.join(where, name))
    sys.path.insert(0, where)
    return importlib.import_module(name)


def run_queued(spec: str, reqs, repeat: int) -> tuple[float, float]:
    """(best CPU seconds, simulated seconds) of the same closed loop through DriveQueue, depth 1."""
    from disk_models import DriveQueue

    disk = make_disk(spec)
    best, sim = float("inf"), 0.0
    for _ in range(repeat):
        disk.reset()
        q = DriveQueue(disk, 1, "fcfs")
        submit, pop = q.submit, q.pop
        t = 0.0
        c0 = time.process_time()
        for op, lba, n, sync in reqs:
            submit(op, lba, n, t, sync)
            t = pop()[1].finish
        t = disk.flush(t)
        best = min(best, time.process_time() - c0)
        sim = t
    return best, sim


def against(rev: str, disks, kinds_n, sectors, repeat: int) -> None:
    """This tree's submit beside REV's and beside the depth-1 queue, in one run."""
    import tempfile

    with tempfile.TemporaryDirectory() as where:
        old = old_package(rev, where)
        print(f"\nside by side (CPU time of this tree's submit = 1.00; simulated time identical?): {rev}")
        print(f"{'stream':<24} {'disk':<10} {'new req/s':>10} {rev + ' req/s':>14} {'old/new':>8} "
              f"{'queue d=1':>10} {'queue/new':>10}  same")
        ratios, qratios = [], []
        for kind, n in kinds_n:
            reqs = stream(kind, n, sectors)
            for d in disks:
                new_cpu, new_sim, _ = run(d, reqs, repeat)
                old_cpu, old_sim, _ = run(d, reqs, repeat, old.make_disk)
                q_cpu, q_sim = run_queued(d, reqs, repeat)
                ratios.append(old_cpu / new_cpu)
                qratios.append(q_cpu / new_cpu)
                same = "yes" if new_sim == old_sim == q_sim else "NO"
                print(f"{kind:<24} {d:<10} {n / new_cpu:>10.0f} {n / old_cpu:>14.0f} {old_cpu / new_cpu:>8.2f} "
                      f"{n / q_cpu:>10.0f} {q_cpu / new_cpu:>10.2f}  {same}")
        geo = lambda xs: __import__("math").prod(xs) ** (1 / len(xs))  # noqa: E731
        print(f"geometric mean CPU time: {rev} / new = {geo(ratios):.3f}; depth-1 queue / new submit = "
              f"{geo(qratios):.3f}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--disks", default="sata7200,wd-ears,wd1200jb")
    ap.add_argument("--against", metavar="REV", help="also time disk_models as of git revision REV, and the "
                    "depth-1 drive queue, side by side (see the module docstring)")
    args = ap.parse_args(argv)
    if args.against:
        import os
        import subprocess
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if subprocess.run(["git", "rev-parse", "--verify", "-q", args.against + "^{commit}"], cwd=root,
                          capture_output=True).returncode:
            ap.exit(2, f"bench_disk_models: --against {args.against}: not a git revision of {root}\n")
    disks = args.disks.split(",")
    sectors = min(make_disk(d).sectors for d in disks)
    print(f"{'stream':<24} {'disk':<10} {'req/s':>10} {'x ideal':>8} {'simulated':>16}")
    kinds_n = [(k, args.requests if k.startswith("seq") or k == "rand-read-4k" else args.requests // 10)
               for k in KINDS]
    for kind, n in kinds_n:
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
    if args.against:
        against(args.against, disks, kinds_n, sectors, args.repeat)


if __name__ == "__main__":
    main()
