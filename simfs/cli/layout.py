"""`simfs layout IMAGE -o map.png`: an image drawn as a block map, every block coloured by what
owns it. Bad input: one line on stderr, exit status 2.

    m = block_owners("disk.img")                 # opens the image read-only, walks the tree
    info = draw(m, "map.png", group=0)            # one group, one cell per block
    print(format_summary(m, info))

Owners: free; the file system's own metadata (superblock and descriptor copies with the
reserved descriptor blocks, block and inode bitmaps, inode tables); directory blocks;
indirect blocks; extended-attribute blocks; and file data (regular files and slow symlinks),
coloured by the top-level directory the file was first reached under (files directly in /
share one colour), or with `color_by="file"` one hue per inode. A used block that no inode
reached claims is drawn grey ("used, no owner": there should be none after a clean unmount).

Cells run left to right and rows top to bottom in block order; a group boundary is the
staircase line where a group's first block falls. With k blocks per cell a cell's colour is
the mean of its blocks' colours (free is white), so a region with 1 block used in 8 looks
pale next to a filled one, and at one cell per block it shows as columns of single cells.
Nothing here is charged: the volume is opened read-only on the `ideal` disk.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

import numpy as np

from simfs.cli.common import fail
from simfs.fs.inspection import (BITMAP, DATA, DIR as DIRS, FREE, INDIRECT, ITABLE, KIND_NAMES, SUPER,
                              UNOWNED, XATTR, block_owners as block_owners_of)

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
BASE_DPI = 100                # the picture's layout is in pixels at this dpi; --dpi scales it
DPI_RANGE = (10, 300)         # --dpi: 300 makes the tallest automatic map about 4,600 x 7,400 pixels
MAX_WIDTH = 4096              # --width: cells per row (one pixel each from 1000 on)
MAX_PIXELS = 40_000_000       # the PNG (about 30 bytes of memory per pixel while drawing)
# tab20 without its reds and greys (kept for indirect blocks and "no owner"), strongest first
_TAB20 = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
          "#aec7e8", "#ffbb78", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5"]


@dataclass
class BlockMap:
    image: str
    block_size: int
    blocks_count: int
    first_data_block: int
    blocks_per_group: int
    groups: int
    group_starts: list
    owner: np.ndarray                     # uint16 owner code per block
    ino: np.ndarray                       # inode owning each block (0: none)
    tops: list = field(default_factory=list)          # names of top-level entries, by code - TOP0
    files: dict = field(default_factory=dict)         # code -> number of files
    runs: dict = field(default_factory=dict)          # code -> number of data runs
    depth: np.ndarray | None = None       # per inode: depth of the file below / (1: in /)
    parent: np.ndarray | None = None      # per inode: the directory it was first reached in
    dirnames: dict = field(default_factory=dict)      # directory inode -> its path


def _hex(c: str) -> tuple:
    return tuple(int(c[i:i + 2], 16) / 255 for i in (1, 3, 5))


def top_colour(k: int) -> tuple:
    return _hex(_TAB20[k % len(_TAB20)])


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
        inodes = {}                       # ino -> (directory?, data runs)
        own = block_owners_of(vol, each=lambda e: inodes.__setitem__(
            e["ino"], (st.S_ISDIR(e["mode"]), len(e["runs"]))))
        code_of = np.full(own.inodes_count + 1, UNOWNED, dtype=np.uint16)
        m = BlockMap(image=os.fspath(image), block_size=own.block_size, blocks_count=own.blocks_count,
                     first_data_block=own.first_data_block, blocks_per_group=own.blocks_per_group,
                     groups=own.groups, group_starts=own.group_starts, owner=own.kind.astype(np.uint16),
                     ino=own.ino)

        m.depth = np.zeros(own.inodes_count + 1, dtype=np.int32)
        m.parent = np.zeros(own.inodes_count + 1, dtype=np.int64)

        def claim(ino: int, code: int, parent: int = 0, depth: int = 0) -> None:
            m.parent[ino], m.depth[ino] = parent, depth
            is_dir, runs = inodes[ino]
            if not is_dir:
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


def _palette(m: BlockMap, color_by: str) -> np.ndarray:
    ncodes = TOP0 + len(m.tops)
    pal = np.zeros((ncodes, 3), dtype=np.float32)
    for code, c in FIXED_COLOURS.items():
        pal[code] = c
    for k in range(len(m.tops)):
        pal[TOP0 + k] = top_colour(k)
    return pal


def _short(path: str, n: int = 34) -> str:
    return path if len(path) <= n else "..." + path[-(n - 3):]


def resolve_color_by(m: BlockMap, color_by: str) -> str:
    """`auto`: by top-level directory when the files are spread over several, else by the
    directory each file is in (a single untarred tree would otherwise be one colour)."""
    if color_by != "auto":
        return color_by
    used = [c for c in range(TOP0, TOP0 + len(m.tops)) if m.files.get(c)]
    return "top" if len(used) + bool(m.files.get(ROOTFILES)) >= 3 else "dir"


def _choose_width(blocks_per_group: int, k: int, want: int = 256) -> int:
    """A row width near `want` cells that divides the group (so groups start at a row)."""
    cells = blocks_per_group // k if blocks_per_group % k == 0 else 0
    if cells:
        for w in sorted(range(max(1, want // 2), want * 2 + 1), key=lambda w: abs(w - want)):
            if cells % w == 0:
                return w
    return want


def max_cells(span: int, width: int) -> int:
    """The most blocks per cell that still fill one row of `width` cells with `span` blocks."""
    return max(1, -(-span // width))


GROUP_AND_BLOCKS = ("--group and --blocks both say what to draw: give one (--blocks FIRST:END with "
                    "block numbers inside the group draws part of it)")


def groups(n: int) -> str:
    return f"{n:,} group" + ("" if n == 1 else "s")


def subtitle(m: BlockMap, group: int | None = None, blocks: tuple | None = None) -> str:
    """The line under the map's title: the image's geometry and what is drawn."""
    where = f"group {group}" if group is not None else (
        f"blocks {blocks[0]:,}..{blocks[1] - 1:,}" if blocks is not None else groups(m.groups))
    return (f"{m.blocks_count:,} blocks of {m.block_size} bytes, {groups(m.groups)} of "
            f"{m.blocks_per_group:,} blocks; showing {where}")


def draw(m: BlockMap, out, *, width: int | None = None, group: int | None = None, blocks=None,
         cells: int | None = None, color_by: str = "top", title: str | None = None,
         dpi: int = 100, max_rows: int = 768) -> dict:
    """Draw the map (or one group, or a block range) into the PNG `out`; returns what was drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    n = m.blocks_count
    if group is not None and blocks is not None:
        raise ValueError(GROUP_AND_BLOCKS)
    if group is not None:
        if not 0 <= group < m.groups:
            raise ValueError(f"--group {group}: the image has groups 0..{m.groups - 1}")
        lo = m.group_starts[group]
        hi = min(lo + m.blocks_per_group, n)
    elif blocks is not None:
        lo, hi = blocks[0], blocks[1] if blocks[1] is not None else n
        if hi <= lo:
            raise ValueError(f"--blocks {lo}:{hi}: an empty range (START:END, END after START)")
        if not 0 <= lo < hi <= n:
            raise ValueError(f"--blocks {lo}:{hi}: the image has blocks 0..{n - 1}")
    else:
        lo, hi = 0, n
    span = hi - lo
    if cells is None:
        k = 1
        if group is None:
            w0 = width or 256
            while -(-span // (w0 * k)) > max_rows:
                k *= 2
    else:
        k = cells
    if width is None:
        width = _choose_width(m.blocks_per_group, k) if group is None or k == 1 else 256
    most = max_cells(span, width)
    if k > most:
        raise ValueError(f"--cells {k}: at most {most:,} blocks per cell here ({span:,} blocks drawn, "
                         f"{width} cells per row: more would leave the map less than one row)")
    ncell = -(-span // k)
    rows = -(-ncell // width)
    # size: cells square, the map about 1000 px wide; positions in pixels at BASE_DPI, so
    # another dpi scales the whole picture (text with it)
    px = max(1, min(12, 1000 // width))
    map_w, map_h = width * px, max(rows * px, 60)
    scale = dpi / BASE_DPI
    w_px, h_px = round((map_w + 530) * scale), round((map_h + 150) * scale)
    if w_px * h_px > MAX_PIXELS:
        raise ValueError(f"the map would be {w_px:,} x {h_px:,} pixels ({rows:,} rows of {width} cells at "
                         f"dpi {dpi}), more than {MAX_PIXELS // 1_000_000} million: give more --cells or "
                         "--width, fewer blocks (--group, --blocks) or a lower --dpi")

    color_by = resolve_color_by(m, color_by)
    pal = _palette(m, color_by)
    owner = m.owner[lo:hi]
    rgb = np.empty((rows * width * k, 3), dtype=np.float32)
    rgb[:] = np.nan
    if color_by in ("file", "dir", "depth"):
        is_file = (owner == ROOTFILES) | (owner >= TOP0) | ((owner == UNOWNED) & (m.ino[lo:hi] > 0))
        col = pal[np.minimum(owner, len(pal) - 1)]
        inos = m.ino[lo:hi][is_file]
        if color_by == "depth":
            d = m.depth[inos]
            deepest = int(d.max(initial=1))
            col[is_file] = np.array([depth_colour(int(x), deepest) for x in range(deepest + 1)],
                                    dtype=np.float32).reshape(-1, 3)[d]
        else:
            keys = inos if color_by == "file" else m.parent[inos]
            uniq, inv = np.unique(keys, return_inverse=True)
            hues = np.array([file_colour(int(i)) for i in uniq], dtype=np.float32).reshape(-1, 3)
            col[is_file] = hues[inv]
        rgb[:span] = col
    else:
        rgb[:span] = pal[np.minimum(owner, len(pal) - 1)]
    if k > 1:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # all-padding cells: NaN
            cellrgb = np.nanmean(rgb.reshape(rows * width, k, 3), axis=1)
    else:
        cellrgb = rgb
    cellrgb = cellrgb.reshape(rows, width, 3)
    cellrgb = np.where(np.isnan(cellrgb), np.array(BACKGROUND, dtype=np.float32), cellrgb)

    # legend with counts
    counts = np.bincount(owner, minlength=len(pal))
    handles = []
    order = [FREE, SUPER, BITMAP, ITABLE, DIRS, INDIRECT, XATTR, UNOWNED]
    for code in order:
        if counts[code] or code in (FREE, DIRS, INDIRECT):
            handles.append(Patch(facecolor=pal[code], edgecolor="black", linewidth=0.5,
                                 label=f"{LABELS[code]}: {counts[code]:,}"))
    file_blocks = int(counts[ROOTFILES] + counts[TOP0:].sum())
    if color_by == "file":
        nfiles = sum(v for c, v in m.files.items() if c != UNOWNED)
        handles.append(Patch(facecolor=file_colour(7), edgecolor="black", linewidth=0.5,
                             label=f"file data, one hue per file ({nfiles:,} files): {file_blocks:,}"))
    elif color_by == "dir":
        parents = m.parent[m.ino[lo:hi][(owner == ROOTFILES) | (owner >= TOP0)]]
        dirs, per = np.unique(parents, return_counts=True)
        handles.append(Patch(facecolor=(1, 1, 1, 0), edgecolor="none",
                             label=f"file data, one hue per directory ({len(dirs):,} dirs):"))
        big = np.argsort(-per, kind="stable")[:14]
        for i in big:
            handles.append(Patch(facecolor=file_colour(int(dirs[i])), edgecolor="black", linewidth=0.5,
                                 label=f"{_short(m.dirnames.get(int(dirs[i]), '?'))}: {int(per[i]):,}"))
        if len(dirs) > len(big):
            handles.append(Patch(facecolor=(1, 1, 1, 0), edgecolor="none",
                                 label=f"... {len(dirs) - len(big):,} more: {int(per.sum() - per[big].sum()):,}"))
    elif color_by == "depth":
        is_file = (owner == ROOTFILES) | (owner >= TOP0)
        per = np.bincount(m.depth[m.ino[lo:hi][is_file]], minlength=1)
        deepest = max(len(per) - 1, 1)
        for dep in range(1, len(per)):
            if per[dep]:
                where = "in /" if dep == 1 else f"{dep - 1} dir{'s' if dep > 2 else ''} below /"
                handles.append(Patch(facecolor=depth_colour(dep, deepest), edgecolor="black", linewidth=0.5,
                                     label=f"files at depth {dep} ({where}): {int(per[dep]):,}"))
    else:
        if counts[ROOTFILES]:
            handles.append(Patch(facecolor=pal[ROOTFILES], edgecolor="black", linewidth=0.5,
                                 label=f"{LABELS[ROOTFILES]}: {counts[ROOTFILES]:,}"))
        tops = sorted(range(len(m.tops)), key=lambda i: -counts[TOP0 + i])
        shown = [i for i in tops if counts[TOP0 + i]][:16]
        for i in shown:
            handles.append(Patch(facecolor=pal[TOP0 + i], edgecolor="black", linewidth=0.5,
                                 label=f"/{m.tops[i][:28]}: {counts[TOP0 + i]:,}"))
        rest = [i for i in tops if counts[TOP0 + i] and i not in shown]
        if rest:
            handles.append(Patch(facecolor=(1, 1, 1, 0), edgecolor="none",
                                 label=f"... {len(rest)} more top-level dirs: "
                                       f"{int(sum(counts[TOP0 + i] for i in rest)):,}"))
    legend_w = 420
    u = BASE_DPI
    fig_w = (map_w + legend_w + 110) / u
    fig_h = max(map_h + 150, 21 * len(handles) + 120) / u
    fig = plt.figure(figsize=(fig_w, fig_h), dpi=dpi)
    ax = fig.add_axes([90 / u / fig_w, (fig_h * u - 90 - map_h) / u / fig_h, map_w / u / fig_w, map_h / u / fig_h])
    ax.imshow(cellrgb, interpolation="nearest", aspect="auto",
              extent=(-0.5, width - 0.5, rows - 0.5, -0.5))

    # group boundaries and labels
    ticks, labels = [], []
    gstep = max(1, -(-sum(1 for s in m.group_starts if lo <= s < hi) // 40))
    for g, s in enumerate(m.group_starts):
        if not lo <= s < hi:
            continue
        c = (s - lo) / k
        r, col = int(c // width), c % width
        x0 = col - 0.5
        kw = dict(color="black", linewidth=1.2 if px >= 2 else 0.8)
        if g or lo:
            if col == 0:
                ax.plot([-0.5, width - 0.5], [r - 0.5, r - 0.5], **kw)
            else:
                ax.plot([x0, width - 0.5], [r - 0.5, r - 0.5], **kw)
                ax.plot([x0, x0], [r - 0.5, r + 0.5], **kw)
                ax.plot([-0.5, x0], [r + 0.5, r + 0.5], **kw)
        if g % gstep == 0:
            ticks.append(r)
            labels.append(f"group {g}")
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=10)
    ax.set_xticks([])
    ax.set_xlim(-0.5, width - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    bs = m.block_size
    ax.set_xlabel(f"blocks {lo:,}..{hi - 1:,} in order, left to right, {width} cells per row; "
                  f"1 cell = {k} block{'s' if k > 1 else ''} of {bs // 1024} KiB", fontsize=11)

    fig.legend(handles=handles, loc="upper left", fontsize=10, title="blocks by owner",
               title_fontsize=11, frameon=False,
               bbox_to_anchor=((90 + map_w + 15) / u / fig_w, 1 - 60 / u / fig_h))
    name = os.path.basename(m.image)
    head = f"{name}: {title}" if title else name
    fig.suptitle(head, x=90 / u / fig_w, ha="left", y=1 - 12 / u / fig_h, va="top", fontsize=14)
    fig.text(90 / u / fig_w, 1 - 42 / u / fig_h, subtitle(m, group, (lo, hi) if blocks is not None else None),
             fontsize=11, va="top")
    fig.savefig(out, dpi=dpi)
    plt.close(fig)
    return {"first": lo, "end": hi, "cells_per_block": k, "width": width, "rows": rows,
            "counts": {int(c): int(v) for c, v in enumerate(counts) if v}}


def summary_json(m: BlockMap, info: dict | None = None) -> dict:
    """What format_summary prints, as one JSON-able document (`simfs layout --json`)."""
    counts = np.bincount(m.owner, minlength=TOP0 + len(m.tops))
    fixed = {LABELS[c]: int(counts[c]) for c in (FREE, SUPER, BITMAP, ITABLE, DIRS, INDIRECT, XATTR, UNOWNED)}
    tops = [{"dir": lab, "blocks": int(counts[c]), "files": int(m.files.get(c, 0)),
             "runs": int(m.runs.get(c, 0))}
            for lab, c in [("/", ROOTFILES)] + [("/" + t, TOP0 + i) for i, t in enumerate(m.tops)]
            if m.files.get(c) or counts[c]]
    doc = {"image": m.image, "block_size": m.block_size, "blocks": m.blocks_count, "groups": m.groups,
           "blocks_per_group": m.blocks_per_group, "by_owner": fixed,
           "file_data": int(counts[ROOTFILES] + counts[TOP0:].sum()), "by_top_level_dir": tops}
    if info:
        doc["drawn"] = {k: v for k, v in info.items() if k != "counts"}
    return doc


def format_summary(m: BlockMap, info: dict | None = None) -> str:
    """Blocks by owner (the whole image), files and data runs per top-level directory."""
    counts = np.bincount(m.owner, minlength=TOP0 + len(m.tops))
    total = m.blocks_count
    lines = [f"{os.path.basename(m.image)}: {total:,} blocks of {m.block_size} bytes, {groups(m.groups)}"]
    for code in (FREE, SUPER, BITMAP, ITABLE, DIRS, INDIRECT, XATTR, UNOWNED):
        if counts[code]:
            lines.append(f"  {LABELS[code]:<26}{counts[code]:>12,}  {100 * counts[code] / total:5.1f}%")
    rows = [(LABELS[ROOTFILES], ROOTFILES)] + [("/" + t, TOP0 + i) for i, t in enumerate(m.tops)]
    rows = [(lab, c) for lab, c in rows if m.files.get(c) or counts[c]]
    if rows:
        lines.append(f"  {'file data by top-level dir':<26}{'blocks':>12}  {'files':>7}  {'runs/file':>9}")
        for lab, c in sorted(rows, key=lambda r: -counts[r[1]]):
            f = m.files.get(c, 0)
            rpf = m.runs.get(c, 0) / f if f else 0.0
            lines.append(f"  {lab[:26]:<26}{counts[c]:>12,}  {f:>7,}  {rpf:>9.2f}")
    if info:
        lines.append(f"drawn: blocks {info['first']:,}..{info['end'] - 1:,}, {info['cells_per_block']} "
                     f"block(s) per cell, {info['width']} x {info['rows']} cells")
    return "\n".join(lines)


# the command ---------------------------------------------------------------------------------------
def register(subparsers) -> None:
    p = subparsers.add_parser(
        "layout", help="draw an image's block map (PNG), coloured by owner",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Open IMAGE read-only, walk its tree and draw every block as a cell coloured by "
                    "what owns it: free, file-system metadata (superblock and descriptor copies, "
                    "bitmaps, inode tables), directories, indirect blocks, extended-attribute "
                    "blocks, and the files of each top-level directory in a colour of its own "
                    "(or one hue per file). Cells run left to right, rows top to bottom; group "
                    "boundaries are drawn. With more blocks than cells, a cell mixes the colours "
                    "of its blocks, so sparse use looks pale.",
        epilog="examples:\n  simfs layout disk.img -o map.png\n"
               "  simfs layout disk.img -o g0.png --group 0 --title 'ext2fs-2010, tar x'\n"
               "  simfs layout disk.img -o map.png --width 512 --color-by file\n"
               "  simfs layout disk.img -o part.png --blocks 0:20000 --color-by depth\n"
               "  simfs layout disk.img --json | jq .by_owner")
    p.add_argument("image", metavar="IMAGE")
    p.add_argument("-o", "--output", default=None, metavar="PNG", help="the map to write (optional with --json)")
    p.add_argument("--json", action="store_true",
                   help="print blocks by owner and per top-level directory as JSON (no text summary)")
    p.add_argument("--width", type=int, default=None, help="cells per row, 1 to %d (default 256, or a "
                                                          "divisor of the group size near it)" % MAX_WIDTH)
    p.add_argument("--group", type=int, default=None, metavar="N",
                   help="draw only group N, one cell per block (not with --blocks)")
    p.add_argument("--blocks", default=None, metavar="FIRST:END",
                   help="draw only blocks FIRST..END-1 (not with --group)")
    p.add_argument("--cells", type=int, default=None, metavar="K",
                   help="blocks per cell (default: as few as keep the map under ~1000 rows); at most "
                        "the blocks drawn / cells per row, so the map fills one row at least")
    p.add_argument("--color-by", choices=("auto", "top", "dir", "depth", "file"), default="auto",
                   help="file data coloured by top-level directory (top), by the directory the file "
                        "is in (dir: the biggest are named in the legend), by depth below / (depth), "
                        "one hue per file (file); auto (default): top when the files are spread over "
                        "3 or more top-level entries, else dir")
    p.add_argument("--title", default=None, help="title (e.g. the allocator: it is not stored in the image)")
    p.add_argument("--dpi", type=int, default=BASE_DPI,
                   help="resolution of the PNG, %d to %d (default %d: the map about 1,000 pixels wide; "
                        "200 doubles every dimension)" % (*DPI_RANGE, BASE_DPI))
    p.set_defaults(func=cmd_layout)


def cmd_layout(a) -> int:
    from simfs.errors import ImageError
    rng = None
    if a.blocks:
        try:
            first, _, end = a.blocks.partition(":")
            rng = (int(first or 0), int(end) if end else None)
        except ValueError:
            return fail(f"--blocks {a.blocks!r}: expected FIRST:END (block numbers)", "layout")
    if a.group is not None and rng is not None:
        return fail(GROUP_AND_BLOCKS, "layout")
    if a.width is not None and a.width < 1:
        return fail("--width must be at least 1", "layout")
    if a.width is not None and a.width > MAX_WIDTH:
        return fail(f"--width {a.width}: at most {MAX_WIDTH} cells per row", "layout")
    if a.cells is not None and a.cells < 1:
        return fail("--cells must be at least 1", "layout")
    if not DPI_RANGE[0] <= a.dpi <= DPI_RANGE[1]:
        return fail(f"--dpi {a.dpi}: give {DPI_RANGE[0]} to {DPI_RANGE[1]} (default {BASE_DPI})", "layout")
    if a.output:
        from simfs.cli.common import picture_problem, same_file
        if same_file(a.output, a.image):
            return fail(f"-o {a.output} is the image: it would be written over; give another file", "layout")
        why = picture_problem(a.output, "-o")
        if why:
            return fail(why, "layout")
    from simfs.fuse.checks import UsageError, check_image
    try:
        check_image(a.image)          # missing, a directory, unreadable
        m = block_owners(a.image)
    except (UsageError, ImageError) as e:
        return fail(str(e), "layout")
    info = None
    if a.output is None:
        if a.json:
            import json
            print(json.dumps(summary_json(m), indent=1))
            return 0
        return fail("-o PNG is required (or --json for the figures alone)", "layout")
    try:
        info = draw(m, a.output, width=a.width, group=a.group, blocks=rng, cells=a.cells,
                           color_by=a.color_by, title=a.title, dpi=a.dpi)
    except ValueError as e:
        return fail(str(e), "layout")
    except OSError as e:
        return fail(f"cannot write {a.output}: {e.strerror or e}", "layout")
    if a.json:
        import json
        doc = summary_json(m, info)
        doc["output"] = a.output
        print(json.dumps(doc, indent=1))
        return 0
    print(format_summary(m, info))
    print(f"map written to {a.output}")
    return 0
