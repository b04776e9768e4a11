"""Pictures and the report of a user's own job (issue 43 item 5): no seed text where there is no
seed, sizes in binary units, the seekwatcher offset axis zoomed to where the requests are (the
few beyond marked), one offset panel per configuration where they overlap, and the same block
range in every configuration's block map. The mounted test runs examples/jobs/alloc-ab.toml
--quick and reads its report in a real headless chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from simfs.units import parse_size
from tests.conftest import fuse_mounts
from tests.report.test_htmlreport import PROBE, render, report_cmd
from tests.report.test_pictures import unpacked_layouts
from tests.volume.test_jobs_run import simfs_run

REPO = Path(__file__).resolve().parents[2]
SEED_TEXT = ("seed's", "against the seed", "simfs / seed", "WRONG", "NONE", "published")


def _figures(monkeypatch):
    """Keep the figures matplotlib would close, to read their axes."""
    import matplotlib.pyplot as plt
    kept = []
    monkeypatch.setattr(plt, "close", lambda f=None: kept.append(f))
    return kept


def _offset_axes(fig):
    return [ax for ax in fig.axes if ax.get_ylabel() == "disk offset (MB)"]


def _cols(offsets_mb, t=None):
    """Trace columns of reads at the given offsets (MB), one every millisecond."""
    lba = (np.asarray(offsets_mb) * 1e6 / 512).astype(np.int64)
    t = np.arange(len(lba)) * 1e-3 if t is None else t
    return {"issue": t, "start": t, "finish": t + 5e-4, "lba": lba, "sectors": np.full(len(lba), 8),
            "op": np.array(["R"] * len(lba)), "phase": np.array(["p"] * len(lba), dtype=object)}


def test_offset_axis_covers_the_requests_not_the_empty_span(tmp_path, monkeypatch):
    """The issue's case: one superblock read at 0 and the data in 1,340-1,760 MB. The axis holds
    at least 98% of the requests, does not reach down to 0, and says one request lies below."""
    from simfs.pictures.seekplot import plot_series
    rng = np.random.default_rng(7)
    data = np.r_[0.001, np.sort(rng.uniform(1340, 1760, 999))]
    kept = _figures(monkeypatch)
    plot_series([("a", _cols(data))], tmp_path / "s.png")
    (ax,) = _offset_axes(kept[-1])
    lo, hi = ax.get_ylim()
    assert np.mean((data >= lo) & (data <= hi)) >= 0.98
    assert lo > 1300 and hi < 1800, (lo, hi)             # margins only: no empty span drawn
    notes = [t.get_text() for t in ax.texts]
    assert any(n.startswith("▼ 1 request below") for n in notes), notes


def test_overlapping_configurations_get_a_panel_each_on_one_scale(tmp_path, monkeypatch):
    from simfs.pictures.seekplot import plot_series
    kept = _figures(monkeypatch)
    a, b = np.linspace(100, 200, 300), np.linspace(150, 260, 300)
    plot_series([("a", _cols(a)), ("b", _cols(b))], tmp_path / "o.png")
    axes = _offset_axes(kept[-1])
    assert [ax.get_title(loc="left") for ax in axes] == ["a", "b"]
    assert axes[0].get_ylim() == axes[1].get_ylim()
    lo, hi = axes[0].get_ylim()
    assert lo <= 100 and hi >= 260
    # apart on the disk, they share one panel (their points cannot hide each other)
    plot_series([("a", _cols(a)), ("c", _cols(a + 1000))], tmp_path / "n.png")
    assert len(_offset_axes(kept[-1])) == 1


def test_figure_title_clears_the_first_panels_title(tmp_path, monkeypatch):
    """The figure's title sat over the first configuration's panel title (ext2fs-2010's
    seekwatcher pictures of 2026-11-29): it must lie wholly above it."""
    from simfs.pictures.seekplot import plot_series
    kept = _figures(monkeypatch)
    a = np.linspace(100, 200, 300)
    plot_series([(name, _cols(a + 20 * k)) for k, name in enumerate(("ext2fs-2010 4K sync", "fixed 4K sync",
                                                                    "sequential 4K sync", "cg 4K sync"))],
                tmp_path / "t.png",
                title="tar cf /dev/zero, 4K sync: 2010 allocator vs fixed vs sequential vs cg")
    fig = kept[-1]
    renderer = fig.canvas.get_renderer()
    top_panel = _offset_axes(fig)[0]
    assert fig._suptitle.get_window_extent(renderer).y0 >= \
        top_panel._left_title.get_window_extent(renderer).y1


def test_sizes_in_binary_units():
    from simfs.pictures.labels import human_options, human_value
    assert human_options("writeback=async,cache=28311552,alloc=cg,disk=sata7200") == \
        "writeback=async,cache=27 MiB,alloc=cg,disk=sata7200"
    assert human_options("cache=1610612736") == "cache=1.5 GiB"
    assert human_options("alloc=ext2,maxio=131072") == "alloc=ext2,maxio=128 KiB"
    assert human_options("seed=4096,files=60") == "seed=4096,files=60"      # not sizes: unchanged
    assert human_value("size_bytes", 536870912) == "512 MiB"


def test_block_map_windows_are_the_same_blocks_in_every_configuration(tmp_path, monkeypatch):
    """ext2 and cg place the tree at different blocks; both maps show the same range, the one
    holding the most file blocks of the two."""
    from experiments import plots
    layouts = unpacked_layouts(tmp_path, ("ext2", "cg"), 256 << 20, seed=4, files=60, name=lambda a: f"alloc={a}")
    firsts = {n: int(np.flatnonzero(lay.kind == 2).min()) for n, lay in layouts.items()}
    assert len(set(firsts.values())) == 2, firsts        # their first file blocks differ
    kept = _figures(monkeypatch)
    plots.blockmap({"configs": [{"name": n} for n in layouts]}, layouts, tmp_path)
    left = [ax for ax in kept[-1].axes if ax.get_xlabel() == "64 blocks per row, in block order"]
    ranges = [re.search(r"blocks ([\d,]+)–([\d,]+)", ax.get_title()).groups() for ax in left]
    assert len(ranges) == 2 and ranges[0] == ranges[1], ranges
    start = int(ranges[0][0].replace(",", ""))
    best = max(sum(int((lay.kind[s:s + 4096] == 2).sum()) for lay in layouts.values())
               for s in range(0, max(len(lay.kind) for lay in layouts.values()) - 4095, 64))
    assert sum(int((lay.kind[start:start + 4096] == 2).sum()) for lay in layouts.values()) == best


@pytest.mark.mount
def test_a_user_jobs_report_has_no_seed_text_and_readable_axes(tmp_path):
    out = tmp_path / "out"
    r = simfs_run(REPO / "examples" / "jobs" / "alloc-ab.toml", "--quick", "--out", out, "--work-dir", tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not [m for m in fuse_mounts() if m.startswith(str(tmp_path))]      # nothing of ours left mounted
    doc = json.loads((out / "results.json").read_text())
    assert {"bars.png", "blockmap.png", "seekwatcher-0-tar.png"} <= {p.name for p in out.glob("*.png")}
    r = report_cmd(out, "-o", tmp_path / "report.html")
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "report.html").read_text()
    (tmp_path / "probed.html").write_text(page.replace("</body>", PROBE, 1))
    dom = render(tmp_path / "probed.html")
    text = re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]+"', "", dom))
    for words in SEED_TEXT:
        assert words not in text, words
    assert "<h3>Ratios</h3>" in dom
    cache = re.search(r"cache=(\d+)", doc["configs"][0]["mount"]).group(1)      # bytes in results.json
    assert f"cache={cache}" not in text
    shown = re.findall(r"cache=(\d+(?:\.\d)? [KMG]iB)", text)
    assert shown and all(parse_size(x) == int(cache) for x in shown), shown
    m = re.search(r'<div id="probe">images=(\d+) decoded=(\d+)', dom)
    assert m and m.group(1) == m.group(2) == str(len(list(out.glob("*.png"))))
    md = (out / "table.md").read_text()
    for words in SEED_TEXT:
        assert words not in md, words
