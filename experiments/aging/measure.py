"""What one measurement records, and the free-space figures both engines compute the same way.

Free-space fragmentation is read off a used-block map (True = in use): the free extents
(maximal runs of free blocks, across group boundaries; the groups' metadata breaks them) and
their mean length. The mounted run takes the map from the image's block bitmaps after a sync
(`image_used`); the replay from the live volume's own bitmap arrays, which hold the same bits.
"""

from __future__ import annotations

import numpy as np

from simfs.ondisk.constants import SUPERBLOCK_OFFSET
from simfs.ondisk.groupdesc import unpack_table
from simfs.ondisk.superblock import Geometry, Superblock

#: the string every measurement greps for (it must not be in the tree: grep reads every file)
NEEDLE = "simfs-aging-no-such-string-zq7"
GREP_ARGV = ["grep", "-r", "--", NEEDLE]

FIELDS = ("config", "engine", "pulls", "commit", "aged_grep_s", "clean_grep_s", "ratio",
          "aged_layout", "clean_layout", "free_extents", "mean_free_extent_blocks", "free_blocks",
          "used_pct", "filled_pct")


def free_extents(used: np.ndarray) -> dict:
    """Free extents of a used-block map: count, mean length (blocks), free blocks."""
    free = ~np.asarray(used, dtype=bool)
    n_free = int(np.count_nonzero(free))
    if not n_free:
        return {"free_extents": 0, "mean_free_extent_blocks": 0.0, "free_blocks": 0}
    starts = int(np.count_nonzero(free & ~np.concatenate(([False], free[:-1]))))
    return {"free_extents": starts, "mean_free_extent_blocks": round(n_free / starts, 3),
            "free_blocks": n_free}


def space(used: np.ndarray) -> dict:
    """What a measurement records of the free space: free_extents, and the share in use."""
    return {**free_extents(used), "used_pct": used_pct(used)}


def used_pct(used: np.ndarray) -> float:
    """The percent of the blocks in use (metadata included, as `df` counts them on ext2)."""
    return round(100 * int(np.count_nonzero(used)) / len(used), 3)


def image_used(image: str) -> np.ndarray:
    """The used-block map of an ext2 image, from its block bitmaps (blocks before the first
    data block count as used, as simfs's FreeSpace counts them)."""
    with open(image, "rb") as f:
        f.seek(SUPERBLOCK_OFFSET)
        sb = Superblock(f.read(1024))
        geo = Geometry(sb)
        bs = sb.block_size
        f.seek((sb.first_data_block + 1) * bs)
        descs = unpack_table(f.read(-(-sb.group_count * 32 // bs) * bs), sb.group_count)
        used = np.ones(sb.blocks_count, dtype=bool)
        for g, d in enumerate(descs):
            start, n = geo.group_start(g), geo.group_blocks(g)
            f.seek(d.block_bitmap * bs)
            bits = np.unpackbits(np.frombuffer(f.read(bs), np.uint8), bitorder="little")
            used[start:start + n] = bits[:n].astype(bool)
    return used


def phase(snapshot: dict, name: str) -> dict:
    """The phase NAME of a statistics snapshot (the last one of that name)."""
    found = [p for p in snapshot.get("phases", []) if p.get("name") == name]
    if not found:
        raise KeyError(f"no phase {name!r} in the statistics")
    return found[-1]


def row(config: str, engine: str, pulls: int, commit: str, aged: dict, clean: dict, free: dict,
        filled: float | None = None) -> dict:
    """One measurement: `aged` and `clean` are the grep phases (elapsed, layout_score);
    `filled` the percent of the blocks in use once the filler was laid (--fill), else None."""
    a, c = aged["elapsed"], clean["elapsed"]
    return {"config": config, "engine": engine, "pulls": pulls, "commit": commit,
            "aged_grep_s": a, "clean_grep_s": c, "ratio": a / c if c else None,
            "aged_layout": aged.get("layout_score"), "clean_layout": clean.get("layout_score"),
            **free, "filled_pct": filled}
