"""Seekwatcher-style panels of one or more request traces on one time axis, and the seekwatcher
movie of the head moving over the disk (`simfs plot` and the experiments draw with it).

Panels: disk offset vs time (reads and writes in distinct colours, named in the legend),
throughput (MB/s), seeks per second (a jump of more than 128 sectors, seekwatcher's rule) and
IOPS, each as a rolling average over a window of run-length/25 (seekwatcher's default).

A trace holds every phase of a mount (`phase` column, started by `echo NAME > MNT/.simfs/mark`).
`phase_series` cuts one phase out and moves its time origin to the phase's first request, so
phases of one trace, or the same phase of several traces, are drawn from t = 0 side by side.
"""

from __future__ import annotations

import numpy as np

from simfs.blockio.stats import SEEK_SECTORS
from simfs.blockio.trace import read_trace
from simfs.pictures import zoom

# reads and writes: a dark and a light shade of one hue per series (tab20's pairs), and different
# markers, so two traces on one axis and the two directions of each stay apart
READ_WRITE = [("#1f77b4", "#ff7f0e"), ("#2ca02c", "#d62728"), ("#9467bd", "#8c564b"),
              ("#17becf", "#e377c2"), ("#7f7f7f", "#bcbd22")]


def phases_of(cols: dict) -> list[str]:
    """The phases of a trace, in the order they start."""
    seen = {}
    for p in cols["phase"]:
        seen.setdefault(p, None)
    return list(seen)


def phase_series(cols: dict, phase: str | None) -> dict:
    """The trace's columns as arrays, only `phase`'s rows when given, with times relative to that
    phase's first request (one time origin per phase); the whole trace keeps its own times."""
    keep = np.ones(len(cols["start"]), dtype=bool) if phase is None else \
        np.asarray(cols["phase"], dtype=object) == phase
    out = {k: np.asarray(cols[k])[keep] for k in ("issue", "start", "finish", "lba", "sectors", "op", "phase")}
    if phase is not None and keep.any():
        t0 = float(out["issue"].min())
        for k in ("issue", "start", "finish"):
            out[k] = out[k] - t0
    return out


def boundaries(s: dict) -> list[tuple[float, str]]:
    """(time, name) where each phase of a whole trace starts (its first request)."""
    out, last = [], None
    for t, p in zip(s["issue"], s["phase"]):
        if p != last:
            out.append((float(t), str(p)))
            last = p
    return out


def _series(t: dict, window_frac: float = 1 / 25):
    start = np.asarray(t["start"], dtype=float)
    if len(start) == 0:
        return None
    finish = np.asarray(t["finish"], dtype=float)
    lba = np.asarray(t["lba"], dtype=np.int64)
    sectors = np.asarray(t["sectors"], dtype=np.int64)
    end_prev = np.concatenate([[lba[0]], (lba + sectors)[:-1]])
    seek = np.abs(lba - end_prev) > SEEK_SECTORS
    t0, t1 = float(start.min()), float(finish.max())
    span = max(t1 - t0, 1e-9)
    window = max(span * window_frac, 1e-6)
    edges = np.arange(t0, t1 + window, window)
    idx = np.clip(np.searchsorted(edges, finish, side="right") - 1, 0, len(edges) - 2)
    mb = np.bincount(idx, weights=sectors * 512 / 1e6, minlength=len(edges) - 1) / window
    seeks = np.bincount(idx, weights=seek.astype(float), minlength=len(edges) - 1) / window
    iops = np.bincount(idx, minlength=len(edges) - 1) / window
    mid = (edges[:-1] + edges[1:]) / 2
    return {"t": start, "lba": lba, "op": np.asarray(t["op"]), "mid": mid, "mb": mb, "seeks": seeks,
            "iops": iops, "span": span, "total_mb": sectors.sum() * 512 / 1e6, "nseeks": int(seek.sum()),
            "n": len(start)}


