"""`python -m experiments.workload DEST [--files N] [--seed S] [--svn] [--total-size 50M] ...`:
write a tree and print its summary."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .plan import DEFAULT_MTIME
from .tree import generate_tree


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m experiments.workload",
        description="Write a seeded, deterministic source-like tree and print its summary.")
    ap.add_argument("dest", type=Path, help="directory to create (missing or empty)")
    ap.add_argument("--files", type=int, default=None,
                    help="regular files outside .svn (default 2000, or derived from --total-size)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--total-size", default=None, help="exact bytes of the working files, e.g. 50M")
    ap.add_argument("--max-file-size", default="4M")
    ap.add_argument("--max-depth", type=int, default=8)
    ap.add_argument("--fanout", default="5,30", help="entries per directory, LO,HI")
    ap.add_argument("--svn", action="store_true", help="add Subversion 1.6 .svn/ directories")
    ap.add_argument("--no-symlinks", action="store_true")
    ap.add_argument("--no-hardlinks", action="store_true")
    ap.add_argument("--no-empty", action="store_true", help="no empty files or directories")
    ap.add_argument("--no-deep-paths", action="store_true")
    ap.add_argument("--mtime", type=int, default=DEFAULT_MTIME, help="base mtime (epoch seconds)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    a = ap.parse_args(argv)
    files = a.files if a.files is not None else (None if a.total_size else 2000)
    try:
        lo, hi = (int(x) for x in a.fanout.split(","))
        s = generate_tree(a.dest, seed=a.seed, files=files, total_size=a.total_size,
                          max_file_size=a.max_file_size, max_depth=a.max_depth, fanout=(lo, hi),
                          svn=a.svn, symlinks=not a.no_symlinks, hardlinks=not a.no_hardlinks,
                          empty_files=not a.no_empty, empty_dirs=not a.no_empty,
                          deep_paths=not a.no_deep_paths, mtime=a.mtime)
    except (ValueError, OSError) as e:
        print(f"workload: {e}", file=sys.stderr)
        return 2
    print(json.dumps(s.to_dict(), indent=2) if a.json else s.format())
    return 0
