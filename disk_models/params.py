"""Drive parameters: their names, units and limits, and parsing of "preset,key=value,..." specs.

Every model is built from one flat mapping of these parameters, so a mount option like
`-o disk=sata7200,rpm=5400,write_cache=off` and `simfs disks show` speak the same names.
The drive's buffer is `drive_cache` (MiB), never `cache`: in `-o disk=...,cache=64M` the key
`cache` is the mount's own buffer-cache size.
Values are in the units datasheets use (ms, MB/s = 10^6 bytes/s, MiB, KiB); models convert.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Param:
    name: str
    kind: type            # int, float or bool
    unit: str
    help: str
    low: float | None = None      # inclusive
    high: float | None = None     # inclusive
    optional: bool = False        # None means "derive it" (see resolve)
    choices: tuple = ()           # kind str: the values allowed


PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("capacity", int, "sectors", "addressable 512-byte sectors of the whole disk", 4096, 2**48),
    Param("rpm", float, "rpm", "spindle speed; od_rate/id_rate are kept (the zone table is re-solved), "
          "so scale them too to keep the same platters", 1000, 20000),
    Param("heads", int, "", "recording surfaces (2 per platter)", 1, 64),
    Param("zones", int, "", "recording zones; sectors per track fall linearly from OD to ID", 1, 500),
    Param("od_rate", float, "MB/s", "sustained media rate of the outermost zone (switch skews included)", 0.1, 10000),
    Param("id_rate", float, "MB/s", "sustained media rate of the innermost zone", 0.1, 10000),
    Param("seek_t2t", float, "ms", "track-to-track (one cylinder) read seek", 0.0, 1000),
    Param("seek_avg", float, "ms", "average read seek over random cylinder pairs", 0.0, 1000),
    Param("seek_full", float, "ms", "full-stroke read seek", 0.0, 1000),
    Param("write_settle", float, "ms", "extra settle before writing after a seek", 0.0, 100),
    Param("head_switch", float, "ms", "switch to another surface of the same cylinder", 0.0, 100),
    Param("overhead", float, "ms", "controller overhead of a command that goes to the media", 0.0, 100),
    Param("overhead_hit", float, "ms", "controller overhead of a command served from the buffer", 0.0, 100),
    Param("interface", float, "MB/s", "host interface rate", 0.1, 100000),
    Param("drive_cache", float, "MiB", "the drive's on-board buffer (not the mount's buffer cache, -o cache=); 0 = none (no read-ahead, write-through)", 0.0, 65536),
    Param("segments", int, "", "read segments the buffer is divided into", 1, 1024),
    Param("readahead", float, "KiB", "read-ahead after a media read, continued while a sequential stream "
          "reads on; default half a segment; 0 = off", 0.0, 1 << 30, optional=True),
    Param("write_cache", bool, "", "write-back caching (on) or write-through (off)"),
    Param("write_buffer", float, "MiB", "dirty data the write cache may hold; default half the buffer",
          0.0, 65536, optional=True),
    Param("physical_sector", int, "bytes", "512 (native) or 4096 (Advanced Format, 512-byte emulation)", 512, 4096),
    Param("partition_offset", int, "sectors", "partition start in 512-byte sectors; request LBAs are relative to it",
          0, 2**48),
)}

IDEAL_PARAMS = ("capacity",)

#: the drive's command queue: keys every model that can reorder accepts (disk_models.queue; a
#: model without `positioning` is served one at a time). A spec without them has depth 1, FCFS:
#: no queue, as every drive before these keys existed.
QUEUE_PARAMS: dict[str, Param] = {p.name: p for p in (
    Param("queue_depth", int, "commands", "commands the drive holds at once (SATA NCQ, SCSI TCQ: up to 32; "
          "1 = no command queue, one at a time)", 1, 256),
    Param("scheduler", str, "", "the order the drive serves queued commands in (DiskSim's ioqueue): fcfs, "
          "sstf, clook (C-LOOK), sptf (shortest positioning time first, DiskSim's estimate from the head "
          "state it last recorded), spctf (sptf, buffer hits first), sptf-now and spctf-now (the same, "
          "ranked from where the head is at the pick)",
          choices=("fcfs", "sstf", "clook", "sptf", "spctf", "sptf-now", "spctf-now")),
)}
QUEUE_DEFAULTS = {"queue_depth": (1, "default: no command queue (one command at a time)"),
                  "scheduler": ("fcfs", "default: served in arrival order")}

_TRUE = {"on", "true", "yes", "1"}
_FALSE = {"off", "false", "no", "0"}


def parse_value(param: Param, value) -> object:
    """A parameter value from text (or a Python value), checked against the parameter's limits."""
    name = param.name
    if param.kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValueError(f"{name}={value!r}: expected on or off")
    if value is None and param.optional:
        return None
    if param.kind is str:
        text = str(value).strip().lower()
        if text not in param.choices:
            raise ValueError(f"{name}={value!r}: expected one of {', '.join(param.choices)}")
        return text
    v: float                   # an int for an integer parameter
    try:
        if isinstance(value, bool):
            raise ValueError
        if param.kind is int:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            v = int(value) if not isinstance(value, str) else int(value.strip(), 0)
        else:
            v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r}: expected {'an integer' if param.kind is int else 'a number'}"
                         f"{' in ' + param.unit if param.unit else ''}") from None
    if v != v or (param.low is not None and v < param.low) or (param.high is not None and v > param.high):
        raise ValueError(f"{name}={value!r}: must be between {param.low:g} and {param.high:g}"
                         f"{' ' + param.unit if param.unit else ''}")
    return v


