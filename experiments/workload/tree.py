"""`generate_tree`: the generator's entry point, and `TreeSummary`, what it wrote."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from simfs.units import format_mib

from .plan import DEFAULT_MTIME, plan_tree
from .rng import seeded
from .sizes import DEFAULT_MAX_FILE_SIZE, draw_sizes, resolve_counts
from .writer import Writer


@dataclasses.dataclass(frozen=True)
class TreeSummary:
    """What generate_tree wrote below ``root`` (the root itself is not counted).

    files/total_bytes count distinct regular-file inodes (hard-linked names once), .svn
    metadata included; ``hardlinks`` counts the extra names, so the number of regular-file
    names a walk finds is ``files + hardlinks``.  ``dirs`` includes .svn directories.
    """

    root: str
    seed: int
    files: int
    dirs: int
    symlinks: int
    hardlinks: int
    total_bytes: int
    largest_file: int          # bytes
    largest_path: str          # relative to root
    empty_files: int
    empty_dirs: int            # directories with no entries at all (.svn/tmp etc. included)
    dangling_symlinks: int
    source_files: int          # regular files outside .svn (== the ``files`` asked for)
    source_bytes: int          # their bytes (== ``total_size`` when one was asked for)
    svn_dirs: int              # number of .svn directories
    max_depth: int             # deepest working directory (root = 0, .svn not counted)
    longest_path: int          # characters in the longest relative path

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def format(self) -> str:
        lines = [
            f"tree {self.root} (seed {self.seed})",
            f"  files        {self.files:>10,}   ({self.source_files:,} outside .svn, "
            f"{self.empty_files:,} empty)",
            f"  dirs         {self.dirs:>10,}   ({self.svn_dirs:,} .svn, {self.empty_dirs:,} empty, "
            f"depth {self.max_depth})",
            f"  symlinks     {self.symlinks:>10,}   ({self.dangling_symlinks:,} dangling)",
            f"  hardlinks    {self.hardlinks:>10,}",
            f"  total bytes  {self.total_bytes:>14,}   ({format_mib(self.total_bytes)}; "
            f"{format_mib(self.source_bytes)} outside .svn)",
            f"  largest file {self.largest_file:>14,}   {self.largest_path}",
            f"  longest path {self.longest_path:>10,} chars",
        ]
        return "\n".join(lines)

    __str__ = format


def generate_tree(
    dest: Path | str,
    *,
    seed: int = 0,
    files: int | None = 2000,
    total_size: int | str | None = None,
    max_file_size: int | str = DEFAULT_MAX_FILE_SIZE,
    max_depth: int = 8,
    fanout: tuple[int, int] = (5, 30),
    svn: bool = False,
    symlinks: bool = True,
    hardlinks: bool = True,
    empty_files: bool = True,
    empty_dirs: bool = True,
    deep_paths: bool = True,
    mtime: int = DEFAULT_MTIME,
) -> TreeSummary:
    """Write a deterministic source-like tree below ``dest`` and return what was written.

    ``dest`` must be missing or an empty directory.  ``files`` is the number of distinct
    regular files outside ``.svn`` (symlinks and extra hard-link names come on top);
    ``files=None`` with ``total_size`` derives the count from the size distribution.
    ``total_size`` (bytes, or a string like "50M") makes the working files' sizes sum to
    exactly that.  See experiments/workload/__init__.py for the distributions.
    """
    if not isinstance(seed, int) or seed < 0:
        raise ValueError("seed must be a non-negative int")
    files, max_size, total = resolve_counts(seed, files, total_size, max_file_size, empty_files)
    lo, hi = fanout
    if not (1 <= lo <= hi):
        raise ValueError("fanout must be (lo, hi) with 1 <= lo <= hi")
    if max_depth < 0:
        raise ValueError("max_depth must be >= 0")

    dest = Path(dest)
    if dest.exists():
        if not dest.is_dir() or dest.is_symlink():
            raise FileExistsError(f"{dest} exists and is not a directory")
        with os.scandir(dest) as entries:
            if any(entries):
                raise FileExistsError(f"{dest} is not empty")
    else:
        dest.mkdir(parents=True)

    sizes = draw_sizes(seeded(seed, "sizes"), files, max_size, empty_files, total)
    plan = plan_tree(seed, files, sizes, max_depth=max_depth, fanout=(lo, hi), symlinks=symlinks,
                     hardlinks=hardlinks, empty_dirs=empty_dirs, deep_paths=deep_paths, mtime=mtime)
    w = Writer(str(dest), seed, plan, svn)
    w.run()
    return TreeSummary(
        root=str(dest), seed=seed, files=w.files, dirs=w.dirs, symlinks=w.symlinks,
        hardlinks=w.hardlinks, total_bytes=w.total, largest_file=max(0, w.largest),
        largest_path=w.largest_path, empty_files=w.empty_files, empty_dirs=w.empty_dirs,
        dangling_symlinks=plan.dangling, source_files=w.src_files, source_bytes=w.src_bytes,
        svn_dirs=w.svn_dirs, max_depth=w.max_depth, longest_path=w.longest,
    )
