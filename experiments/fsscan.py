"""In-process looks at an unmounted image through `simfs.fs.volume.Volume` (the same code path
as the mount): the fsck-like metadata scan of seed 003, and where files landed (block maps and
filefrag's extent counts, from simfs.fs.inspection).

The scan opens the image read-only with the configuration's own disk options and runs
`Volume.metadata_scan` (e2fsck's reads, in its order, charged through the volume's cache and
clock). Its simulated time is the clock's advance.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass

import numpy as np

from simfs.fs import inspection
from simfs.fs.volume import Volume
from simfs.fuse import mountopts

from .spec import Config


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
# Block kinds of the block-map plots (experiments/plots.py), from simfs.fs.inspection's owners.
KIND_FREE, KIND_META, KIND_DATA, KIND_DIR, KIND_INDIRECT = range(5)
_KIND_OF = np.full(len(inspection.KIND_NAMES), KIND_META, dtype=np.uint8)
_KIND_OF[[inspection.FREE, inspection.DATA, inspection.DIR, inspection.INDIRECT]] = (KIND_FREE, KIND_DATA, KIND_DIR,
                                                                         KIND_INDIRECT)


@dataclass
class Layout:
    """Where a configuration's files landed (for block-map plots and fragmentation figures)."""
    block_size: int
    blocks_count: int
    kind: np.ndarray          # per block: 0 free, 1 fs metadata, 2 file data, 3 directory, 4 indirect
    owner: np.ndarray         # per block: owning inode (0 = none)
    order: list               # [(ino, [phys of lblk 0, 1, ...])] regular files, by inode number
    extents: int              # filefrag -B extents (ext2's indirect-block rule for block-mapped files only), summed
    files: int
    data_blocks: int

    def summary(self) -> dict:
        return {"files": self.files, "extents": self.extents, "data_blocks": self.data_blocks,
                "blocks_per_extent": round(self.data_blocks / self.extents, 3) if self.extents else 0.0}


def layout(image, config: Config, only: str | None = None) -> Layout:
    """Walk the image (ideal disk: nothing here is timed). `only`: one path, e.g. "big"; its
    Layout also has `perfect`, filefrag's "perfection would be N extents"."""
    order, found = [], []       # found: (extents, data blocks, perfection) per regular file

    def each(e: dict) -> None:
        if stat.S_ISREG(e["mode"]) and e["runs"]:
            extents, blocks = inspection.fibmap_extents(e)
            order.append((e["ino"], [p + i for _, p, n in e["runs"] for i in range(n)]))
            found.append((len(extents), blocks, inspection.perfection(e, blocks)))

    with open_ro(image, config, disk="ideal") as vol:
        inos = [vol.lookup(vol.root_ino, only.encode()).st_ino] if only else None
        own = inspection.block_owners(vol, inos, each)
    out = Layout(own.block_size, own.blocks_count, _KIND_OF[own.kind], own.ino, order,
                 sum(f[0] for f in found), len(order), sum(f[1] for f in found))
    if only and found:
        out.perfect = found[0][2]
    return out
