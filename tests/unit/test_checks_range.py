"""Checks.bad_range (every extent read is checked with it) answers as the per-block zones do:
a binary search in the metadata zones' runs, the same answer as `meta[b:b + n].any()`."""

from __future__ import annotations

import random

import numpy as np
import pytest

from simfs.fs.checks import zone_runs
from simfs.fs.volume import Volume
from simfs.ondisk.mkfs import mkfs


def _reference(checks, b: int, n: int) -> bool:
    return b < checks.first_data_block or b + n > checks.nblocks or bool(checks.meta[b:b + n].any())


@pytest.mark.parametrize("profile", ["ext2", "ext4"])
def test_bad_range_is_the_zones_answer(tmp_path, profile):
    img = tmp_path / "a.img"
    mkfs(img, 64 << 20, block_size=1024, profile=profile)
    with Volume.open(img) as vol:
        checks = vol.checks
        rng = random.Random(7)
        edges = [s for s in checks.meta_starts] + [e for e in checks.meta_ends]
        cases = [(b + d, n) for b in edges for d in (-2, -1, 0, 1) for n in (1, 2, 3, 40)]
        cases += [(rng.randrange(checks.nblocks + 5), rng.randrange(1, 5000)) for _ in range(5000)]
        assert len(checks.meta_starts) > 3
        for b, n in cases:
            assert checks.bad_range(b, n) == _reference(checks, b, n), (b, n)


def test_zone_runs():
    meta = np.array([1, 1, 0, 0, 1, 0, 1, 1, 1], dtype=bool)
    assert zone_runs(meta) == ([0, 4, 6], [2, 5, 9])
    assert zone_runs(np.zeros(4, dtype=bool)) == ([], [])
