"""Draw a Validation as one PNG: the measured, simfs's and (when given) DiskSim's service-time
CDFs on one chart, large type for a projector (matplotlib, Agg backend)."""

from __future__ import annotations

import numpy as np


def plot_validation(v, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 7))
    meas, sim = np.sort(v.samples["measured"]), np.sort(v.samples["simfs"])
    y = np.arange(1, len(meas) + 1) / len(meas)
    ax.plot(meas, y, color="black", lw=3.0, label="measured on the drive")
    ax.plot(sim, y, color="tab:blue", lw=2.2, label=f"simfs (demerit {v.demerit:.3f} ms)")
    if "disksim" in v.samples:
        x, yd = v.samples["disksim"]
        lab = "DiskSim 4.0" + (f" (demerit {v.disksim_demerit:.3f} ms)" if v.disksim_demerit is not None else "")
        ax.plot(x, yd, color="tab:orange", lw=2.2, ls="--", label=lab)
    hi = float(np.percentile(np.concatenate([meas, sim]), 99.8))
    ax.set_xlim(0, hi * 1.03)
    ax.set_ylim(0, 1.0)
    ax.set_xlabel("service time (ms)", fontsize=16)
    ax.set_ylabel("fraction of requests", fontsize=16)
    ax.tick_params(labelsize=14)
    ax.grid(alpha=0.3)
    name = v.trace.rsplit("/", 1)[-1]
    ax.set_title(f"{v.disk}: {name}, {v.requests} requests", fontsize=15)
    ax.legend(fontsize=15, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
