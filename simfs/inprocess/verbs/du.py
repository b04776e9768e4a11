"""`du -s DIR` (GNU coreutils 9.1: gnulib fts, FTS_CWDFD|FTS_PHYSICAL, no FTS_NOSTAT).

The traversal is simfs.inprocess.verbs.fts (find's walk, with fts's descriptors: fstatat,
openat, fstat, fstatat again, getdents64 until nothing; the entries in fts's order; the ring
of four directory descriptors and openat("..") beyond it), but without FTS_NOSTAT every entry
is stat'ed when fts visits it: fstatat(dir, name, AT_SYMLINK_NOFOLLOW), files and symlinks included (their
blocks are added up). du does not fstatfs at the start: fts's file-system-type cache calls
fstatfs once, on the first directory with no subdirectories (st_nlink == 2, the leaf
optimisation check), after its open and before its getdents - read off strace and the mount.

An operand that is not a directory (a file, a symbolic link: FTS_PHYSICAL) is that one fstatat
and nothing more (strace of du 9.1 -s on a file): its blocks are the total.
"""

from __future__ import annotations

import stat

from .fts import Fts


def run(k, where: list[bytes], **_) -> dict:
    counts = {"dirs": 0, "files": 0, "other": 0, "blocks": 0, "statfs": False}
    a = k.stat(k.root, where)
    counts["blocks"] += a.st_blocks
    if not stat.S_ISDIR(a.st_mode):
        counts["files" if stat.S_ISREG(a.st_mode) else "other"] += 1
        return counts
    Fts(k, _entry, counts).run(where)
    return counts


def _entry(fts, d, name: bytes, kind: int) -> None:
    a = fts.k.stat(d.ino, [name])                   # no FTS_NOSTAT: every entry
    fts.counts["blocks"] += a.st_blocks
    if stat.S_ISDIR(a.st_mode):
        fts.descend(d, name)
    elif stat.S_ISREG(a.st_mode):
        fts.counts["files"] += 1
    else:
        fts.counts["other"] += 1