def parse_spec(spec) -> tuple[str, dict]:
    """("preset", {key: raw value}) from "preset,key=value,..." or {"preset": ..., key: value}."""
    if isinstance(spec, dict):
        spec = dict(spec)
        name = spec.pop("preset", None) or spec.pop("disk", None)
        if not isinstance(name, str) or not name:
            raise ValueError("a disk spec mapping needs a 'preset' key")
        return name.strip(), spec
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("empty disk spec; expected a preset name like 'sata7200' or 'sata7200,rpm=5400'")
    name, *rest = [part.strip() for part in spec.split(",")]
    overrides = {}
    for item in rest:
        if not item:
            continue
        if "=" not in item:
            raise ValueError(f"disk parameter {item!r} needs a value (key=value)")
        k, v = item.split("=", 1)
        overrides[k.strip()] = v.strip()
    return name, overrides


@dataclass
class DiskSpec:
    """A preset with overrides applied: every value, and where every value came from."""

    preset: str
    kind: str                      # the model: a name in disk_models.MODELS, or package.module:Class
    drive: str                     # what real drive it stands for
    values: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    overrides: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        extra = "".join(f",{k}={_fmt(self.values[k])}" for k in self.overrides)
        return self.preset + extra


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def format_value(v) -> str:
    return _fmt(v)


def validate(values: dict) -> None:
    """Cross-parameter checks for a rotating drive (single values were checked on parsing)."""
    v = values
    if v["od_rate"] < v["id_rate"]:
        raise ValueError(f"od_rate ({v['od_rate']:g}) must be at least id_rate ({v['id_rate']:g}): "
                         "outer tracks hold more sectors")
    if not v["seek_t2t"] <= v["seek_avg"] <= v["seek_full"]:
        raise ValueError("seek times must satisfy seek_t2t <= seek_avg <= seek_full")
    if v["physical_sector"] not in (512, 4096):
        raise ValueError(f"physical_sector must be 512 or 4096, not {v['physical_sector']}")
    if v["partition_offset"] >= v["capacity"]:
        raise ValueError("partition_offset must lie inside the disk")
    if v["head_switch"] * 1e-3 >= 60.0 / v["rpm"]:
        raise ValueError("head_switch must be shorter than one revolution")
    if v["write_buffer"] is not None and v["write_buffer"] > v["drive_cache"]:
        raise ValueError(f"write_buffer ({v['write_buffer']:g} MiB) cannot exceed drive_cache ({v['drive_cache']:g} MiB)")
