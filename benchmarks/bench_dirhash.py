"""Throughput of simfs.ondisk.dirhash: names hashed per second, per hash version.

    .venv/bin/python -m benchmarks.bench_dirhash [--names N] [--repeat R]

Names are source-tree-like (8..24 ASCII bytes, the common case), plus a non-ASCII set (signed
variant: exercises the sign-correction path) and a long-name set (100..255 bytes). Rates are
for the scalar call and for the numpy-batched ``DirHasher.many`` at two batch sizes, from
process CPU time (best of --repeat), so that other load on the machine distorts them less.
"""

from __future__ import annotations

import argparse
import random
import time

from simfs.ondisk.dirhash import DirHasher


def make_names(n: int, rng: random.Random, lo: int, hi: int, alphabet: bytes) -> list[bytes]:
    return [bytes(rng.choice(alphabet) for _ in range(rng.randint(lo, hi))) for _ in range(n)]


def bench(hasher: DirHasher, names: list[bytes], repeat: int, batch: int) -> float:
    """names/s of hasher(name) per name (batch=0) or of hasher.many() on slices of batch."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        if batch:
            many = hasher.many
            for i in range(0, len(names), batch):
                many(names[i:i + batch])
        else:
            for name in names:
                hasher(name)
        best = min(best, time.process_time() - t0)
    return len(names) / best


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rng = random.Random(1)
    ascii_ = b"abcdefghijklmnopqrstuvwxyz0123456789_.-"
    sets = {
        "ascii 8-24B": make_names(args.names, rng, 8, 24, ascii_),
        "non-ascii 8-24B": make_names(args.names, rng, 8, 24, ascii_ + bytes(range(0x80, 0x100))),
        "long 100-255B": make_names(args.names // 10, rng, 100, 255, ascii_),
    }
    seed = bytes(rng.getrandbits(8) for _ in range(16))
    for batch in (0, 100, 10_000):
        how = "per name: hasher(name)" if not batch else f"hasher.many(), {batch} names a call"
        print(f"\n{how} -- names/s")
        print(f"{'hash':<18} " + " ".join(f"{k:>16}" for k in sets))
        for version in ("legacy", "half_md4", "tea", "legacy_unsigned", "half_md4_unsigned",
                        "tea_unsigned"):
            h = DirHasher(version, seed)
            rates = [bench(h, names, args.repeat, batch) for names in sets.values()]
            print(f"{version:<18} " + " ".join(f"{r:>16,.0f}" for r in rates))


if __name__ == "__main__":
    main()