def summarize(label: str, cols: dict) -> dict:
    """seekwatcher's summary of one series (what plot_series returns for it)."""
    s = _series(cols)
    if s is None:
        return {"label": label, "requests": 0}
    return {"label": label, "requests": s["n"], "run_time": s["span"], "mb": s["total_mb"],
            "avg_mb_s": s["total_mb"] / s["span"], "avg_seeks_s": s["nseeks"] / s["span"],
            "avg_iops": s["n"] / s["span"]}


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_series(series: list[tuple[str, dict]], out, title: str | None = None,
                marks: list[tuple[float, str]] | None = None, phase_origin: bool = False) -> list[dict]:
    """Draw the panels for (label, columns) pairs into `out` (PNG); `marks`: phase boundaries
    (time, name) drawn as dashed lines. Series whose offsets overlap get one offset panel each
    (same axes); the offset axis is zoomed to where the requests are (simfs.pictures.zoom).
    Returns one seekwatcher summary dict per series."""
    plt = _plt()
    data = [(label, cols, _series(cols)) for label, cols in series]
    drawn = [(i, label, s) for i, (label, _, s) in enumerate(data) if s is not None]
    offsets = [s["lba"] * 512 / 1e6 for _, _, s in drawn]
    split = len(drawn) > 1 and zoom.overlapping(offsets)
    n_off = len(drawn) if split else 1
    fig, axes = plt.subplots(n_off + 3, 1, figsize=(11, 11.5 + 2.6 * (n_off - 1)), sharex=True,
                             gridspec_kw={"height_ratios": [3 if n_off == 1 else 2.2] * n_off + [1.3] * 3})
    off_axes, rate_axes = list(axes[:n_off]), list(axes[n_off:])
    lim = zoom.window(offsets)
    for k, ((i, label, s), mb) in enumerate(zip(drawn, offsets)):
        ax = off_axes[k if split else 0]
        rc, wc = READ_WRITE[i % len(READ_WRITE)]
        for op, marker, colour, what in (("R", "o", rc, "reads"), ("W", "x", wc, "writes")):
            m = s["op"] == op
            if m.any():
                ax.scatter(s["t"][m], mb[m], s=6 if op == "R" else 9, marker=marker,
                           color=colour, linewidths=0.7,
                           label=f"{what} ({int(m.sum()):,})" if len(series) == 1 or split
                           else f"{label}: {what} ({int(m.sum()):,})")
                zoom.mark_outside(ax, s["t"][m], mb[m], lim, colour)
        rate_axes[0].plot(s["mid"], s["mb"], color=rc, label=label)
        rate_axes[1].plot(s["mid"], s["seeks"], color=rc, label=label)
        rate_axes[2].plot(s["mid"], s["iops"], color=rc, label=label)
    summaries = [summarize(label, cols) if s is not None else {"label": label, "requests": 0}
                 for label, cols, s in data]
    span = max((max((float(np.max(c["finish"])) for _, c in series if len(c["finish"])), default=1.0)), 1e-9)
    last, row = None, 0
    for t, name in marks or []:
        for ax in axes:
            ax.axvline(t, color="0.35", linestyle="--", linewidth=0.9)
        row = row + 1 if last is not None and t - last < 0.12 * span else 0   # close labels: step down
        off_axes[0].annotate(f" {name}", (t, 1.0 - 0.06 * (row % 4)), xycoords=("data", "axes fraction"),
                             va="top", fontsize=11, color="0.2",
                             bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1))
        last = t
    for k, ax in enumerate(off_axes):
        ax.set_ylim(*lim)
        ax.set_ylabel("disk offset (MB)", fontsize=12)
        zoom.note_outside(ax, [offsets[k]] if split else offsets, lim)
        if split:
            ax.set_title(drawn[k][1], fontsize=11, loc="left")
        if ax.get_legend_handles_labels()[0]:      # a legend of nothing is a matplotlib warning
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=10, markerscale=2.5,
                      title="requests", title_fontsize=10)
        else:
            ax.text(0.5, 0.5, "no requests", transform=ax.transAxes, ha="center", va="center",
                    fontsize=14, color="0.35")
    fig.suptitle(title or "Disk IO", fontsize=14)
    rate_axes[0].set_ylabel("MB/s", fontsize=12)
    rate_axes[1].set_ylabel("seeks/s", fontsize=12)
    rate_axes[2].set_ylabel("IO/s", fontsize=12)
    rate_axes[2].set_xlabel("simulated time (s)" + (" from the phase's first request" if phase_origin else ""),
                            fontsize=12)
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=10)
    if len(series) > 1 and rate_axes[0].get_legend_handles_labels()[0]:
        rate_axes[0].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=10, title="trace")
    # tight_layout leaves the title a fixed share of the height: on a tall figure that is less
    # than the title's line, which then sat over the first panel's own title; keep 0.6 inch
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / fig.get_figheight()))
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return summaries


def plot_traces(paths: list, out, labels: list | None = None, title: str | None = None,
                phase: str | None = None) -> list[dict]:
    """Draw the panels for the trace files into `out` (PNG), only `phase` when given (its own
    time origin); returns one summary dict per trace."""
    labels = labels or [str(p) for p in paths]
    series = [(label, phase_series(read_trace(p), phase)) for p, label in zip(paths, labels)]
    marks = None
    if phase is None and len(series) == 1 and len(set(series[0][1]["phase"])) > 1:
        marks = boundaries(series[0][1])
    return plot_series(series, out, title=title, marks=marks, phase_origin=phase is not None)


