"""Replay a DiskSim "validate" trace through a disk model and score it as DiskSim does.

A validate trace is what DiskSim's validation suite measured on a real drive, one request a line:

    R|W  Hit|Miss|Doub|Trip  LBN  SECTORS  MEASURED_SERVICE_US  NEXT_INTERARRIVAL_US

Replay (src/disksim_iotrace.c iotrace_validate_get_ioreq_event and disksim_iodriver.c): one
request at a time; the first is issued at 0, each next one when the previous completes plus the
previous line's NEXT_INTERARRIVAL (the idle time the measuring host left). The second column is
what the real drive's buffer did (hit, miss, double or triple disconnect): DiskSim only counts
it, it does not steer the simulation, and neither does this replay.

Score (src/rms.c with valid/statdefs): both service-time samples are binned as DiskSim's
"Physical access time" / "Trace access time" statistics (integer microseconds; buckets of 1 us
up to 100 us, then growing by 1% each, 1750 buckets), printed as cumulative fractions with six
decimals, and the demerit is the root mean square of the horizontal distance (ms) between the two
cumulative curves, sampled at every 0.0001 of probability with linear interpolation: Ruemmler &
Wilkes' "demerit figure". `demerit_from_samples` reproduces `rms` to the printed digit.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

import numpy as np

ACTIONS = ("Hit", "Miss", "Doub", "Trip")
#: DiskSim's valid/statdefs, "Physical access time": Distribution size 1750, Scale 1000,
#: Start 0 step 1 grow 1
BUCKETS, SCALE, START, STEP, GROW = 1750, 1000, 0, 1, 1


class TraceError(ValueError):
    """A malformed trace line, or a request outside the drive (one-line message)."""


@dataclass
class Trace:
    path: str
    ops: list
    lbas: np.ndarray
    sizes: np.ndarray
    measured: np.ndarray          # ms
    gaps: np.ndarray              # ms, idle time after each request
    actions: list


def read_trace(path: str, capacity: int | None = None) -> Trace:
    """Parse a validate trace; TraceError names the line of the first problem."""
    ops, lbas, sizes, meas, gaps, acts = [], [], [], [], [], []
    try:
        f = open(path, encoding="latin-1")
    except OSError as e:
        raise TraceError(f"cannot read trace {path}: {e.strerror or e}") from None
    with f:
        for no, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            bad = None
            if len(parts) != 6:
                bad = f"expected 6 fields (R|W Hit|Miss LBN SECTORS SERVICE_US INTERARRIVAL_US), found {len(parts)}"
            elif parts[0] not in ("R", "W"):
                bad = f"the first field must be R or W, not {parts[0]!r}"
            elif parts[1] not in ACTIONS:
                bad = f"the second field must be one of {', '.join(ACTIONS)}, not {parts[1]!r}"
            else:
                try:
                    lba, n = int(parts[2]), int(parts[3])
                    s, g = float(parts[4]), float(parts[5])
                except ValueError:
                    bad = "LBN and SECTORS must be whole numbers, the times numbers"
                else:
                    if lba < 0 or n < 1:
                        bad = f"LBN must be >= 0 and SECTORS >= 1 (got {lba}, {n})"
                    elif not (0 <= s < 1e9 and 0 <= g < 1e12):
                        bad = f"times must be non-negative microseconds (got {parts[4]}, {parts[5]})"
                    elif capacity is not None and lba + n > capacity:
                        bad = f"request {lba}+{n} lies outside the drive (0..{capacity} sectors)"
            if bad:
                raise TraceError(f"{path}:{no}: {bad}")
            ops.append(parts[0])
            acts.append(parts[1])
            lbas.append(lba)
            sizes.append(n)
            meas.append(s / 1000.0)
            gaps.append(g / 1000.0)
    if not ops:
        raise TraceError(f"{path}: no requests")
    return Trace(path, ops, np.array(lbas, dtype=np.int64), np.array(sizes, dtype=np.int64),
                 np.array(meas), np.array(gaps), acts)


def replay(disk, trace: Trace) -> tuple[np.ndarray, float]:
    """Service time (ms) of every request as DiskSim's validate mode issues them, and the wall
    seconds the model took."""
    submit = disk.submit
    out = np.empty(len(trace.ops))
    lbas, sizes, gaps = trace.lbas.tolist(), trace.sizes.tolist(), (trace.gaps * 1e-3).tolist()
    t = 0.0
    gap = 0.0
    w0 = time.perf_counter()
    for i, op in enumerate(trace.ops):
        issue = t + gap
        r = submit(op, lbas[i], sizes[i], issue)
        t = r.finish
        out[i] = t - issue
        gap = gaps[i]
    wall = time.perf_counter() - w0
    return out * 1e3, wall


# -- DiskSim's statistics and rms.c -------------------------------------------------------------
def _starts() -> np.ndarray:
    s, v = [], START
    for _ in range(BUCKETS):
        s.append(v)
        v += STEP + int(abs(v) * GROW / 100)
    return np.array(s, dtype=np.int64)


STARTS = _starts()


def distribution(samples_ms) -> tuple[np.ndarray, np.ndarray]:
    """(x ms, cumulative fraction) as DiskSim prints a large distribution and rms.c reads it
    (up to the first point at 1.0)."""
    v = np.asarray(samples_ms, dtype=np.float64)
    intval = (v * SCALE).astype(np.int64)            # C's (int) truncation; values are >= 0
    # bucket k+1 holds [STARTS[k], STARTS[k+1]); the last one everything from STARTS[-2] on
    idx = np.searchsorted(STARTS[:-1], intval, side="right")
    idx[intval < START] = 0
    counts = np.bincount(idx, minlength=BUCKETS)
    n = len(v)
    xs, ys = [], []
    dist = 0.0
    for k in range(BUCKETS):
        dist += counts[k] / n
        y = float(f"{dist:f}")
        xs.append(STARTS[k] / SCALE)
        ys.append(y)
        if y >= 1.0:
            break
    return np.array(xs), np.array(ys)


def rms_distance(x1, y1, x2, y2) -> float:
    """rms.c compute_rms: RMS horizontal distance between two cumulative curves."""
    y1, y2, x1, x2 = list(y1), list(y2), list(x1), list(x2)
    i1 = i2 = 0
    pnt = 0.0001
    count = 0
    sq = 0.0
    n1, n2 = len(y1), len(y2)
    while pnt <= 1.0:
        while i1 < n1 - 1 and y1[i1] < pnt:
            i1 += 1
        while i2 < n2 - 1 and y2[i2] < pnt:
            i2 += 1
        a = _at(x1, y1, i1, pnt)
        b = _at(x2, y2, i2, pnt)
        sq += (a - b) * (a - b)
        count += 1
        pnt += 0.0001
    return math.sqrt(sq / count)


def _at(x, y, i, p):
    if i == 0:
        return x[0]
    f = (p - y[i - 1]) / (y[i] - y[i - 1])
    return x[i - 1] + f * (x[i] - x[i - 1])


def demerit_from_samples(a_ms, b_ms) -> float:
    return rms_distance(*distribution(a_ms), *distribution(b_ms))


def read_disksim_output(path: str, which: str = "IOdriver Physical access time distribution"):
    """A distribution from a DiskSim .outv file: (x ms, cumulative fraction), as rms.c reads it."""
    xs, ys = [], []
    try:
        with open(path, encoding="latin-1") as f:
            for line in f:
                if line.rstrip("\n") == which:
                    break
            else:
                raise TraceError(f"{path}: no '{which}' (is it DiskSim's output of a validate run?)")
            for line in f:
                p = line.split()
                try:
                    xs.append(float(p[0]))
                    ys.append(float(p[3]))
                except (ValueError, IndexError):
                    raise TraceError(f"{path}: bad line in '{which}': {line.strip()!r}") from None
                if ys[-1] >= 1.0:
                    break
    except OSError as e:
        raise TraceError(f"cannot read DiskSim output {path}: {e.strerror or e}") from None
    if not ys or ys[-1] < 1.0:
        raise TraceError(f"{path}: '{which}' ends before reaching 1.0")
    return np.array(xs), np.array(ys)


def disksim_run(path: str) -> tuple[str | None, int | None]:
    """(the trace DiskSim ran, the requests it handled) as its output file states them
    ("*** I/O trace used : NAME", "IOdriver Total Requests handled: N"); None where absent."""
    name = count = None
    try:
        with open(path, encoding="latin-1") as f:
            for line in f:
                if line.startswith("*** I/O trace used") and ":" in line:
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("IOdriver Total Requests handled:"):
                    try:
                        count = int(line.split(":", 1)[1])
                    except ValueError:
                        pass
                    break
    except OSError as e:
        raise TraceError(f"cannot read DiskSim output {path}: {e.strerror or e}") from None
    return name, count


def check_same_run(path: str, trace_path: str, requests: int) -> None:
    """TraceError unless DiskSim's output `path` is of the trace being compared: the same
    trace file name and as many requests (another drive's output would be scored silently)."""
    name, count = disksim_run(path)
    if name is None or count is None:
        raise TraceError(f"{path}: no '*** I/O trace used' or 'IOdriver Total Requests handled' line "
                         "(is it DiskSim's output of a validate run?)")
    mine = os.path.basename(trace_path)
    if os.path.basename(name) != mine or count != requests:
        raise TraceError(f"{path} is DiskSim's output of {name} ({count} requests), not of {mine} "
                         f"({requests} requests): give the output of `disksim PARV OUT validate {mine} 0`")


# -- the report ----------------------------------------------------------------------------------
@dataclass
class Validation:
    disk: str
    trace: str
    requests: int
    demerit: float                       # ms, simfs vs measured
    measured: dict
    simulated: dict
    wall: float                          # seconds the model took
    disksim_demerit: float | None = None
    samples: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        d = {"disk": self.disk, "trace": self.trace, "requests": self.requests,
             "demerit_ms": round(self.demerit, 6), "measured_ms": self.measured, "simfs_ms": self.simulated,
             "requests_per_second": round(self.requests / self.wall) if self.wall > 0 else None}
        if self.disksim_demerit is not None:
            d["disksim_demerit_ms"] = round(self.disksim_demerit, 6)
        return d


def summary(ms: np.ndarray) -> dict:
    p50, p90, p99 = np.percentile(ms, [50, 90, 99])
    return {"mean": round(float(ms.mean()), 4), "p50": round(float(p50), 4), "p90": round(float(p90), 4),
            "p99": round(float(p99), 4)}


def validate(disk, trace_path: str, disksim_output: str | None = None) -> Validation:
    """Replay `trace_path` through `disk` (a fresh DiskModel) and score it against the trace;
    with `disksim_output`, DiskSim's output of the same trace (checked: check_same_run) is
    scored against it too."""
    tr = read_trace(trace_path, disk.sectors)
    if disksim_output:
        check_same_run(disksim_output, trace_path, len(tr.ops))
    sim, wall = replay(disk, tr)
    v = Validation(disk.name, trace_path, len(tr.ops), demerit_from_samples(sim, tr.measured),
                   summary(tr.measured), summary(sim), wall, samples={"measured": tr.measured, "simfs": sim})
    if disksim_output:
        x, y = read_disksim_output(disksim_output)
        v.disksim_demerit = rms_distance(x, y, *distribution(tr.measured))
        v.samples["disksim"] = (x, y)
    return v


def format_report(v: Validation) -> str:
    rows = [f"{v.disk} on {v.trace}: {v.requests} requests",
            f"  demerit (RMS horizontal distance of the CDFs, as DiskSim's rms): {v.demerit:.3f} ms"]
    if v.disksim_demerit is not None:
        rows.append(f"  DiskSim's demerit on the same trace:                             {v.disksim_demerit:.3f} ms")
    rows.append(f"  {'service time, ms':<18}{'mean':>9}{'p50':>9}{'p90':>9}{'p99':>9}")
    for name, s in (("measured", v.measured), ("simfs", v.simulated)):
        rows.append(f"  {name:<18}" + "".join(f"{s[k]:>9.3f}" for k in ("mean", "p50", "p90", "p99")))
    if v.wall > 0:
        rows.append(f"  model speed: {v.requests / v.wall:,.0f} requests/s")
    return "\n".join(rows)
