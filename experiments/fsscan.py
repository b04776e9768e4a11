"""In-process looks at an unmounted image through `simfs.fs.volume.Volume` (the same code path
as the mount): the fsck-like metadata scan of seed 003, where files landed (block maps), and
filefrag's extent count.

The scan opens the image read-only with the configuration's own disk options and runs
`Volume.metadata_scan` (e2fsck's reads, in its order, charged through the volume's cache and
clock). Its simulated time is the clock's advance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simfs.fuse import mountopts
from simfs.ondisk.inode import Inode
from simfs.fs.volume import Volume

from .spec import Config

DIRECT = 12


def open_ro(image, config: Config, disk: str | None = None) -> Volume:
    extra = {"ro": True, "trace": None, "stats": None}
    if disk:
        extra["disk"] = disk
    opts = mountopts.parse([config.mount_string(extra)]).volume
    return Volume.open(image, opts)


def metadata_scan(image, config: Config) -> dict:
    """Read every bitmap, inode-table block, indirect block and directory block (fsck's reads)."""
    with open_ro(image, config) as vol:
        t0 = vol.clock.now
        seen = vol.metadata_scan()
        elapsed = vol.clock.now - t0
        counters = vol.counters
    return {"sim": elapsed, "sim_cmd": elapsed, "sim_drain": 0.0,
            "counters": {k: counters.get(k, 0) for k in ("disk_reads", "disk_writes", "seeks",
                                                        "sectors_read", "sectors_written")},
            "extra": seen}


# where files landed --------------------------------------------------------------------------
def filefrag_extents(pairs, size: int, block_size: int) -> int:
    """Extents as filefrag(8) (e2fsprogs 1.41, FIBMAP) counts them for an ext2 file: an
    indirect block between two data blocks is expected and is not a discontinuity."""
    bpib = block_size // 4
    phys = dict(pairs)
    numblocks = -(-size // block_size)
    last, discont = 0, 0
    for i in range(numblocks):
        if last:
            if i >= DIRECT and (i - DIRECT) % bpib == 0:
                last += 1
            if i >= DIRECT + bpib and (i - DIRECT - bpib) % (bpib * bpib) == 0:
                last += 1
            if i >= DIRECT + bpib + bpib * bpib and (i - DIRECT - bpib - bpib * bpib) % (bpib ** 3) == 0:
                last += 1
        b = phys.get(i, 0)
        if b == 0:
            continue
        if last and b != last + 1:
            discont += 1
        last = b
    return discont + 1 if numblocks else 0


def filefrag_perfect(size: int, vol: Volume) -> int:
    """filefrag's "perfection would be N extents" (integer arithmetic as in its C)."""
    geo = vol.geo
    bs = geo.block_size
    numblocks = -(-size // bs)
    per = bs * 8 - (geo.inodes_count // 8 // geo.groups) - 3
    return numblocks // per + 1


@dataclass
class Layout:
    """Where a configuration's files landed (for block-map plots and fragmentation figures)."""
    block_size: int
    blocks_count: int
    kind: np.ndarray          # per block: 0 free, 1 fs metadata, 2 file data, 3 directory, 4 indirect
    owner: np.ndarray         # per block: owning inode (0 = none)
    order: list               # [(ino, [phys of lblk 0, 1, ...])] regular files, by inode number
    extents: int              # filefrag extents summed over regular files
    files: int
    data_blocks: int

    def summary(self) -> dict:
        return {"files": self.files, "extents": self.extents, "data_blocks": self.data_blocks,
                "blocks_per_extent": round(self.data_blocks / self.extents, 3) if self.extents else 0.0}


def layout(image, config: Config, only: str | None = None) -> Layout:
    """Walk the image (ideal disk: nothing here is timed). `only`: one path, e.g. "big"."""
    with open_ro(image, config, disk="ideal") as vol:
        geo = vol.geo
        kind = np.zeros(geo.blocks_count, dtype=np.uint8)
        owner = np.zeros(geo.blocks_count, dtype=np.uint32)
        kind[vol.space.block_used] = 1
        if only:
            target = vol.lookup(vol.root_ino, only.encode()).st_ino
            inos = [target]
        else:
            inos = [int(i) + 1 for i in np.flatnonzero(vol.space.inode_used)]
        order, extents, data = [], 0, 0
        for ino in inos:
            inode: Inode = vol.inodes.peek(ino)
            if not inode.has_block_map or inode.is_fast_symlink(geo.block_size):
                continue
            pairs = []
            for lblk, phys in vol.filemap.blocks(inode):
                if isinstance(lblk, str):
                    kind[phys], owner[phys] = 4, ino
                else:
                    kind[phys] = 3 if inode.is_dir else 2
                    owner[phys] = ino
                    pairs.append((lblk, phys))
            if inode.is_reg and pairs:
                pairs.sort()
                order.append((ino, [p for _, p in pairs]))
                extents += filefrag_extents(pairs, inode.size, geo.block_size)
                data += len(pairs)
        out = Layout(geo.block_size, geo.blocks_count, kind, owner, order, extents, len(order), data)
        if only and order:
            out.perfect = filefrag_perfect(vol.inodes.peek(inos[0]).size, vol)
        return out
