"""`simfs fio`'s simulated JSON (issue 53, item 5): fio's latency objects (lat_ns, slat_ns,
clat_ns with min/max/mean/stddev/N and the 17 default percentiles, keyed as fio keys them) and
the timing of a direct-I/O job's requests with iodepth in flight (tracereplay.closed_loop).
Oracles: numpy (percentiles, stddev), the real fio's own JSON (key names), one-at-a-time
submission to the model (depth 1)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import numpy as np
import pytest

from disk_models import make_disk
from disk_models.queue import DriveQueue
from simfs.blockio import tracereplay
from simfs.inprocess import fiomodel as fio


@pytest.mark.parametrize("n", [1, 2, 7, 100, 1000, 2001])
def test_percentiles_are_numpy_s_inverted_cdf(n):
    rng = random.Random(n)
    values = [rng.randrange(1, 10**8) for _ in range(n)]
    doc = fio.lat_stats(values)
    assert len(doc["percentile"]) == 17
    for p in fio.PERCENTILES:
        want = np.percentile(np.array(values), p, method="inverted_cdf")
        assert doc["percentile"][fio.percentile_key(p)] == want, p
    assert doc["min"] == min(values) and doc["max"] == max(values) and doc["N"] == n
    assert doc["mean"] == pytest.approx(np.mean(values), rel=1e-12)
    assert doc["stddev"] == pytest.approx(np.std(values, ddof=1) if n > 1 else 0.0, rel=1e-9)


def test_fio_s_rule_on_known_data():
    """1..100: the p-th percentile is p itself (the running count reaches p at value p); 99.5 of
    100 needs 99.5 values: the 100th."""
    doc = fio.lat_stats(list(range(100, 0, -1)))
    pct = doc["percentile"]
    assert pct["1.000000"] == 1 and pct["50.000000"] == 50 and pct["99.000000"] == 99
    assert pct["99.500000"] == 100 and pct["99.990000"] == 100
    assert fio.lat_stats([]) == {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed (make system)")
def test_key_names_are_the_real_fio_s(tmp_path):
    """The real fio's JSON (a tiny psync job on a local file, lat and slat percentiles on): the
    three objects, their fields and the percentile keys are the ones simfs writes."""
    r = subprocess.run(["fio", "--name=k", f"--filename={tmp_path / 'f'}", "--size=64k", "--bs=4k",
                        "--rw=read", "--lat_percentiles=1", "--slat_percentiles=1", "--clat_percentiles=1",
                        "--output-format=json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    real = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]["read"]
    ours = fio.lat_stats([5, 6, 7, 8])
    for key in ("lat_ns", "slat_ns", "clat_ns"):
        assert key in real
    assert set(ours) <= set(real["clat_ns"])
    assert set(ours["percentile"]) == set(real["clat_ns"]["percentile"])
    assert {"iops", "bw", "bw_bytes", "runtime", "io_bytes", "total_ios"} <= set(real)


def test_settings_and_depth():
    text = ("[global]\nioengine=libaio\ndirect=1\n[a]\niodepth=16\n[b]\nioengine=psync\niodepth=8\n"
            "[c]\ndirect=0\niodepth=8\n[d]\niodepth_batch_submit=4\niodepth=4\nioengine=io_uring\n")
    s = fio.settings(text)
    assert fio.engine_depth(s["a"]) == (16, True)
    assert fio.engine_depth(s["b"]) == (1, False)             # a synchronous engine: one at a time
    assert fio.engine_depth(s["c"]) == (1, True)              # buffered libaio completes in io_submit
    assert fio.engine_depth(s["d"]) == (4, True) and s["d"]["batch"] == {"iodepth_batch_submit": "4"}


def _random_reads(n: int, span: int, seed: int = 1, gap: float = 10e-6) -> list:
    rng = random.Random(seed)
    return [[(gap, "R", rng.randrange(0, span // 8) * 8, 8, False)] for _ in range(n)]


def test_depth_1_is_one_request_at_a_time():
    """closed_loop at depth 1 gives each request the finish a one-at-a-time caller gets, bit
    for bit."""
    reqs = _random_reads(300, 2 * 1024 * 1024)
    disk, t, want = make_disk("sata7200"), 0.0, []
    for (gap, op, lba, n, sync), in reqs:
        t += gap
        t = disk.submit(op, lba, n, t, sync).finish
        want.append(t)
    got = tracereplay.closed_loop(reqs, DriveQueue(make_disk("sata7200")), 1, 0.0)
    assert [g[2] for g in got] == want


def test_depth_moves_iops_and_loses_nothing():
    reqs = _random_reads(400, 2 * 1024 * 1024)
    rate = []
    for depth in (1, 4, 16, 32):
        out = tracereplay.closed_loop(reqs, DriveQueue(make_disk("sata7200")), depth, 0.0)
        assert all(len(o[3]) == 1 and o[0] <= o[1] <= o[2] for o in out)          # each served once
        assert len({id(o[3][0]) for o in out}) == len(reqs)
        inflight = max(sum(1 for o in out if o[1] <= t < o[2]) for t in (x[1] for x in out))
        assert inflight <= depth
        rate.append(len(out) / max(o[2] for o in out))
    assert rate[0] < rate[1] < rate[2] < rate[3]


def test_a_chain_waits_for_its_first_request_and_background_is_served():
    reqs = [[(1e-5, "R", 8000, 8, False), (0.0, "R", 900000, 8, False)], [(1e-5, "R", 16, 8, False)]]
    bg = [(0.0, "W", 5000, 8, False)]
    out = tracereplay.closed_loop(reqs, DriveQueue(make_disk("sata7200")), 4, 0.0, bg)
    first, second = out[0][3]
    assert second.issue == first.finish and out[0][2] == second.finish
    assert out[1][1] == pytest.approx(2e-5)                   # submitted while the first waits


def _cols(rows):
    keys = ("issue", "finish", "op", "lba", "sectors", "cause", "wait", "phase")
    return {k: [r[i] for r in rows] for i, k in enumerate(keys)}


def test_host_requests_groups_a_map_read_with_its_data():
    cols = _cols([(1.0, 1.1, "R", 8, 8, "dir", 1, "j"), (1.1, 1.2, "R", 16, 8, "indirect", 1, "j"),
                  (1.2, 1.3, "R", 24, 8, "data", 1, "j"), (1.3, 1.4, "W", 32, 8, "inode", 0, "j"),
                  (1.31, 1.5, "R", 40, 8, "data", 1, "j"), (1.6, 1.7, "R", 48, 8, "inode", 1, "j")])
    reqs, bg = tracereplay.host_requests(cols, list(range(6)), 0.9)
    assert [[x[2] for x in r] for r in reqs] == [[8, 16, 24], [40]]
    assert reqs[0][0][0] == pytest.approx(0.1) and reqs[0][1][0] == pytest.approx(0.0)
    assert reqs[1][0][0] == pytest.approx(0.01)              # from the completion before it
    assert [(b[0], b[2]) for b in bg] == [(1.3, 32), (1.6, 48)]


def test_simulate_writes_fio_s_fields_from_the_trace():
    """A direct libaio job at iodepth 4 over a synthetic phase: the three latency objects, iops
    over the modelled seconds, above the same requests one at a time."""
    rng = random.Random(3)
    rows, t = [], 1.0
    disk = make_disk("sata7200")
    for _ in range(200):
        lba = rng.randrange(0, 262144) * 8
        r = disk.submit("R", lba, 8, t + 1e-5)
        rows.append((r.issue, r.finish, "R", lba, 8, "data", 1, "j"))
        t = r.finish
    cols = _cols(rows)
    stats = {"time": {"phases": [{"name": "j", "start": 1.0, "elapsed": t - 1.0, "counters": {},
                                  "operations": {"read_direct": {"count": 200}}}]}}
    doc = {"jobs": [{"jobname": "j", "read": {"total_ios": 200, "io_bytes": 819200}, "write": {}}]}
    sims = {}
    for depth in (1, 4):
        text = f"[j]\nioengine=libaio\ndirect=1\niodepth={depth}\nrw=randread\n"
        sims[depth] = fio.simulate(doc, stats, fio.settings(text), cols, "sata7200", [])["jobs"][0]
    one, four = sims[1], sims[4]
    assert one["sim_seconds"] == pytest.approx(t - 1.0, rel=1e-12)
    assert one["read"]["iops"] == pytest.approx(200 / (t - 1.0))
    assert four["read"]["iops"] > 1.3 * one["read"]["iops"] and four["simfs_timing"]["iodepth"] == 4
    for job in (one, four):
        r = job["read"]
        for key in ("lat_ns", "slat_ns", "clat_ns"):
            assert r[key]["N"] == 200 and len(r[key]["percentile"]) == 17
        assert r["lat_ns"]["mean"] == pytest.approx(r["slat_ns"]["mean"] + r["clat_ns"]["mean"])
        assert r["slat_ns"]["max"] == 10_000                    # the host's charge before each
    assert one["read"]["lat_ns"]["mean"] == pytest.approx((t - 1.0) / 200 * 1e9)
