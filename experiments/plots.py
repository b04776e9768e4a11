"""PNG plots of a run (matplotlib, Agg): bars per configuration and phase, seekwatcher panels of
the traced phases, and block maps of where the files landed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .report import fmt_s


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def bars(doc: dict, out: Path) -> str:
    """One panel per phase (simulated seconds) and per extra metric; one bar per configuration."""
    plt = _plt()
    index = {(r["config"], r["phase"]): r for r in doc["summary"]}
    names = [c["name"] for c in doc["configs"]]
    panels = []
    for p in doc["phases"]:
        panels.append((f"{p['name']} (simulated s)", p["name"], "sim"))
        for m in ("extents", "mb_s"):
            if any(m in index.get((n, p["name"]), {}).get("extra", {}) for n in names):
                panels.append((f"{p['name']}: {'MB/s' if m == 'mb_s' else m}", p["name"], m))
    ncols = min(3, len(panels))
    nrows = -(-len(panels) // ncols)
    width = max(4.0, 0.45 * len(names) + 1.5)
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, 4.2 * nrows), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (title, phase, what) in zip(axes.flat, panels):
        vals, lo, hi = [], [], []
        for n in names:
            r = index.get((n, phase))
            s = None if r is None else (r["sim"] if what == "sim" else r["extra"].get(what))
            vals.append(s["mean"] if s else 0.0)
            lo.append(max(0.0, s["mean"] - s["min"]) if s else 0.0)
            hi.append(max(0.0, s["max"] - s["mean"]) if s else 0.0)
        x = np.arange(len(names))
        ax.bar(x, vals, color=[colours[i % len(colours)] for i in range(len(names))],
               yerr=[lo, hi] if any(lo) or any(hi) else None, capsize=3)
        for xi, v in zip(x, vals):
            ax.annotate(fmt_s(v) if what == "sim" else f"{v:,.0f}" if what == "extents" else f"{v:.1f}",
                        (xi, v), ha="center", va="bottom", fontsize=7)
        if what == "extents" and max(vals) > 50 * max(min(v for v in vals if v > 0) if any(vals) else 1, 1):
            ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    fig.suptitle(doc["title"] + (" (quick)" if doc["quick"] else ""), fontsize=11)
    fig.tight_layout()
    name = "bars.png"
    fig.savefig(out / name, dpi=100)
    plt.close(fig)
    return name


def seekwatcher(panel, raw_records: list[dict], work: Path, out: Path, index: int) -> str | None:
    """The panel's phase of each configuration's trace, each from the phase's first request."""
    from simfs.blockio.trace import read_trace
    from simfs.pictures.seekplot import phase_series, plot_series
    series = []
    for cfg in panel.configs:
        rec = next((r for r in raw_records if r["config"] == cfg and r["phase"] == panel.phase
                    and r.get("rep", 0) == 0 and r.get("trace")), None)
        if rec is None or not Path(rec["trace"]).exists():
            continue
        s = phase_series(read_trace(rec["trace"]), panel.phase)
        if len(s["start"]):
            series.append((cfg, s))
    if not series:
        return None
    name = f"seekwatcher-{index}-{panel.phase}.png"
    plot_series(series, out / name, title=panel.title, phase_origin=True)
    return name


BLOCKMAP_KINDS = (("free", (1, 1, 1)), ("file-system metadata", (0.78, 0.78, 0.78)),
                  ("directory", (0, 0, 0)), ("indirect block", (0.85, 0.1, 0.1)))


