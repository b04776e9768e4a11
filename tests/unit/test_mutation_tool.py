"""tools/mutation/mutation.py: the mutants it makes are the ones it says, valid Python, each
one change at its place; pinned mutants find their line; keys stay put when other lines move."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SPEC = importlib.util.spec_from_file_location(
    "mutation", Path(__file__).resolve().parents[2] / "tools" / "mutation" / "mutation.py")
mutation = importlib.util.module_from_spec(SPEC)
sys.modules.setdefault("mutation", mutation)       # (its dataclasses look their module up)
SPEC.loader.exec_module(mutation)

SOURCE = '''"""Doc 1 + 1."""


def f(a, b):
    """Docstring < untouched."""
    x = a + 1
    if not a < b and b:
        return max(a, b) + g(a, b)
    raise ValueError(f"bad {a + 1}")
'''


def test_sites_cover_each_kind_once_per_place():
    made = {(m.kind, m.lineno, m.new) for m in mutation.sites("m.py", SOURCE)}
    assert ("off1", 6, "(a)") in made and ("arith", 6, "(a - 1)") in made and ("const", 6, "2") in made
    assert ("del", 6, "pass") in made
    assert ("not", 7, "(a < b)") in made and ("cmp", 7, "(a <= b)") in made
    assert ("bool", 7, "(not a < b or b)") in made
    assert ("args", 8, "(g(b, a))") in made
    assert not any(m.kind == "args" and "max" in m.new for m in mutation.sites("m.py", SOURCE)), \
        "max(a, b) -> max(b, a) is equivalent"
    assert not any(m.lineno in (1, 5, 9) for m in mutation.sites("m.py", SOURCE)), \
        "docstrings and raise messages are left alone"


def test_each_mutant_is_valid_python_differing_in_one_place():
    for m in mutation.sites("m.py", SOURCE):
        assert mutation.valid(m, SOURCE)
        new = m.apply(SOURCE).splitlines()
        old = SOURCE.splitlines()
        assert [i + 1 for i, (a, b) in enumerate(zip(old, new)) if a != b] == [m.lineno]


def test_pinned_mutants_and_stable_keys():
    (m,) = mutation.pinned("m.py", SOURCE, [{"find": "a + 1", "nth": 0, "replace": "a + 2"}])
    assert m.lineno == 6 and "x = a + 2" in m.apply(SOURCE)
    with pytest.raises(SystemExit, match="matches 2 lines"):
        mutation.pinned("m.py", SOURCE, [{"find": "a + 1", "replace": "a"}])
    moved = "\n\n# a comment\n" + SOURCE
    keys = {m.key for m in mutation.sites("m.py", SOURCE)}
    assert keys == {m.key for m in mutation.sites("m.py", moved)}
