"""`describe`: the tree `generate_tree` would write, as a stream of `simfs.inprocess.treedesc.Entry`
in the order `tar --sort=name -cf - -C DEST .` would archive it, without writing anything
and without generating file contents (``Entry.data`` is None: filler of the right size).

Same names, sizes, modes, mtimes, symlink targets and hard links as the written tree
(tests/unit/test_workload_describe.py compares it with `treedesc.from_directory` of a written
tree); uid/gid are parameters (a written tree has the writer's).  The sizes of the svn metadata
files are computed from their text with the md5 strings replaced by 32 placeholder characters
(an md5 hex digest always has 32), so no file content is ever made.

Memory: the planner below replays `plan.plan_tree`'s random draws one for one (so the tree is
the same), but keeps per-file data compactly: sizes, mtimes and directories in arrays, the
file names of a directory in one bytes object (sorted, NUL-separated), and the per-directory
name sets only while a directory is being filled (they are rebuilt for the few directories
that get a deep path, a symlink or a hard link later).  About 30 bytes per working file plus
~300 bytes per working directory; the svn metadata is computed per directory while streaming.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator

from simfs.inprocess.treedesc import Entry

from .names import dir_name, file_name, long_name, unique_name
from .plan import DEEP_PATH_MIN, DEFAULT_MTIME, DEPTH_DECAY, MTIME_SPREAD, _cap
from .rng import pick, seeded
from .sizes import DEFAULT_MAX_FILE_SIZE, draw_sizes, resolve_counts
from .source import corpora
from .svn import _SVN_SUBDIRS, _SVN_URL, _SVN_UUID, _pick_author, _svn_date, _svn_props

_NS = 1_000_000_000
_MD5 = "0" * 32   # placeholder of an md5 hex digest's length
_DIR_MODE = 0o755
_SVN_MODE = 0o444


class _D:
    """A planned directory (the lean twin of plan.Dir)."""
    __slots__ = ("parent", "depth", "cap", "subdirs", "name", "path", "empty", "pre", "mtime",
                 "props", "fblob", "fids", "symlinks", "hardlinks")

    def __init__(self, parent: _D | None, depth: int, cap: int):
        self.parent = parent
        self.depth = depth
        self.cap = cap
        self.subdirs: list[_D] = []
        self.name = ""
        self.path = ""
        self.empty = False
        self.pre = -1
        self.mtime = 0
        self.props = False
        self.fblob = b""           # file names, sorted, NUL-separated
        self.fids: array | None = None   # their file ids, same order
        self.symlinks: list[tuple[str, str, int]] | None = None
        self.hardlinks: list[tuple[str, int]] | None = None

    # file names of this directory
    def fnames(self) -> list[str]:
        return self.fblob.decode().split("\0") if self.fblob else []

    def set_files(self, pairs: list[tuple[str, int]]) -> None:
        pairs.sort()
        self.fblob = "\0".join(n for n, _ in pairs).encode()
        self.fids = array("l", (f for _, f in pairs))

    def add_file(self, name: str, fid: int) -> None:
        pairs = list(zip(self.fnames(), self.fids or ()))
        pairs.append((name, fid))
        self.set_files(pairs)

    def fname_of(self, fid: int) -> str:
        return self.fnames()[self.fids.index(fid)]


class _Files:
    """Per-file data of the plan, compact (the lean twin of Plan's per-file lists)."""

    def __init__(self, n: int):
        self.n = 0
        self.size = array("q")
        self.mtime = array("q", bytes(8 * n))
        self.km = bytearray(n)                 # index into self.kinds
        self.kinds: list[tuple[str, int]] = []  # (kind, mode)
        self._kidx: dict[tuple[str, int], int] = {}
        self.dir: list[_D | None] = [None] * n

    def add(self, d: _D, kind: str, mode: int, mtime: int) -> int:
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


class LeanPlan:
    def __init__(self) -> None:
        self.pre: list[_D] = []
        self.files: _Files | None = None
        self.root: _D | None = None
        self.dangling = 0


def plan_lean(seed: int, n_files: int, sizes: list[int], *, max_depth: int,
              fanout: tuple[int, int], symlinks: bool, hardlinks: bool, empty_dirs: bool,
              deep_paths: bool, mtime: int) -> LeanPlan:
    """`plan.plan_tree` with the same random draws in the same order, stored leanly."""
    rng = seeded(seed, "plan")
    v = corpora(seed).vocab
    lo, hi = fanout
    plan = LeanPlan()
    F = _Files(n_files)
    plan.files = F
    n_deep = (1 + n_files // 5000) if deep_paths and n_files >= 1 else 0
    n_tree = n_files - n_deep

    # 1. skeleton
    root = _D(None, 0, _cap(rng, lo, hi))
    plan.root = root
    dirs = [root]
    levels: list[list[_D]] = [[] for _ in range(max_depth)]
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
        c = _D(p, p.depth + 1, _cap(rng, lo, hi))
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
    del levels

    # 2. file slots
    free = array("l", (max(0, d.cap - len(d.subdirs)) for d in dirs))
    excess = sum(free) - n_tree
    while excess > 0:
        j = rng.randrange(len(dirs))
        if free[j] > (1 if not dirs[j].subdirs else 0):
            free[j] -= 1
            excess -= 1
        elif all(f <= (1 if not d.subdirs else 0) for f, d in zip(free, dirs)):
            j2 = next(k for k, f in enumerate(free) if f > 0)
            free[j2] -= 1
            excess -= 1
    while excess < 0:
        free[rng.randrange(len(dirs))] += 1
        excess += 1

    # 3. empty directories
    if empty_dirs:
        parents = [d for d in dirs if d.depth < max_depth] or [root]
        for _ in range(max(1, len(dirs) // 100)):
            p = pick(rng, parents)
            c = _D(p, p.depth + 1, 0)
            c.empty = True
            p.subdirs.append(c)
            dirs.append(c)
            free.append(0)
        del parents

    # 4. names: directories, then files (a directory's slots are consecutive, so its name
    #    set lives only while it is filled)
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
    del free

    # name sets of the directories that get names after step 4 (rebuilt on demand)
    sets: dict[int, set[str]] = {}

    def nameset(d: _D) -> set[str]:
        s = sets.get(id(d))
        if s is None:
            s = {".svn"}
            s.update(c.name for c in d.subdirs)
            s.update(d.fnames())
            s.update(n for n, _, _ in d.symlinks or ())
            s.update(n for n, _ in d.hardlinks or ())
            sets[id(d)] = s
        return s

    # 5. deep chains
    _set_paths(root)
    lim = max(0, max_depth - 3)
    starts = [d for d in dirs if not d.empty and d.depth <= lim]
    for _ in range(n_deep):
        d = pick(rng, starts or [root])
        target = DEEP_PATH_MIN + 10 + rng.randrange(50)
        while d.depth < max_depth and len(d.path) + 1 + 80 < target:
            c = _D(d, d.depth + 1, 1)
            c.name = unique_name(nameset(d), long_name(rng, v, 40 + rng.randrange(41)))
            c.path = f"{d.path}/{c.name}" if d.path else c.name
            sets[id(c)] = {".svn"}
            d.subdirs.append(c)
            dirs.append(c)
            if c.depth <= lim:
                starts.append(c)
            d = c
        need = target - len(d.path) - (1 if d.path else 0)
        base = long_name(rng, v, max(12, min(240, need - 2)))
        fname = unique_name(nameset(d), base + ".c")
        d.add_file(fname, F.add(d, "c", 0o644, mtime + rng.randrange(MTIME_SPREAD)))
    del starts

    assert F.n == n_files, (F.n, n_files)
    F.size = array("q", sizes)

    # 6. pre-order (children by name) and directory attributes
    pre: list[_D] = []
    stack = [root]
    while stack:
        d = stack.pop()
        d.pre = len(pre)
        pre.append(d)
        d.subdirs.sort(key=lambda c: c.name)
        stack.extend(reversed(d.subdirs))
    plan.pre = pre
    del dirs
    _set_paths(root)
    for d in pre:
        d.mtime = mtime + rng.randrange(MTIME_SPREAD)
        d.props = rng.random() < 0.2

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
                anc = []
                a: _D | None = d
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
                    t = pre[r]
                    target = os.path.relpath(t.path or ".", d.path or ".")
                else:
                    kind = "file"
            if kind == "file":
                f = rng.randrange(n_files)
                fd = F.dir[f]
                fn = fd.fname_of(f)
                tp = f"{fd.path}/{fn}" if fd.path else fn
                target = os.path.relpath(tp, d.path or ".")
            if kind == "dangling":
                t = pick(rng, pre)
                miss = f"missing_{pick(rng, v.funcs)}.h"
                tp = f"{t.path}/{miss}" if t.path else miss
                target = os.path.relpath(tp, d.path or ".")
                plan.dangling += 1
            assert target is not None
            stem = pick(rng, v.vars)
            lname = unique_name(nameset(d), stem + (".h" if kind != "dir" else ""))
            if d.symlinks is None:
                d.symlinks = []
            d.symlinks.append((lname, target, mtime + rng.randrange(MTIME_SPREAD)))

    # 8. hard links (to a file created earlier in pre-order)
    if hardlinks and n_files >= 1:
        n_hl = max(1, n_files // 200)
        cum = array("q")
        acc = 0
        for d in pre:
            acc += len(d.fids) if d.fids is not None else 0
            cum.append(acc)
        from bisect import bisect_right
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
            d.hardlinks.append((unique_name(nameset(d), base), f))
            made += 1
    return plan


def _set_paths(root: _D) -> None:
    stack = [root]
    root.path = ""
    while stack:
        d = stack.pop()
        for c in d.subdirs:
            c.path = f"{d.path}/{c.name}" if d.path else c.name
            stack.append(c)


def _svn_entry_props(kind: str, mode: int) -> list[tuple[str, str]]:
    props: list[tuple[str, str]] = []
    if kind in ("c", "roff"):
        props = [("svn:eol-style", "native"), ("svn:keywords", "FreeBSD=%H")]
    if mode & 0o111:
        props.append(("svn:executable", "*"))
    return props


def describe(seed: int = 0, files: int | None = 2000, svn: bool = True, *,
             total_size: int | str | None = None,
             max_file_size: int | str = DEFAULT_MAX_FILE_SIZE, max_depth: int = 8,
             fanout: tuple[int, int] = (5, 30), symlinks: bool = True, hardlinks: bool = True,
             empty_files: bool = True, empty_dirs: bool = True, deep_paths: bool = True,
             mtime: int = DEFAULT_MTIME, uid: int = 0, gid: int = 0) -> Iterator[Entry]:
    """The entries of ``generate_tree(DEST, seed=seed, files=files, svn=svn, ...)`` below DEST,
    in ``tar --sort=name`` order (DEST itself is not an entry), with ``data=None``."""
    files, max_size, total = resolve_counts(seed, files, total_size, max_file_size, empty_files)
    sizes = draw_sizes(seeded(seed, "sizes"), files, max_size, empty_files, total)
    plan = plan_lean(seed, files, sizes, max_depth=max_depth, fanout=fanout, symlinks=symlinks,
                     hardlinks=hardlinks, empty_dirs=empty_dirs, deep_paths=deep_paths,
                     mtime=mtime)
    del sizes
    return _stream(plan, svn, uid, gid)


def _stream(plan: LeanPlan, svn: bool, uid: int, gid: int) -> Iterator[Entry]:
    F = plan.files
    kinds = F.kinds
    fsize, fmtime, fkm = F.size, F.mtime, F.km

    # hard-link groups: every name of a linked file; the first in archive order (component
    # lists compared bytewise) is the file, the others link to it
    groups: dict[int, list[list[bytes]]] = {}
    for d in plan.pre:
        for name, f in d.hardlinks or ():
            g = groups.get(f)
            if g is None:
                fd = F.dir[f]
                g = groups[f] = [_comps(fd) + [fd.fname_of(f).encode()]]
            g.append(_comps(d) + [name.encode()])
    link_to: dict[tuple[bytes, ...], list[bytes]] = {}
    for g in groups.values():
        g.sort()
        for p in g[1:]:
            link_to[tuple(p)] = g[0]
    hl_dirs = {tuple(p[:-1]) for p in link_to}
    del groups

    def file_entry(path: list[bytes], size: int, mode: int, mt: int, check: bool) -> Entry:
        if check:
            first = link_to.get(tuple(path))
            if first is not None:
                return Entry(path, "hardlink", mode=mode, mtime_ns=mt * _NS, uid=uid, gid=gid,
                             link=first)
        return Entry(path, "file", mode=mode, size=size, mtime_ns=mt * _NS, uid=uid, gid=gid)

    def svn_dir(d: _D, P: list[bytes], ents: list) -> Iterator[Entry]:
        # ents: (name, kind, fid, size, mt) as svn.write_svn gets them (kind file|link)
        base = P + [b".svn"]
        dmt = d.mtime * _NS
        rev = 1000 + (d.pre * 7919) % 9000
        url = f"{_SVN_URL}/trunk/{d.path}" if d.path else f"{_SVN_URL}/trunk"
        ents.sort(key=lambda e: e[0])
        rec_len = len(f"10\n\ndir\n{rev}\n{url}\n{_SVN_URL}\n\n\n\n{_svn_date(d.mtime)}\n{rev}\n"
                      f"jenkins\n{'has-props' if d.props else ''}\n\nsvn:special svn:externals "
                      f"svn:needs-lock\n\n\n\n\n\n\n\n\n\n\n\n{_SVN_UUID}\n\x0c\n".encode())
        wc_len = len(f"K 25\nsvn:wc:ra_dav:version-url\nV {len(url) + 12}\n/repos/!svn/ver/{rev}/"
                     f"{d.path}\nEND\n".encode())
        text_base: list[tuple[bytes, int, int]] = []
        prop_base: list[tuple[bytes, int, int]] = []
        for name, kind, fid, size, mt in ents:
            if kind == "link":
                props = [("svn:special", "*")]
            else:
                props = _svn_entry_props(*kinds[fkm[fid]])
            nb = name.encode()
            text_base.append((nb + b".svn-base", size, mt))
            if props:
                prop_base.append((nb + b".svn-base", len(_svn_props(props)), mt))
            erev = rev - (fid if fid >= 0 else d.pre) % 500
            dt = _svn_date(mt)
            rec_len += len(f"{name}\nfile\n\n\n\n\n{dt}\n{_MD5}\n{dt}\n{erev}\n"
                           f"{_pick_author(fid)}\n{'has-props' if props else ''}\n\n\n\n\n\n\n\n"
                           f"{size}\n\x0c\n".encode())
            path = f"{d.path}/{name}" if d.path else name
            wc_len += len(f"{name}\nK 25\nsvn:wc:ra_dav:version-url\nV {len(path) + 22}\n"
                          f"/repos/!svn/ver/{erev}/{path}\nEND\n".encode())
        for c in d.subdirs:
            rec_len += len(f"{c.name}\ndir\n\x0c\n".encode())
        text_base.sort()
        prop_base.sort()

        def dent(path):
            return Entry(path, "dir", mode=_DIR_MODE, mtime_ns=dmt, uid=uid, gid=gid)

        def fent(path, size, mt):
            return Entry(path, "file", mode=_SVN_MODE, size=size, mtime_ns=mt, uid=uid, gid=gid)

        yield dent(base)
        yield fent(base + [b"all-wcprops"], wc_len, dmt)
        if d.props:
            yield fent(base + [b"dir-prop-base"],
                       len(_svn_props([("svn:ignore", "*.o\n*.so\n*.a\n.depend\n")])), dmt)
        yield fent(base + [b"entries"], rec_len, dmt)
        for sub in sorted(s.encode() for s in _SVN_SUBDIRS):
            sp = base + sub.split(b"/")
            yield dent(sp)
            if sub == b"prop-base":
                for nb, size, mt in prop_base:
                    yield fent(sp + [nb], size, mt * _NS)
            elif sub == b"text-base":
                for nb, size, mt in text_base:
                    yield fent(sp + [nb], size, mt * _NS)

    def walk(d: _D, P: list[bytes]) -> Iterator[Entry]:
        check = tuple(P) in hl_dirs
        # children: (name bytes, tag, payload)
        ch: list[tuple[bytes, int, object]] = []
        ents: list | None = [] if svn else None
        if d.fids is not None:
            for name, fid in zip(d.fnames(), d.fids):
                ch.append((name.encode(), 0, fid))
                if svn:
                    ents.append((name, "file", fid, fsize[fid], fmtime[fid]))
        for name, target, mt in d.symlinks or ():
            ch.append((name.encode(), 1, (target, mt)))
            if svn:
                ents.append((name, "link", -1, len(f"link {target}".encode()), mt))
        for name, fid in d.hardlinks or ():
            ch.append((name.encode(), 0, fid))
            if svn:
                ents.append((name, "file", fid, fsize[fid], fmtime[fid]))
        if svn:
            ch.append((b".svn", 2, None))
        for c in d.subdirs:
            ch.append((c.name.encode(), 3, c))
        ch.sort(key=lambda t: t[0])
        for nb, tag, x in ch:
            path = P + [nb]
            if tag == 0:
                kind, mode = kinds[fkm[x]]
                yield file_entry(path, fsize[x], mode, fmtime[x], check)
            elif tag == 1:
                target, mt = x
                yield Entry(path, "symlink", mode=0o777, mtime_ns=mt * _NS, uid=uid, gid=gid,
                            target=os.fsencode(target))
            elif tag == 2:
                yield from svn_dir(d, P, ents)
            else:
                yield Entry(path, "dir", mode=_DIR_MODE, mtime_ns=x.mtime * _NS, uid=uid,
                            gid=gid)
                yield from walk(x, path)

    yield from walk(plan.root, [])


def _comps(d: _D) -> list[bytes]:
    return [p.encode() for p in d.path.split("/")] if d.path else []
