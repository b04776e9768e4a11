"""File sizes: the src/-like mixture (empty files, a log-normal body, a Pareto tail, forced
large files), scaled to an exact total when one is asked for, or a file count derived from a
total (see experiments/workload/__init__.py)."""

from __future__ import annotations

import math
import random

from simfs.units import KiB, MiB

from .rng import normal, seeded

# File-size mixture.
EMPTY_FRACTION = 0.02
BODY_MEDIAN = 4.5 * KiB
BODY_SIGMA = 0.95
BODY_MIN = 512
BODY_MAX = 30 * KiB
TAIL_FRACTION = 0.05
TAIL_XM = 24 * KiB
TAIL_ALPHA = 1.3
LARGE_MIN = 1 * MiB
LARGE_PER_FILES = 1000
DEFAULT_MAX_FILE_SIZE = 4 * MiB


def _draw_size(rng: random.Random, max_size: int) -> int:
    u = rng.random()
    if u < TAIL_FRACTION:
        x = TAIL_XM / (1.0 - rng.random()) ** (1.0 / TAIL_ALPHA)
    else:
        x = BODY_MEDIAN * math.exp(BODY_SIGMA * normal(rng))
        x = min(max(x, BODY_MIN), BODY_MAX)
    return max(1, min(int(x), max_size))


def draw_sizes(rng: random.Random, n: int, max_size: int, empty_files: bool,
               total: int | None) -> list[int]:
    sizes = [_draw_size(rng, max_size) for _ in range(n)]
    idx = list(range(n))
    rng.shuffle(idx)
    n_large = n // LARGE_PER_FILES if max_size > LARGE_MIN else 0
    large = idx[:n_large]
    lo, hi = math.log(LARGE_MIN + 1), math.log(max_size)
    for i in large:
        sizes[i] = min(max_size, max(LARGE_MIN + 1, int(math.exp(lo + (hi - lo) * rng.random()))))
    n_empty = 0
    if empty_files and n >= 2:
        n_empty = max(1, round(n * EMPTY_FRACTION))
    empty = idx[n_large: n_large + n_empty]
    for i in empty:
        sizes[i] = 0
    if total is not None:
        _scale_sizes(sizes, set(large), set(empty), total, max_size)
    return sizes


def _scale_sizes(sizes: list[int], large: set[int], empty: set[int], total: int,
                 max_size: int) -> None:
    n = len(sizes)
    nonempty = [i for i in range(n) if i not in empty]
    if not nonempty:
        if total:
            raise ValueError("total_size > 0 but every file is empty")
        return
    if total < len(nonempty) or total > len(nonempty) * max_size:
        raise ValueError(f"total_size {total} impossible for {len(nonempty)} non-empty files "
                         f"of at most {max_size} bytes")
    fixed = [i for i in nonempty if i in large]
    if sum(sizes[i] for i in fixed) > total // 4:
        fixed = []
    fixed_set = set(fixed)
    free = [i for i in nonempty if i not in fixed_set]
    target = total - sum(sizes[i] for i in fixed)
    if not free:
        free, fixed = fixed, []
        target = total
    for _ in range(8):
        cur = sum(sizes[i] for i in free)
        if cur == target:
            break
        adjustable = [i for i in free if (sizes[i] < max_size if cur < target else sizes[i] > 1)]
        if not adjustable:
            break
        adj_sum = sum(sizes[i] for i in adjustable)
        f = (adj_sum + (target - cur)) / adj_sum
        for i in adjustable:
            sizes[i] = min(max_size, max(1, int(round(sizes[i] * f))))
    # exact residual, biggest adjustable files first
    diff = target - sum(sizes[i] for i in free)
    order = sorted(free, key=lambda i: (-sizes[i], i))
    while diff:
        moved = False
        for i in order:
            if diff > 0 and sizes[i] < max_size:
                d = min(diff, max_size - sizes[i])
            elif diff < 0 and sizes[i] > 1:
                d = -min(-diff, sizes[i] - 1)
            else:
                continue
            sizes[i] += d
            diff -= d
            moved = True
            if not diff:
                break
        if not moved:  # only reachable if the fixed large files absorb the rest
            raise ValueError(f"cannot reach total_size {total}")


def resolve_counts(seed: int, files: int | None, total_size, max_file_size,
                   empty_files: bool) -> tuple[int, int, int | None]:
    """(files, max size, total bytes or None) from a tree's arguments: `files` may be left to
    follow from `total_size`; ValueError for a combination that makes no tree."""
    from simfs.units import parse_size
    max_size = parse_size(max_file_size)
    if max_size < 1:
        raise ValueError("max_file_size must be >= 1")
    total = parse_size(total_size) if total_size is not None else None
    if files is None:
        if total is None:
            raise ValueError("give files, total_size or both")
        files = count_for_total(seed, total, max_size, empty_files)
    if files < 1:
        raise ValueError("files must be >= 1")
    return files, max_size, total


def count_for_total(seed: int, total: int, max_size: int, empty_files: bool) -> int:
    rng = seeded(seed, "count")
    acc = 0
    n = 0
    while acc < total:
        n += 1
        acc += _draw_size(rng, max_size)
        if n % LARGE_PER_FILES == 0 and max_size > LARGE_MIN:
            acc += (LARGE_MIN + max_size) // 2 - 10 * KiB
    if empty_files and n >= 2:
        n = round(n / (1 - EMPTY_FRACTION))
    return max(1, n)
