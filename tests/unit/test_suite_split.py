"""`make test`'s split: what shares machine-wide state is marked (so it runs in the serial part),
and tests/suite_split.py's check finds a test in both parts, in neither, or a file over budget."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests import conftest, suite_split

REPO = Path(__file__).resolve().parents[2]

# what in a test file's source says it shares machine-wide state, by mark
SHARES = {
    "kernel_mount": (r"kernel_mount\(|[\"']-o[\"'],\s*[\"'](ro,)?loop|losetup|[\"']tmpfs[\"']|[\"']unshare[\"']|nsenter"
                     r"|/sys/kernel/(debug/)?tracing"),
    "mount_helper": r"[\"']-t[\"'],\s*[\"']fuse\.simfs|[\"']install-helper[\"']|allow_remount",
    "xfstests": r"from tests\.xfstests|tests/xfstests/run\.py",
    # a signal is machine-wide only when timed against a run: each file that sends one is
    # either marked timed_signal or named in UNTIMED with the reason
    "timed_signal": r"os\.kill\(|\.send_signal\(|signal\.alarm\(|setitimer\(",
}
# files the patterns match that share nothing, with the reason (a signal is machine-wide only
# when timed against a run)
NOT_SHARED = {
    ("tests/mount/test_e2e_mount.py", "timed_signal"): "SIGTERM, SIGKILL to its own daemon, then waits 30-60 s",
    ("tests/unit/test_safe_open.py", "timed_signal"): "a signal to its own process, no real-time bound",
    ("tests/volume/test_stops_and_failures.py", "timed_signal"): "signals its own in-process run, untimed",
    ("tests/unit/test_ctl_cli.py", "mount_helper"): "parses the helper's arguments; nothing mounted",
    ("tests/unit/test_install_helper.py", "mount_helper"): "installs the helper in its tmp_path (--dir)",
    ("tests/unit/test_xfstests_run.py", "xfstests"): "tests/xfstests/run.py's pieces, no xfstests build",
    ("tests/unit/test_xfstests_run.py", "kernel_mount"): "a process table naming unshare, nothing run",
    ("tests/mount/test_help_examples.py", "kernel_mount"): "names /sys/kernel/tracing only to parse, "
                                                           "not run, the examples that read it",
}


def _marked(rel: str, text: str, mark: str) -> bool:
    return (mark in conftest.MACHINE_WIDE_FILES.get(rel, ()) or f"pytest.mark.{mark}" in text
            or "pytest.mark.serial" in text
            or any(f in text for f, m in conftest.MACHINE_WIDE_FIXTURES.items() if m == mark))


def unmarked(files) -> list[str]:
    out = []
    for path in files:
        rel = path.relative_to(REPO).as_posix()
        text = path.read_text()
        for mark, pattern in SHARES.items():
            if re.search(pattern, text) and not _marked(rel, text, mark) and (rel, mark) not in NOT_SHARED:
                out.append(f"{rel}: {mark}")
    return out


def test_what_shares_machine_wide_state_is_marked():
    """A test file that loop-mounts, uses /sbin/mount.fuse.simfs, builds xfstests or sends a
    signal is serial (tests/conftest.py's MACHINE_WIDE_FILES, or a mark in the file), or says
    why it shares nothing (NOT_SHARED)."""
    assert unmarked(sorted((REPO / "tests").rglob("test_*.py"))) == []


def test_the_check_finds_an_unmarked_file(monkeypatch):
    f = REPO / "tests" / "mount" / "test_mount_helper.py"
    assert unmarked([f]) == []
    monkeypatch.setitem(conftest.MACHINE_WIDE_FILES, "tests/mount/test_mount_helper.py", ())
    assert unmarked([f]) == ["tests/mount/test_mount_helper.py: mount_helper"]


def test_named_files_exist():
    for rel in list(conftest.MACHINE_WIDE_FILES) + [f for f, _ in NOT_SHARED]:
        assert (REPO / rel).is_file(), f"{rel} is gone: update tests/conftest.py or this file"
    for marks in conftest.MACHINE_WIDE_FILES.values():
        assert set(marks) <= set(conftest.MACHINE_WIDE)


def _write(prefix: Path, selected, all_, long_=(), durations=None):
    Path(f"{prefix}.collection.json").write_text(json.dumps(
        {"selected": selected, "all": all_, "long": list(long_), "long_selected": []}))
    if durations is not None:
        Path(f"{prefix}.durations.json").write_text(json.dumps(durations))


@pytest.mark.parametrize("a, b, problem", [
    (["t::1"], ["t::2"], None),
    (["t::1", "t::2"], ["t::2"], "in both"),
    (["t::1"], [], "neither long nor in a part"),
])
def test_the_split_check(tmp_path, a, b, problem):
    everything = ["t::1", "t::2", "t::3"]
    _write(tmp_path / "p", a, everything, ["t::3"])
    _write(tmp_path / "s", b, everything, ["t::3"])
    problems = suite_split.check([str(tmp_path / "p"), str(tmp_path / "s")], None)
    assert (problems == []) if problem is None else any(problem in p for p in problems), problems


def test_the_budget_check(tmp_path):
    everything = ["a.py::1", "b.py::1"]
    _write(tmp_path / "parallel", ["a.py::1"], everything,
           durations={"wall": 100, "files": {"a.py": 30.0}, "reported": ["a.py::1"]})
    _write(tmp_path / "serial", ["b.py::1"], everything,
           durations={"wall": 500, "files": {"b.py": 90.0}, "reported": []})
    budget = {"files": {"default": 60, "a.py": 20}, "parts": {"parallel": 200, "serial": 400, "total": 550}}
    problems = suite_split.check([str(tmp_path / "parallel"), str(tmp_path / "serial")], budget)
    text = "\n".join(problems)
    for words in ("a.py took 30 s", "b.py took 90 s", "serial part took 500 s", "parts took 600 s",
                  "1 selected tests never reported"):
        assert words in text
    assert "parallel part" not in text


def test_an_overrun_warns_and_fails_only_when_strict(tmp_path, capsys):
    everything = ["a.py::1", "b.py::1"]
    _write(tmp_path / "parallel", ["a.py::1"], everything,
           durations={"wall": 100, "files": {"a.py": 30.0}, "reported": ["a.py::1"]})
    _write(tmp_path / "serial", ["b.py::1"], everything,
           durations={"wall": 50, "files": {"b.py": 9.0}, "reported": ["b.py::1"]})
    budget = tmp_path / "budget.toml"
    budget.write_text('[files]\ndefault = 60\n"a.py" = 20\n')
    args = [str(tmp_path / "parallel"), str(tmp_path / "serial"), "--budget", str(budget)]
    assert suite_split.main(args) == 0
    assert "warning: a.py took 30 s" in capsys.readouterr().err
    assert suite_split.main(args + ["--strict-budget"]) == 1
