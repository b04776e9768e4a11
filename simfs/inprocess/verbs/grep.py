"""`grep -r PATTERN DIR` with no match (GNU grep 3.8; gnulib fts with FTS_CWDFD|FTS_NOSTAT|
FTS_PHYSICAL|FTS_COMFOLLOW|FTS_TIGHT_CYCLE_CHECK).

Read off `strace -f` of grep on a local copy and the op log of the mounted run:

- grep first opens DIR as a command-line file (openat O_RDONLY|O_NOCTTY), fstats it, sees a
  directory and closes it; fts_open stats DIR (following);
- the traversal is simfs.inprocess.verbs.fts (find's walk with fts's descriptors, and the single
  fstatfs on the first directory without subdirectories); entries are not stat'ed (d_type);
- a regular file: openat(dir, name, O_RDONLY|O_NOCTTY|O_NONBLOCK|O_NOFOLLOW), fstat, reads of
  the 96 KiB buffer until one returns 0, close. When the first buffer is shorter than the file
  and holds no NUL, grep asks for the first hole (lseek SEEK_HOLE: simfs has no FUSE lseek, so
  the kernel's fallback revalidates the size, one GETATTR) and seeks back (SEEK_SET: nothing).
  A NUL in a buffer makes the file binary: from then on a read of nothing but zeros is
  followed by lseek(SEEK_DATA) (a GETATTR; at the end ENXIO, and that file is not asked
  again). With no match grep reads every file to the end, binary files included (it stops
  early only at a match, "Binary file matches");
- a symlink met in the walk: openat(O_NOFOLLOW) fails with ELOOP after the lookup.

Not reproduced exactly: grep keeps the partial last line of a full buffer and reads into the
rest, so its later read sizes can be a page or two under 96 KiB, depending on the lines and
on malloc's alignment of the buffer (host-dependent). The verb always asks for 96 KiB. The
offsets are exact (each read starts where the last ended); the size only enters the kernel's
read-ahead as the request length of a synchronous read-ahead, which a sequential grep does not
trigger after the first read (the asynchronous windows stay ahead), so the READs are the same.
"""

from __future__ import annotations

import errno
import os
import stat

from simfs.errors import FSError

from .fts import Fts

BUFSIZE = 96 << 10          # grep's INITIAL_BUFSIZE


def run(k, where: list[bytes], pattern: str = "", bufsize: int = BUFSIZE, **_) -> dict:
    counts = {"dirs": 0, "files": 0, "other": 0, "bytes": 0, "reads": 0, "statfs": False,
              "bufsize": bufsize}
    f = k.open(k.root, where)                       # the command-line operand
    a = k.fstat(f)
    if not stat.S_ISDIR(a.st_mode):                 # a file operand: read through this descriptor
        counts["files"] += 1
        _grep_file(k, f, bufsize, counts, a)
        del counts["bufsize"]
        return counts
    k.close(f)
    k.stat(k.root, where)                           # fts_open (FTS_COMFOLLOW)
    Fts(k, _entry, counts).run(where)
    del counts["bufsize"]
    return counts


def _entry(fts, d, name: bytes, kind: int) -> None:
    k, counts = fts.k, fts.counts
    if kind == stat.S_IFDIR:
        k.stat(d.ino, [name])
        fts.descend(d, name)
    elif kind == stat.S_IFREG:
        counts["files"] += 1
        _grep_file(k, k.open(d.ino, [name]), counts["bufsize"], counts)
    elif kind == stat.S_IFLNK:
        counts["other"] += 1
        k.walk(d.ino, [name])                       # openat(O_NOFOLLOW): ELOOP
    else:
        counts["other"] += 1                        # devices, fifos, sockets: skipped by -r


def _grep_file(k, g, bufsize: int, counts, a=None) -> None:
    if a is None:
        a = k.fstat(g)
    pos = 0
    first = True
    binary = seek_data_failed = False
    while True:
        data = k.read(g, pos, bufsize, data=True)
        counts["reads"] += 1
        pos += len(data)
        if data and binary and not seek_data_failed and data.count(0) == len(data):
            try:                                    # fillbuf skipping NULs: an all-zero read
                k.lseek(g, pos, os.SEEK_DATA)       # looks for the next data
            except FSError as e:
                if e.errno != errno.ENXIO:
                    raise
                seek_data_failed = True             # at the end: not asked again
            continue
        if not data:
            break
        if not binary:
            # buf_has_nulls || (firsttime && file_must_have_nulls): a NUL makes the file
            # binary (its all-zero reads skipped from then on); else, in the first buffer
            # of a longer file, lseek(SEEK_HOLE) asks for a hole
            binary = 0 in data
            if not binary and first and pos < a.st_size:
                k.lseek(g, pos, os.SEEK_HOLE)
        first = False
    counts["bytes"] += pos
    k.close(g)