# the movie ----------------------------------------------------------------------------------------
def movie(cols: dict, out: str, *, title: str | None = None, frames: int = 80, fps: int = 8,
          dpi: int = 80, writer=None) -> dict:
    """A seekwatcher-style movie of one trace (or phase): left, every request so far (disk offset
    against simulated time) with a "now" line; right, the disk as a bar with the head where the
    latest request is and the requests of the last frame lit (reads and writes apart), older ones
    fading. GIF through Pillow, MP4 through ffmpeg (the caller checks it is there)."""
    plt = _plt()
    from matplotlib import animation
    s = _series(cols)
    if s is None:
        raise ValueError("no requests to draw")
    t = s["t"]
    mb = s["lba"] * 512 / 1e6
    is_w = s["op"] == "W"
    t0, t1 = float(t.min()), float(t.min() + s["span"])
    ymax = max(float(mb.max()) * 1.05, 1e-3)
    rc, wc = READ_WRITE[0]

    fig = plt.figure(figsize=(11, 6.2), dpi=dpi)
    gs = fig.add_gridspec(1, 2, width_ratios=[5, 1], wspace=0.08, left=0.08, right=0.97, top=0.86,
                          bottom=0.2)
    ax, disk = fig.add_subplot(gs[0]), fig.add_subplot(gs[1])
    fig.suptitle(title or "head position over the disk", fontsize=15)
    ax.set_xlim(t0, t1)
    ax.set_ylim(0, ymax)
    ax.set_xlabel("simulated time (s)", fontsize=12)
    ax.set_ylabel("disk offset (MB)", fontsize=12)
    ax.grid(alpha=0.3)
    reads = ax.scatter([], [], s=8, marker="o", color=rc, label="reads")
    writes = ax.scatter([], [], s=12, marker="x", color=wc, linewidths=0.8, label="writes")
    now = ax.axvline(t0, color="black", linewidth=1)
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.1), ncol=2, fontsize=11, markerscale=2, frameon=False)
    clock = fig.text(0.08, 0.905, "", va="center", fontsize=12)
    disk.set_ylim(0, ymax)
    disk.set_xlim(0, 1)
    disk.set_xticks([])
    disk.set_yticklabels([])
    disk.set_title("the disk", fontsize=12)
    disk.grid(axis="y", alpha=0.3)
    lit_r = disk.scatter([], [], s=300, marker="_", linewidths=3, color=rc)
    lit_w = disk.scatter([], [], s=300, marker="_", linewidths=3, color=wc)
    head = disk.scatter([0.9], [0], s=160, marker="<", color="black", zorder=3)
    seeks_txt = disk.text(0.5, -0.06, "", transform=disk.transAxes, ha="center", va="top", fontsize=10)
    times = np.linspace(t0, t1, frames + 1)[1:]
    cut = np.searchsorted(t, times, side="right")
    step = (t1 - t0) / frames

    def draw(i):
        n = int(cut[i])
        r_m, w_m = ~is_w[:n], is_w[:n]
        reads.set_offsets(np.c_[t[:n][r_m], mb[:n][r_m]] if r_m.any() else np.empty((0, 2)))
        writes.set_offsets(np.c_[t[:n][w_m], mb[:n][w_m]] if w_m.any() else np.empty((0, 2)))
        now.set_xdata([times[i], times[i]])
        lo = int(np.searchsorted(t, times[i] - 3 * step, side="left"))
        recent = slice(lo, n)
        age = (times[i] - t[recent]) / (3 * step)
        alpha = np.clip(1 - age, 0.15, 1)
        for coll, mask, colour in ((lit_r, ~is_w[recent], rc), (lit_w, is_w[recent], wc)):
            y = mb[recent][mask]
            coll.set_offsets(np.c_[np.full(len(y), 0.45), y] if len(y) else np.empty((0, 2)))
            if len(y):
                import matplotlib.colors as mc
                rgba = np.tile(mc.to_rgba(colour), (len(y), 1))
                rgba[:, 3] = alpha[mask]
                coll.set_facecolors(rgba)
                coll.set_edgecolors(rgba)
        if n:
            head.set_offsets([[0.9, mb[n - 1]]])
        clock.set_text(f"t = {times[i] - t0:.3f} s of {t1 - t0:.3f} s, {n:,} of {len(t):,} requests")
        seeks_txt.set_text(f"{n - lo:,} requests\nin the last {3 * step * 1e3:.0f} ms")
        return reads, writes, now, lit_r, lit_w, head, clock, seeks_txt

    anim = animation.FuncAnimation(fig, draw, frames=frames, blit=False)
    if writer is not None:
        pass
    elif str(out).lower().endswith(".gif"):
        writer = animation.PillowWriter(fps=fps)
    else:
        writer = animation.FFMpegWriter(fps=fps, codec="libx264", extra_args=["-pix_fmt", "yuv420p"])
    anim.save(out, writer=writer, dpi=dpi)
    plt.close(fig)
    return {"frames": frames, "fps": fps, "requests": len(t), "run_time": t1 - t0}
