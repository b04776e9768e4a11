"""Tree planning: the directory skeleton (capacities, parents chosen by level), file slots,
empty directories, deep chains, names, pre-order, times, symlinks and hard links, all decided
before anything is written (see experiments/workload/__init__.py, "Shape").

The one planner: the writer (writer.py) and the describer (describe.py, which streams the tree
without writing it, up to seed 001's two million files) both walk the `Plan` made here, so the
random draws are made in one place. Per-file data is kept compactly: sizes, mtimes and
directories in arrays, the file names of a directory in one bytes object (sorted,
NUL-separated), and the per-directory name sets only while a directory is being filled (they
are rebuilt for the few directories that get a deep path, a symlink or a hard link later).
About 30 bytes per working file plus ~300 bytes per working directory.
"""

from __future__ import annotations

import math
import os
import random
from array import array
from bisect import bisect_right

from .names import dir_name, file_name, long_name, unique_name
from .rng import normal, pick, seeded
from .source import corpora

DEFAULT_MTIME = 1262304000  # 2010-01-01T00:00:00Z, the era of seeds 000-002
MTIME_SPREAD = 365 * 86400  # mtimes lie in [mtime, mtime + one year)

DEPTH_DECAY = 0.75  # weight of a directory level as a parent: DEPTH_DECAY ** depth
DEEP_PATH_MIN = 200  # "deep" relative path length


class Dir:
    """A planned directory; its files are ids into the plan's `Files`."""
    __slots__ = ("parent", "depth", "cap", "subdirs", "name", "path", "empty", "pre", "mtime",
                 "props", "fblob", "fids", "symlinks", "hardlinks")

    def __init__(self, parent: Dir | None, depth: int, cap: int):
        self.parent = parent
        self.depth = depth
        self.cap = cap
        self.subdirs: list[Dir] = []
        self.name = ""
        self.path = ""
        self.empty = False
        self.pre = -1
        self.mtime = 0
        self.props = False
        self.fblob = b""           # file names, sorted, NUL-separated
        self.fids: array | None = None   # their file ids, same order
        self.symlinks: list[tuple[str, str, int]] | None = None   # (name, target, mtime)
        self.hardlinks: list[tuple[str, int]] | None = None       # (name, file id)

    def fnames(self) -> list[str]:
        """This directory's file names, in name order."""
        return self.fblob.decode().split("\0") if self.fblob else []

    def files(self) -> list[tuple[str, int]]:
        """(name, file id) of this directory's files, in name order."""
        return list(zip(self.fnames(), self.fids or ()))

    def set_files(self, pairs: list[tuple[str, int]]) -> None:
        pairs.sort()
        self.fblob = "\0".join(n for n, _ in pairs).encode()
        self.fids = array("l", (f for _, f in pairs))

    def add_file(self, name: str, fid: int) -> None:
        self.set_files(self.files() + [(name, fid)])

    def fname_of(self, fid: int) -> str:
        return self.fnames()[self.fids.index(fid)]

    def rel(self, name: str) -> str:
        """The path of `name` in this directory, relative to the tree's root."""
        return f"{self.path}/{name}" if self.path else name


class Files:
    """Per-file data of the plan, compact."""

    def __init__(self, n: int):
        self.n = 0
        self.size = array("q")
        self.mtime = array("q", bytes(8 * n))
        self.km = bytearray(n)                 # index into self.kinds
        self.kinds: list[tuple[str, int]] = []  # (kind, mode)
        self._kidx: dict[tuple[str, int], int] = {}
        self.dir: list[Dir | None] = [None] * n

    def add(self, d: Dir, kind: str, mode: int, mtime: int) -> int:
        fid = self.n
        self.n += 1
        km = self._kidx.get((kind, mode))
        if km is None:
            km = self._kidx[(kind, mode)] = len(self.kinds)
            self.kinds.append((kind, mode))
        self.km[fid] = km
        self.mtime[fid] = mtime
        self.dir[fid] = d
        return fid

    def kind_mode(self, fid: int) -> tuple[str, int]:
        return self.kinds[self.km[fid]]

    def path(self, fid: int) -> str:
        """The file's first name, relative to the tree's root."""
        d = self.dir[fid]
        return d.rel(d.fname_of(fid))


