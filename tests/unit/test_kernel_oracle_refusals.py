"""benchmarks/kernel_oracle.py refuses in one line (exit status 2) where it cannot run: no
loop devices, no tracefs, a tree that is not there. Nothing is mounted."""

from __future__ import annotations

import pytest

from benchmarks import kernel_oracle


def refused(capsys, argv, words):
    assert kernel_oracle.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("kernel_oracle: ") and all(w in err for w in words), err


def test_no_loop_devices(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(kernel_oracle, "LOOP_CONTROL", str(tmp_path / "loop-control"))
    monkeypatch.setattr(kernel_oracle.os, "geteuid", lambda: 0)
    refused(capsys, ["--tree", str(tmp_path)], ["no loop devices", "loop-control"])


def test_no_tracefs(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: None)
    monkeypatch.setattr(kernel_oracle, "TRACING", tmp_path / "tracing")
    monkeypatch.setattr(kernel_oracle, "run", lambda a, work: pytest.fail("ran without tracefs"))
    refused(capsys, ["--tree", str(tmp_path)], ["tracefs unavailable"])


def test_not_root(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(kernel_oracle.os, "geteuid", lambda: 1000)
    refused(capsys, ["--tree", str(tmp_path)], ["needs root"])


@pytest.mark.parametrize("argv, words", [(["--tree", "/no/such/tree"], ["no such directory"]),
                                         (["--disk", "nosuchdrive"], ["--disk", "unknown disk preset"])])
def test_bad_arguments(monkeypatch, capsys, argv, words):
    monkeypatch.setattr(kernel_oracle, "LOOP_CONTROL", "/")      # exists: past the loop check
    monkeypatch.setattr(kernel_oracle.os, "geteuid", lambda: 0)
    refused(capsys, argv, words)
