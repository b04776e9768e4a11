"""`simfs compare A B` (simfs/cli/compare.py), in-process on small hand-made documents: rows one
side has and the other does not are named in one note per side on stderr, not dropped silently."""

from __future__ import annotations

import json

from simfs.cli.main import main


def md_rows(out: str) -> list[list[str]]:
    """The body rows of the Markdown table(s) in `out`, cells stripped (simfs/cli/tables.py)."""
    lines = [ln for ln in out.splitlines() if ln.startswith("|") and not ln.startswith("|:") and "--:" not in ln]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]


def _results(path, rows):
    """A results document as `simfs run` writes it, reduced to what compare reads."""
    path.write_text(json.dumps({"configs": [], "summary": [
        {"config": c, "phase": p, "sim": {"mean": t}, "counters": {"reads": 10}} for c, p, t in rows]}))
    return path


def _stats(path, phases):
    path.write_text(json.dumps({"time": {"phases": [
        {"name": p, "elapsed": t, "waited": 0.0, "counters": {}, "operations": {}} for p, t in phases]}}))
    return path


def test_rows_without_a_partner_are_named_once_per_side(tmp_path, capsys):
    a = _results(tmp_path / "a.json", [("ext2", "untar", 2.0), ("ext2", "tar", 1.0), ("cg", "untar", 3.0),
                                       ("cg", "find", 0.5)])
    b = _results(tmp_path / "b.json", [("ext2", "untar", 4.0), ("ext2", "tar", 1.0), ("delayed", "untar", 1.0)])
    assert main(["compare", str(a), str(b)]) == 0
    out, err = capsys.readouterr()
    assert ["ext2", "untar", "sim", "2", "4", "2.000"] in md_rows(out)
    assert err.splitlines() == [
        f"simfs compare: note: 2 rows of A ({a}) not in B, left out: cg / untar, cg / find",
        f"simfs compare: note: 1 row of B ({b}) not in A, left out: delayed / untar"]


def test_json_stays_clean_and_the_note_goes_to_stderr(tmp_path, capsys):
    a = _stats(tmp_path / "a.json", [("all", 2.0), ("unpack", 1.0), ("readback", 1.0)])
    b = _stats(tmp_path / "b.json", [("all", 3.0), ("unpack", 1.5)])
    assert main(["compare", str(a), str(b), "--json"]) == 0
    out, err = capsys.readouterr()
    assert {r["phase"] for r in json.loads(out)} == {"all", "unpack"}
    assert err.splitlines() == [f"simfs compare: note: 1 row of A ({a}) not in B, left out: readback"]


def test_no_note_when_every_row_has_a_partner(tmp_path, capsys):
    a = _results(tmp_path / "a.json", [("ext2", "untar", 2.0)])
    b = _results(tmp_path / "b.json", [("cg", "untar", 3.0)])        # one configuration each: by phase
    assert main(["compare", str(a), str(b)]) == 0
    out, err = capsys.readouterr()
    assert "ext2 vs cg" in out and err == ""


def test_latencies_print_in_ms_and_stay_seconds_in_json(tmp_path, capsys):
    """The rest of simfs prints latency in ms (simfs stats, trace, the run's latency table)."""
    def doc(path, p99):
        path.write_text(json.dumps({"configs": [], "summary": [
            {"config": "ext2", "phase": "tar", "sim": {"mean": 1.0}, "counters": {},
             "latency": {"disk": {"all": {"count": 10, "mean": 0.004, "p50": 0.003, "p99": p99, "max": 0.02}}}}]}))
        return path
    a, b = doc(tmp_path / "a.json", 0.0125), doc(tmp_path / "b.json", 0.025)
    assert main(["compare", str(a), str(b)]) == 0
    rows = {r[2]: r[3:] for r in md_rows(capsys.readouterr().out)}
    assert rows["latency disk all p99 ms"] == ["12.500", "25.000", "2.000"]
    assert main(["compare", str(a), str(b), "--json"]) == 0
    rows = {r["metric"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["latency disk all p99"]["a"] == 0.0125 and rows["latency disk all p99"]["b"] == 0.025


def test_small_figures_have_no_exponent(tmp_path, capsys):
    """1.2e-05 s of interface time reads 0.000012 (four significant digits, as fio prints plain numbers)."""
    def doc(path, t):
        path.write_text(json.dumps({"configs": [], "summary": [
            {"config": "ext2", "phase": "tar", "sim": {"mean": 1.0}, "counters": {},
             "latency": {"split": {"interface": t}}}]}))
        return path
    assert main(["compare", str(doc(tmp_path / "a.json", 1.2e-05)), str(doc(tmp_path / "b.json", 2.5e-05))]) == 0
    out = capsys.readouterr().out
    rows = {r[2]: r[3:] for r in md_rows(out)}
    assert rows["disk time interface"] == ["0.000012", "0.000025", "2.083"] and "e-0" not in out
