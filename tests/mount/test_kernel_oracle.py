"""benchmarks/kernel_oracle.py end to end (make test-long): the kernel's ext4 unpacks a generated
tree, its cold `find . -type d` is captured through tracefs, imported and replayed on sas10k,
and simfs mounted on a byte-for-byte copy walks it: the two streams agree within the issue's
goal (requests, bytes and simulated time within 10 %)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simfs.blockio.traceimport import read_capture
from tests.helpers import can_loop_mount

pytestmark = [pytest.mark.long, pytest.mark.kernel_mount, pytest.mark.mount]


def test_find_hash_order_kernel_beside_simfs(tmp_path):
    why = can_loop_mount()
    assert why is None, why
    r = subprocess.run([sys.executable, "-m", "benchmarks.kernel_oracle", "--tree", "generated:4000",
                        "--size", "512M", "--keep", str(tmp_path / "keep"), "--json"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    closed, gaps, simfs = res["rows"].values()
    _, reqs, _ = read_capture(str(tmp_path / "keep" / "kernel.tracefs"))
    assert closed["requests"] == gaps["requests"] == len(reqs) > 100
    assert simfs["reads"] == simfs["requests"]              # the unmount's writes are not the find's
    for k in ("requests", "mib", "seconds"):
        assert simfs[k] == pytest.approx(closed[k], rel=0.10), (k, simfs[k], closed[k])


def test_readdir_order_hash_phases_kernel_beside_simfs(tmp_path):
    """--experiment readdir-order --config dirorder=hash: every phase has both streams; on the
    read phase (copies of one image) the bytes and the simulated time agree within 10 %."""
    why = can_loop_mount()
    assert why is None, why
    keep = tmp_path / "keep"
    r = subprocess.run([sys.executable, "-m", "benchmarks.kernel_oracle", "--experiment", "readdir-order",
                        "--config", "dirorder=hash", "--keep", str(keep), "--json"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    rows = {x["phase"]: x for x in res["rows"]}
    assert list(rows) == ["unpack", "find-d", "find-f", "cp-a", "rm-rf"]
    for name, x in rows.items():
        assert x["kernel"]["requests"] > 10 and x["simfs"]["requests"] > 10, name
        assert (keep / f"dirorder-hash-{name}.kernel.trace").exists()
    k, s = rows["find-d"]["kernel"], rows["find-d"]["simfs"]
    assert s["reads"] == s["requests"] and k["reads"] == k["requests"]
    for f in ("mib", "seconds"):
        assert s[f] == pytest.approx(k[f], rel=0.10), (f, s[f], k[f])
    for name, x in rows.items():          # the replay checked against the model before it judges
        got = _replayed_own_stream(keep / f"dirorder-hash-{name}.simfs.trace", name, x)   # the kernel
        assert got == pytest.approx(x["simfs"]["seconds"], rel=0.01), (name, got, x["simfs"]["seconds"])
    assert "simfs-kernel-oracle" not in " ".join(p.name for p in Path("/sys/fs/cgroup/memory").iterdir())


def _replayed_own_stream(trace: Path, phase: str, row: dict) -> float:
    """simfs's own stream of a mounted phase (its rows up to the phase's simulated end, without
    the unmount's) replayed with its waits and gaps on the row's drive: simulated seconds."""
    from disk_models import make_disk
    from simfs.blockio.trace import read_trace
    from simfs.blockio.tracereplay import replay
    c = read_trace(trace)
    idx = [i for i, p in enumerate(c["phase"]) if p == phase]
    end = c["issue"][idx[0]] + row["simfs"]["seconds"]        # (cpu_op_us=0: the phase starts with I/O)
    cols = {k: [v[i] for i in idx if c["issue"][i] < end] for k, v in c.items()}
    assert len(cols["op"]) == row["simfs"]["requests"]
    return replay(cols, make_disk(row["disk"]), 1.0, {})["elapsed"]


def test_alignment_phases_kernel_beside_simfs(tmp_path):
    """--experiment alignment --config "offset 40" (seed 003, a new experiment of the harness):
    every phase has a row; mkfs and newfs are simfs's alone and say why; restore, the fsck
    (e2fsck -fn on the device beside simfs's scan) and tar have both streams; tar (copies of one
    image) reads the same bytes within 10 %, all of them on 4 KiB boundaries on both sides."""
    why = can_loop_mount()
    assert why is None, why
    r = subprocess.run([sys.executable, "-m", "benchmarks.kernel_oracle", "--experiment", "alignment",
                        "--config", "offset 40", "--json"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = {x["phase"]: x for x in json.loads(r.stdout)["rows"]}
    assert list(rows) == ["mkfs", "newfs", "restore", "fsck", "tar"]
    for name in ("mkfs", "newfs"):
        assert rows[name]["kernel"] is None and rows[name]["simfs"]["seconds"] > 0 and "no kernel side" in rows[name]["note"]
    for name in ("restore", "fsck", "tar"):
        x = rows[name]
        assert x["kernel"]["requests"] > 10 and x["simfs"]["requests"] > 10, name
        assert x["kernel"]["seconds"] > 0 and x["simfs"]["seconds"] > 0, name
    assert rows["fsck"]["kernel"]["reads"] == rows["fsck"]["kernel"]["requests"]    # e2fsck -n writes nothing
    k, s = rows["tar"]["kernel"], rows["tar"]["simfs"]
    assert s["mib"] == pytest.approx(k["mib"], rel=0.10)
    assert k["aligned_4k"] == s["aligned_4k"] == 1.0
    assert not any(p.name.startswith("simfs-kernel-oracle") for p in Path("/sys/fs/cgroup/memory").iterdir())


def test_git_aging_greps_kernel_beside_simfs(tmp_path):
    """--experiment git-aging (about 30 s here; long as the whole module): the pulls are simfs's
    row alone (the kernel-aged configuration's the kernel's alone); each grep (the aged tree, the clean copy) has both streams, reads only, and on
    byte copies of one image the kernel reads every block simfs reads (it adds only its
    inode-table read-ahead); the aged tree is slower to grep than the clean copy on both sides."""
    from simfs.blockio.trace import read_trace
    why = can_loop_mount()
    assert why is None, why
    keep = tmp_path / "keep"
    r = subprocess.run([sys.executable, "-m", "benchmarks.kernel_oracle", "--experiment", "git-aging",
                        "--keep", str(keep), "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    rows = {x["phase"]: x for x in res["rows"] if x["config"] == "ext2"}
    assert list(rows) == ["pulls", "aged-grep", "clean-grep"] and rows["pulls"]["kernel"] is None
    own = {x["phase"]: x for x in res["rows"] if x["config"] == "kernel-aged"}
    assert list(own) == ["pulls", "aged-grep", "clean-grep"] and not any(x["simfs"] for x in own.values())
    assert own["pulls"]["kernel"]["requests"] > own["pulls"]["kernel"]["reads"]       # it wrote the history
    for name in ("aged-grep", "clean-grep"):
        k, s = rows[name]["kernel"], rows[name]["simfs"]
        assert k["reads"] == k["requests"] > 10 and s["reads"] == s["requests"] > 10, name
        kc, sc = (read_trace(keep / f"ext2-{name}.{side}.trace") for side in ("kernel", "simfs"))
        blocks = lambda c, idx: {b for i in idx for b in range(c["lba"][i] // 8, (c["lba"][i] + c["sectors"][i]) // 8)}  # noqa: E731
        kb = blocks(kc, range(len(kc["op"])))
        sb = blocks(sc, [i for i, p in enumerate(sc["phase"]) if p == name and sc["op"][i] == "R"])
        assert sb and sb <= kb, (name, sorted(sb - kb)[:10])
    ratio = res["ratios"]["aged/clean grep"]
    assert ratio["kernel"] > 2 and ratio["simfs"] > 2, ratio
    assert res["ratios"]["aged/clean grep, the kernel's own aging"]["kernel"] > 0
