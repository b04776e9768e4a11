"""`du -s DIR` (GNU coreutils 9.1: gnulib fts, FTS_CWDFD|FTS_PHYSICAL, no FTS_NOSTAT).

The traversal is find's (simfs.engine.verbs.find: fstatat, openat, fstat, fstatat again,
getdents64 until nothing, close; the entries in readdir order; the ring of four directory
descriptors and openat("..") beyond it), but without FTS_NOSTAT every entry is stat'ed when
fts visits it: fstatat(dir, name, AT_SYMLINK_NOFOLLOW), files and symlinks included (their
blocks are added up). du does not fstatfs at the start: fts's file-system-type cache calls
fstatfs once, on the first directory with no subdirectories (st_nlink == 2, the leaf
optimisation check), after its open and before its getdents - read off strace and the mount.
"""

from __future__ import annotations

import stat

from .find import RING


def run(k, where: list[bytes], **_) -> dict:
    counts = {"dirs": 0, "files": 0, "other": 0, "blocks": 0, "statfs": False}
    ring: list[int] = []
    a = k.stat(k.root, where)
    counts["blocks"] += a.st_blocks
    top = k.open(k.root, where, directory=True)
    _visit(k, top, k.root, where, ring, counts, 0)
    return counts


def _visit(k, f, parent: int, path: list[bytes], ring: list[int], counts, depth: int) -> None:
    counts["dirs"] += 1
    a = k.fstat(f)
    k.stat(parent, path)
    if not counts["statfs"] and a.st_nlink == 2:
        counts["statfs"] = True
        k.statfs()
    entries = k.listdir(f)
    k.close(f)
    ring.append(parent)
    if len(ring) > RING:
        del ring[0]
    for name, ino, kind in entries:
        a = k.stat(f.ino, [name])
        counts["blocks"] += a.st_blocks
        if stat.S_ISDIR(a.st_mode):
            sub = k.open(f.ino, [name], directory=True)
            _visit(k, sub, f.ino, [name], ring, counts, depth + 1)
        elif stat.S_ISREG(a.st_mode):
            counts["files"] += 1
        else:
            counts["other"] += 1
    if ring:
        ring.pop()
    elif depth:                                 # the root level ends without climbing
        k.fstat(k.open_dotdot(f.ino, parent))
