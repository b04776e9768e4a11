"""Subversion 1.6 (wc format 10) working-copy metadata: the `.svn/` of one working directory
(entries, all-wcprops, dir-prop-base, text-base and prop-base copies, the empty props/ and
tmp/ directories), written through the tree writer, as in seed 001's Jenkins workspaces."""

from __future__ import annotations

import hashlib
import time
from .plan import Dir

_SVN_URL = "http://svn.example.org/repos/project"
_SVN_UUID = "7f4a3c2e-9b1d-4e8f-a6c5-0d2b8e1f3a97"
_SVN_SUBDIRS = ("prop-base", "props", "text-base", "tmp", "tmp/prop-base", "tmp/props",
                "tmp/text-base")


def _svn_date(t: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".000000Z"


def _svn_props(props: list[tuple[str, str]]) -> bytes:
    out = []
    for k, val in props:
        out.append(f"K {len(k)}\n{k}\nV {len(val)}\n{val}\n")
    out.append("END\n")
    return "".join(out).encode()


def write_svn(w, d: Dir, ents: list[tuple[str, str, int, bytes | None, int]]) -> None:
    """Write d's .svn directory through `w`, the tree's writer (writer.Writer, which calls
    this: it is not imported here, so the two modules do not import each other)."""
    pl = w.plan
    base = w.rel_path(d, ".svn")
    rev = 1000 + (d.pre * 7919) % 9000
    url = f"{_SVN_URL}/trunk/{d.path}" if d.path else f"{_SVN_URL}/trunk"
    w.mkdir(base, d.mtime)
    w.svn_dirs += 1
    for sub in _SVN_SUBDIRS:
        w.mkdir(f"{base}/{sub}", d.mtime)
    w.empty_dirs += 4  # props, tmp/prop-base, tmp/props, tmp/text-base
    has_pb = False
    ents_sorted = sorted(ents, key=lambda e: e[0])
    rec = [f"10\n\ndir\n{rev}\n{url}\n{_SVN_URL}\n\n\n\n{_svn_date(d.mtime)}\n{rev}\n"
           f"jenkins\n{'has-props' if d.props else ''}\n\nsvn:special svn:externals "
           f"svn:needs-lock\n\n\n\n\n\n\n\n\n\n\n\n{_SVN_UUID}\n\x0c\n"]
    wc = [f"K 25\nsvn:wc:ra_dav:version-url\nV {len(url) + 12}\n/repos/!svn/ver/{rev}/"
          f"{d.path}\nEND\n"]
    for name, kind, fid, data, mt in ents_sorted:
        assert data is not None
        props: list[tuple[str, str]] = []
        if kind == "link":
            props = [("svn:special", "*")]
        else:
            props = entry_props(*pl.files.kind_mode(fid))
        md5 = hashlib.md5(data).hexdigest()
        w.write_file(f"{base}/text-base/{name}.svn-base", data, 0o444, mt, False)
        if props:
            has_pb = True
            w.write_file(f"{base}/prop-base/{name}.svn-base", _svn_props(props), 0o444,
                         mt, False)
        erev = rev - (fid if fid >= 0 else d.pre) % 500
        rec.append(f"{name}\nfile\n\n\n\n\n{_svn_date(mt)}\n{md5}\n{_svn_date(mt)}\n{erev}\n"
                   f"{_pick_author(fid)}\n{'has-props' if props else ''}\n\n\n\n\n\n\n\n"
                   f"{len(data)}\n\x0c\n")
        path = f"{d.path}/{name}" if d.path else name
        wc.append(f"{name}\nK 25\nsvn:wc:ra_dav:version-url\nV {len(path) + 22}\n"
                  f"/repos/!svn/ver/{erev}/{path}\nEND\n")
    for c in d.subdirs:
        rec.append(f"{c.name}\ndir\n\x0c\n")
    if not has_pb:
        w.empty_dirs += 1
    if not ents_sorted:
        w.empty_dirs += 1  # text-base
    w.write_file(f"{base}/entries", "".join(rec).encode(), 0o444, d.mtime, False)
    w.write_file(f"{base}/all-wcprops", "".join(wc).encode(), 0o444, d.mtime, False)
    if d.props:
        w.write_file(f"{base}/dir-prop-base",
                     _svn_props([("svn:ignore", "*.o\n*.so\n*.a\n.depend\n")]),
                     0o444, d.mtime, False)


def entry_props(kind: str, mode: int) -> list[tuple[str, str]]:
    """The svn properties of a working file of this kind and mode."""
    props: list[tuple[str, str]] = []
    if kind in ("c", "roff"):
        props = [("svn:eol-style", "native"), ("svn:keywords", "FreeBSD=%H")]
    if mode & 0o111:
        props.append(("svn:executable", "*"))
    return props


def _pick_author(fid: int) -> str:
    return ("jenkins", "builder", "dev1", "dev2", "release")[fid % 5 if fid >= 0 else 0]
