"""mkfs on a modelled disk: how long newfs would take there (seed 003 measures it).

Every block mkfs writes is charged as a write request of at most `maxio` bytes, issued back
to back as a buffered mkfs does, and the time is when the last one (and the drive's write
cache) is on the media.
"""

import os

import disk_models

from simfs.blockio.clock import SimClock
from simfs.ondisk.mkfs import mkfs, write_sparse
from simfs.blockio.stats import Stats


def timed_mkfs(path, size_bytes: int, disk: str, maxio: int = 128 << 10, **mkfs_kw):
    """Make the file system and charge its writes to `disk`; (superblock, seconds, stats)."""
    block_size = mkfs_kw.get("block_size", 4096)
    model = disk_models.make_disk(disk)
    stats = Stats()
    clock = SimClock(model, stats, block_size // 512)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, size_bytes)
        per_io = max(1, maxio // block_size)

        def writer(blkno: int, data: bytes) -> None:
            write_sparse(fd, data, blkno * block_size)     # charged all the same
            nblocks = len(data) // block_size
            for i in range(0, nblocks, per_io):
                clock.io("W", blkno + i, min(per_io, nblocks - i), "mkfs", wait=False)

        sb = mkfs(path, size_bytes, writer=writer, **mkfs_kw)
        os.ftruncate(fd, sb.blocks_count * block_size)   # as mkfs sizes it (a small last group is dropped)
    finally:
        os.close(fd)
    clock.drain()
    return sb, clock.now, stats
