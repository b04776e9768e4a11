"""An image's block map: the owner of every block, file data coloured by where the file is,
and its summary (blocks by owner, files and data runs per top-level directory). `simfs layout`
and the experiments draw it (simfs.pictures.drawmap) and print it.

    m = block_owners("disk.img")                 # opens the image read-only, walks the tree
    doc = summary_json(m)                        # what `simfs layout` prints as tables

Owners: free; the file system's own metadata (superblock and descriptor copies with the
reserved descriptor blocks, block and inode bitmaps, inode tables); directory blocks;
indirect blocks; extended-attribute blocks; and file data (regular files and slow symlinks),
coloured by the top-level directory the file was first reached under (files directly in /
share one colour), or with `color_by="file"` one hue per inode. A used block that no inode
reached claims is drawn grey ("used, no owner": there should be none after a clean unmount).
Nothing here is charged: the volume is opened read-only on the `ideal` disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

import numpy as np

from simfs.fs.inspection import (BITMAP, DATA, DIR as DIRS, FREE, INDIRECT, ITABLE, KIND_NAMES, SUPER,
                                 UNOWNED, XATTR, BlockOwners, block_owners as block_owners_of,
                                 layout_counts, static_layout_score)

# Owner codes: the kinds of block of simfs.fs.inspection, but file data (DATA) is coloured by
# where the file is: files directly in / (ROOTFILES), files under top-level entry k (TOP0 + k).
ROOTFILES = DATA
TOP0 = ROOTFILES + 1
MAX_CODES = 65535

LABELS = {**KIND_NAMES, ROOTFILES: "files in /"}
FIXED_COLOURS = {FREE: (1.0, 1.0, 1.0), SUPER: (0.08, 0.08, 0.35), BITMAP: (0.25, 0.25, 0.75),
                 ITABLE: (0.62, 0.66, 0.86), DIRS: (0.08, 0.08, 0.08), INDIRECT: (0.93, 0.0, 0.0),
                 XATTR: (1.0, 0.0, 1.0), UNOWNED: (0.55, 0.55, 0.55), ROOTFILES: (0.0, 0.45, 0.45)}
BACKGROUND = (0.82, 0.82, 0.82)
# tab20 without its reds and greys (kept for indirect blocks and "no owner"), strongest first
TOP_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
               "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5"]


@dataclass
class BlockMap(BlockOwners):
    """simfs.fs.inspection's BlockOwners (the geometry, each block's kind and inode) with each
    block's owner code, the figures per top-level entry and where each file sits in the tree."""
    image: str = ""
    owner: np.ndarray | None = None       # uint16 owner code per block
    tops: list = field(default_factory=list)          # names of top-level entries, by code - TOP0
    files: dict = field(default_factory=dict)         # code -> number of files
    runs: dict = field(default_factory=dict)          # code -> number of data runs
    layout: tuple = (0, 0)                # (blocks following their previous, blocks after firsts)
    depth: np.ndarray | None = None       # per inode: depth of the file below / (1: in /)
    parent: np.ndarray | None = None      # per inode: the directory it was first reached in
    dirnames: dict = field(default_factory=dict)      # directory inode -> its path


def hex_rgb(c: str) -> tuple:
    """"#rrggbb" -> (r, g, b), each 0..1 (matplotlib's colour tuple)."""
    return tuple(int(c[i:i + 2], 16) / 255 for i in (1, 3, 5))


def top_colour(k: int) -> tuple:
    return hex_rgb(TOP_COLOURS[k % len(TOP_COLOURS)])


def file_colour(ino: int) -> tuple:
    import colorsys
    h = (ino * 0.6180339887) % 1.0
    return colorsys.hsv_to_rgb(h, 0.7, 0.85)


def depth_colour(depth: int, deepest: int = 8) -> tuple:
    """Files by depth below / (1: in /) down to `deepest`, light to dark along viridis, so the
    levels of a tree read as bands and nearby levels as nearby shades."""
    import matplotlib
    span = max(deepest - 1, 1)
    return tuple(matplotlib.colormaps["viridis_r"](0.1 + 0.9 * (min(max(depth, 1), deepest) - 1) / span)[:3])


