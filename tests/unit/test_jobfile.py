"""Job files (experiments/jobfile.py): the seeds' job files compile to the same Experiment as
their Python definitions, the matrix expands as documented, and bad input is one line naming
the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments import builtin, jobfile, runner
from experiments.phases import PhaseContext
from experiments.spec import Config

REPO = Path(__file__).resolve().parents[2]
JOBS = REPO / "experiments" / "jobs"
SEEDS = {"seed000": "ext2fs-2010", "seed001": "readdir-order", "seed002": "writeback",
         "seed003": "alignment", "seed004": "mmap-fragmentation"}


def _ctx(cfg: Config, params: dict) -> PhaseContext:
    base = Path("/var/tmp/simfs-x/00-cfg-r0")
    return PhaseContext(mnt=base / "mnt", image=base / "disk.img", work=base, config=cfg,
                        source=Path("/var/tmp/simfs-x/src"), tarball=Path("/var/tmp/simfs-x/src.tar"),
                        params=params)


def _words(cmd):
    return jobfile.shell_words(cmd)


def _same_phase(a, b, cfg, params):
    for f in ("name", "description", "kind", "drain", "writes", "trace", "setup", "metrics", "cold"):
        assert getattr(a, f) == getattr(b, f), (a.name, f)
    for f in ("command", "prepare", "after"):
        fa, fb = getattr(a, f), getattr(b, f)
        assert (fa is None) == (fb is None), (a.name, f)
        if fa is None:
            continue
        if a.kind == "mount" and f != "after":
            ca, cb = fa(_ctx(cfg, params)), fb(_ctx(cfg, params))
            assert _words(ca) == _words(cb), (a.name, f)
            assert isinstance(ca, str) == isinstance(cb, str) or "|" not in str(ca) + str(cb)
        else:
            assert fa.__code__ is fb.__code__, (a.name, f)


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_seed_job_equals_python(seed, quick):
    """Every field of the compiled Experiment equals the Python definition's (commands compared
    as the words they run, Python hooks as the same code)."""
    mod = builtin.get(SEEDS[seed])
    job = jobfile.load(JOBS / f"{seed}.toml", quick=quick)
    assert job.workload_spec() == mod.workload(quick)
    kind = mod.workload(quick)["kind"]
    wl = runner.Workload(kind, bytes=37 << 20 if kind == "tree" else 0)
    want, got = mod.build(quick, wl), jobfile.compile_job(job, wl)
    for f in ("name", "seed", "title", "description", "repetitions", "blockmap", "blockmap_files", "notes",
              "params", "quick", "workload"):
        assert getattr(got, f) == getattr(want, f), f
    assert [(c.name, c.mount, c.mkfs, c.params) for c in got.configs] == \
        [(c.name, c.mount, c.mkfs, c.params) for c in want.configs]
    assert [sorted(c.mount_string().split(",")) for c in got.configs] == \
        [sorted(c.mount_string().split(",")) for c in want.configs]          # (the order of -o items is free)
    assert got.compares == want.compares
    assert [(p.title, p.phase, p.configs) for p in got.panels] == [(p.title, p.phase, p.configs) for p in want.panels]
    assert [p.name for p in got.phases] == [p.name for p in want.phases]
    for a, b in zip(got.phases, want.phases):
        _same_phase(a, b, want.configs[0], want.params)
