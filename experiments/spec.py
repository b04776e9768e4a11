"""What an experiment is: configurations x phases, plus the figures its seed published.

An `Experiment` is data (compiled from a job file, experiments/jobs/NAME.toml, by
experiments/jobfile/); `experiments.runner` executes it and `experiments.report` turns the
measurements into tables and plots.

* `Config`  - one fresh image: mkfs geometry and mount options (alloc, disk, writeback, ...),
              and `params`, the columns that tell configurations apart in tables.
* `Phase`   - one step, run cold: a real command against the mount (`kind="mount"`), or an
              in-process function on the unmounted image (`kind="volume"`, e.g. the fsck-like
              metadata scan). `drain` says whether the headline time includes writing back
              what the command left dirty (see docs/experiments.md, "How phases are timed").
* `Compare` - a ratio between two configurations for one phase and metric, with the ratio
              the seed published beside it, the direction the effect must have (`expect`),
              and the reason the model's figure differs from the seed's (`explain`).

`simfs experiment run NAME` and `simfs run JOB.toml` run the same objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


class SelectionError(ValueError):
    """`--only` patterns that match no configuration (bad input)."""


@dataclass
class Config:
    name: str
    mount: dict                       # volume mount options: alloc, disk, writeback, dirorder, cache, ...
    mkfs: dict                        # simfs.ondisk.mkfs.mkfs keywords: size_bytes, block_size, inode_size, ...
    params: dict = field(default_factory=dict)   # table columns, e.g. {"alloc": ..., "block": "4K"}

    def mount_string(self, extra: dict | None = None) -> str:
        """The -o string for `simfs mount` (disk overrides keep their commas; disk goes last)."""
        opts = dict(self.mount)
        opts.update(extra or {})
        disk = opts.pop("disk", None)
        items = [k if v is True else f"{k}={v}" for k, v in opts.items() if v is not None and v is not False]
        if disk is not None:             # an empty one too: the option parser refuses it
            items.append(f"disk={disk}")
        return ",".join(items)


@dataclass
class Phase:
    name: str
    description: str
    kind: str = "mount"              # "mount" (a command on the mounted image) or "volume" (in-process)
    command: Callable | None = None  # mount: f(ctx) -> argv list or shell string; volume: f(ctx) -> dict
    prepare: Callable | None = None  # mount: f(ctx) -> command run before the phase starts (untimed)
    drain: bool = False              # headline includes the write-back of what the command left dirty
    writes: bool = False             # the command writes (its write-back drain is shown beside it)
    trace: bool = False              # record a request trace (seekwatcher panels)
    setup: bool = False              # prepares state; measured but not part of the seed's comparison
    after: Callable | None = None    # f(ctx, record) -> dict of extra metrics, run after unmount
    metrics: tuple = ()              # extra metrics shown in the table, e.g. ("extents", "mb_s")
    cold: bool = True                # mount: remount first (empty caches); False: the previous mount phase's mount


@dataclass
class Compare:
    label: str
    phase: str
    num: str                         # configuration name (the one expected slower when expect=">")
    den: str
    published: float | None          # the seed's ratio (None: the seed gives no figure)
    source: str = ""                 # where the published figure comes from
    metric: str = "sim"              # "sim" (headline simulated seconds) or an extra metric
    expect: str = ">"                # ">": ratio > 1 expected; "<": ratio < 1; "": no direction claimed
    check: bool = True               # the test suite asserts the direction (quick runs included)
    explain: str = ""                # why the model's ratio differs from the seed's
    headline: bool = False           # shown in the overview of all experiments


@dataclass
class Panel:
    """A seekwatcher figure: the traces of `configs` during `phase`, on one time axis."""
    title: str
    phase: str
    configs: list


@dataclass
class Experiment:
    name: str
    seed: str                        # "000".."004"
    title: str
    description: str
    configs: list
    phases: list
    compares: list
    workload: dict                   # {"kind": "tree", ...generate_tree kwargs} or {"kind": "none"}
    repetitions: int = 1
    panels: list = field(default_factory=list)
    blockmap: list = field(default_factory=list)    # config names whose layout is drawn
    blockmap_files: str = "all"      # "all" files of the tree, or a path (mmap: the big file)
    notes: list = field(default_factory=list)       # printed under the table
    params: dict = field(default_factory=dict)      # handed to phases (PhaseContext.params)
    quick: bool = False

    def config(self, name: str) -> Config:
        for c in self.configs:
            if c.name == name:
                return c
        raise KeyError(name)

    def select(self, patterns: list[str]) -> None:
        """Keep only the configurations whose name matches one of the shell `patterns`
        (``--only``), and the comparisons, panels and block maps that need no other one."""
        from fnmatch import fnmatchcase
        keep = [c for c in self.configs if any(fnmatchcase(c.name, p) for p in patterns)]
        if not keep:
            raise SelectionError(f"--only {' '.join(patterns)} matches no configuration of {self.name}; "
                           f"choose from: {', '.join(c.name for c in self.configs)}")
        names = {c.name for c in keep}
        self.configs = keep
        self.compares = [c for c in self.compares if c.num in names and c.den in names]
        self.blockmap = [n for n in self.blockmap if n in names]
        panels = []
        for p in self.panels:
            cfgs = [n for n in p.configs if n in names]
            if cfgs:
                p.configs = cfgs
                panels.append(p)
        self.panels = panels

    def phase(self, name: str) -> Phase:
        for p in self.phases:
            if p.name == name:
                return p
        raise KeyError(name)
