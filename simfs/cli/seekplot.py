"""`simfs plot`: seekwatcher-style panels of one or more request traces on one time axis.

Panels: disk offset vs time (reads and writes in different colours), throughput (MB/s),
seeks per second (a jump of more than 128 sectors, seekwatcher's rule) and IOPS, each as
a rolling average over a window of run-length/25 (seekwatcher's default).
"""

import numpy as np

from simfs.blockio.stats import SEEK_SECTORS
from simfs.blockio.trace import read_trace


def _series(t: dict, bins: int = 25, window_frac: float = 1 / 25):
    start = np.asarray(t["start"])
    if len(start) == 0:
        return None
    finish = np.asarray(t["finish"])
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


def plot_traces(paths: list, out, labels: list | None = None, title: str | None = None) -> list[dict]:
    """Draw the panels for the traces into `out` (PNG); returns one summary dict per trace."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = labels or [str(p) for p in paths]
    fig, axes = plt.subplots(4, 1, figsize=(10, 11), sharex=True,
                             gridspec_kw={"height_ratios": [3, 1.3, 1.3, 1.3]})
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    summaries = []
    for i, (path, label) in enumerate(zip(paths, labels)):
        s = _series(read_trace(path))
        if s is None:
            summaries.append({"label": label, "requests": 0})
            continue
        c = colours[i % len(colours)]
        single = len(paths) == 1
        for op, marker, colour in (("R", ".", "tab:blue" if single else c), ("W", "x", "tab:green" if single else c)):
            m = s["op"] == op
            if m.any():
                axes[0].scatter(s["t"][m], s["lba"][m] * 512 / 1e6, s=4, marker=marker, color=colour,
                                label=f"{label} {'reads' if op == 'R' else 'writes'}", linewidths=0.6)
        axes[1].plot(s["mid"], s["mb"], color=c, label=label)
        axes[2].plot(s["mid"], s["seeks"], color=c, label=label)
        axes[3].plot(s["mid"], s["iops"], color=c, label=label)
        summaries.append({"label": label, "requests": s["n"], "run_time": s["span"], "mb": s["total_mb"],
                          "avg_mb_s": s["total_mb"] / s["span"], "avg_seeks_s": s["nseeks"] / s["span"],
                          "avg_iops": s["n"] / s["span"]})
    axes[0].set_ylabel("disk offset (MB)")
    axes[0].set_title(title or "Disk IO")
    axes[0].legend(loc="upper right", fontsize="small", markerscale=3)
    axes[1].set_ylabel("MB/s")
    axes[2].set_ylabel("seeks/s")
    axes[3].set_ylabel("IO/s")
    axes[3].set_xlabel("simulated time (s)")
    for ax in axes[1:]:
        ax.grid(alpha=0.3)
        if len(paths) > 1:
            ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return summaries
