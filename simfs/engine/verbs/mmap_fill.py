"""Seed 004's random fill, `tests/tools/mmap_writer.py FILE SIZE --pwrite` (exact), and why the
mapping variant (without --pwrite) is not reproduced.

The pwrite variant, as the mounted run's op log shows it: open(FILE, O_RDWR|O_CREAT, 0666)
(a new file: the create path of Kernel.create, mode 0644 under umask 022; an existing one: a
plain open), ftruncate(SIZE) (the kernel's killpriv check, a security.capability GETXATTR,
then SETATTR size), one pwrite per 4 KiB page in alloctest's order, page (i + 23) *
1000000007 % npages (or shuffled by --seed, or sequential; each a GETXATTR and a 4 KiB WRITE:
no write-back cache, so every pwrite goes through at once), fsync, close (RELEASE).

The mapping variant cannot be matched by an in-process verb. Its stores dirty pages in the
HOST's page cache; FUSE sends them as WRITEs only when the host writes them back, and that is
decided by the host kernel, not by the tool: the flusher threads and vm.dirty_* thresholds
(background write-back starts at dirty_background_ratio of the host's free memory, or after
dirty_expire_centisecs), memory pressure (reclaim writes pages back one by one, in LRU order),
and finally msync, which writes back what is still dirty in file-offset order, gathered into
WRITEs of up to max_pages (256 pages with libfuse 3: 1 MiB). The faults add READs the tool
never asks for: the first store to a page not cached reads it, with mmap read-around (a
32-page window centred on the fault, dropped after MMAP_LOTSAMISS misses), in the fill's
random order. Measured on this machine (24 GiB, vm.dirty_ratio 20, cold mount, alloc=ext2,
dirorder=hash, sas10k, empty image): a 16 MiB fill stayed dirty until msync and became 16
WRITEs of 1 MiB in offset order after 151 READs of the holes: 0.186 s simulated, 135 disk
writes; the pwrite variant (this verb, and mmap_writer.py --pwrite on the mount, identical)
is 4096 WRITEs of 4 KiB in alloctest order: 0.246 s, 140 disk writes (+32% time). On a host
with less memory or lower dirty limits the mapping run sends earlier, smaller WRITEs in fault
order, with other allocation and another time, so no host-independent verb can match it; the seed's
mapping figures need the mount (or an op log of it, `simfs replay`).

Parameters: `size` (bytes), `order` ("alloctest", "shuffled", "sequential"), `seed`,
`mode` (the file mode, 0o666 & ~umask).
"""

from __future__ import annotations

import errno
import random

from simfs.errors import FSError

PAGE = 4096


def page_order(npages: int, order: str = "alloctest", seed: int = 0):
    """mmap_writer.page_order."""
    if order == "sequential":
        return range(npages)
    if order == "alloctest":
        return [((i + 23) * 1000000007) % npages for i in range(npages)]
    perm = list(range(npages))
    random.Random(seed).shuffle(perm)
    return perm


def run(k, where: list[bytes], size: int = 64 << 20, order: str = "alloctest", seed: int = 0,
        mode: int = 0o644, **_) -> dict:
    try:
        f = k.create(k.root, where, mode)
        created = True
    except FSError as e:
        if e.errno != errno.EEXIST:
            raise
        f = k.open(k.root, where, write=True)
        created = False
    k.ftruncate(f, size)
    npages = (size + PAGE - 1) // PAGE
    page = bytes(PAGE)
    written = 0
    for p in page_order(npages, order, seed):
        off = p * PAGE
        written += k.write(f, off, page[:min(PAGE, size - off)])
    k.vol.fsync(f.ino)
    k.close(f)
    return {"created": created, "pages": npages, "bytes": written}
