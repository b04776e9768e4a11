"""Seeded randomness of the workload generator: every choice comes from `random.Random` seeded
through SHA-256 of (seed, purpose), using only random()/randrange()/shuffle() (stable across
CPython versions), normal variates through `statistics.NormalDist.inv_cdf`; file contents use a
64-bit LCG (M64 is its modulus mask)."""

from __future__ import annotations

import hashlib
import random
from statistics import NormalDist

_ND = NormalDist()
M64 = (1 << 64) - 1


def subseed(seed: int, *parts: object) -> int:
    h = hashlib.sha256(repr((seed,) + parts).encode()).digest()
    return int.from_bytes(h[:8], "little")


def seeded(seed: int, *parts: object) -> random.Random:
    return random.Random(subseed(seed, *parts))


def pick(rng: random.Random, seq):
    return seq[rng.randrange(len(seq))]


def normal(rng: random.Random) -> float:
    u = rng.random()
    return _ND.inv_cdf(min(max(u, 1e-12), 1 - 1e-12))
