"""`simfs trace replay`: the dependency rule on streams whose answer is known by hand, the
check before it judges the kernel (a trace simfs wrote, replayed on the same drive, gives the
run's simulated time), and one-line errors. No mounting: the runs are in-process verbs."""

from __future__ import annotations

import io
import json
import os
import tarfile

import pytest

from disk_models.base import DiskResult
from simfs.blockio.trace import read_trace
from simfs.blockio.tracereplay import gap_factor, replay
from tests.conftest import run_simfs

DATA = os.path.join(os.path.dirname(__file__), "data")


class FixedDisk:
    """A drive that serves one request at a time, each in `service` seconds, no write cache."""
    name, sectors = "fixed", 1 << 30

    def __init__(self, service):
        self.service, self.busy_until = service, 0.0

    def submit(self, op, lba, sectors, t, sync=False):
        start = max(t, self.busy_until)
        self.busy_until = start + self.service
        return DiskResult(t, start, self.busy_until, queue=start - t, transfer=self.service)

    def flush(self, now):
        return max(now, self.busy_until)


def cols_of(reqs):
    """Trace columns from (issue, finish) pairs: reads of 8 sectors, one phase."""
    n = len(reqs)
    return {"issue": [a for a, _ in reqs], "finish": [b for _, b in reqs], "op": ["R"] * n,
            "lba": [8 * i for i in range(n)], "sectors": [8] * n, "cause": ["data"] * n,
            "phase": ["all"] * n}


def issues(out):
    return [r.issue for r in out["results"]]


@pytest.mark.parametrize("g", [1.0, 0.5, 0.0])
def test_a_chain_waits_for_each_completion_plus_its_gap(g):
    """A process that waits for each read, then thinks 2 ms: captured on a 1 ms drive, replayed
    on a 5 ms one. Each issue = the previous simulated completion + g * 2 ms."""
    n, cap, gap = 10, 0.001, 0.002
    reqs = [(i * (cap + gap), i * (cap + gap) + cap) for i in range(n)]
    out = replay(cols_of(reqs), FixedDisk(0.005), g)
    assert issues(out) == pytest.approx([i * (0.005 + g * gap) for i in range(n)])
    assert out["elapsed"] == pytest.approx(n * 0.005 + (n - 1) * g * gap)


def test_requests_outstanding_together_queue_behind_each_other():
    """Eight requests issued 10 us apart before any completed (read-ahead, a plug): the replay
    issues them 10 us apart too (the host did not wait) and the drive serves them in turn."""
    reqs = [(i * 1e-5, 0.01 + i * 1e-5) for i in range(8)]
    out = replay(cols_of(reqs), FixedDisk(0.004), 1.0)
    assert issues(out) == pytest.approx([i * 1e-5 for i in range(8)])
    assert [r.start for r in out["results"]] == pytest.approx([0.004 * i for i in range(8)])
    assert out["elapsed"] == pytest.approx(8 * 0.004)


def test_an_issue_after_a_completion_waits_for_the_simulated_one_not_the_captured_one():
    """Request 1 went out while 0 was in flight; request 2 only after 0 completed (1 was still
    outstanding): 2 waits for 0's simulated completion + 1 ms, not for 1's."""
    reqs = [(0.0, 0.002), (0.0005, 0.003), (0.0025, 0.004)]   # 2 issued 0.5 ms after 0 completed
    out = replay(cols_of(reqs), FixedDisk(0.010), 1.0)
    assert issues(out) == pytest.approx([0.0, 0.0005, 0.0105])
    assert out["results"][2].start == pytest.approx(0.020)          # queued behind 1


def test_gap_factor_parses_and_refuses():
    assert (gap_factor("keep"), gap_factor("none"), gap_factor("scale=0.25")) == (1.0, 0.0, 0.25)
    for bad in ("scale=-1", "scale=x", "scale=nan", "half", ""):
        with pytest.raises(ValueError):
            gap_factor(bad)


def _tree_tar(path, ndirs=12, nfiles=15):
    """A small tree as a tar: ndirs directories of nfiles files of 1-9 KiB."""
    with tarfile.open(path, "w") as tf:
        for d in range(ndirs):
            info = tarfile.TarInfo(f"d{d:02}")
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 1_000_000_000
            tf.addfile(info)
            for f in range(nfiles):
                body = bytes([d + f]) * (1024 * (1 + (d * nfiles + f) % 9))
                info = tarfile.TarInfo(f"d{d:02}/f{f:02}")
                info.size, info.mode, info.mtime = len(body), 0o644, 1_000_000_000
                tf.addfile(info, io.BytesIO(body))


@pytest.fixture(scope="module")
def own_runs(tmp_path_factory):
    """An in-process unpack and a cold find -type d (hash order) on sas10k, each writing a
    trace, their statistics kept: the runs the replay must reproduce."""
    from simfs.fs.volume import VolumeOptions
    from simfs.inprocess import verbs
    from simfs.inprocess.treedesc import from_tarball
    from simfs.ondisk.mkfs import mkfs
    tmp = tmp_path_factory.mktemp("own")
    img, tar = tmp / "disk.img", tmp / "tree.tar"
    _tree_tar(tar)
    mkfs(img, 32 << 20, uuid=bytes(16), hash_seed=bytes(16), now=1_000_000_000)
    runs = {}
    for verb, params in (("unpack", dict(source=from_tarball(str(tar), with_data=True), mkdir=True)),
                         ("find", dict(type="d"))):
        trace = tmp / f"{verb}.trace"
        out = verbs.run(str(img), VolumeOptions(disk="sas10k", dirorder="hash", trace=str(trace)),
                        verb, "tree", mark=verb, **params)
        runs[verb] = (str(trace), out["time"])
    return runs


