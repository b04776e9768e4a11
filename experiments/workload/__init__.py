"""Seeded, deterministic generator of source-like trees (the workloads of the seed experiments).

    from experiments.workload import generate_tree
    summary = generate_tree(Path("/tmp/src"), seed=1, files=20_000)
    summary = generate_tree(Path("/tmp/wc"), seed=1, files=5_000, svn=True)   # seed 001
    summary = generate_tree(Path("/tmp/src"), seed=1, files=None, total_size="400M")  # seed 000

CLI (experiments/workload/cli.py)::

    python -m experiments.workload DEST [--files N] [--seed S] [--svn] [--total-size 50M]
                                        [--max-file-size 4M] [--max-depth 8] [--json] ...

Determinism
    The same seed and options give a byte-identical tree: names, contents, file types,
    permission bits, link targets, hard-link structure, and atime/mtime (whole seconds from
    ``mtime`` = 2010-01-01T00:00:00Z by default plus a seeded offset of up to one year).  The
    creation order is deterministic too (pre-order: a directory's files, then its symlinks,
    then its hard links, then its ``.svn/``, then its subdirectories, each in name order).  Only
    ownership, inode numbers and ctimes depend on the host.  Every pseudo-random choice comes
    from ``random.Random`` seeded through SHA-256 of (seed, purpose), using only
    ``random()``/``randrange()``/``shuffle()`` (stable across CPython versions; normal variates
    through ``statistics.NormalDist.inv_cdf``), or from a 64-bit LCG for file contents; neither numpy nor hash randomisation is involved.

File-size distribution (``files`` regular files outside ``.svn``)
    A mixture modelled on a BSD/Linux ``src/`` tree, where median text files are a few KiB
    and a small fraction of generated tables, ChangeLogs, firmware blobs-as-C and big drivers
    make up a long tail:

    * 2 % empty files (at least one when ``empty_files``);
    * the body, ~93 %: log-normal, median 4.5 KiB, sigma 0.95, clamped to 0.5 - 30 KiB
      (so ~90 % of the body lies between 1 and 20 KiB, like .c/.h/Makefile/man pages);
    * the tail, ~5 %: Pareto with x_m = 24 KiB and alpha = 1.3, capped at ``max_file_size``
      (default 4 MiB): a 2000-file tree has ~100 files over 24 KiB and a handful over 256 KiB;
    * forced large files: ``files // 1000`` files log-uniform in (1 MiB, ``max_file_size``],
      so every tree of >= 1000 files has a file over 1 MiB (unless ``max_file_size`` <= 1 MiB).

    Mean ~ 13 KiB, median ~ 4.7 KiB, 10th/90th/99th percentiles ~ 1.2/21/93 KiB: 400 MiB of
    "FreeBSD src" (seed 000) comes out as ~32k files.  With ``total_size`` and a file count,
    all sizes except the forced large files are scaled to make the total exact (the large
    files are scaled as well if they would be more than a quarter of the total); with
    ``total_size`` and ``files=None`` the count comes from drawing sizes until the total is
    reached, and then the same scaling makes it exact.  ``total_size`` counts working files only, not ``.svn`` metadata.

Shape
    Every directory gets a capacity of 5-30 entries (log-normal, median 10), and directories
    are attached to random non-full parents whose depth is below ``max_depth`` (8) until the
    free slots hold all the files; a parent's level is chosen with weight (number of open
    directories there) * 0.75**depth, so trees are bushy near the top and thin out with
    depth instead of piling up at ``max_depth``: src-like trees with most directories at
    depth 3-6, some at 7-8, ~10 files per directory.  Extras, all enabled by default:

    * empty directories: ``max(1, dirs // 100)`` leaf directories with no entries;
    * symlinks: ``max(3, files // 100)``, all relative: ~75 % to a regular file, ~17 % to a
      directory that is not an ancestor of the link (no loops for ``find -L``), and ~8 %
      dangling on purpose (``missing_*`` targets); at least one of each kind;
    * hard links: ``max(1, files // 200)`` extra names for earlier-created regular files;
    * deep paths: ``1 + files // 5000`` chains of long directory names ending in a file whose
      path (relative to DEST) is 200-260 characters (beyond ustar's 100/155 limits);
    * ``svn=True``: a Subversion 1.6 (wc format 10) ``.svn/`` in every working directory:
      ``entries``, ``all-wcprops`` and sometimes ``dir-prop-base`` (0444), ``text-base/NAME.svn-base``
      (a copy of every file, or ``link TARGET`` for a symlink), ``prop-base/NAME.svn-base`` for
      files with properties (svn:keywords/eol-style on sources, svn:executable, svn:special),
      and empty ``props/``, ``tmp/text-base``, ``tmp/prop-base``, ``tmp/props`` (``tmp/`` holds
      those three): 8 directories per working directory, as in seed 001's Jenkins workspaces
      (844k directories for 2M files), and ~3 files per working file (seed 001 had 2.3 files
      per directory; these trees have ~3.5, as their directories hold ~10 files).

Contents are text: C-like code (or make/shell/roff text for non-C names) assembled from whole
lines of a per-seed corpus of ~1 MiB built from identifier and template pools, behind a
per-file header naming the file; each stretch of the corpus reuses a few local identifiers
and comment words, as real code does.  They compress like source, not like random bytes:
gzip -6 gives ~3.3x (real C trees: 3.5-5.5x; random bytes: 1x).

Modules, by job: rng (seeded randomness), sizes (the size mixture), names (word pools, file and
directory names), source (file contents), plan (the tree, decided before writing), writer
(writing it), svn (.svn/ metadata), tree (generate_tree, TreeSummary), cli.
"""

from .plan import DEFAULT_MTIME, MTIME_SPREAD
from .tree import TreeSummary, generate_tree

__all__ = ["TreeSummary", "generate_tree", "DEFAULT_MTIME", "MTIME_SPREAD"]
