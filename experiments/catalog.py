"""The experiments of `simfs experiment`: the job files in experiments/jobs/, one per seed
phenomenon (docs/design.md's table), each file named after its [job] name. A job file is the
experiment's whole definition; experiments/builtins/ holds what TOML cannot say."""

from __future__ import annotations

import tomllib
from pathlib import Path

from simfs.units import option_size

from . import builtins, jobfile
from .spec import Experiment

JOBS = Path(__file__).resolve().parent / "jobs"


def names() -> list[str]:
    """The experiments, in the order of their seeds."""
    seeds = {p.stem: str(tomllib.loads(p.read_text()).get("job", {}).get("seed", "")) for p in JOBS.glob("*.toml")}
    return sorted(seeds, key=lambda n: (seeds[n], n))


def path(name: str) -> Path:
    """Experiment `name`'s job file; KeyError (with the names) for an unknown one."""
    p = JOBS / f"{name}.toml"
    if "/" in name or not p.is_file():
        from plugin_registry import did_you_mean
        raise KeyError(f"unknown experiment {name!r}; choose one of: {', '.join(names())}"
                       + did_you_mean(name, names()))
    return p


def takes_size(name: str) -> bool:
    """Whether `simfs experiment run NAME --size` changes the experiment."""
    return builtins.size_overlay(name, 1 << 30, False) is not None


def load(name: str, quick: bool = False, size: int | None = None) -> jobfile.Job:
    """Experiment `name`'s job, checked (JobError on a --size no mount takes)."""
    over = builtins.size_overlay(name, size, quick) if size else None
    return jobfile.load(path(name), quick=quick, over=over, over_label=f"with --size {option_size(size or 0)}")


def build(name: str, quick: bool, wl, size: int | None = None) -> Experiment:
    """Experiment `name` for the prepared workload `wl` (runner.Workload)."""
    return jobfile.compile_job(load(name, quick, size), wl)
