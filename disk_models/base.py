"""The disk-model contract: a request goes in, its completion time and a breakdown come out.

Times are simulated seconds (floats).  LBAs and lengths are in 512-byte logical sectors and
are relative to the partition the file system lives in (a model may add a partition offset).
Models are stateful (head position, rotation, cache contents) and deterministic: they never
read the wall clock and use no randomness, so the same request stream gives the same times.

The caller issues requests in non-decreasing `issue_time`.  A model's `submit` serves one
command at a time (one actuator): a request starts when the previous one has finished, and the
wait is reported as `queue`.  That is the whole drive when it has no command queue (a PATA drive,
SATA without NCQ: ``queue_depth=1``, the default).

The drive's command queue (event-driven form)
---------------------------------------------
A drive that queues (SATA NCQ, SCSI TCQ) holds up to ``queue_depth`` commands and serves them
in the order its ``scheduler`` picks (fcfs, sstf, clook, sptf, spctf: DiskSim's definitions).  That is
`disk_models.queue.DriveQueue` over a model: submit several requests (``q.submit(op, lba,
sectors, t, sync, tag)``, arrivals in non-decreasing time), then take completions in time order
(``q.pop() -> (tag, DiskResult)``), each with its own queue/seek/rotation/transfer split.  Rule:
before `pop`, submit every request arriving at or before ``q.next_pick`` (a closed-loop caller
does so by itself).  What a model adds for it:
  queueing    class attribute: True if the model provides `positioning` (and so may reorder);
              False (the default, a model of the one-at-a-time kind): the queue serves it
              FIFO, exactly as depth 1 - plug-ins written before the queue keep working.
  positioning(op, lba, sectors, t, cache=False, sync=False) -> float   seconds of seek +
              rotational wait the request would need if the drive took it at t, from where the
              head is then; changes no state (SPTF's key; with `cache`, a read the buffer holds
              costs 0: SPCTF's). A write a write cache takes without a media access (`sync`
              False: not FUA) costs 0: it is no media command (DiskSim takes it on arrival).
              Optional ``recorded=True`` (the `sptf`/`spctf` key): the same estimate from the
              head state the model last recorded (DiskSim's mech_state: the track and angle of
              the last sector transferred, not advanced to t); a model with such a state sets
              the class attribute ``positioning_recorded = True``, otherwise the queue ranks
              by the estimate at t.
  waited      instance attribute the queue sets before starting a command: the seconds it
              waited in the drive, through which its command overhead already ran (DiskSim's
              overhead_done); a model without it ignores it.
  queue_defaults(preset) -> {key: (value, provenance)}   optional classmethod: the queue the
              drive's own description gives (a DiskSim .parv: Max queue length, Scheduling
              policy); keys it leaves out, and presets without queue_depth/scheduler values, get
              depth 1, fcfs.
`make_disk` sets the instance's ``queue_depth`` and ``scheduler`` from the spec (every model
accepts the two keys: `disk_models.params.QUEUE_PARAMS`).  Depth 1 (or fcfs) submits each
request with its own arrival time: the same results as a one-at-a-time caller, bit for bit.

Registry and presets
--------------------
A *model* is a class (a subclass of `DiskModel`); a *preset* is a named set of parameter
values for one model, with the provenance of every value (`disk_models.presets.Preset`).
``-o disk=PRESET[,key=value...]`` picks a preset and overrides some of its values; the
preset's `kind` names its model. `disk_models.MODELS` maps model names to classes: the
built-ins (``rotating``, ``advanced-format``, ``ideal``) and installed packages' entry
points in group ``simfs.disk_models`` (entry-point name = the class's `model`).
`disk_models.PRESETS` holds the built-in presets and every preset a plug-in model brings
(its `presets`). ``-o disk=package.module:Class[,key=value...]`` uses a model class directly,
with its first preset, no entry point needed.

Contract (what a model class provides)
--------------------------------------
  model       class attribute: the model's registry name ("rotating"); the entry-point name
  summary     class attribute: one line saying what is modelled
  PARAMS      class attribute: name -> `disk_models.params.Param` (type, unit, help, limits),
              every parameter the model takes; a spec may override only these. Every model
              needs ``capacity`` (512-byte sectors); a plug-in may reuse the rotating
              parameters of `disk_models.params.PARAMS` or define its own.
  presets     class attribute (plug-ins): the `Preset` objects it brings, each with
              ``kind`` = its `model`, a value and a provenance line for every parameter in
              PARAMS (tag each figure [read], [derived] or [inferred], and name the source).
              The first one is the default for ``-o disk=package.module:Class``.
  check_values(values)   classmethod: cross-parameter checks (single values were checked
              against PARAMS' limits); raise ValueError with a one-line message. Default: none.
  preset_for(arg) -> Preset      optional classmethod: ``-o disk=MODEL:ARG`` (MODEL the registry
              name) asks it for the preset ARG describes, e.g. ``disk=disksim:PATH.parv`` reads a
              drive's files; ValueError (one line) for a bad ARG.
  from_spec(spec) -> DiskModel   classmethod: build a fresh model from a resolved
              `disk_models.params.DiskSpec` (``spec.values``: every parameter, parsed;
              ``spec.name``: the preset and its overrides). Default: ``cls(spec)``.
  name, sectors          instance attributes: the spec's name, and the addressable
              512-byte sectors (requests beyond it are refused by `check`).
  submit(op, lba, sectors, issue_time, sync) -> DiskResult
              service one request; `DiskResult.finish - issue` must equal the sum of its
              components, and finish >= issue.
  flush(now) -> float    when every cached write is on the media (>= now).
  reset()     back to the power-on state.
  busy_until  property: when the drive accepts the next command.
  work_counters, work_time   optional dicts: the drive's own work that belongs to no host
              request, running totals since reset (name -> count, name -> simulated
              seconds; the rotating models count their write cache's destaging there, under
              WORK_COUNTERS and WORK_TIMES). The statistics show them per phase, beside the
              counters and disk time; a model without background work leaves them out.
  derived() -> {name: (value, unit, how)}   figures the model computes, for
              ``simfs disks show``. Default: none.

What a model may read: the spec it was built from and the requests it is given. What it must
not do: I/O, the wall clock, unseeded randomness, or look at the file system above it (a
model sees sectors, never blocks or files).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

SECTOR = 512

#: what a rotating model's `work_counters` count: destage operations (write cache to media),
#: the logical sectors they wrote, and the logical sectors read first to merge partly written
#: physical sectors
WORK_COUNTERS = ("drive_destages", "sectors_destaged", "sectors_preread")
#: ... and its `work_time`: where the mechanism's time went while destaging (simulated seconds)
WORK_TIMES = ("destage_seek", "destage_rotation", "destage_transfer", "destage_rmw")


@dataclass(slots=True, frozen=True)
class DiskRequest:
    """One command to the drive.  `sync` means FUA: the data must be on the media on return."""

    op: str              # "R" or "W"
    lba: int             # first 512-byte sector, partition-relative
    sectors: int         # number of 512-byte sectors (> 0)
    issue_time: float    # simulated seconds
    sync: bool = False


@dataclass(slots=True)
class DiskResult:
    """When a request finished and where its time went.

    finish - issue == queue + overhead + seek + rotation + transfer + interface + rmw
    (exactly, up to float rounding).  `start` is issue + queue: when the drive began to work on
    this command.  `transfer` is media time (or, on a cache hit, the wait for read-ahead to bring
    the data in); `interface` is bus time not hidden under media time; `rmw` is everything a
    read-modify-write of partly covered 4 KiB physical sectors added.
    """

    issue: float
    start: float
    finish: float
    queue: float = 0.0
    overhead: float = 0.0
    seek: float = 0.0
    rotation: float = 0.0
    transfer: float = 0.0
    interface: float = 0.0
    rmw: float = 0.0
    cache_hit: bool = False

    @property
    def total(self) -> float:
        """Response time: finish - issue."""
        return self.finish - self.issue

    COMPONENTS = ("queue", "overhead", "seek", "rotation", "transfer", "interface", "rmw")

    def breakdown(self) -> dict:
        return {name: getattr(self, name) for name in self.COMPONENTS}


class DiskModel(ABC):
    """A modelled drive.  Subclasses implement `submit`, `flush`, `reset` and `busy_until`
    (the contract is the module docstring)."""

    #: the model's registry name (the entry-point name of a plug-in)
    model: str = ""
    #: one line: what is modelled
    summary: str = ""
    #: parameter name -> disk_models.params.Param: what a spec may set
    PARAMS: dict = {}
    #: plug-ins: the presets (disk_models.presets.Preset) this model brings; the first is its default
    presets: tuple = ()
    #: preset or spec name, e.g. "sata7200,rpm=5400"
    name: str = "?"
    #: addressable 512-byte sectors of the partition
    sectors: int = 0
    #: the command queue: commands held at once and the order they are served in (set by
    #: make_disk from the spec; see disk_models.queue)
    queue_depth: int = 1
    scheduler: str = "fcfs"
    #: True: the model gives `positioning`, so a queue may reorder its requests
    queueing: bool = False

    @classmethod
    def from_spec(cls, spec) -> "DiskModel":
        """A fresh model for a resolved DiskSpec."""
        return cls(spec)

    @classmethod
    def check_values(cls, values: dict) -> None:
        """Cross-parameter checks; ValueError (one line) for a combination the model refuses."""

    def derived(self) -> dict:
        """Figures the model computes from its parameters: name -> (value, unit, how)."""
        return {}

    def access(self, req: DiskRequest) -> DiskResult:
        """Service one request (see `submit`)."""
        return self.submit(req.op, req.lba, req.sectors, req.issue_time, req.sync)

    @abstractmethod
    def submit(self, op: str, lba: int, sectors: int, issue_time: float, sync: bool = False) -> DiskResult:
        """Service one request given as plain values (the fast path; no request object)."""

    @abstractmethod
    def flush(self, now: float) -> float:
        """FLUSH CACHE issued at `now`: returns when every cached write is on the media."""

    @abstractmethod
    def reset(self) -> None:
        """Back to the power-on state: empty caches, heads at cylinder 0, idle at time 0."""

    def positioning(self, op: str, lba: int, sectors: int, t: float, cache: bool = False,
                    sync: bool = False) -> float:
        """Seek + rotational wait if the drive took this request at t (SPTF's key; no state
        changes). Models with `queueing` True implement it."""
        raise NotImplementedError(f"{type(self).__name__} does not estimate positioning times")

    def drop_buffer(self, now: float) -> None:
        """Forget what the drive's buffer holds for reads (`simfs ctl MNT drop-caches`: cold
        everywhere). Dirty sectors of a write cache stay: the caller flushed them first."""

    @property
    @abstractmethod
    def busy_until(self) -> float:
        """When the drive will accept the next command."""

    def check(self, op: str, lba: int, sectors: int) -> None:
        """Raise ValueError for a request the drive would reject."""
        if op not in ("R", "W"):
            raise ValueError(f"op must be 'R' or 'W', not {op!r}")
        if sectors <= 0 or lba < 0 or lba + sectors > self.sectors:
            raise ValueError(f"request lba={lba} sectors={sectors} outside 0..{self.sectors}")
