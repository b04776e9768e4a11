"""Disk models: how long a block request takes on a modelled drive, and why.

A pure library: no I/O, no wall clock, no randomness.  The clock/I-O-queue layer above calls it.

    from disk_models import make_disk, DiskRequest
    disk = make_disk("sata7200,rpm=5400,write_cache=off")   # preset + overrides
    r = disk.access(DiskRequest("R", lba=2048, sectors=8, issue_time=0.0))
    r.finish, r.total, r.seek, r.rotation, r.cache_hit       # seconds (simulated)
    r = disk.submit("W", 4096, 256, r.finish, sync=False)     # same, without a request object
    done = disk.flush(now)                                    # drain the write cache
    disk.reset()                                              # power-on state

API
  make_disk(spec) -> DiskModel   spec: "preset[,key=value...]" or {"preset": name, key: value};
                                 the preset may also be a model class, "package.module:Class"
                                 (its first preset), or "MODEL:ARG" for a model whose class has
                                 a `preset_for(ARG)` ("disksim:PATH.parv": a DiskSim drive). Unknown preset or key, or a bad value ->
                                 ValueError saying what is valid.
  resolve(spec) -> DiskSpec      the values and their provenance, without building a model.
  PRESETS                        name -> Preset (summary, drive, model, values, provenance): the
                                 built-ins and the presets plug-in models bring.
  MODELS                         model name -> class: the registry (built-ins and entry points in
                                 group simfs.disk_models); the contract is disk_models.base.
  PARAMS                         name -> Param (unit, help, limits): the rotating models' keys
                                 (each model's own are its PARAMS).
  describe(spec) -> str          every parameter, its value and its provenance, plus derived figures.

  DiskModel.access(DiskRequest) / .submit(op, lba, sectors, issue_time, sync) -> DiskResult
      op "R"/"W"; lba and sectors in 512-byte sectors, partition-relative; issue times must not
      decrease.  The drive serves one command at a time; `queue` is the wait for the previous
      one (and for destaging in progress).  `sync` is FUA: written through even with the cache on.
  DiskResult: issue, start, finish, queue, overhead, seek, rotation, transfer, interface, rmw,
      cache_hit, .total (= finish - issue = the sum of the components).
  DriveQueue(disk[, depth, scheduler])   the drive's command queue (disk_models.queue): .submit(op,
      lba, sectors, t, sync, tag) several requests, then .pop() -> (tag, DiskResult) completions
      in time order, each with its own queue/seek/rotation/transfer split. Depth and scheduler
      default to the spec's queue_depth and scheduler (every model accepts them; 1 and fcfs
      unless the preset or the drive's DiskSim file says otherwise).
  DiskModel.flush(now) -> float   when every cached write is on the media.
  DiskModel.busy_until            when the drive accepts the next command.
  RotatingDrive also exposes .layout (zones: .zone(lba), .zone_rate(z), .stream_time(a, b)),
      .seek (the Lee curve, seconds per cylinder distance), .t_rev, and .derived() for `show`.

Models: RotatingDrive ("rotating": zones, Lee seek curve, rotation from absolute time, skews,
segmented read-ahead cache, write-back cache), AdvancedFormatDrive ("advanced-format": 4K
physical sectors, 512e, partition offset, read-modify-write; the rotating models pick it
whenever physical_sector is 4096), IdealDisk ("ideal": costs nothing), DiskSimDrive ("disksim": the rotating model fed a DiskSim 4.0
drive's measured files; presets disksim-* for the ten drives of DiskSim's validation suite).
"""

from __future__ import annotations

from plugin_registry import did_you_mean

from .advanced_format import AdvancedFormatDrive
from .base import DiskModel, DiskRequest, DiskResult
from .ideal import IdealDisk
from .params import PARAMS, QUEUE_DEFAULTS, QUEUE_PARAMS, DiskSpec, format_value, parse_spec, parse_value
from .queue import SCHEDULERS, DriveQueue
from .presets import Preset
from .registry import MODELS, PRESETS, model_for
from .rotating import RotatingDrive


