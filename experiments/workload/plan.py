"""Tree planning: the directory skeleton (capacities, parents chosen by level), file slots,
empty directories, deep chains, names, pre-order, times, symlinks and hard links, all decided
before anything is written (see experiments/workload/__init__.py, "Shape")."""

from __future__ import annotations

import math
import os
import random

from .names import dir_name, file_name, long_name, unique_name
from .rng import normal, pick, seeded
from .source import corpora

DEFAULT_MTIME = 1262304000  # 2010-01-01T00:00:00Z, the era of seeds 000-002
MTIME_SPREAD = 365 * 86400  # mtimes lie in [mtime, mtime + one year)

DEPTH_DECAY = 0.75  # weight of a directory level as a parent: DEPTH_DECAY ** depth
DEEP_PATH_MIN = 200  # "deep" relative path length


class Dir:
    __slots__ = ("parent", "depth", "cap", "subdirs", "files", "symlinks", "hardlinks",
                 "name", "path", "empty", "pre", "mtime", "props")

    def __init__(self, parent: Dir | None, depth: int, cap: int):
        self.parent = parent
        self.depth = depth
        self.cap = cap
        self.subdirs: list[Dir] = []
        self.files: list[int] = []
        self.symlinks: list[tuple[str, str, int]] = []   # (name, target, mtime)
        self.hardlinks: list[tuple[str, int]] = []       # (name, file id)
        self.name = ""
        self.path = ""
        self.empty = False
        self.pre = -1
        self.mtime = 0
        self.props = False


class Plan:
    def __init__(self) -> None:
        self.dirs: list[Dir] = []     # pre-order after _finish
        self.fname: list[str] = []
        self.fdir: list[Dir] = []
        self.fsize: list[int] = []
        self.fkind: list[str] = []
        self.fmode: list[int] = []
        self.fmtime: list[int] = []
        self.dangling = 0


def _cap(rng: random.Random, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, round(10 * math.exp(0.5 * normal(rng))))))


