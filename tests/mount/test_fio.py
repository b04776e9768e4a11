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


DEPTH_JOB = """[global]
filename=data
size=64m
bs=4k
direct=1
ioengine=libaio
number_ios=150
[qd1]
rw=randread
iodepth=1
[qd8]
rw=randread
iodepth=8
[wr]
rw=randwrite
iodepth=1
number_ios=50
"""


def test_iodepth_moves_simulated_iops(simfs_factory, tmp_path):
    """Direct random reads with libaio (issue 53, item 5): with the mount's trace each request is
    timed, iodepth of them in flight through the drive's queue (sata7200: NCQ, 32 deep), so
    depth 8 serves more per simulated second than depth 1 - and the latency objects are fio's.
    Direct writes are charged to the drive."""
    m = simfs_factory(options=f"disk=sata7200,trace={tmp_path / 'trace.csv'}", size="128M")
    job = tmp_path / "depth.fio"
    job.write_text(DEPTH_JOB)
    out = tmp_path / "fio-out"
    run_simfs("fio", m.mnt, job, "--out", out, timeout=600)
    sim = {j["jobname"]: j for j in json.loads((out / "fio-sim.json").read_text())["jobs"]}
    one, eight, wr = sim["qd1"], sim["qd8"], sim["wr"]
    assert one["simfs_timing"]["iodepth"] == 1 and eight["simfs_timing"]["iodepth"] == 8
    assert eight["read"]["iops"] > 1.3 * one["read"]["iops"], (one["read"]["iops"], eight["read"]["iops"])
    for j, d in ((one, "read"), (eight, "read"), (wr, "write")):
        x = j[d]
        for key in ("lat_ns", "slat_ns", "clat_ns"):
            assert x[key]["N"] == x["total_ios"] > 0 and len(x[key]["percentile"]) == 17, key
        assert x["lat_ns"]["mean"] == pytest.approx(x["slat_ns"]["mean"] + x["clat_ns"]["mean"])
    # at depth 1 the requests are the mount's own: the phase's simulated seconds
    phase = [p for p in _stats(m.mnt)["time"]["phases"] if p["name"] == "qd1"][0]
    assert one["sim_seconds"] == pytest.approx(phase["elapsed"], rel=1e-9)
    # deeper queue: each request waits longer, though more are served
    assert eight["read"]["clat_ns"]["mean"] > one["read"]["clat_ns"]["mean"]
    # direct writes reach the drive: each waits for its write (the drive's write cache at least)
    wphase = [p for p in _stats(m.mnt)["time"]["phases"] if p["name"] == "wr"][0]
    assert wphase["counters"]["sectors_written"] >= 50 * 8
    assert wr["write"]["clat_ns"]["min"] > 0
