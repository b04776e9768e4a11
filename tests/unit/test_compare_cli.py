"""`simfs compare A B` (simfs/cli/compare.py), in-process on small hand-made documents: rows one
side has and the other does not are named in one note per side on stderr, not dropped silently."""

from __future__ import annotations

import json

from simfs.cli.main import main


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
    assert "| ext2 | untar | sim | 2 | 4 | 2.000 |" in out
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
