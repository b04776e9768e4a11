"""tools/mypy_baseline.py: which of mypy's findings are new against the committed baseline (the
`make lint` gate), without running mypy."""

from __future__ import annotations

import collections
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "mypy_baseline", Path(__file__).resolve().parents[2] / "tools" / "mypy_baseline.py")
mb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mb)


def finding(file: str, line: int, message: str, code: str = "attr-defined") -> dict:
    return {"file": file, "line": line, "message": message, "code": code, "severity": "error"}


def baseline(*findings: dict) -> collections.Counter:
    return collections.Counter(mb.key(f) for f in findings)


def test_a_finding_that_moved_is_not_new():
    base = baseline(finding("a.py", 10, '"X" has no attribute "y"'))
    assert mb.new_findings([finding("a.py", 57, '"X" has no attribute "y"')], base) == []


def test_a_line_number_in_the_message_is_not_part_of_the_key():
    base = baseline(finding("a.py", 3, 'Name "f" already defined on line 1', "no-redef"))
    assert mb.new_findings([finding("a.py", 9, 'Name "f" already defined on line 7', "no-redef")], base) == []


def test_another_file_code_or_message_is_new():
    old = finding("a.py", 10, '"X" has no attribute "y"')
    base = baseline(old)
    for f in (finding("b.py", 10, old["message"]), finding("a.py", 10, old["message"], "union-attr"),
              finding("a.py", 10, '"X" has no attribute "z"')):
        assert mb.new_findings([old, f], base) == [f]


def test_one_more_of_a_finding_the_baseline_holds_is_new_the_last_one():
    m = 'Value of type "list[int] | None" is not indexable'
    base = baseline(finding("p.py", 5, m, "index"), finding("p.py", 8, m, "index"))
    now = [finding("p.py", 5, m, "index"), finding("p.py", 30, m, "index"), finding("p.py", 8, m, "index")]
    assert mb.new_findings(now, base) == [now[1]]
    assert mb.new_findings(now[:2], base) == []          # fewer than held: nothing new


def test_the_baseline_file_reads_back_as_written(tmp_path):
    found = [finding("a.py", 1, "m1"), finding("a.py", 2, "m1"), finding("b.py", 1, "m2", "index")]
    path = tmp_path / "base.txt"
    mb.write_baseline(path, found)
    assert mb.read_baseline(path) == collections.Counter(map(mb.key, found))
    assert mb.new_findings(found, mb.read_baseline(path)) == []
