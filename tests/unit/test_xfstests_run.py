"""tests/xfstests/run.py without xfstests: the build folder's path, and the per-test watchdog.

`make xfstests` passes `--dir .xfstests`; the tree built there is both ./check's working
directory and a `cd` target in its script, so it must come back absolute (a fresh clone failed
with `cd: can't cd to .xfstests/src` after 23 minutes of set-up). The watchdog keyed tests by
pid and never forgot one: a later test given a finished one's pid was killed a second after
starting, logged "killed after 300 s"."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

RUN_PY = Path(__file__).resolve().parents[1] / "xfstests" / "run.py"


@pytest.fixture
def run_mod():
    spec = importlib.util.spec_from_file_location("xfstests_run", RUN_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_relative_dir_gives_an_absolute_tree_that_cd_finds(run_mod, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = str(tmp_path / "no-such-source")          # (no commit: the stamp is the path)
    (tmp_path / ".xfstests" / "src" / "ltp").mkdir(parents=True)
    (tmp_path / ".xfstests" / "src" / "ltp" / "fsx").write_text("")
    (tmp_path / ".xfstests" / ".built").write_text(source + "\n")
    src = run_mod.build(source, ".xfstests", 1)        # built already: nothing cloned
    assert os.path.isabs(src) and src == str(tmp_path / ".xfstests" / "src")
    # as run() uses it: the working directory and the script's `cd` target at once
    r = subprocess.run(["sh", "-c", f"cd {src} && pwd"], cwd=src, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == src, r.stderr


def test_the_watchdog_never_kills_a_new_test_given_an_old_ones_pid(run_mod, monkeypatch):
    """generic/221 runs as pid 4242 and ends; much later generic/222 gets pid 4242 again
    (a new start time): it must run its full LIMIT, not be killed at once."""
    src, root, limit = "/x/src", 100, 300
    script = f"{src}/tests/generic/"

    def snap(test: str | None) -> dict:
        procs = {root: (1, ["unshare"]), 200: (root, ["bash", "./check"])}
        if test:
            procs[4242] = (200, ["bash", script + test])
        return procs

    # (fake time, what /proc shows, the start time of pid 4242 then)
    timeline = [(0, snap("221"), 1000), (10, snap(None), None),
                (400, snap("222"), 41000), (402, snap("222"), 41000),
                (500, snap("222"), 41000)]
    state = {"i": -1}
    kills: list[tuple[int, int]] = []

    class Stop:
        def wait(self, _):
            state["i"] += 1
            return state["i"] >= len(timeline)

    monkeypatch.setattr(run_mod, "_procs", lambda: timeline[state["i"]][1])
    monkeypatch.setattr(run_mod, "_start_time", lambda pid: timeline[state["i"]][2], raising=False)
    monkeypatch.setattr(run_mod.time, "monotonic", lambda: float(timeline[state["i"]][0]))
    monkeypatch.setattr(run_mod.os, "kill", lambda pid, sig: kills.append((pid, sig)))
    monkeypatch.setattr(run_mod, "log", lambda msg: None)
    killed: list[str] = []
    run_mod.watchdog(root, src, limit, Stop(), killed)
    assert killed == [] and kills == []                 # 222 has run 100 s of its 300

    # ... and one that does run LIMIT seconds is killed, with everything under it
    timeline[:] = [(0, snap("222"), 41000), (301, snap("222"), 41000)]
    state["i"] = -1
    run_mod.watchdog(root, src, limit, Stop(), killed)
    assert killed == ["generic/222"] and [p for p, _ in kills] == [4242]


def test_start_time_names_this_process(run_mod):
    me = run_mod._start_time(os.getpid())
    assert isinstance(me, int) and me == run_mod._start_time(os.getpid()) > 0
    assert run_mod._start_time(2 ** 22 + 1) is None
