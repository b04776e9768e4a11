"""`describe`: the tree `generate_tree` would write, as a stream of `simfs.inprocess.treedesc.Entry`
in the order `tar --sort=name -cf - -C DEST .` would archive it, without writing anything
and without generating file contents (``Entry.data`` is None: filler of the right size).

Same names, sizes, modes, mtimes, symlink targets and hard links as the written tree
(tests/unit/test_workload_describe.py compares it with `treedesc.from_directory` of a written
tree); uid/gid are parameters (a written tree has the writer's).  The sizes of the svn metadata
files are computed from their text with the md5 strings replaced by 32 placeholder characters
(an md5 hex digest always has 32), so no file content is ever made.

The tree is `plan.plan_tree`'s, the same plan the writer writes (its memory: about 30 bytes
per working file plus ~300 bytes per working directory); the svn metadata is computed per
directory while streaming.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from simfs.inprocess.treedesc import Entry

from .plan import DEFAULT_MTIME, Dir, Plan, plan_tree
from .rng import seeded
from .sizes import DEFAULT_MAX_FILE_SIZE, draw_sizes, resolve_counts
from .svn import _SVN_SUBDIRS, _SVN_URL, _SVN_UUID, _pick_author, _svn_date, _svn_props, entry_props

_NS = 1_000_000_000
_MD5 = "0" * 32   # placeholder of an md5 hex digest's length
_DIR_MODE = 0o755
_SVN_MODE = 0o444


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
    plan = plan_tree(seed, files, sizes, max_depth=max_depth, fanout=fanout, symlinks=symlinks,
                     hardlinks=hardlinks, empty_dirs=empty_dirs, deep_paths=deep_paths,
                     mtime=mtime)
    del sizes
    return _Stream(plan, svn, uid, gid).walk(plan.root, [])


def _link_map(plan: Plan) -> dict[tuple[bytes, ...], list[bytes]]:
    """Hard-link groups: every name of a linked file; the first in archive order (component
    lists compared bytewise) is the file, the others (the keys) link to it."""
    F = plan.files
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
    return link_to


class _Stream:
    """The entries of a plan's tree, directory by directory."""

    def __init__(self, plan: Plan, svn: bool, uid: int, gid: int):
        self.F = plan.files
        self.svn, self.uid, self.gid = svn, uid, gid
        self.link_to = _link_map(plan)
        self.hl_dirs = {tuple(p[:-1]) for p in self.link_to}

    def file_entry(self, path: list[bytes], size: int, mode: int, mt: int, check: bool) -> Entry:
        if check:
            first = self.link_to.get(tuple(path))
            if first is not None:
                return Entry(path, "hardlink", mode=mode, mtime_ns=mt * _NS, uid=self.uid,
                             gid=self.gid, link=first)
        return Entry(path, "file", mode=mode, size=size, mtime_ns=mt * _NS, uid=self.uid,
                     gid=self.gid)

    def dent(self, path: list[bytes], mtime_ns: int) -> Entry:
        return Entry(path, "dir", mode=_DIR_MODE, mtime_ns=mtime_ns, uid=self.uid, gid=self.gid)

    def svn_file(self, path: list[bytes], size: int, mtime_ns: int) -> Entry:
        return Entry(path, "file", mode=_SVN_MODE, size=size, mtime_ns=mtime_ns, uid=self.uid,
                     gid=self.gid)

    def svn_dir(self, d: Dir, P: list[bytes], ents: list) -> Iterator[Entry]:
        """d's .svn/; ents: (name, kind, fid, size, mt) as svn.write_svn gets them (kind
        file|link)."""
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
            props = [("svn:special", "*")] if kind == "link" else entry_props(*self.F.kind_mode(fid))
            nb = name.encode()
            text_base.append((nb + b".svn-base", size, mt))
            if props:
                prop_base.append((nb + b".svn-base", len(_svn_props(props)), mt))
            erev = rev - (fid if fid >= 0 else d.pre) % 500
            dt = _svn_date(mt)
            rec_len += len(f"{name}\nfile\n\n\n\n\n{dt}\n{_MD5}\n{dt}\n{erev}\n"
                           f"{_pick_author(fid)}\n{'has-props' if props else ''}\n\n\n\n\n\n\n\n"
                           f"{size}\n\x0c\n".encode())
            wc_len += len(f"{name}\nK 25\nsvn:wc:ra_dav:version-url\nV {len(d.rel(name)) + 22}\n"
                          f"/repos/!svn/ver/{erev}/{d.rel(name)}\nEND\n".encode())
        for c in d.subdirs:
            rec_len += len(f"{c.name}\ndir\n\x0c\n".encode())
        yield self.dent(base, dmt)
        yield self.svn_file(base + [b"all-wcprops"], wc_len, dmt)
        if d.props:
            yield self.svn_file(base + [b"dir-prop-base"],
                                len(_svn_props([("svn:ignore", "*.o\n*.so\n*.a\n.depend\n")])), dmt)
        yield self.svn_file(base + [b"entries"], rec_len, dmt)
        for sub in sorted(s.encode() for s in _SVN_SUBDIRS):
            sp = base + sub.split(b"/")
            yield self.dent(sp, dmt)
            copies = {b"prop-base": prop_base, b"text-base": text_base}.get(sub, ())
            for nb, size, mt in sorted(copies):
                yield self.svn_file(sp + [nb], size, mt * _NS)

    def children(self, d: Dir) -> tuple[list[tuple[bytes, int, object]], list | None]:
        """d's entries as (name bytes, tag, payload), tag 0 file, 1 symlink, 2 .svn, 3
        directory, in name order; and with svn the entries its .svn/ records."""
        F = self.F
        ch: list[tuple[bytes, int, object]] = []
        ents: list | None = [] if self.svn else None
        for name, fid in d.files() + list(d.hardlinks or ()):
            ch.append((name.encode(), 0, fid))
            if self.svn:
                ents.append((name, "file", fid, F.size[fid], F.mtime[fid]))
        for name, target, mt in d.symlinks or ():
            ch.append((name.encode(), 1, (target, mt)))
            if self.svn:
                ents.append((name, "link", -1, len(f"link {target}".encode()), mt))
        if self.svn:
            ch.append((b".svn", 2, None))
        for c in d.subdirs:
            ch.append((c.name.encode(), 3, c))
        ch.sort(key=lambda t: t[0])
        return ch, ents

    def walk(self, d: Dir, P: list[bytes]) -> Iterator[Entry]:
        F = self.F
        check = tuple(P) in self.hl_dirs
        ch, ents = self.children(d)
        for nb, tag, x in ch:
            path = P + [nb]
            if tag == 0:
                yield self.file_entry(path, F.size[x], F.kind_mode(x)[1], F.mtime[x], check)
            elif tag == 1:
                target, mt = x
                yield Entry(path, "symlink", mode=0o777, mtime_ns=mt * _NS, uid=self.uid,
                            gid=self.gid, target=os.fsencode(target))
            elif tag == 2:
                yield from self.svn_dir(d, P, ents)
            else:
                yield self.dent(path, x.mtime * _NS)
                yield from self.walk(x, path)


def _comps(d: Dir) -> list[bytes]:
    return [p.encode() for p in d.path.split("/")] if d.path else []
