"""`dd if=MNT/FILE of=/dev/null bs=1M` (GNU coreutils 9.1).

dd opens the input (openat O_RDONLY; dup2 and lseek(SEEK_CUR) send nothing to FUSE), then
reads `bs` bytes at a time until a read returns 0, and closes. Each read is a GETATTR
(auto_inval_data) and the READs the kernel's read-ahead sends for the pages it lacks
(Kernel.read); on a mount with max_read 128 KiB a 1 MiB read of a fresh file is eight
128 KiB READs (checked against a mounted dd of a 64 MiB file: 512 READs of 128 KiB in order).

Parameters: `bs` (bytes per read, default 1 MiB), `count` (reads; 0: to end of file),
`skip` (blocks of `bs` to skip first: dd lseeks, no request).
"""

from __future__ import annotations


def run(k, where: list[bytes], bs: int = 1 << 20, count: int = 0, skip: int = 0, **_) -> dict:
    f = k.open(k.root, where)
    pos, reads, total = skip * bs, 0, 0
    while not count or reads < count:
        got = k.read(f, pos, bs)
        reads += 1
        if got == 0:
            break
        pos += got
        total += got
    k.close(f)
    return {"reads": reads, "bytes": total}
