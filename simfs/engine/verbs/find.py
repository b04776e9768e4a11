"""`find DIR [-type d|f]` (GNU findutils 4.9: gnulib fts, FTS_CWDFD|FTS_NOSTAT|FTS_PHYSICAL).

find starts with fstatfs and a stat of DIR. For each directory, fts does fstatat(parent, name,
AT_SYMLINK_NOFOLLOW), openat(parent, name, O_DIRECTORY|O_NOFOLLOW), fstat(fd), fstatat(parent,
name) again (its check that the directory did not move), getdents64 until it returns nothing;
then it visits the entries in the order readdir returned them, descending into directories
(d_type: files are not stat'ed). Its working directory is a descriptor; the four previous ones
stay in a ring, and climbing past them re-opens ".." (openat + fstat). -type f and -type d make
the same calls (the seeds send the output to /dev/null).
"""

from __future__ import annotations

import stat

RING = 4          # gnulib fts: I_RING_SIZE


def run(k, where: list[bytes], type: str = "", **_) -> dict:
    k.statfs()
    k.stat(k.root, where)
    counts = {"dirs": 0, "files": 0, "other": 0}
    ring: list[int] = []
    top = k.open(k.root, where, directory=True)
    _visit(k, top, k.root, where, ring, counts)
    return counts


def _visit(k, f, parent: int, path: list[bytes], ring: list[int], counts) -> None:
    """Read directory `f`, just opened as `path` under `parent`; descend; climb back."""
    counts["dirs"] += 1
    k.fstat(f)
    k.stat(parent, path)
    entries = k.listdir(f)
    k.close(f)
    ring.append(parent)                         # cwd_advance_fd: the old cwd into the ring
    if len(ring) > RING:
        del ring[0]
    for name, ino, kind in entries:
        if kind == stat.S_IFDIR:
            k.stat(f.ino, [name])
            sub = k.open(f.ino, [name], directory=True)
            _visit(k, sub, f.ino, [name], ring, counts)
        elif kind == stat.S_IFREG:
            counts["files"] += 1
        else:
            counts["other"] += 1
    if ring:
        ring.pop()                              # back to the parent's descriptor
    else:
        k.fstat(k.open_dotdot(f.ino, parent))