class Plan:
    def __init__(self, n_files: int) -> None:
        self.pre: list[Dir] = []      # the directories in pre-order (children by name)
        self.files = Files(n_files)
        self.root: Dir | None = None
        self.dangling = 0


class _NameSets:
    """The name sets of directories that get names after the files are named (rebuilt on
    demand from what the directory holds)."""

    def __init__(self) -> None:
        self.sets: dict[int, set[str]] = {}

    def new(self, d: Dir) -> None:
        self.sets[id(d)] = {".svn"}

    def __call__(self, d: Dir) -> set[str]:
        s = self.sets.get(id(d))
        if s is None:
            s = {".svn"}
            s.update(c.name for c in d.subdirs)
            s.update(d.fnames())
            s.update(n for n, _, _ in d.symlinks or ())
            s.update(n for n, _ in d.hardlinks or ())
            self.sets[id(d)] = s
        return s


def _cap(rng: random.Random, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, round(10 * math.exp(0.5 * normal(rng))))))


def plan_tree(seed: int, n_files: int, sizes: list[int], *, max_depth: int, fanout: tuple[int, int],
              symlinks: bool, hardlinks: bool, empty_dirs: bool, deep_paths: bool,
              mtime: int) -> Plan:
    """The tree of `n_files` working files with these `sizes` (one per file id)."""
    rng = seeded(seed, "plan")
    v = corpora(seed).vocab
    plan = Plan(n_files)
    n_deep = (1 + n_files // 5000) if deep_paths and n_files >= 1 else 0
    n_tree = n_files - n_deep
    dirs = _skeleton(rng, n_tree, max_depth, fanout)
    plan.root = root = dirs[0]
    free = _file_slots(rng, dirs, n_tree)
    if empty_dirs:
        _empty_dirs(rng, dirs, free, max_depth)
    _name_tree(rng, v, dirs, free, plan.files, mtime)
    del free
    names = _NameSets()
    _set_paths(root)
    _deep_chains(rng, v, dirs, n_deep, max_depth, plan.files, names, mtime)
    del dirs
    assert plan.files.n == n_files, (plan.files.n, n_files)
    plan.files.size = array("q", sizes)
    plan.pre = _preorder(root)
    for d in plan.pre:
        d.mtime = mtime + rng.randrange(MTIME_SPREAD)
        d.props = rng.random() < 0.2
    live = [d for d in plan.pre if not d.empty]
    if symlinks and n_files >= 1:
        for k in range(max(3, n_files // 100)):
            _symlink(rng, v, plan, pick(rng, live), k, names, mtime)
    if hardlinks and n_files >= 1:
        _hardlinks(rng, v, plan, live, names)
    return plan


def _skeleton(rng: random.Random, n_tree: int, max_depth: int, fanout: tuple[int, int]) -> list[Dir]:
    """1. Directories attached to random non-full parents until their slots hold n_tree
    files. A level is chosen with weight (its size * DEPTH_DECAY**depth), which keeps trees
    bushy near the top instead of piling up at max_depth."""
    lo, hi = fanout
    root = Dir(None, 0, _cap(rng, lo, hi))
    dirs = [root]
    levels: list[list[Dir]] = [[] for _ in range(max_depth)]
    if max_depth > 0:
        levels[0].append(root)
    n_elig = len(levels[0]) if max_depth > 0 else 0
    free_total = root.cap
    decay = [DEPTH_DECAY ** k for k in range(max_depth)]
    while free_total < n_tree and n_elig:
        weights = [len(lv) * decay[k] for k, lv in enumerate(levels)]
        x = rng.random() * sum(weights)
        k = 0
        while k < len(weights) - 1 and (x >= weights[k] or not levels[k]):
            x -= weights[k]
            k += 1
        lv = levels[k]
        i = rng.randrange(len(lv))
        p = lv[i]
        c = Dir(p, p.depth + 1, _cap(rng, lo, hi))
        p.subdirs.append(c)
        dirs.append(c)
        free_total += c.cap - 1
        if len(p.subdirs) >= p.cap:
            lv[i] = lv[-1]
            lv.pop()
            n_elig -= 1
        if c.depth < max_depth:
            levels[c.depth].append(c)
            n_elig += 1
    return dirs


def _file_slots(rng: random.Random, dirs: list[Dir], n_tree: int) -> array:
    """2. How many files each directory gets: its free capacity, trimmed (or overfilled) at
    random to exactly n_tree."""
    free = array("l", (max(0, d.cap - len(d.subdirs)) for d in dirs))
    excess = sum(free) - n_tree
    while excess > 0:
        j = rng.randrange(len(dirs))
        if free[j] > (1 if not dirs[j].subdirs else 0):
            free[j] -= 1
            excess -= 1
        elif all(f <= (1 if not d.subdirs else 0) for f, d in zip(free, dirs)):
            # trees too small for one file per leaf: drop anywhere
            j2 = next(k for k, f in enumerate(free) if f > 0)
            free[j2] -= 1
            excess -= 1
    while excess < 0:  # max_depth too small for the fan-out: overfill
        free[rng.randrange(len(dirs))] += 1
        excess += 1
    return free


def _empty_dirs(rng: random.Random, dirs: list[Dir], free: array, max_depth: int) -> None:
    """3. Empty leaf directories, one per hundred directories (at least one)."""
    parents = [d for d in dirs if d.depth < max_depth] or [dirs[0]]
    for _ in range(max(1, len(dirs) // 100)):
        p = pick(rng, parents)
        c = Dir(p, p.depth + 1, 0)
        c.empty = True
        p.subdirs.append(c)
        dirs.append(c)
        free.append(0)


def _name_tree(rng: random.Random, v, dirs: list[Dir], free: array, F: Files, mtime: int) -> None:
    """4. Names of directories, then of files, unique per directory (a directory's slots are
    consecutive, so its name set lives only while it is filled)."""
    for d in dirs:
        if d.subdirs:
            names = {".svn"}
            for c in d.subdirs:
                c.name = unique_name(names, dir_name(rng, v, c.depth))
    for d, k in zip(dirs, free):
        if not k:
            continue
        names = {".svn"}
        names.update(c.name for c in d.subdirs)
        pairs = []
        for _ in range(k):
            fname, kind, mode = file_name(rng, v)
            fname = unique_name(names, fname)
            pairs.append((fname, F.add(d, kind, mode, mtime + rng.randrange(MTIME_SPREAD))))
        d.set_files(pairs)


def _deep_chains(rng: random.Random, v, dirs: list[Dir], n_deep: int, max_depth: int, F: Files,
                 names: _NameSets, mtime: int) -> None:
    """5. Chains of long directory names ending in a file whose path is longer than
    DEEP_PATH_MIN characters."""
    lim = max(0, max_depth - 3)
    starts = [d for d in dirs if not d.empty and d.depth <= lim]
    for _ in range(n_deep):
        d = pick(rng, starts or [dirs[0]])
        target = DEEP_PATH_MIN + 10 + rng.randrange(50)
        while d.depth < max_depth and len(d.path) + 1 + 80 < target:
            c = Dir(d, d.depth + 1, 1)
            c.name = unique_name(names(d), long_name(rng, v, 40 + rng.randrange(41)))
            c.path = d.rel(c.name)
            names.new(c)
            d.subdirs.append(c)
            dirs.append(c)
            if c.depth <= lim:
                starts.append(c)
            d = c
        need = target - len(d.path) - (1 if d.path else 0)
        base = long_name(rng, v, max(12, min(240, need - 2)))
        fname = unique_name(names(d), base + ".c")
        d.add_file(fname, F.add(d, "c", 0o644, mtime + rng.randrange(MTIME_SPREAD)))


def _preorder(root: Dir) -> list[Dir]:
    """6. The directories in pre-order, children by name (numbered, with their paths)."""
    pre: list[Dir] = []
    stack = [root]
    while stack:
        d = stack.pop()
        d.pre = len(pre)
        pre.append(d)
        d.subdirs.sort(key=lambda c: c.name)
        stack.extend(reversed(d.subdirs))
    _set_paths(root)
    return pre


def _symlink(rng: random.Random, v, plan: Plan, d: Dir, k: int, names: _NameSets,
             mtime: int) -> None:
    """7. The k-th symlink, in d: ~75 % to a file, ~17 % to a directory that is not an
    ancestor of d, ~8 % dangling (the first three: one of each)."""
    pre = plan.pre
    kind = ("file", "dir", "dangling")[k] if k < 3 else None
    if kind is None:
        r = rng.random()
        kind = "file" if r < 0.75 else ("dir" if r < 0.92 else "dangling")
    target = None
    if kind == "dir":
        anc = []
        a: Dir | None = d
        while a is not None:
            anc.append(a.pre)
            a = a.parent
        n_cands = len(pre) - len(anc)
        if n_cands:
            # the r-th directory of pre that is not an ancestor of d
            r = rng.randrange(n_cands)
            for p in sorted(anc):
                if p <= r:
                    r += 1
            target = os.path.relpath(pre[r].path or ".", d.path or ".")
        else:
            kind = "file"
    if kind == "file":
        target = os.path.relpath(plan.files.path(rng.randrange(plan.files.n)), d.path or ".")
    if kind == "dangling":
        t = pick(rng, pre)
        target = os.path.relpath(t.rel(f"missing_{pick(rng, v.funcs)}.h"), d.path or ".")
        plan.dangling += 1
    assert target is not None
    stem = pick(rng, v.vars)
    lname = unique_name(names(d), stem + (".h" if kind != "dir" else ""))
    if d.symlinks is None:
        d.symlinks = []
    d.symlinks.append((lname, target, mtime + rng.randrange(MTIME_SPREAD)))


def _hardlinks(rng: random.Random, v, plan: Plan, live: list[Dir], names: _NameSets) -> None:
    """8. Hard links, each to a file created earlier in pre-order than its directory."""
    pre = plan.pre
    n_hl = max(1, plan.files.n // 200)
    cum = array("q")          # files created up to and including the directory of pre index i
    acc = 0
    for d in pre:
        acc += len(d.fids) if d.fids is not None else 0
        cum.append(acc)
    made = 0
    tries = 0
    while made < n_hl and tries < 100 * n_hl:
        tries += 1
        d = pick(rng, live)
        avail = cum[d.pre]
        if avail == 0:
            continue
        g = rng.randrange(avail)
        j = bisect_right(cum, g)       # the directory (pre index) holding the g-th file
        base_g = cum[j - 1] if j else 0
        fd = pre[j]
        f = fd.fids[g - base_g]
        fn = fd.fnames()[g - base_g]
        stem, dot, ext = fn.rpartition(".")
        base = f"{stem}_{pick(rng, v.vars)}.{ext}" if dot else f"{fn}_{pick(rng, v.vars)}"
        if d.hardlinks is None:
            d.hardlinks = []
        d.hardlinks.append((unique_name(names(d), base), f))
        made += 1


def _set_paths(root: Dir) -> None:
    stack = [root]
    root.path = ""
    while stack:
        d = stack.pop()
        for c in d.subdirs:
            c.path = d.rel(c.name)
            stack.append(c)
