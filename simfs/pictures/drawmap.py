"""An image's block map (simfs.pictures.blockmap) drawn as a PNG: every block a cell coloured
by what owns it (`simfs layout`, the experiments' block maps).

    m = block_owners("disk.img")
    info = draw(m, "map.png", group=0)            # one group, one cell per block

Cells run left to right and rows top to bottom in block order; a group boundary is the
staircase line where a group's first block falls. With k blocks per cell a cell's colour is
the mean of its blocks' colours (free is white), so a region with 1 block used in 8 looks
pale next to a filled one, and at one cell per block it shows as columns of single cells.
"""

from __future__ import annotations

import os

import numpy as np

from simfs.pictures.blockmap import (BACKGROUND, BITMAP, DIRS, FIXED_COLOURS, FREE, INDIRECT, ITABLE, LABELS,
                                     ROOTFILES, SUPER, TOP0, UNOWNED, XATTR, BlockMap, depth_colour, file_colour,
                                     resolve_color_by, subtitle, top_colour)

BASE_DPI = 100                # the picture's layout is in pixels at this dpi; --dpi scales it
DPI_RANGE = (10, 300)         # --dpi: 300 makes the tallest automatic map about 4,600 x 7,400 pixels
MAX_WIDTH = 4096              # --width: cells per row (one pixel each from 1000 on)
MAX_PIXELS = 40_000_000       # the PNG (about 30 bytes of memory per pixel while drawing)
GROUP_AND_BLOCKS = ("--group and --blocks both say what to draw: give one (--blocks FIRST:END with "
                    "block numbers inside the group draws part of it)")


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


def _extent(m: BlockMap, group: int | None, blocks) -> tuple[int, int]:
    """The blocks [lo, hi) drawn: the image, one group or a block range (checked)."""
    n = m.blocks_count
    if group is not None and blocks is not None:
        raise ValueError(GROUP_AND_BLOCKS)
    if group is not None:
        if not 0 <= group < m.groups:
            raise ValueError(f"--group {group}: the image has groups 0..{m.groups - 1}")
        lo = m.group_starts[group]
        return lo, min(lo + m.blocks_per_group, n)
    if blocks is not None:
        lo, hi = blocks[0], blocks[1] if blocks[1] is not None else n
        if hi <= lo:
            raise ValueError(f"--blocks {lo}:{hi}: an empty range (START:END, END after START)")
        if not 0 <= lo < hi <= n:
            raise ValueError(f"--blocks {lo}:{hi}: the image has blocks 0..{n - 1}")
        return lo, hi
    return 0, n


def _grid(m: BlockMap, span: int, group, cells, width, max_rows: int) -> tuple[int, int, int]:
    """(blocks per cell, cells per row, rows): as few blocks per cell as keep the map under
    `max_rows` rows unless `cells` says, a row width that divides the group if not given."""
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
    return k, width, -(-ncell // width)


def _cell_colours(m: BlockMap, lo: int, hi: int, k: int, width: int, rows: int, color_by: str,
                  pal: np.ndarray) -> np.ndarray:
    """rows x width x RGB: each cell the mean colour of its blocks, the padding BACKGROUND."""
    span = hi - lo
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
    return np.where(np.isnan(cellrgb), np.array(BACKGROUND, dtype=np.float32), cellrgb)


def _legend(m: BlockMap, lo: int, hi: int, color_by: str, pal: np.ndarray, counts: np.ndarray) -> list:
    """The legend's entries with their block counts: the fixed owners, then file data as
    `color_by` colours it (the biggest top-level directories or directories named)."""
    from matplotlib.patches import Patch
    owner = m.owner[lo:hi]
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
    return handles


def _group_lines(ax, m: BlockMap, lo: int, hi: int, k: int, width: int, px: int) -> None:
    """Each group's first block as a staircase line, and every few groups a label."""
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


def draw(m: BlockMap, out, *, width: int | None = None, group: int | None = None, blocks=None,
         cells: int | None = None, color_by: str = "top", title: str | None = None,
         dpi: int = 100, max_rows: int = 768) -> dict:
    """Draw the map (or one group, or a block range) into the PNG `out`; returns what was drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lo, hi = _extent(m, group, blocks)
    k, width, rows = _grid(m, hi - lo, group, cells, width, max_rows)
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
    cellrgb = _cell_colours(m, lo, hi, k, width, rows, color_by, pal)
    counts = np.bincount(m.owner[lo:hi], minlength=len(pal))
    handles = _legend(m, lo, hi, color_by, pal, counts)

    legend_w = 420
    u = BASE_DPI
    fig_w = (map_w + legend_w + 110) / u
    fig_h = max(map_h + 150, 21 * len(handles) + 120) / u
    fig = plt.figure(figsize=(fig_w, fig_h), dpi=dpi)
    ax = fig.add_axes([90 / u / fig_w, (fig_h * u - 90 - map_h) / u / fig_h, map_w / u / fig_w, map_h / u / fig_h])
    ax.imshow(cellrgb, interpolation="nearest", aspect="auto",
              extent=(-0.5, width - 0.5, rows - 0.5, -0.5))
    _group_lines(ax, m, lo, hi, k, width, px)
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
