"""A mounted job repeats bit for bit (issue 51, item 2; docs/design.md's fidelity contract:
the same image, options and operations give the same simulated time and counters).

examples/jobs/alloc-ab.toml's quick job (tar xpf of a generated tree of 60 files, then a cold
tar cf and a warm find, each through the mount) under alloc=ext2, three times: every record's
counters and simulated times are equal. The tree has symbolic links whose targets hold "..":
GNU tar writes an empty placeholder for each and replaces it at the end (unlink, symlink), the
pattern whose FORGET, arriving when the host's forget batching let it, used to decide the
symlink's inode number (717 vs 718 disk writes).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.mount

REPO = Path(__file__).resolve().parents[2]
RUNS = 3
COMPARED = ("phase", "sim", "sim_cmd", "sim_drain", "sim_umount", "counters", "counters_cmd", "ops",
            "latency", "extra")


def _run_job(work: Path) -> list[dict]:
    from experiments import jobfile, runner
    job = jobfile.loads((REPO / "examples" / "jobs" / "alloc-ab.toml").read_text(), "alloc-ab.toml", True)
    wl = runner.prepare_workload(job.workload_spec(), Path(tempfile.mkdtemp(dir=work)))
    exp = jobfile.compile_job(job, wl)
    exp.select(["alloc=ext2"])
    records, _ = runner.run_config(exp, exp.configs[0], 0, wl, Path(tempfile.mkdtemp(dir=work)))
    return [{k: r.get(k) for k in COMPARED} for r in records]


def test_a_mounted_job_repeats_exactly(tmp_path):
    import os
    if os.geteuid() != 0:
        pytest.skip("the job's mounted phases need root")
    first = _run_job(tmp_path)
    assert [r["phase"] for r in first] == ["mkfs", "untar", "tar", "find", "layout"]
    assert first[1]["counters"]["disk_writes"] > 0 and first[2]["sim"] > 0
    for _ in range(RUNS - 1):
        again = _run_job(tmp_path)
        for a, b in zip(first, again):
            assert a == b, a["phase"]
