"""`simfs plot`: request traces (written by an in-process Volume with `trace=`) drawn
seekwatcher-style, the per-trace summary, and one-line errors for bad input. No mounting."""

from __future__ import annotations

import csv

import pytest

from simfs.ondisk.mkfs import mkfs
from simfs.blockio.trace import FIELDS
from simfs.fs.volume import Volume, VolumeOptions
from tests.conftest import run_simfs

PNG = b"\x89PNG\r\n\x1a\n"


def _trace(tmp_path, name: str, disk: str, nfiles: int = 40) -> str:
    img, trace = tmp_path / f"{name}.img", tmp_path / f"{name}.csv"
    mkfs(img, 64 << 20, uuid=bytes(16), hash_seed=bytes(16), now=1_000_000_000)
    with Volume.open(img, VolumeOptions(disk=disk, trace=str(trace))) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        for i in range(nfiles):
            ino = vol.create(d, b"f%d" % i, 0o644, 0, 0).st_ino
            vol.write(ino, 0, bytes(range(256)) * (16 * (i + 1)))
    return str(trace)


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("traces")
    return {"sata7200": _trace(tmp, "s", "sata7200"), "wd1200jb": _trace(tmp, "w", "wd1200jb")}


def _summary(stdout: str) -> dict:
    """The rows of the Markdown summary simfs plot prints into a pipe, by trace name."""
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in stdout.splitlines()
            if ln.startswith("|")]
    assert rows[0] == ["trace", "run time (s)", "requests", "MB", "avg MB/s", "avg IO/s", "avg seeks/s"]
    assert set("".join(rows[1])) <= {"-", ":"}
    return {r[0]: r[1:] for r in rows[2:]}


def _expected(path: str) -> dict:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    start, finish = min(float(r["start"]) for r in rows), max(float(r["finish"]) for r in rows)
    mb = sum(int(r["sectors"]) for r in rows) * 512 / 1e6
    seeks, prev = 0, None
    for r in rows:
        lba = int(r["lba"])
        if prev is not None and abs(lba - prev) > 128:
            seeks += 1
        prev = lba + int(r["sectors"])
    span = finish - start
    return {"run": span, "n": len(rows), "mb": mb, "mbs": mb / span, "iops": len(rows) / span,
            "seeks": seeks / span}


def test_one_trace_png_and_seekwatcher_summary(traces, tmp_path):
    out = tmp_path / "one.png"
    r = run_simfs("plot", traces["sata7200"], "-o", out)
    assert out.read_bytes()[:8] == PNG
    row = _summary(r.stdout)["s.csv"]
    e = _expected(traces["sata7200"])
    assert float(row[0]) == pytest.approx(e["run"], abs=1e-3)
    assert int(row[1].replace(",", "")) == e["n"]
    assert float(row[2]) == pytest.approx(e["mb"], abs=0.05)
    assert float(row[3]) == pytest.approx(e["mbs"], rel=0.01)
    assert float(row[4]) == pytest.approx(e["iops"], rel=0.01)
    assert float(row[5]) == pytest.approx(e["seeks"], rel=0.01)
    assert r.stdout.rstrip().endswith(f"wrote {out}")


def test_two_traces_labelled_on_one_axis(traces, tmp_path):
    out = tmp_path / "two.png"
    r = run_simfs("plot", traces["sata7200"], traces["wd1200jb"], "-o", out,
                  "--label", "new", "--label", "old", "--title", "40 files")
    assert out.read_bytes()[:8] == PNG
    rows = _summary(r.stdout)
    assert list(rows) == ["new", "old"]
    assert rows["new"][1] == rows["old"][1], "the same requests on both drives"
    assert float(rows["new"][0]) < float(rows["old"][0]), "the 2003 drive takes longer"


def test_an_empty_trace_is_a_zero_row(tmp_path, traces):
    empty = tmp_path / "empty.csv"
    empty.write_text(",".join(FIELDS) + "\n")
    r = run_simfs("plot", empty, traces["sata7200"], "-o", tmp_path / "e.png")
    rows = _summary(r.stdout)
    assert rows["empty.csv"][:3] == ["0.000", "0", "0.0"]


def _file(name: str, content: bytes):
    def make(d):
        (d / name).write_bytes(content)
        return d / name
    return make


@pytest.mark.parametrize("make, words", [
    (lambda d: d / "missing.csv", "no such file"),
    (lambda d: d, "is a directory"),
    (_file("z.csv", b""), "empty file"),
    (_file("o.csv", b"a,b,c\n1,2,3\n"), "not a simfs trace"),
    (_file("b.bin", bytes(range(256)) * 4), "not a simfs trace"),
])
def test_bad_trace_is_one_line_exit_2(tmp_path, make, words):
    path = make(tmp_path)
    r = run_simfs("plot", path, "-o", tmp_path / "x.png", check=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("simfs plot: ") and words in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.png").exists()


def test_bad_row_labels_and_output(tmp_path, traces):
    bad = tmp_path / "bad.csv"
    bad.write_text(",".join(FIELDS) + "\n" + "x," * (len(FIELDS) - 1) + "x\n")
    r = run_simfs("plot", bad, "-o", tmp_path / "x.png", check=False)
    assert r.returncode == 2 and "bad trace" in r.stderr
    r = run_simfs("plot", traces["sata7200"], traces["wd1200jb"], "-o", tmp_path / "x.png", "-l", "one",
                  check=False)
    assert r.returncode == 2 and "one label per trace" in r.stderr
    r = run_simfs("plot", traces["sata7200"], "-o", tmp_path / "no" / "x.png", check=False)
    assert r.returncode == 2 and "does not exist" in r.stderr
    r = run_simfs("plot", traces["sata7200"], check=False)
    assert r.returncode == 2 and "-o" in r.stderr


def test_plot_is_listed_in_help():
    assert "plot" in run_simfs("--help").stdout
    assert "seekwatcher" in run_simfs("plot", "--help").stdout
