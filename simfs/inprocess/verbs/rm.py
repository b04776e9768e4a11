"""`rm -rf DIR` (GNU coreutils 9.1: gnulib fts, FTS_CWDFD|FTS_NOSTAT|FTS_PHYSICAL).

Read off `strace -f` of rm on a mount: fts_open stats DIR (fstatat). Every directory, DIR
included, is first checked for emptiness (rm's is_empty_dir: openat, fstat, getdents64 until
an entry other than . and .. shows up or the end, close). An empty directory other than DIR
is removed at once (unlinkat AT_REMOVEDIR in its parent). Otherwise fts reads it: openat,
fstat, getdents64 until it returns nothing, close (the first directory without subdirectories
that has entries also gets an fstatfs: gnulib's leaf optimisation asks the file system type
once). Entries are visited in fts's order (readdir order; inode order in a directory of more
than 10,000 entries: simfs.inprocess.verbs.fts.batches): a file is unlinked (unlinkat), a directory is
stat'ed (fstatat, its d_type is DIR) and removed recursively, after fts climbs back out of it
(the fd ring of find.py: past four levels, openat("..") and fstat). DIR itself goes last,
unlinkat(AT_FDCWD, DIR, AT_REMOVEDIR) with the whole path walked.

Refused before anything is asked (VerbRefused, in rm's words): an operand whose last component
is "." or ".." (POSIX; rm says "refusing to remove '.' or '..' directory"), and the mount's
root, which plays "/" for --preserve-root (PATH "", "/", "//"). `refuse` checks PATH as given
(split() drops "." and a trailing "/"); `run` checks the names it is given, for callers that
build them themselves.
"""

from __future__ import annotations

import stat

from simfs.errors import VerbRefused

from .fts import RING, batches, fs_type
from .operands import quote, text


def _refused(path: str, names: list[str]) -> None:
    """gnulib's dot_or_dotdot(last_component(PATH)), then the root check, on PATH's names."""
    if names and names[-1] in (".", ".."):
        raise VerbRefused(f"rm: refusing to remove '.' or '..' directory: skipping {quote(path)}")
    if not [n for n in names if n != "."]:
        raise VerbRefused(f"rm: it is dangerous to operate recursively on {quote(path)} "
                          "(the image's root, its '/' for --preserve-root)")


def refuse(path: str, **_) -> None:
    """Raise VerbRefused if `rm -rf PATH` (PATH as given, from the mount's root) is refused."""
    _refused(path, [n for n in path.split("/") if n])


def _is_empty(k, f) -> bool:
    while True:
        got = k.getdents(f)
        if got:
            return False
        if f.eof:
            return True


def run(k, where: list[bytes], **_) -> dict:
    refuse(text(where))
    a = k.stat(k.root, where)
    if not stat.S_ISDIR(a.st_mode):                 # fts: fstatat, then unlinkat
        k.unlink(k.root, where)
        regular = stat.S_ISREG(a.st_mode)
        return {"dirs": 0, "files": int(regular), "other": int(not regular)}
    counts = {"dirs": 0, "files": 0, "other": 0, "statfs": False}
    f = k.open(k.root, where, directory=True)       # is_empty_dir(DIR)
    k.fstat(f)
    empty = _is_empty(k, f)
    k.close(f)
    if not empty:
        top = k.open(k.root, where, directory=True)
        _visit(k, top, k.root, [], counts, top=True)
    k.rmdir(k.root, where)
    counts["dirs"] += 1
    del counts["statfs"]
    return counts


def _visit(k, f, parent: int, ring: list[int], counts, top: bool = False) -> None:
    """Directory `f` (not empty), just opened by fts under `parent`: read, remove its
    entries, climb back out."""
    a = k.fstat(f)
    if a.st_nlink <= 2:
        fs_type(k, counts)                          # leaf_optimization
    first = True
    for entries, last in batches(k, f, lambda: fs_type(k, counts)):
        if last:
            k.close(f)                              # the end of the directory was read
        if first:
            first = False
            ring.append(parent)                     # cwd_advance_fd
            if len(ring) > RING:
                del ring[0]
        _remove(k, f, entries, ring, counts)
    if top:
        return                                      # fts goes back to the initial cwd
    if ring:
        ring.pop()                                  # back to the parent's descriptor
    else:
        up = k.open_dotdot(f.ino, parent)
        k.fstat(up)
        k.close(up)


def _remove(k, f, entries, ring: list[int], counts) -> None:
    for name, ino, kind in entries:
        if kind == stat.S_IFDIR:
            k.stat(f.ino, [name])
            sub = k.open(f.ino, [name], directory=True)     # is_empty_dir
            k.fstat(sub)
            empty = _is_empty(k, sub)
            k.close(sub)
            if not empty:
                sub = k.open(f.ino, [name], directory=True)
                _visit(k, sub, f.ino, ring, counts)
            k.rmdir(f.ino, [name])
            counts["dirs"] += 1
        else:
            k.unlink(f.ino, [name])
            counts["files" if kind == stat.S_IFREG else "other"] += 1
