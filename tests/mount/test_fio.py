"""`simfs fio`: the real fio on a mount, one simulated phase per fio job, fio-shaped JSON in
simulated time (issue 43, item 3). The oracle for the figures is the mount's own statistics,
read after the run: a job's simulated IOPS is the requests fio served over its phase's
simulated seconds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_simfs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fio"
pytestmark = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (make system)")


def _stats(mnt) -> dict:
    return json.loads((Path(mnt) / ".simfs" / "stats").read_bytes())


@pytest.mark.parametrize("job,jobs", [("rand-read.fio", ["file1"]),
                                      ("write-then-read.fio", ["seq-write", "rand-read"])])
def test_fio_example_in_simulated_time(simfs_factory, tmp_path, job, jobs):
    m = simfs_factory(options="alloc=ext2,writeback=async", size="128M")
    out = tmp_path / "fio-out"
    r = run_simfs("fio", m.mnt, EXAMPLES / job, "--out", out, timeout=600)
    assert "sim IOPS" in r.stdout
    host = json.loads((out / "fio.json").read_text())
    sim = json.loads((out / "fio-sim.json").read_text())
    stats = _stats(m.mnt)
    assert [j["jobname"] for j in sim["jobs"]] == [j["jobname"] for j in host["jobs"]] == jobs
    for h, s in zip(host["jobs"], sim["jobs"]):
        phases = [p for p in stats["time"]["phases"] if p["name"] == h["jobname"]]
        assert len(phases) == 1, h["jobname"]
        seconds = phases[0]["elapsed"]
        assert seconds > 0 and s["sim_seconds"] == pytest.approx(seconds, rel=1e-12)
        served = 0
        for d in ("read", "write"):
            ios = h[d]["total_ios"]
            served += ios
            assert s[d]["total_ios"] == ios and s[d]["io_bytes"] == h[d]["io_bytes"]
            assert s[d]["iops"] == pytest.approx(ios / seconds, rel=1e-12)
            assert s[d]["bw_bytes"] == pytest.approx(h[d]["io_bytes"] / seconds, rel=1e-12)
            fuse = phases[0]["operations"].get(d, {}).get("count", 0)
            assert s[d]["clat_ns"]["N"] == fuse
            if ios:
                pct = s[d]["clat_ns"]["percentile"]
                assert 0 < pct["50.000000"] <= pct["99.000000"] <= s[d]["clat_ns"]["max"]
        assert served > 0
    # the reads went to the modelled disk: a cold phase (fio's invalidate=1 became drop-caches)
    last = [p for p in stats["time"]["phases"] if p["name"] == jobs[-1]][0]
    assert last["counters"]["disk_reads"] > 0


def test_fio_bad_input(simfs_factory, tmp_path):
    m = simfs_factory(size="64M")
    bad = tmp_path / "bad.fio"
    bad.write_text("[j]\nrw=sideways\nsize=1m\n")
    r = run_simfs("fio", m.mnt, bad, "--out", tmp_path / "o", check=False)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    own = tmp_path / "own.fio"
    own.write_text("[j]\nrw=read\nsize=1m\nexec_prerun=true\n")
    r = run_simfs("fio", m.mnt, own, "--out", tmp_path / "o", check=False)
    assert r.returncode == 2 and "exec_prerun" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run_simfs("fio", tmp_path, EXAMPLES / "rand-read.fio", check=False)
    assert r.returncode == 2 and "not a simfs mount" in r.stderr


def test_fio_json_prints_the_simulated_document(simfs_factory, tmp_path):
    """`--json`: the simulated fio-shaped JSON (what OUT/fio-sim.json holds) on stdout."""
    m = simfs_factory(options="alloc=ext2,writeback=async", size="128M")
    out = tmp_path / "fio-out"
    r = run_simfs("fio", m.mnt, EXAMPLES / "rand-read.fio", "--out", out, "--json", timeout=600)
    doc = json.loads(r.stdout)
    assert doc == json.loads((out / "fio-sim.json").read_text())
    assert [j["jobname"] for j in doc["jobs"]] == ["file1"] and doc["jobs"][0]["read"]["iops"] > 0