def plan_tree(seed: int, n_files: int, sizes: list[int], *, max_depth: int, fanout: tuple[int, int],
              symlinks: bool, hardlinks: bool, empty_dirs: bool, deep_paths: bool,
              mtime: int) -> Plan:
    rng = seeded(seed, "plan")
    v = corpora(seed).vocab
    lo, hi = fanout
    plan = Plan()
    n_deep = (1 + n_files // 5000) if deep_paths and n_files >= 1 else 0
    n_tree = n_files - n_deep

    # 1. skeleton: attach directories to random non-full parents until the slots hold n_tree
    root = Dir(None, 0, _cap(rng, lo, hi))
    dirs = [root]
    # eligible parents by depth; a level is chosen with weight (its size * DEPTH_DECAY**depth),
    # which keeps trees bushy near the top instead of piling up at max_depth
    levels: list[list[Dir]] = [[] for _ in range(max_depth)]
    if max_depth > 0:
        levels[0].append(root)
    n_elig = len(levels[0]) if max_depth > 0 else 0
    free_total = root.cap
    while free_total < n_tree and n_elig:
        weights = [len(lv) * DEPTH_DECAY ** k for k, lv in enumerate(levels)]
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

    # 2. file slots
    free = [max(0, d.cap - len(d.subdirs)) for d in dirs]
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

    # 3. empty directories
    if empty_dirs:
        parents = [d for d in dirs if d.depth < max_depth] or [root]
        for _ in range(max(1, len(dirs) // 100)):
            p = pick(rng, parents)
            c = Dir(p, p.depth + 1, 0)
            c.empty = True
            p.subdirs.append(c)
            dirs.append(c)
            free.append(0)

    # 4. names of directories and files (unique per directory)
    names: dict[int, set[str]] = {id(d): {".svn"} for d in dirs}
    for d in dirs:
        for c in d.subdirs:
            c.name = unique_name(names[id(d)], dir_name(rng, v, c.depth))
    slot_dirs = [d for d, k in zip(dirs, free) for _ in range(k)]
    for d in slot_dirs:
        fname, kind, mode = file_name(rng, v)
        fname = unique_name(names[id(d)], fname)
        _add_file(plan, d, fname, kind, mode, rng, mtime)

    # 5. deep chains (paths > DEEP_PATH_MIN characters)
    _set_paths(root)
    for _ in range(n_deep):
        starts = [d for d in dirs if not d.empty and d.depth <= max(0, max_depth - 3)] or [root]
        d = pick(rng, starts)
        target = DEEP_PATH_MIN + 10 + rng.randrange(50)
        while d.depth < max_depth and len(d.path) + 1 + 80 < target:
            c = Dir(d, d.depth + 1, 1)
            c.name = unique_name(names.setdefault(id(d), {".svn"}),
                                 long_name(rng, v, 40 + rng.randrange(41)))
            c.path = f"{d.path}/{c.name}" if d.path else c.name
            names[id(c)] = {".svn"}
            d.subdirs.append(c)
            dirs.append(c)
            d = c
        need = target - len(d.path) - (1 if d.path else 0)
        base = long_name(rng, v, max(12, min(240, need - 2)))
        fname, kind, mode = base + ".c", "c", 0o644
        _add_file(plan, d, unique_name(names[id(d)], fname), kind, mode, rng, mtime)

    # sizes: shuffled draw, one per file id
    assert len(plan.fname) == n_files, (len(plan.fname), n_files)
    plan.fsize = list(sizes)

    # 6. pre-order (children by name) and directory attributes
    pre: list[Dir] = []
    stack = [root]
    while stack:
        d = stack.pop()
        d.pre = len(pre)
        pre.append(d)
        d.subdirs.sort(key=lambda c: c.name)
        stack.extend(reversed(d.subdirs))
    plan.dirs = pre
    _set_paths(root)
    for d in pre:
        d.mtime = mtime + rng.randrange(MTIME_SPREAD)
        d.props = rng.random() < 0.2
    for d in pre:
        d.files.sort(key=lambda f: plan.fname[f])

    # 7. symlinks
    live = [d for d in pre if not d.empty]
    if symlinks and n_files >= 1:
        n_sym = max(3, n_files // 100)
        for k in range(n_sym):
            d = pick(rng, live)
            kind = ("file", "dir", "dangling")[k] if k < 3 else None
            if kind is None:
                r = rng.random()
                kind = "file" if r < 0.75 else ("dir" if r < 0.92 else "dangling")
            target = None
            if kind == "dir":
                anc = set()
                a: Dir | None = d
                while a is not None:
                    anc.add(id(a))
                    a = a.parent
                cands = [c for c in pre if id(c) not in anc]
                if cands:
                    t = pick(rng, cands)
                    target = os.path.relpath(t.path or ".", d.path or ".")
                else:
                    kind = "file"
            if kind == "file":
                f = rng.randrange(n_files)
                fd = plan.fdir[f]
                tp = f"{fd.path}/{plan.fname[f]}" if fd.path else plan.fname[f]
                target = os.path.relpath(tp, d.path or ".")
            if kind == "dangling":
                t = pick(rng, pre)
                miss = f"missing_{pick(rng, v.funcs)}.h"
                tp = f"{t.path}/{miss}" if t.path else miss
                target = os.path.relpath(tp, d.path or ".")
                plan.dangling += 1
            assert target is not None
            stem = pick(rng, v.vars)
            lname = unique_name(names[id(d)], stem + (".h" if kind != "dir" else ""))
            d.symlinks.append((lname, target, mtime + rng.randrange(MTIME_SPREAD)))

    # 8. hard links: the target must already exist when the link is made (pre-order)
    if hardlinks and n_files >= 1:
        n_hl = max(1, n_files // 200)
        cum = []  # files created up to and including dir with pre index i
        acc = 0
        for d in pre:
            acc += len(d.files)
            cum.append(acc)
        by_pre = [f for d in pre for f in d.files]
        made = 0
        tries = 0
        while made < n_hl and tries < 100 * n_hl:
            tries += 1
            d = pick(rng, live)
            avail = cum[d.pre]
            if avail == 0:
                continue
            f = by_pre[rng.randrange(avail)]
            stem, dot, ext = plan.fname[f].rpartition(".")
            base = f"{stem}_{pick(rng, v.vars)}.{ext}" if dot else f"{plan.fname[f]}_{pick(rng, v.vars)}"
            d.hardlinks.append((unique_name(names[id(d)], base), f))
            made += 1
    return plan


def _add_file(plan: Plan, d: Dir, fname: str, kind: str, mode: int,
              rng: random.Random, mtime: int) -> None:
    fid = len(plan.fname)
    plan.fname.append(fname)
    plan.fdir.append(d)
    plan.fkind.append(kind)
    plan.fmode.append(mode)
    plan.fmtime.append(mtime + rng.randrange(MTIME_SPREAD))
    d.files.append(fid)


def _set_paths(root: Dir) -> None:
    stack = [root]
    root.path = ""
    while stack:
        d = stack.pop()
        for c in d.subdirs:
            c.path = f"{d.path}/{c.name}" if d.path else c.name
            stack.append(c)
