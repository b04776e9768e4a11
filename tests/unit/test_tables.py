"""One table style (issue 51, item 16; simfs/cli/tables.py): rich's boxes on a terminal, padded
Markdown anywhere else and with --markdown, for every command that prints a table of figures:
simfs stats (and --diff), simfs compare, simfs fio, simfs run / experiment run. In process: a
terminal is a text buffer that says it is one. Also the figures' formats (item 12): numbers
never in exponent notation, latencies in ms."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from simfs.cli import tables
from simfs.cli.main import main

REPO = Path(__file__).resolve().parents[2]
BOX = set("┃│━─┏┡└╇")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _looks(text: str) -> str:
    """'rich' (box characters, no Markdown rule), 'markdown' (a '|:--' rule, no box) or 'mixed'."""
    boxed, md = bool(BOX & set(text)), "|:-" in text or "-:|" in text
    return "rich" if boxed and not md else "markdown" if md and not boxed else "mixed"


def test_the_style_follows_stdout_and_markdown():
    assert tables.style(file=Terminal()) == tables.RICH
    assert tables.style(file=io.StringIO()) == tables.MARKDOWN
    assert tables.style(markdown=True, file=Terminal()) == tables.MARKDOWN
    t = tables.Table("title", ["name", "n"], [("a [b]", "1,234"), ("c|d", "5")])
    on_tty, piped = Terminal(), io.StringIO()
    tables.echo(t, file=on_tty)
    tables.echo(t, file=piped)
    assert _looks(on_tty.getvalue()) == "rich" and "a [b]" in on_tty.getvalue()     # no markup eaten
    assert piped.getvalue() == "title\n\n| name | n |\n|:--|--:|\n| a [b] | 1,234 |\n| c\\|d | 5 |\n"


def _stats_files(tmp_path) -> tuple[Path, Path]:
    from tests.unit.test_stats_diff import _run
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_run(5000)))
    b.write_text(json.dumps(_run(8)))
    return a, b


def _results(path: Path, p99: float) -> Path:
    path.write_text(json.dumps({"configs": [], "summary": [
        {"config": "ext2", "phase": "tar", "sim": {"mean": 1.0 + p99}, "counters": {},
         "latency": {"disk": {"all": {"count": 10, "mean": 0.004, "p50": 0.003, "p99": p99, "max": 0.02}}}}]}))
    return path


def _commands(tmp_path) -> dict[str, list[str]]:
    a, b = _stats_files(tmp_path)
    ra, rb = _results(tmp_path / "ra.json", 0.01), _results(tmp_path / "rb.json", 0.02)
    return {"stats FILE": ["stats", str(a)], "stats --diff": ["stats", "--diff", str(a), str(b)],
            "compare": ["compare", str(ra), str(rb)]}


@pytest.mark.parametrize("name", ["stats FILE", "stats --diff", "compare"])
def test_commands_print_one_style(name, tmp_path, monkeypatch, capsys):
    argv = _commands(tmp_path)[name]
    for stdout, extra, want in ((Terminal(), [], "rich"), (Terminal(), ["--markdown"], "markdown"),
                                (io.StringIO(), [], "markdown")):
        monkeypatch.setattr(sys, "stdout", stdout)
        assert main(argv + extra) == 0
        assert _looks(stdout.getvalue()) == want, (name, extra, stdout.getvalue()[:400])


def test_show_stats_takes_markdown(monkeypatch):
    """simfs replay --markdown (and simfs verb, which prints through the same function)."""
    from simfs.cli.stats import show_stats
    from tests.unit.test_stats_diff import _run
    for md, want in ((False, "rich"), (True, "markdown")):
        out = Terminal()
        monkeypatch.setattr(sys, "stdout", out)
        show_stats({"simfs": "x", "time": _run(8)}, False, md)
        assert _looks(out.getvalue()) == want


def test_the_run_tables_and_fio_s_go_through_the_renderer():
    from experiments import report
    from simfs.cli import fio
    doc = json.loads((REPO / "results" / "summary" / "ext2fs-2010" / "results.json").read_text())
    for out, md, want in ((Terminal(), False, "rich"), (Terminal(), True, "markdown"),
                          (io.StringIO(), False, "markdown")):
        report.print_tables(doc, md, out)
        assert _looks(out.getvalue()) == want
    sim = {"jobs": [{"jobname": "rand-read", "host": {"read": {"iops": 23456.7}},
                     "read": {"total_ios": 12345, "iops": 1234.56, "bw_bytes": 5056756.0,
                              "clat_ns": {"percentile": {"50.000000": 7_250_000, "99.000000": 18_000_000}}},
                     "write": {"total_ios": 0}}]}
    text = tables.to_markdown(fio.table(sim))
    row = [c.strip() for c in text.splitlines()[-1].strip("|").split("|")]
    assert row == ["rand-read", "read", "12,345", "1,235", "23,457", "5.06", "7.250", "18.000"]


@pytest.mark.parametrize("x, text", [(1234.5, "1,234"), (12345678, "12,345,678"), (123.4, "123"), (12.34, "12.3"),
                                     (1.234, "1.23"), (0.01234, "0.0123"), (0.00001234, "0.0000123"), (0, "0"),
                                     (12.0, "12"),
                                     (-1500.0, "-1,500"), (None, "—"), (float("nan"), "—")])
def test_numbers_as_people_read_them(x, text):
    assert tables.number(x) == text


def test_a_fio_metric_column_has_no_exponent():
    from experiments.report import fmt_metric
    assert fmt_metric("rand-read.read_iops", 1234.5) == "1,234"
    assert fmt_metric("rand-read.read_iops", 98765.4) == "98,765"
    assert fmt_metric("blocks_per_extent", 12.34) == "12.3" and fmt_metric("touch_s", 0.0123) == "0.0123"


def test_layout_prints_what_its_json_says_through_the_renderer(tmp_path, monkeypatch):
    from simfs.cli.layout import summary_tables
    img = tmp_path / "d.img"
    assert main(["mkfs", "-q", str(img), "16M"]) == 0
    out = Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["layout", str(img), "-o", str(tmp_path / "m.png")]) == 0
    assert _looks(out.getvalue()) == "rich" and "inode tables" in out.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stdout", piped)
    assert main(["layout", str(img), "--json"]) == 0
    doc = json.loads(piped.getvalue())
    text = tables.render_all(summary_tables(doc), tables.MARKDOWN)
    rows = {c[0]: c[1:] for c in ([x.strip() for x in ln.strip("|").split("|")] for ln in text.splitlines()
                                  if ln.startswith("| "))}
    assert rows["free"] == [f"{doc['by_owner']['free']:,}", f"{100 * doc['by_owner']['free'] / doc['blocks']:.1f}%"]
