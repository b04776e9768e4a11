"""`find DIR [-type d|f]` (GNU findutils 4.9: gnulib fts, FTS_CWDFD|FTS_NOSTAT|FTS_PHYSICAL).

find stats DIR, then walks it with simfs.inprocess.verbs.fts (per directory: fstatat, openat,
fstat, fstatat again, the single fstatfs at the first leaf directory, getdents64 until it
returns nothing; the ring of four directory descriptors and openat("..") beyond it). With
FTS_NOSTAT and d_type, an entry that is not a directory is not stat'ed; a directory gets
fts's fstatat before it is entered. -type f and -type d make the same calls (the seeds send
the output to /dev/null).

An operand that is not a directory (a file, a symbolic link: FTS_PHYSICAL) is that one fstatat
and nothing more (strace of find 4.9 on a file); it is counted as an entry of the walk is.
"""

from __future__ import annotations

import stat

from .fts import Fts


def run(k, where: list[bytes], type: str = "", **_) -> dict:
    counts = {"dirs": 0, "files": 0, "other": 0}
    a = k.stat(k.root, where)
    if not stat.S_ISDIR(a.st_mode):
        counts["files" if stat.S_ISREG(a.st_mode) else "other"] += 1
        return counts
    Fts(k, _entry, counts).run(where)
    counts.pop("statfs", None)
    return counts


def _entry(fts, d, name: bytes, kind: int) -> None:
    if kind == stat.S_IFDIR:
        fts.k.stat(d.ino, [name])
        fts.descend(d, name)
    elif kind == stat.S_IFREG:
        fts.counts["files"] += 1
    else:
        fts.counts["other"] += 1