def _preset(name: str) -> tuple[Preset, str]:
    """(preset, model kind) for a preset name or a model class given as package.module:Class."""
    if ":" in name:
        head, arg = name.split(":", 1)
        if head in MODELS and hasattr(MODELS[head], "preset_for"):
            return MODELS[head].preset_for(arg.strip()), head    # MODEL:ARG, e.g. disksim:PATH.parv
        cls = MODELS.resolve(name)
        if not cls.presets:
            raise ValueError(f"disk model {name!r} brings no preset (its class has no presets)")
        return cls.presets[0], name
    preset = PRESETS.get(name)
    if preset is None:
        raise ValueError(f"unknown disk preset {name!r}; choose one of: {', '.join(PRESETS)} "
                         f"(or a model class as package.module:Class){did_you_mean(name, PRESETS)}")
    return preset, preset.kind


_ROTATING_FAMILY = ("rotating", "advanced-format")


def resolve(spec) -> DiskSpec:
    """A preset with its overrides applied and checked; provenance says where each value came from."""
    if isinstance(spec, DiskSpec):
        return spec
    name, overrides = parse_spec(spec)
    preset, kind = _preset(name)
    model = model_for(kind)
    # the queue keys are a drive's that can reorder (a model of the one-at-a-time kind is
    # served in arrival order, depth 1, whatever they would say)
    params = {**model.PARAMS, **QUEUE_PARAMS} if getattr(model, "queueing", False) else model.PARAMS
    valid = tuple(params)
    values, prov, applied = dict(preset.values), dict(preset.provenance), {}
    if hasattr(model, "queue_defaults") and any(k not in values for k in QUEUE_PARAMS):
        # the drive's queue as its own files give it; said only when it is a queue (no key:
        # depth 1, fcfs - one command at a time, as every drive before the keys existed)
        found = model.queue_defaults(preset)
        if found.get("queue_depth", (1,))[0] != 1:
            for k, (v, why) in found.items():
                values.setdefault(k, v)
                prov.setdefault(k, why)
    for key, raw in overrides.items():
        if key not in valid:
            hint = (" (the drive's buffer is drive_cache, in MiB; the mount's buffer cache is the "
                    "mount option cache=)") if key == "cache" else ""
            raise ValueError(f"unknown disk parameter {key!r} for {name}{hint}; valid keys: {', '.join(valid)}")
        was = values.get(key, QUEUE_DEFAULTS.get(key, (None,))[0])
        values[key] = parse_value(params[key], raw)
        prov[key] = f"override ({key}={raw}); preset value {format_value(was)}"
        applied[key] = values[key]
    model.check_values(values)
    if kind in _ROTATING_FAMILY:          # physical_sector chooses the member: 4096 is 512e
        kind = "advanced-format" if values["physical_sector"] == 4096 else "rotating"
    return DiskSpec(preset.name, kind, preset.drive, values, prov, applied)


def make_disk(spec) -> DiskModel:
    """Build a fresh model from "preset[,key=value...]" or a mapping (see module docstring)."""
    s = resolve(spec)
    disk = model_for(s.kind).from_spec(s)
    disk.queue_depth = s.values.get("queue_depth", 1)
    disk.scheduler = s.values.get("scheduler", "fcfs")
    return disk


def describe(spec) -> str:
    """Every parameter with value, unit and provenance, then the figures the model derives."""
    s = resolve(spec)
    lines = [f"{s.name}: {s.drive}", ""]
    width = max(len(k) for k in s.values)
    params = {**model_for(s.kind).PARAMS, **QUEUE_PARAMS}
    for key, value in s.values.items():
        p = params[key]
        shown = "auto" if value is None else format_value(value)
        unit = f" {p.unit}" if p.unit and value is not None else ""
        lines.append(f"  {key:<{width}}  {shown + unit:<16}  {s.provenance.get(key, '')}")
    if "drive_cache" in s.values:
        lines.append("  (drive_cache is the drive's own buffer; the mount's buffer cache is the mount option cache=)")
    model = make_disk(s)
    derived = model.derived()
    if derived:
        lines += ["", "derived by the model:"]
        dw = max(len(k) for k in derived)
        for key, (value, unit, how) in derived.items():
            lines.append(f"  {key:<{dw}}  {(str(value) + (' ' + unit if unit else '')):<16}  {how}")
    return "\n".join(lines)


__all__ = ["AdvancedFormatDrive", "DiskModel", "DiskRequest", "DiskResult", "DiskSpec", "DriveQueue", "IdealDisk",
           "MODELS", "SCHEDULERS",
           "PARAMS", "PRESETS", "Preset", "RotatingDrive", "describe", "make_disk", "resolve"]