@pytest.mark.parametrize("verb", ["unpack", "find"])
def test_a_trace_simfs_wrote_replays_to_the_runs_simulated_time(own_runs, verb):
    """Same drive, same order, gaps kept: the replay's time from the first issue to the drive's
    last flush is the run's elapsed time within 1 %, phase by phase the same requests, seeks
    and disk busy time."""
    from disk_models import make_disk
    path, run = own_runs[verb]
    cols = read_trace(path)
    out = replay(cols, make_disk("sas10k"), 1.0)
    assert cols["issue"][0] < 0.01 * run["total"]["elapsed"]       # the run's time starts with I/O
    assert out["elapsed"] == pytest.approx(run["total"]["elapsed"], rel=0.01)
    got = {p["name"]: p for p in out["time"]["phases"]}
    for p in run["phases"]:
        if not p["counters"]["disk_reads"] + p["counters"]["disk_writes"]:
            continue
        q = got[p["name"]]
        for k in ("disk_reads", "disk_writes", "sectors_read", "sectors_written", "seeks"):
            assert q["counters"][k] == p["counters"][k], (p["name"], k)
        assert q["disk_time"]["busy"] == pytest.approx(p["disk_time"]["busy"], rel=0.01)
    assert {"find": "disk_reads", "unpack": "disk_writes"}[verb] in run["total"]["counters"]


def test_replay_of_a_simfs_trace_on_a_slower_drive_takes_longer(own_runs):
    """The same stream on a 5400 rpm drive: its sync reads wait longer, so does the run."""
    from disk_models import make_disk
    cols = read_trace(own_runs["find"][0])
    fast = replay(cols, make_disk("sas10k"), 1.0)
    slow = replay(cols, make_disk("sata7200,rpm=5400"), 1.0)
    assert slow["elapsed"] > 1.2 * fast["elapsed"]
    assert slow["time"]["total"]["counters"]["disk_reads"] == len(cols["op"]) - sum(o == "W" for o in cols["op"])


def test_cli_replays_the_committed_kernel_capture(tmp_path):
    """import then replay on sas10k: the stats tables, and --json with the same figures."""
    trace = tmp_path / "find.trace"
    r = run_simfs("trace", "import", os.path.join(DATA, "find.tracefs"), "-o", str(trace))
    assert r.returncode == 0, r.stderr
    r = run_simfs("trace", "replay", str(trace), "--disk", "sas10k")
    assert r.returncode == 0, r.stderr
    for title in ("phases (simulated seconds", "disk time (simulated seconds", "latency in phase all"):
        assert title in r.stdout
    assert "| disk reads " in r.stdout and "| seeks (>128 sectors)" in r.stdout
    j = run_simfs("trace", "replay", str(trace), "--disk", "sas10k", "--json")
    doc = json.loads(j.stdout)
    n = len(read_trace(trace)["op"])
    assert doc["requests"] == n == doc["time"]["total"]["counters"]["disk_reads"]
    assert f"{doc['elapsed']:.6f} simulated s" in r.stdout
    assert doc["elapsed"] == pytest.approx(doc["time"]["total"]["elapsed"])
    none = json.loads(run_simfs("trace", "replay", str(trace), "--disk", "sas10k", "--gaps", "none",
                                "--json").stdout)
    assert none["elapsed"] < doc["elapsed"]


def test_cli_out_writes_the_replayed_stream_which_replays_to_the_same_time(tmp_path):
    """--out: the kernel's stream as timed on the drive, a simfs trace whose own replay (closed
    loop, its requests in order) finishes where the first replay did."""
    trace, out = tmp_path / "find.trace", tmp_path / "on-sas10k.csv"
    assert run_simfs("trace", "import", os.path.join(DATA, "find.tracefs"), "-o", str(trace)).returncode == 0
    doc = json.loads(run_simfs("trace", "replay", str(trace), "--disk", "sas10k", "--json",
                               "--out", str(out)).stdout)
    cols, orig = read_trace(out), read_trace(trace)
    assert cols["lba"] == orig["lba"] and cols["op"] == orig["op"] and cols["cause"] == orig["cause"]
    assert 0 < max(cols["finish"]) - cols["issue"][0] <= doc["elapsed"]      # (then the drive's flush)
    assert cols["finish"] != orig["finish"]                     # the drive's times, not the capture's
    again = json.loads(run_simfs("trace", "replay", str(out), "--disk", "sas10k", "--json").stdout)
    assert again["elapsed"] == pytest.approx(doc["elapsed"], rel=1e-6)
    r = run_simfs("trace", "replay", str(trace), "--disk", "sas10k", "--out", str(tmp_path / "no" / "x.csv"),
                  check=False)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("args, says", [
    (["--disk", "nosuchdrive"], "unknown disk preset"),
    (["--disk", "sas10k", "--gaps", "half"], "--gaps"),
    (["--disk", "sas10k,capacity=40000"], "beyond the drive"),
])
def test_cli_refuses_in_one_line(tmp_path, args, says):
    trace = tmp_path / "find.trace"
    assert run_simfs("trace", "import", os.path.join(DATA, "find.tracefs"), "-o", str(trace)).returncode == 0
    r = run_simfs("trace", "replay", str(trace), *args, check=False)
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, r.stderr


def test_cli_refuses_a_missing_or_foreign_trace(tmp_path):
    (tmp_path / "x.txt").write_text("hello\n")
    for path in (tmp_path / "none", tmp_path / "x.txt"):
        r = run_simfs("trace", "replay", str(path), "--disk", "sas10k", check=False)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
