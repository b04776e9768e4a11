"""An offset axis zoomed to where the requests are, with the few outside it marked at its edges.

One superblock read at offset 0 must not squeeze a run whose data sit in 1,340-1,760 MB into a
thin line: the axis spans the shortest stretch holding 95% of the offsets, widened to the
requests lying near it (so only those beyond an empty stretch are cut off), with a margin.
Points beyond are drawn on the edge as arrows, and a note on each edge says how many requests
lie outside and how far they reach.
"""

from __future__ import annotations

import math

import numpy as np

#: the axis holds at least this share of the requests
KEEP = 0.95
#: a tail within this fraction of the kept span is shown too: only requests beyond an empty
#: stretch of the disk are cut off
NEAR = 0.25
MARGIN = 0.04


def _flat(values) -> np.ndarray:
    return np.concatenate([np.asarray(x, dtype=float).ravel() for x in values]) if len(values) else np.array([])


def core(v: np.ndarray) -> tuple[float, float]:
    """The shortest interval holding KEEP of the sorted values `v` (the first such)."""
    k = max(1, math.ceil(KEEP * len(v)))
    widths = v[k - 1:] - v[: len(v) - k + 1]
    i = int(np.argmin(widths))
    return float(v[i]), float(v[i + k - 1])


def window(values) -> tuple[float, float]:
    """(low, high) axis limits for `values` (arrays, taken together): the shortest span holding
    95% of them, widened to the values lying near it, with a margin; (0, 1) for no values."""
    v = np.sort(_flat(values))
    if v.size == 0:
        return 0.0, 1.0
    lo, hi = core(v)
    span = hi - lo
    near = v[(v >= lo - NEAR * span) & (v <= hi + NEAR * span)]
    lo, hi = float(near.min()), float(near.max())
    span = hi - lo
    pad = MARGIN * span if span > 0 else max(abs(hi) * 0.01, 0.5)
    return (max(lo - pad, 0.0) if v[0] >= 0 else lo - pad), hi + pad


def outside(y, lim: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Masks of the values below and above the limits."""
    y = np.asarray(y, dtype=float)
    return y < lim[0], y > lim[1]


def mark_outside(ax, x, y, lim: tuple[float, float], colour) -> int:
    """Draw the points of (x, y) outside `lim` as arrows on the axis edge they lie beyond (not
    clipped), and return how many there are; the axis's y limits are set to `lim`."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    below, above = outside(y, lim)
    for mask, edge, marker in ((below, lim[0], "v"), (above, lim[1], "^")):
        if mask.any():
            ax.scatter(x[mask], np.full(int(mask.sum()), edge), marker=marker, s=36, color=colour,
                       edgecolors="black", linewidths=0.4, clip_on=False, zorder=4)
    ax.set_ylim(*lim)
    return int(below.sum() + above.sum())


def note_outside(ax, ys, lim: tuple[float, float], unit: str = "MB") -> None:
    """One note per edge with points beyond it: how many requests, and how far they reach."""
    y = _flat(ys)
    below, above = outside(y, lim)
    for mask, ypos, va, arrow, far in ((above, 0.985, "top", "▲", y[above].max() if above.any() else 0),
                                       (below, 0.015, "bottom", "▼", y[below].min() if below.any() else 0)):
        n = int(mask.sum())
        if n:
            ax.text(0.995, ypos, f"{arrow} {n:,} request{'s' if n != 1 else ''} "
                    f"{'above' if arrow == '▲' else 'below'} the axis (to {far:,.{0 if far >= 10 else 2}f} {unit})",
                    transform=ax.transAxes, ha="right", va=va, fontsize=9, color="0.15",
                    bbox=dict(facecolor="white", edgecolor="0.6", alpha=0.9, pad=2))


def overlapping(values) -> bool:
    """Do two series' core spans overlap (drawn on one axis, their points would hide each other)?"""
    spans = [core(np.sort(np.asarray(v, dtype=float))) for v in values if len(v)]
    return any(a[0] <= b[1] and b[0] <= a[1] for i, a in enumerate(spans) for b in spans[i + 1:])
