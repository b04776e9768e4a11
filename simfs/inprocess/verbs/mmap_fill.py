"""Seed 004's random fill: `tests/tools/mmap_writer.py FILE SIZE --pwrite` (exact), and the
shared-mapping variant with the modelled system's page cache (`writes="mmap"`).

The pwrite variant, as the mounted run's op log shows it: open(FILE, O_RDWR|O_CREAT, 0666)
(a new file: the create path of Kernel.create, mode 0644 under umask 022; an existing one: a
plain open), ftruncate(SIZE) (the kernel's killpriv check, a security.capability GETXATTR,
then SETATTR size), one pwrite per 4 KiB page in alloctest's order, page (i + 23) *
1000000007 % npages (or shuffled by --seed, or sequential; each a GETXATTR and a 4 KiB WRITE:
no write-back cache, so every pwrite goes through at once), fsync, close (RELEASE).

The mapping variant (`writes="mmap"`): the same open and ftruncate, then every page dirtied in
the same order in the modelled system's page cache (simfs.inprocess.pagecache: Linux 2.6.29's
write-back, `pagecache=` its parameters), which decides when each page reaches the file system
(Volume.writepages) and so where it is allocated; then msync(MS_SYNC) (every page still dirty,
from page 0, and the wait for the media) and close. Reported: the time to touch every page and
msync's, as alloctest prints them, and how many pages each writer wrote back.

Why not the host's mapping: on a mount, the stores dirty pages in the HOST's page cache and
FUSE sends them only when the host writes them back - its flusher, vm.dirty_* thresholds and
free memory decide, and msync sends what is left in offset order (a 16 MiB fill on this
24 GiB machine stayed dirty until msync: 16 WRITEs of 1 MiB). So a mounted run's layout is the
host's, not the simulated system's; the mapping variant has no mounted counterpart to be
checked against, and needs none: nothing in it depends on the host.

Parameters: `size` (bytes), `order` ("alloctest", "shuffled", "sequential"), `seed`,
`mode` (the file mode, 0o666 & ~umask), `writes` ("pwrite" or "mmap"), `pagecache` (the model, for mmap).

Refused before anything is asked (VerbRefused), as open(O_RDWR|O_CREAT) fails with EISDIR: the
mount's root (PATH "", "/", "."), a PATH ending in "/", "." or "..".
"""

from __future__ import annotations

import errno
import random

from simfs.errors import FSError, VerbRefused
from simfs.inprocess.pagecache import PageWriteback, WritebackParams

from .operands import quote, text

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


def refuse(path: str, **_) -> None:
    """Raise VerbRefused if PATH (as given, from the mount's root) names a directory whatever
    the image holds: open(PATH, O_RDWR|O_CREAT) would fail with EISDIR."""
    names = [n for n in path.split("/") if n]
    if not [n for n in names if n != "."]:
        raise VerbRefused(f"mmap-fill: {quote(path)}: Is a directory (the image's root)")
    if path.endswith("/") or names[-1] in (".", ".."):
        raise VerbRefused(f"mmap-fill: {quote(path)}: Is a directory")


def run(k, where: list[bytes], size: int = 64 << 20, order: str = "alloctest", seed: int = 0,
        mode: int = 0o644, writes: str = "pwrite", pagecache: str = "linux-2.6.29", **_) -> dict:
    refuse(text(where))
    params = WritebackParams.parse(pagecache) if writes == "mmap" else None  # a bad one: before any change
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
    if writes == "mmap":
        return {"created": created, "pages": npages, **_fill_mapping(k, f, npages, order, seed, params)}
    page = bytes(PAGE)
    written = 0
    for p in page_order(npages, order, seed):
        off = p * PAGE
        written += k.write(f, off, page[:min(PAGE, size - off)])
    k.vol.fsync(f.ino)
    k.close(f)
    return {"created": created, "pages": npages, "bytes": written}


def _fill_mapping(k, f, npages: int, order: str, seed: int, params: WritebackParams) -> dict:
    """Stores into every page through the modelled page cache, msync(MS_SYNC), close."""
    vol = k.vol
    pc = PageWriteback(vol.clock, vol.writepages, params)
    t0 = vol.clock.now
    for p in page_order(npages, order, seed):
        pc.dirty(f.ino, p, npages)
    t1 = vol.clock.now
    pc.sync_file(f.ino)
    vol.fsync(f.ino)
    t2 = vol.clock.now
    k.close(f)
    return {"bytes": npages * PAGE, "touch_s": t1 - t0, "msync_s": t2 - t1, **pc.counts}
