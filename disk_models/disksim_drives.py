"""The drives of DiskSim's validation suite (their files in disk_models/data/disksim/,
PROVENANCE.md) as presets, and the reading of a drive's files, remembered (disksim.py's
DiskSimDrive is built from them often)."""

from __future__ import annotations

import importlib.resources
import os

from .disksim_files import Block, DiskSimFileError, load_drive
from .presets import Preset

#: the drives' files, beside the package's source (its __init__ is never compiled; this module
#: may run from build/compiled, where no data is)
DATA = str(importlib.resources.files("disk_models") / "data" / "disksim")

#: .model files whose Block count is known to be short, by (dm_disk name, Block count): the
#: capacity used instead and why. The HP C3323A's .model says 1743672, but its zones map more and
#: its own trace reads up to block 2049226; DiskSim serves what the zones map (it never checks
#: Block count), so does this. Keyed by the file's contents, not its path, so that the preset and
#: `disk=disksim:PATH` of the same file (or a copy) get the same drive.
HP_C3323A = ("HP_C3323A_validate_model", 1_743_672)
SHORT_COUNTS = {HP_C3323A: (
    2_049_227, "[derived] blocks up to the trace's highest (2049226) as the zone table maps them; the "
               ".model's Block count (1743672) is smaller than the 1 GB drive and DiskSim does not check it")}

#: preset name -> (parameter file in DATA, DiskSim's name for the drive, capacity(): the
#: .model's Block count, or its SHORT_COUNTS correction; a test checks each against its file)
DRIVES = {
    "disksim-atlas_iii": ("atlas_III.parv", "Quantum Atlas III QM39100TD-SW", 17_783_250),
    "disksim-barracuda": ("barracuda.parv", "Seagate Barracuda ST32171W", 4_110_000),
    "disksim-cheetah4lp": ("cheetah4LP.parv", "Seagate Cheetah 4LP ST34501N", 8_887_200),
    "disksim-cheetah9lp": ("cheetah9LP.parv", "Seagate Cheetah 9LP ST39102LW", 17_783_240),
    "disksim-ibm18es": ("ibm18es.parv", "IBM Ultrastar 18ES DNES-309170W", 17_916_240),
    "disksim-atlas10k": ("atlas10k.parv", "Quantum Atlas 10K (Tornado)", 17_938_986),
    "disksim-hp_c2247a": ("hp_c2247a.parv", "HP C2247A", 2_054_864),
    "disksim-hp_c3323a": ("hp_c3323a.parv", "HP C3323A", SHORT_COUNTS[HP_C3323A][0]),
    "disksim-hp_c2490a": ("hp_c2490a.parv", "HP C2490A", 4_165_272),
    "disksim-dec_rz26": ("dec_rz26.parv", "DEC RZ26", 2_050_860),
}


def capacity(files) -> tuple[int, str | None]:
    """(blocks, why) of a drive's files: its .model's Block count, or the known correction of a
    short one (SHORT_COUNTS; why is None for a Block count read as is)."""
    count = int(files.model.num("Block count"))
    return SHORT_COUNTS.get((files.model.name, count), (count, None))


def drive_preset(name: str, path: str, drive: str, capacity: int, why: str | None = None) -> Preset:
    """A DiskSim drive as a preset: its name, file and drive, its capacity and where it is from."""
    return Preset(name, "disksim", f"{drive} from DiskSim's validation suite (measured layout, seek curve, "
                  "cache, overheads)", f"{drive}; DiskSim 4.0 parameters {path}",
                  {"capacity": capacity},
                  {"capacity": why or f"[read] Block count in the .model of {path} (DiskSim 4.0 validation "
                                      "suite, disk_models/data/disksim/PROVENANCE.md)"})


PRESETS = tuple(drive_preset(n, f"disk_models/data/disksim/{f}", d, c,
                             SHORT_COUNTS[HP_C3323A][1] if n == "disksim-hp_c3323a" else None)
                for n, (f, d, c) in DRIVES.items())

#: DiskSim's Scheduling policy numbers (disksim_ioqueue.h) for the schedulers disk_models.queue has
POLICIES = {1: "fcfs", 3: "clook", 4: "sstf", 8: "sptf", 9: "spctf"}


def queue_of(files) -> dict:
    """queue_depth and scheduler with provenance, from the disk's `Max queue length` and its
    Scheduler's `Scheduling policy`; a policy this model lacks is refused only when the queue
    holds more than one command (with one, the policy never chooses)."""
    d = files.disk
    where = f"{os.path.basename(files.path)} ({d.name})"
    depth = int(d.num("Max queue length", 1))
    if depth < 1:
        raise DiskSimFileError(f"{d.where}: Max queue length {depth} must be at least 1")
    sched = d.get("Scheduler")
    policy = int(sched.num("Scheduling policy", 1)) if isinstance(sched, Block) else 1
    out: dict[str, tuple[int | str, str]] = {"queue_depth": (min(depth, 256), f"[read] Max queue length in {where}")}
    if policy in POLICIES:
        out["scheduler"] = (POLICIES[policy], f"[read] Scheduling policy {policy} in {where}")
    elif depth > 1:
        raise DiskSimFileError(f"{d.where}: Scheduling policy {policy} is not modelled (1 FCFS, 3 C-LOOK, "
                               "4 SSTF, 8 SPTF, 9 SPCTF)")
    else:
        out["scheduler"] = ("fcfs", f"[read] Max queue length 1 in {where}: one at a time "
                                    f"(its Scheduling policy {policy} never chooses)")
    return out


_loaded: dict = {}
_given: dict = {}


def forget_loaded() -> None:
    """Forget the files read so far: the next drive_files reads its file again (a benchmark
    times the loading)."""
    _loaded.clear()


def drive_files(path: str):
    """load_drive(path), remembered per file and modification time (a preset is built often),
    and per path as given: the mount daemon checks `disk=disksim:PATH` before it forks and
    changes to /, where a relative PATH no longer names the file."""
    full = os.path.abspath(path)
    try:
        key = (full, os.stat(full).st_mtime_ns)
    except OSError as e:
        if path in _given:
            return _given[path]
        raise DiskSimFileError(f"cannot read {full}: {e.strerror or e}") from None
    if key not in _loaded:
        _loaded[key] = load_drive(full)
    _given[path] = _loaded[key]
    return _loaded[key]


def source_of(preset: str) -> str:
    """The parameter file a preset name stands for ("disksim:PATH" or a built-in preset)."""
    if preset.startswith("disksim:"):
        return preset.split(":", 1)[1]
    if preset in DRIVES:
        return os.path.join(DATA, DRIVES[preset][0])
    raise ValueError(f"disk preset {preset!r} names no DiskSim parameter file")
