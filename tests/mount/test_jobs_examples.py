"""The job-file examples with mounted phases, in quick mode (seconds each): examples/jobs/
alloc-ab.toml on two Dask workers (mounted phases on workers: FUSE and root checked up front)
and writeback-modes.toml serially; every configuration finishes, nothing stays mounted.
(dirorder-ab.toml, in-process, runs in tests/volume/test_jobs_run.py.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import fuse_mounts
from tests.volume.test_jobs_run import simfs_run

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "jobs"


def _mounts_under(d) -> list[str]:
    """FUSE mounts left below this test's own directory (other tests mount beside it: the
    machine's mount table is not this test's)."""
    root = os.path.realpath(d) + os.sep
    return [m for m in fuse_mounts() if m.startswith(root)]


@pytest.mark.mount
@pytest.mark.parametrize("name,extra", [("alloc-ab", ["--workers", "2"]), ("writeback-modes", [])])
def test_example_job_quick(tmp_path, name, extra):
    out = tmp_path / "out"
    r = simfs_run(EXAMPLES / f"{name}.toml", "--quick", "--out", out, "--work-dir", tmp_path, *extra)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads((out / "results.json").read_text())
    assert doc["job"]["finished"] == doc["job"]["tasks"] == len(doc["configs"]) and not doc["job"]["failed"]
    for c in doc["configs"]:
        for p in doc["phases"]:
            row = next(r for r in doc["summary"] if r["config"] == c["name"] and r["phase"] == p["name"])
            assert row["sim"]["mean"] > 0, (c["name"], p["name"])
    assert doc["comparisons"] and all(c["measured"] for c in doc["comparisons"])
    assert (out / "table.md").exists() and (out / "bars.png").exists()
    assert not _mounts_under(tmp_path)
    if name == "writeback-modes":
        ratio = next(c for c in doc["comparisons"] if c["label"] == "tarcp: writeback=sync / writeback=async")
        assert ratio["direction_ok"], ratio              # synchronous metadata writes cost time
    if name == "alloc-ab":
        # find ran warm (cold = false) on the tar phase's mount: every block it needs is cached
        find = [r for r in doc["records"] if r["phase"] == "find"]
        assert all(r["counters"]["disk_reads"] == 0 for r in find), find


CRASH = """\
[job]
name = "crash"
[workload]
kind = "none"
[mkfs]
size = "256M"
[matrix]
alloc = ["ext2", "cg"]
[[phase]]
name = "touch"
run = "touch {mnt}/x; case {image} in *cg*) kill -9 $PPID;; esac"     # kills the worker running cg
"""


@pytest.mark.mount
def test_a_crashed_worker_costs_only_its_task(tmp_path, monkeypatch):
    monkeypatch.setenv("DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES", "0")     # no retry
    job = tmp_path / "crash.toml"
    job.write_text(CRASH)
    out = tmp_path / "out"
    r = simfs_run(job, "--workers", "2", "--out", out, "--no-plots", "--work-dir", tmp_path)
    assert r.returncode == 1, r.stderr
    assert "alloc=cg: a Dask worker died while running it" in r.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["job"]["finished"] == 1 and [f["config"] for f in doc["job"]["failed"]] == ["alloc=cg"], \
        (doc["job"], r.stderr)
    assert {r["config"] for r in doc["records"]} == {"alloc=ext2"}
    assert not _mounts_under(tmp_path)          # the dead worker's mount released