def block_owners(image) -> BlockMap:
    """Open IMAGE read-only and find the owner of every block (simfs.fs.inspection.block_owners),
    files coloured by the top-level directory they were first reached under."""
    from simfs.fs.volume import Volume, VolumeOptions
    import stat as st

    vol = Volume.open(image, VolumeOptions(read_only=True, disk="ideal", cache=16 << 20))
    try:
        inodes = {}                       # ino -> (directory?, data runs, layout counts)
        own = block_owners_of(vol, each=lambda e: inodes.__setitem__(
            e["ino"], (st.S_ISDIR(e["mode"]), len(e["runs"]), layout_counts(e))))
        code_of = np.full(own.inodes_count + 1, UNOWNED, dtype=np.uint16)
        m = BlockMap(**{f.name: getattr(own, f.name) for f in fields(BlockOwners)},
                     image=os.fspath(image), owner=own.kind.astype(np.uint16))

        m.depth = np.zeros(own.inodes_count + 1, dtype=np.int32)
        m.parent = np.zeros(own.inodes_count + 1, dtype=np.int64)

        def claim(ino: int, code: int, parent: int = 0, depth: int = 0) -> None:
            m.parent[ino], m.depth[ino] = parent, depth
            is_dir, runs, (follow, later) = inodes[ino]
            if not is_dir:
                m.layout = (m.layout[0] + follow, m.layout[1] + later)
                code_of[ino] = code
                m.files[code] = m.files.get(code, 0) + 1
                m.runs[code] = m.runs.get(code, 0) + runs

        seen = {vol.root_ino}
        m.dirnames[vol.root_ino] = "/"
        stack = []
        for name, child, _ in vol.readdir(vol.root_ino):
            if name in (b".", b"..") or child in seen:
                continue
            seen.add(child)
            if inodes[child][0]:
                code = min(TOP0 + len(m.tops), MAX_CODES)
                m.tops.append(os.fsdecode(name))
                m.parent[child], m.depth[child] = vol.root_ino, 1
                m.dirnames[child] = "/" + os.fsdecode(name)
                stack.append((child, code, 1))
            else:
                claim(child, ROOTFILES, vol.root_ino, 1)
        while stack:
            dino, code, depth = stack.pop()
            for name, child, _ in vol.readdir(dino):
                if name in (b".", b"..") or child in seen:
                    continue
                seen.add(child)
                claim(child, code, dino, depth + 1)
                if inodes[child][0]:
                    m.dirnames[child] = m.dirnames[dino] + "/" + os.fsdecode(name)
                    stack.append((child, code, depth + 1))
        # inodes in use that the walk did not reach (orphans): their blocks are still theirs
        for ino in inodes:
            if ino not in seen and ino >= 11:      # 1..10 are reserved (2, the root, is seen)
                claim(ino, UNOWNED)
        data = own.kind == DATA
        m.owner[data] = code_of[own.ino[data]]
        return m
    finally:
        vol.close()



def resolve_color_by(m: BlockMap, color_by: str) -> str:
    """`auto`: by top-level directory when the files are spread over several, else by the
    directory each file is in (a single untarred tree would otherwise be one colour)."""
    if color_by != "auto":
        return color_by
    used = [c for c in range(TOP0, TOP0 + len(m.tops)) if m.files.get(c)]
    return "top" if len(used) + bool(m.files.get(ROOTFILES)) >= 3 else "dir"



def groups(n: int) -> str:
    return f"{n:,} group" + ("" if n == 1 else "s")


def subtitle(m: BlockMap, group: int | None = None, blocks: tuple | None = None) -> str:
    """The line under the map's title: the image's geometry and what is drawn."""
    where = f"group {group}" if group is not None else (
        f"blocks {blocks[0]:,}..{blocks[1] - 1:,}" if blocks is not None else groups(m.groups))
    return (f"{m.blocks_count:,} blocks of {m.block_size} bytes, {groups(m.groups)} of "
            f"{m.blocks_per_group:,} blocks; showing {where}")



def summary_json(m: BlockMap, info: dict | None = None) -> dict:
    """Blocks by owner, files and data runs per top-level directory, the static layout score:
    one JSON-able document (`simfs layout` prints it as tables, `--json` as it is)."""
    counts = np.bincount(m.owner, minlength=TOP0 + len(m.tops))
    fixed = {LABELS[c]: int(counts[c]) for c in (FREE, SUPER, BITMAP, ITABLE, DIRS, INDIRECT, XATTR, UNOWNED)}
    tops = [{"dir": lab, "blocks": int(counts[c]), "files": int(m.files.get(c, 0)),
             "runs": int(m.runs.get(c, 0))}
            for lab, c in [("/", ROOTFILES)] + [("/" + t, TOP0 + i) for i, t in enumerate(m.tops)]
            if m.files.get(c) or counts[c]]
    doc = {"image": m.image, "block_size": m.block_size, "blocks": m.blocks_count, "groups": m.groups,
           "blocks_per_group": m.blocks_per_group, "by_owner": fixed,
           "file_data": int(counts[ROOTFILES] + counts[TOP0:].sum()), "by_top_level_dir": tops,
           "layout_score": static_layout_score(*m.layout)}
    if info:
        doc["drawn"] = {k: v for k, v in info.items() if k != "counts"}
    return doc

