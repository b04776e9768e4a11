"""A geometry microbenchmark run through a model, as one would run it on a real drive
(H. Wong's "Discovering Hard Disk Physical Geometry through Microbenchmarking", ref 1.4):
seek time against distance, sequential rate against LBA (zones), random 4 KiB IOPS, and the
read-modify-write penalty of misaligned writes.  Returns data; `probe_plot` draws it and
`format_report` prints it.  Deterministic: the random positions come from a seeded generator.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field

from . import make_disk, resolve
from .base import SECTOR
from .rotating import RotatingDrive

KIB = 1024
MIB = 1 << 20


@dataclass
class ProbeReport:
    name: str
    drive: str
    revolution_ms: float
    datasheet_seek_ms: dict                                 # t2t / avg / full, from the spec
    seek: list = field(default_factory=list)                # (distance cyl, mean seek ms, mean access ms)
    zones: list = field(default_factory=list)               # (fraction of LBA space, lba, MB/s)
    random: dict = field(default_factory=dict)              # name -> value
    rmw: list = field(default_factory=list)                 # (512-byte shift, ms per write, ratio to best)
    rmw_cases: dict = field(default_factory=dict)           # named misaligned/aligned ratios

    def to_dict(self) -> dict:
        return asdict(self)


def _distances(max_d: int) -> list[int]:
    out, d = [], 1
    while d < max_d:
        for m in (1, 2, 5):
            if d * m < max_d:
                out.append(d * m)
        d *= 10
    out.append(max_d)
    return sorted(set(out))


def seek_profile(spec, reps: int = 40, seed: int = 1) -> list[tuple[int, float, float]]:
    """Mean seek and mean access time (overhead + seek + rotation) between cylinder pairs at
    each distance, the start cylinder and angle varying.  Caching off, as a probe would."""
    disk = make_disk(_with(spec, drive_cache=0))
    L, off, rng = disk.layout, disk.offset, random.Random(seed)
    out = []
    for d in _distances(L.cylinders - 1):
        seeks = access = 0.0
        t = 0.0
        for _ in range(reps):
            c0 = rng.randrange(0, L.cylinders - d)
            if rng.random() < 0.5:
                c0, c1 = c0 + d, c0
            else:
                c1 = c0 + d
            for cyl, measure in ((c0, False), (c1, True)):
                lba = L.lba_of(cyl, 0, rng.randrange(0, L.zspt[-1])) - off
                lba = max(0, min(lba, disk.sectors - 8))
                r = disk.submit("R", lba, 8, t + rng.random() * disk.t_rev)
                t = r.finish
                if measure:
                    seeks += r.seek
                    access += r.overhead + r.seek + r.rotation
        out.append((d, seeks / reps * 1e3, access / reps * 1e3))
    return out


def zone_profile(spec, points: int = 21, mib: int = 16, request_kib: int = 128) -> list[tuple[float, int, float]]:
    """Sequential read rate at evenly spaced LBAs (first request excluded: it pays the seek)."""
    disk = make_disk(spec)
    n = request_kib * KIB // SECTOR
    count = mib * MIB // (n * SECTOR)
    span = disk.sectors - count * n
    out = []
    for i in range(points):
        disk.reset()
        lba = span * i // (points - 1)
        t = first = 0.0
        for k in range(count):
            r = disk.submit("R", lba + k * n, n, t)
            t = r.finish
            if k == 0:
                first = t
        out.append((i / (points - 1), lba, (count - 1) * n * SECTOR / (t - first) / 1e6))
    return out


def random_profile(spec, count: int = 2000, seed: int = 2) -> dict:
    """QD1 random 4 KiB IOPS over the whole disk: reads, cached writes (+ final flush), FUA writes."""
    out = {}
    for label, op, sync in (("read", "R", False), ("write", "W", False), ("write_sync", "W", True)):
        disk = make_disk(spec)
        rng = random.Random(seed)
        t = 0.0
        for _ in range(count):
            r = disk.submit(op, rng.randrange(disk.sectors // 8 - 1) * 8, 8, t, sync)
            t = r.finish
        if op == "W":
            t = disk.flush(t)
        out[f"{label}_iops"] = round(count / t, 1)
        out[f"{label}_ms"] = round(t / count * 1e3, 3)
    return out


def _timed_writes(spec, shift: int, span: int, count: int, sync: bool, sequential: bool, seed: int) -> float:
    disk = make_disk(spec)
    rng = random.Random(seed)
    blocks = min(span, disk.sectors - 16) // 8
    t = 0.0
    for i in range(count):
        blk = i % blocks if sequential else rng.randrange(blocks - 1)
        t = disk.submit("W", blk * 8 + shift, 8, t, sync).finish
    return disk.flush(t)


def rmw_profile(spec, count: int = 1000, span_mib: int = 1024, seed: int = 3):
    """Random FUA 4 KiB writes at each 512-byte shift within a physical sector (OSNews' test: 1000
    writes, here in a 1 GiB span), plus named cases comparing the 4K+512 shift with aligned."""
    span = span_mib * MIB // SECTOR
    times = [_timed_writes(spec, s, span, count, True, False, seed) for s in range(8)]
    best = min(times)
    rows = [(s, round(t / count * 1e3, 3), round(t / best, 3)) for s, t in enumerate(times)]
    disk = make_disk(spec)
    aligned = (-disk.offset) % 8          # the shift that makes request LBAs physically aligned
    mis = (aligned + 1) % 8

    def ratio(span_s, n, sync, seq):
        a = _timed_writes(spec, aligned, span_s, n, sync, seq, seed)
        m = _timed_writes(spec, mis, span_s, n, sync, seq, seed)
        return round(m / a, 3)

    cases = {
        "random_sync_1GiB": ratio(span, count, True, False),
        "random_sync_full": ratio(disk.sectors, count, True, False),
        "random_cached_1GiB": ratio(span, count, False, False),
        "sequential_cached": ratio(span, 8 * count, False, True),
    }
    return rows, cases


def run_probe(spec) -> ProbeReport:
    s = resolve(spec)
    disk = make_disk(s)
    if not isinstance(disk, RotatingDrive):           # the probe measures rotating geometry
        return ProbeReport(s.name, s.drive, 0.0, {})
    if "drive_cache" not in s.values:                 # its cases override the rotating presets' keys
        return ProbeReport(s.name, s.drive, round(disk.t_rev * 1e3, 4), {})
    v = s.values
    report = ProbeReport(s.name, s.drive, round(disk.t_rev * 1e3, 4),
                         {"t2t": v["seek_t2t"], "avg": v["seek_avg"], "full": v["seek_full"]})
    report.seek = seek_profile(s)
    report.zones = zone_profile(s)
    report.random = random_profile(s)
    report.rmw, report.rmw_cases = rmw_profile(s)
    return report


def format_report(rep: ProbeReport) -> str:
    lines = [f"probe {rep.name}: {rep.drive}"]
    if not rep.seek and rep.revolution_ms:
        return "\n".join(lines + ["(a drive from measured files, not the rotating presets' parameters, so "
                                   "the probe's cases do not apply: `simfs disks show` prints what it derives "
                                   "and `simfs disks validate TRACE --disk ...` replays a measured trace)"])
    if not rep.seek:
        return "\n".join(lines + ["(not a rotating drive, no geometry to probe: the ideal disk costs "
                                   "nothing; for other models `simfs disks show` prints what they derive)"])
    ds = rep.datasheet_seek_ms
    lines += ["", f"seek vs distance (datasheet: track-to-track {ds['t2t']:g}, average {ds['avg']:g}, "
                  f"full stroke {ds['full']:g} ms; revolution {rep.revolution_ms:g} ms)",
              f"  {'cylinders':>10}  {'seek ms':>8}  {'access ms':>9}"]
    lines += [f"  {d:>10}  {s:>8.3f}  {a:>9.3f}" for d, s, a in rep.seek]
    lines += ["", "sequential read rate vs LBA (128 KiB requests)", f"  {'position':>8}  {'LBA':>12}  {'MB/s':>7}"]
    lines += [f"  {f * 100:>7.0f}%  {lba:>12}  {r:>7.2f}" for f, lba, r in rep.zones]
    lines += ["", "random 4 KiB, queue depth 1, whole disk"]
    lines += [f"  {k:<16} {v:>10}" for k, v in rep.random.items()]
    lines += ["", "random FUA 4 KiB writes in 1 GiB by 512-byte shift (read-modify-write on 4K drives)",
              f"  {'shift':>5}  {'ms/write':>8}  {'ratio':>6}"]
    lines += [f"  {s:>5}  {ms:>8.3f}  {r:>6.2f}" for s, ms, r in rep.rmw]
    lines += ["", "misaligned (4K+512) / aligned time"]
    lines += [f"  {k:<20} {v:>6.2f}" for k, v in rep.rmw_cases.items()]
    return "\n".join(lines)


def _with(spec, **overrides):
    """`spec` (a DiskSpec) with more overrides, as a new spec mapping."""
    spec = resolve(spec)
    return {"preset": spec.preset, **spec.overrides, **overrides}