def blockmap(doc: dict, layouts: dict, out: Path, single_file: bool = False) -> str | None:
    """Per configuration: a 64x64 grid of the 4096 blocks from the first file block (colour = file,
    white = free, grey = file-system metadata, black = directory, red = indirect), and where each
    file block landed (physical block against the files' blocks in inode order). The right-hand
    panels share their axes, so configurations compare by eye; one legend says what the colours are."""
    if not layouts:
        return None
    plt = _plt()
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch
    names = [c["name"] for c in doc["configs"] if c["name"] in layouts]
    fig, axes = plt.subplots(len(names), 2, figsize=(12, 3.7 * len(names) + 1.1), squeeze=False,
                             gridspec_kw={"width_ratios": [1, 2]})
    from simfs.pictures.blockmap import TOP_COLOURS, hex_rgb
    palette = [hex_rgb(c) for c in TOP_COLOURS]         # tab20 without its reds and greys (indirect, metadata)
    cmap = ListedColormap([c for _, c in BLOCKMAP_KINDS] + list(palette))
    ymax = max((max((max(b) for _, b in layouts[n].order if b), default=0) + 1) * layouts[n].block_size / 1e6
               for n in names)
    xmax = max(layouts[n].data_blocks for n in names)
    right = [row[1] for row in axes]
    for ax in right[1:]:
        ax.sharex(right[0])
        ax.sharey(right[0])
    for row, name in zip(axes, names):
        lay = layouts[name]
        data_blocks = np.flatnonzero(lay.kind == 2)
        start = int(data_blocks.min()) if len(data_blocks) else 0
        n = 4096
        kind = lay.kind[start:start + n].astype(np.int32)
        owner = lay.owner[start:start + n].astype(np.int64)
        img = np.zeros(n, dtype=np.int32)
        img[: len(kind)] = np.select([kind == 0, kind == 1, kind == 3, kind == 4, kind == 2],
                                     [0, 1, 2, 3, 4 + owner % len(palette)], 0)
        ax = row[0]
        ax.imshow(img.reshape(64, 64), cmap=cmap, vmin=0, vmax=cmap.N - 1, interpolation="nearest")
        ax.set_title(f"{name}\nblocks {start:,}–{start + n - 1:,}", fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("64 blocks per row, in block order", fontsize=9)
        ax = row[1]
        xs, ys, pos = [], [], 0
        for _, blocks in lay.order:
            xs.append(np.arange(pos, pos + len(blocks)))
            ys.append(np.asarray(blocks))
            pos += len(blocks)
        if xs:
            x, y = np.concatenate(xs), np.concatenate(ys)
            step = max(1, len(x) // 200_000)
            ax.scatter(x[::step], y[::step] * lay.block_size / 1e6, s=2, marker=".", linewidths=0,
                       color="#1f77b4")
        ax.set_xlabel("logical block of the file" if single_file else "file blocks, files in inode order",
                      fontsize=9)
        ax.set_ylabel("disk offset (MB)", fontsize=10)
        ax.set_title(f"{name}: {lay.extents:,} extents for {lay.files:,} file{'s' if lay.files != 1 else ''}, "
                     f"{lay.data_blocks:,} blocks", fontsize=10)
        ax.grid(alpha=0.3)
        ax.tick_params(labelleft=True, labelbottom=True)
    right[0].set_xlim(-0.01 * xmax, xmax * 1.01 + 1)
    right[0].set_ylim(0, ymax * 1.03 + 1e-3)
    handles = [Patch(facecolor=c, edgecolor="black", linewidth=0.5, label=lab) for lab, c in BLOCKMAP_KINDS]
    handles.append(Patch(facecolor=palette[0], edgecolor="black", linewidth=0.5,
                         label=f"file data (one colour per file, {len(palette)} colours in turn)"))
    fig.legend(handles=handles, loc="lower center", ncol=5, fontsize=9, frameon=False,
               title="left: what each block holds", title_fontsize=9)
    fig.suptitle("where the files landed (right: one axis scale for every configuration)", fontsize=12)
    fig.tight_layout(rect=(0, 0.9 / (3.7 * len(names) + 1.1), 1, 0.985))
    name = "blockmap.png"
    fig.savefig(out / name, dpi=90)
    plt.close(fig)
    return name


def draw_all(exp, doc: dict, raw: dict, work: Path, out: Path, warn=print) -> list[str]:
    """Every plot of the run; a plot that fails is reported and skipped (the results stay)."""
    jobs = [lambda: bars(doc, out)]
    jobs += [lambda i=i, panel=panel: seekwatcher(panel, raw["records"], work, out, i)
             for i, panel in enumerate(exp.panels)]
    jobs.append(lambda: blockmap(doc, raw["layouts"], out, single_file=exp.blockmap_files != "all"))
    made = []
    for job in jobs:
        try:
            name = job()
        except Exception as e:          # a plot must never cost the measurements
            warn(f"plot failed: {type(e).__name__}: {e}")
            continue
        if name:
            made.append(name)
    return made
