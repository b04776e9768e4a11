"""The run's pictures: aged/clean grep-time ratio and layout score against pulls (one line per
configuration), and a block map of the aged tree beside its clean copy (simfs layout's drawing).
"""

from __future__ import annotations

import os
import tempfile

import numpy as np


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _series(rows: list[dict], key: str) -> dict[str, tuple[list, list]]:
    """config -> (pulls, values) of the replayed rows (the mounted one where nothing replayed)."""
    replayed = {r["config"] for r in rows if r["engine"] == "replayed"}
    out: dict[str, tuple[list, list]] = {}
    for r in sorted(rows, key=lambda r: r["pulls"]):
        if r["engine"] == "replayed" or r["config"] not in replayed:
            xs, ys = out.setdefault(r["config"], ([], []))
            xs.append(r["pulls"])
            ys.append(r[key])
    return out


MARKERS = "osD^v<>p*hX"


def _style(i: int) -> dict:
    """Markers of decreasing size, so lines that coincide (allocators that lay out alike) stay visible."""
    return {"marker": MARKERS[i % len(MARKERS)], "markersize": 9 - (i % 5)}


def _finish(fig, ax, out: str, legend_title: str = "") -> str:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(title=legend_title or None, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return out


def ratio_plot(rows: list[dict], out: str, title: str) -> str:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(10, 5))
    for i, (config, (xs, ys)) in enumerate(sorted(_series(rows, "ratio").items())):
        ax.plot(xs, ys, label=config, **_style(i))
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    ax.set(title=f"Aged vs clean: cold grep -r time ({title})", xlabel="git pulls",
           ylabel="grep time, aged / clean copy (x)")
    ax.set_ylim(bottom=0)
    return _finish(fig, ax, out, "allocator")


def layout_plot(rows: list[dict], out: str, title: str) -> str:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(10, 5))
    for i, (config, (xs, ys)) in enumerate(sorted(_series(rows, "aged_layout").items())):
        line, = ax.plot(xs, ys, label=f"{config} aged", **_style(i))
        cx, cy = _series(rows, "clean_layout")[config]
        ax.plot(cx, cy, ls="--", color=line.get_color(), alpha=0.6, label=f"{config} clean copy")
    ax.set(title=f"Dynamic layout score of the cold grep -r ({title})", xlabel="git pulls",
           ylabel="layout score (1 = every read follows the last)")
    ax.set_ylim(0, 1.02)
    return _finish(fig, ax, out)


def blockmaps(aged: str, clean: str, out: str, title: str) -> str:
    """The two images' block maps (simfs.cli.layout: coloured by top-level directory) side by side."""
    from simfs.pictures.blockmap import block_owners
    from simfs.pictures.drawmap import draw

    from .measure import image_used
    plt = _plt()
    maps = [(name, block_owners(image)) for name, image in (("aged", aged), ("clean copy", clean))]
    end = max(int(np.flatnonzero(image_used(image))[-1]) + 1 for image in (aged, clean))
    end = min(-(-end // 1024) * 1024, min(m.blocks_count for _, m in maps))   # the used part only
    with tempfile.TemporaryDirectory() as tmp:
        pngs = []
        for name, m in maps:
            png = os.path.join(tmp, name.replace(" ", "-") + ".png")
            draw(m, png, blocks=(0, end), width=max(32, int(end ** 0.5) // 16 * 16), title=f"{name}: {os.path.basename(m.image)}, blocks 0..{end - 1:,}")
            pngs.append((name, plt.imread(png)))
        fig, axes = plt.subplots(1, 2, figsize=(16, 6))
        for ax, (name, img) in zip(axes, pngs):
            ax.imshow(img)
            ax.set_axis_off()
        fig.suptitle(f"Where the blocks are: the aged file system beside its clean copy ({title})")
        fig.tight_layout()
        fig.savefig(out, dpi=100)
        plt.close(fig)
    return out
