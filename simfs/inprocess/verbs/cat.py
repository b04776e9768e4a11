"""`cat MNT/FILE > /dev/null` (GNU coreutils 9.1): open, fstat, posix_fadvise(SEQUENTIAL) (the
file's read-ahead window doubles to 64 pages: 256 KiB READs on the mount), reads of
io_blksize = 128 KiB until one returns 0, close. Several files: one after the other."""

from __future__ import annotations

BUF = 128 << 10


def run(k, where: list[bytes], more: tuple = (), bufsize: int = BUF, **_) -> dict:
    from . import split
    total = reads = 0
    for path in [where] + [split(p) for p in more]:
        f = k.open(k.root, path)
        k.fstat(f)
        k.fadvise_sequential(f)
        pos = 0
        while True:
            got = k.read(f, pos, bufsize)
            reads += 1
            if not got:
                break
            pos += got
        total += pos
        k.close(f)
    return {"reads": reads, "bytes": total}
