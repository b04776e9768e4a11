"""`simfs plot --phase/--movie/--json` and `simfs layout --color-by/--json` on a trace and an image
made in-process (a generated tree unpacked, then read back cold in a second phase). No FUSE."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from tests.conftest import run_simfs

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """(image, trace): phases all (mount), unpack, readback (after drop_caches)."""
    from experiments.workload.describe import describe
    from simfs.inprocess.kernel import Kernel
    from simfs.inprocess.verbs import _mkdir_p, tar_read, unpack
    from simfs.fs.volume import Volume, VolumeOptions
    from simfs.ondisk.mkfs import mkfs
    d = tmp_path_factory.mktemp("pics")
    img, trace = d / "t.img", d / "t.csv"
    mkfs(img, 128 << 20, uuid=bytes(16), hash_seed=bytes(16), now=1_000_000_000)
    vol = Volume.open(str(img), VolumeOptions(disk="sata7200", alloc="ext2", writeback="sync",
                                                trace=str(trace), dataless=True))
    k = Kernel(vol)
    k.mount()
    vol.mark("unpack")
    _mkdir_p(k, [b"tree"])
    unpack.run(k, [b"tree"], describe(seed=2, files=150, svn=False))
    vol.sync()
    vol.drop_caches()
    vol.mark("readback")
    tar_read.run(k, [b"tree"])
    k.unmount()
    vol.close()
    return img, trace


def _rows(trace, phase):
    with open(trace, newline="") as f:
        return [r for r in csv.DictReader(f) if r["phase"] == phase]


def test_plot_phases_each_from_its_own_origin(traced, tmp_path):
    _, trace = traced
    out = tmp_path / "p.png"
    r = run_simfs("plot", trace, "--phase", "unpack", "--phase", "readback", "-o", out, "--json")
    doc = json.loads(r.stdout)
    assert out.read_bytes()[:8] == PNG
    assert [s["label"] for s in doc] == ["unpack", "readback"]
    for s in doc:
        rows = _rows(trace, s["label"])
        assert s["requests"] == len(rows) > 0
        # one time origin per phase: the run time is the phase's own span
        span = max(float(x["finish"]) for x in rows) - min(float(x["start"]) for x in rows)
        assert s["run_time"] == pytest.approx(span, rel=1e-6)


def test_reads_and_writes_have_their_own_colours(traced, tmp_path):
    """The unpack phase has reads and writes: both legend colours are in the picture."""
    from PIL import Image
    from simfs.pictures.seekplot import READ_WRITE
    _, trace = traced
    out = tmp_path / "rw.png"
    run_simfs("plot", trace, "--phase", "unpack", "-o", out)
    px = np.asarray(Image.open(out).convert("RGB")).reshape(-1, 3).astype(int)
    for colour in READ_WRITE[0]:
        rgb = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(px - rgb).sum(axis=1) < 30).sum() > 50, colour
    assert READ_WRITE[0][0] != READ_WRITE[0][1]


def test_plot_whole_trace_and_bad_phase(traced, tmp_path):
    _, trace = traced
    r = run_simfs("plot", trace, "-o", tmp_path / "w.png")
    assert "wrote" in r.stdout
    r = run_simfs("plot", trace, "--phase", "nope", "-o", tmp_path / "x.png", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "unpack" in r.stderr and "readback" in r.stderr
    assert not (tmp_path / "x.png").exists()


def test_movie_gif_and_mp4(traced, tmp_path):
    import shutil
    from PIL import Image
    _, trace = traced
    gif = tmp_path / "m.gif"
    run_simfs("plot", trace, "--phase", "readback", "--movie", gif, "--frames", "5")
    with Image.open(gif) as im:
        assert im.format == "GIF" and im.n_frames == 5 and im.size[0] >= 800
        # the frames differ: the head moves and requests appear
        im.seek(0)
        first = np.asarray(im.convert("RGB"))
        im.seek(4)
        assert (np.asarray(im.convert("RGB")) != first).any()
    mp4 = tmp_path / "m.mp4"
    r = run_simfs("plot", trace, "--movie", mp4, "--frames", "3", check=False)
    if shutil.which("ffmpeg"):
        assert r.returncode == 0 and mp4.stat().st_size > 0, r.stderr
    else:
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "ffmpeg" in r.stderr
    r = run_simfs("plot", trace, trace, "--movie", gif, check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_layout_colours_a_single_tree_by_directory(traced, tmp_path):
    from simfs.pictures import blockmap
    img, _ = traced
    m = blockmap.block_owners(str(img))
    # one untarred tree: coloured by top-level directory it would be one colour
    assert [t for i, t in enumerate(m.tops) if m.files.get(blockmap.TOP0 + i)] == ["tree"]
    assert blockmap.resolve_color_by(m, "auto") == "dir"
    # depth: one more than the slashes in the path of the directory a file is in
    files = np.flatnonzero(m.depth > 0)
    for ino in files[:200]:
        parent = int(m.parent[ino])
        if parent in m.dirnames and ino not in m.dirnames:
            assert m.depth[ino] == m.dirnames[parent].count("/") + (parent != 2)
    for how in ("dir", "depth", "auto"):
        out = tmp_path / f"{how}.png"
        r = run_simfs("layout", img, "-o", out, "--color-by", how)
        assert out.read_bytes()[:8] == PNG and "map written" in r.stdout


def test_layout_json(traced, tmp_path):
    img, _ = traced
    doc = json.loads(run_simfs("layout", img, "--json").stdout)
    assert sum(doc["by_owner"].values()) + doc["file_data"] == doc["blocks"]
    assert doc["file_data"] == sum(t["blocks"] for t in doc["by_top_level_dir"])
    assert [t["dir"] for t in doc["by_top_level_dir"]] == ["/tree"]
    doc = json.loads(run_simfs("layout", img, "--json", "-o", tmp_path / "m.png", "--group", "0").stdout)
    assert doc["drawn"]["first"] == 0 and doc["output"].endswith("m.png")
    r = run_simfs("layout", img, check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def unpacked_layouts(where, allocs, size: int, *, seed: int, files: int, name=lambda a: a) -> dict:
    """{name(alloc): Layout} of a generated tree unpacked in-process onto a fresh image per allocator."""
    from experiments import fsscan
    from experiments.spec import Config
    from experiments.workload.describe import describe
    from simfs.fs.volume import VolumeOptions
    from simfs.inprocess import verbs
    from simfs.ondisk.mkfs import mkfs
    layouts = {}
    for alloc in allocs:
        img = where / f"{alloc}.img"
        mkfs(img, size, uuid=bytes(16), hash_seed=bytes(16), now=1_000_000_000)
        verbs.run(str(img), VolumeOptions(alloc=alloc, disk="ideal"), "unpack", "t", mkdir=True,
                  source=describe(seed=seed, files=files, svn=False))
        layouts[name(alloc)] = fsscan.layout(img, Config(alloc, {"alloc": alloc}, {}))
    return layouts


def test_experiment_blockmap_shares_its_scale_and_has_a_legend(tmp_path, monkeypatch):
    """experiments.plots.blockmap: the where-the-blocks-went panels of every configuration share
    x and y limits (the 2010 layout's stretch shows against the fixed one), and one legend names
    the colours of the left-hand maps."""
    import matplotlib.pyplot as plt
    from experiments import plots
    layouts = unpacked_layouts(tmp_path, ("ext2fs-2010", "ext2fs-2010-fixed"), 64 << 20, seed=1, files=120)
    figs = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", lambda f=None: figs.append(f))
    name = plots.blockmap({"configs": [{"name": n} for n in layouts]}, layouts, tmp_path)
    monkeypatch.setattr(plt, "close", real_close)
    assert (tmp_path / name).read_bytes()[:8] == PNG
    fig = figs[-1]
    right = [ax for ax in fig.axes if ax.get_ylabel() == "disk offset (MB)"]
    assert len(right) == 2
    assert right[0].get_ylim() == right[1].get_ylim() and right[0].get_xlim() == right[1].get_xlim()
    # the scale holds the 2010 layout's highest block (it spreads further than the fixed one)
    top = max(max(b) for _, b in layouts["ext2fs-2010"].order) * 4096 / 1e6
    assert right[0].get_ylim()[1] >= top
    labels = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    for want in ("free", "file-system metadata", "directory", "indirect block"):
        assert want in labels, labels
    assert any(t.startswith("file data") for t in labels)
    real_close(fig)


def test_report_and_lesson_are_registered_commands():
    """setup.cfg's simfs.commands entry points load and add `report` and `lesson` (with --help
    examples), as `simfs` does once the package is installed."""
    import argparse
    import configparser
    import importlib
    from pathlib import Path
    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parents[2] / "setup.cfg")
    eps = dict(line.split(" = ") for line in cfg["options.entry_points"]["simfs.commands"].strip().splitlines())
    assert eps["report"] == "experiments.htmlreport:register" and eps["lesson"] == "experiments.lessons:register"
    p = argparse.ArgumentParser(prog="simfs")
    sub = p.add_subparsers(dest="command")
    for name in ("report", "lesson"):
        mod, fn = eps[name].split(":")
        getattr(importlib.import_module(mod), fn)(sub)
        assert f"simfs {name} " in sub.choices[name].format_help()
    assert p.parse_args(["lesson", "list"]).func(p.parse_args(["lesson", "list"])) == 0
