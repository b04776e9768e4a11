"""A foreign request stream as a simfs trace (`simfs trace import`): what a Linux block device
was sent, from one of three captures, told apart by their content:

  tracefs    the text of /sys/kernel/tracing/trace (or `trace-cmd report`) with the
             block_rq_issue and block_rq_complete events ("7,0 RM 4096 () 33416 + 8 [tar]")
  blkparse   blkparse's default text output (the Q, G, I, D, C ... lines)
  blktrace   blktrace's binary files (struct blk_io_trace, version 7, either byte order;
             BASE.blktrace.N, one per CPU, or one such file)

A request is what the driver was given: one issue (tracefs's block_rq_issue, blktrace's D) and
its completion (C), paired by device, sector, length and R/W, first in first out. Its issue time in
the trace is when the host queued it (blktrace's Q of a bio starting at that sector, before it
was dispatched) or, without one (tracefs; a front merge), its dispatch; `start` is the dispatch,
`finish` the completion, all relative to the first request's issue. Each row keeps R or W, its
rwbs flags as the kernel printed them (M metadata, A read-ahead, S sync, F flush/FUA), the
process that issued it, and `wait`: 1 for a read that is not read-ahead and a synchronous write.
The capture does not say where a request's time went: the time-split columns are 0.

Requests without data (a flush, "FN 0 + 0") and discards have no row; they are counted.
Completions of requests issued before the capture began are skipped and counted. A line (or
binary event) that does not parse, a lost-events marker, or a request that never completes
(the capture cut short) raises CaptureError naming the line (or event) and what is wrong.
"""

from __future__ import annotations

import csv
import glob
import os
import re
import struct
from collections import deque
from dataclasses import dataclass, field

import simfs.outfile as outfile
from simfs.blockio import blktrace as bt
from simfs.blockio.trace import FIELDS

#: columns written after FIELDS: read_trace reads `wait`; the others are read by `read_extras`
EXTRA = ("wait", "rwbs", "process", "device")
META_CAUSE = "meta"                 # the cause of a row whose request carried M


class CaptureError(ValueError):
    """The capture cannot be read: one line naming where (file:line, or event and offset)."""


@dataclass
class Event:
    """One block-layer event of a capture, in the capture's time order."""
    where: str          # file:line, or file: event N (offset X)
    time: float         # seconds
    kind: str           # Q queued, M/F merged, D issued to the driver, C completed, R requeued
    dev: str            # "major,minor"
    sector: int
    nr: int             # 512-byte sectors
    rwbs: str
    comm: str = ""


@dataclass
class Request:
    issue: float
    start: float
    finish: float
    op: str
    lba: int
    sectors: int
    rwbs: str
    process: str
    dev: str
    where: str = field(default="", compare=False)


# --- detection -------------------------------------------------------------------------------

def _blktrace_files(path: str) -> list[str]:
    """The per-CPU files of a blktrace capture named by one of them or by its base name."""
    m = re.match(r"^(.*)\.blktrace\.\d+$", path)
    base = m.group(1) if m else path
    files = sorted(glob.glob(glob.escape(base) + ".blktrace.[0-9]*"),
                   key=lambda p: int(p.rsplit(".", 1)[1]) if p.rsplit(".", 1)[1].isdigit() else -1)
    files = [f for f in files if f.rsplit(".", 1)[1].isdigit()]
    return files or ([path] if os.path.isfile(path) else [])


def _is_blktrace(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return False
    return len(head) == 4 and any((struct.unpack(o + "I", head)[0] & 0xFFFFFF00) == 0x65617400
                                  for o in "<>")


_TRACEFS = re.compile(
    r"^\s*(?P<task>.+?)-(?P<pid>\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(?P<cpu>\d+)\]\s+(?:\S+\s+)?"
    r"(?P<ts>\d+\.\d+):\s+(?P<event>[\w:]+):\s*(?P<rest>.*)$")
_RQ = re.compile(
    r"^(?P<maj>\d+),(?P<min>\d+)\s+(?P<rwbs>[A-Z]+)\s+(?:(?P<bytes>\d+)\s+)?\((?P<cmd>[^)]*)\)\s+"
    r"(?P<sector>\d+)\s+\+\s+(?P<nr>\d+)(?:\s+[\w-]+,\d+,\d+)?\s+\[(?P<tail>[^\]]*)\]\s*$")
_BLKPARSE = re.compile(
    r"^\s*(?P<maj>\d+),(?P<min>\d+)\s+(?P<cpu>\d+)\s+(?P<seq>\d+)\s+(?P<ts>\d+\.\d+)\s+(?P<pid>\d+)\s+"
    r"(?P<act>[A-Za-z]{1,2})\s+(?P<rwbs>[A-Z]*)\s*(?P<rest>.*)$")
_RANGE = re.compile(r"^(?P<sector>\d+)\s+\+\s+(?P<nr>\d+)(?:\s+\((?P<from>[^)]*)\))?\s*(?:\[(?P<comm>[^\]]*)\])?")


def detect(path: str) -> str:
    """"tracefs", "blkparse" or "blktrace", from the content; CaptureError if none fits."""
    files = _blktrace_files(path)
    if not files:
        raise CaptureError(f"{path} does not exist" if not os.path.exists(path) else f"{path} is not a file")
    if _is_blktrace(files[0]):
        return "blktrace"
    if len(files) > 1 or files[0] != path:
        raise CaptureError(f"{files[0]}: not a blktrace file (no blk_io_trace magic)")
    try:
        with open(path, encoding="utf-8", errors="strict") as f:
            for n, line in enumerate(f, 1):
                s = line.strip()
                if not s or s.startswith("#"):
                    continue
                if _TRACEFS.match(line) or s.startswith("CPU:"):
                    return "tracefs"
                if _BLKPARSE.match(line):
                    return "blkparse"
                raise CaptureError(f"{path}:{n}: not a tracefs, blkparse or blktrace capture "
                                   f"(the line starts {s[:40]!r})")
    except UnicodeDecodeError:
        raise CaptureError(f"{path}: not a tracefs, blkparse or blktrace capture (binary, "
                           "without blktrace's magic)") from None
    except OSError as e:
        raise CaptureError(f"cannot read {path}: {e.strerror}") from None
    raise CaptureError(f"{path}: no events (an empty capture)")


# --- the three readers: each yields Events --------------------------------------------------

def tracefs_events(path: str):
    """Events of a tracefs text capture: block_rq_issue -> D, block_rq_complete -> C,
    block_rq_requeue -> R, block_rq_insert -> Q; other events are passed over."""
    kinds = {"block_rq_issue": "D", "block_rq_complete": "C", "block_rq_requeue": "R",
             "block_rq_insert": "Q"}
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            if "LOST" in s and s.startswith("CPU:"):
                raise CaptureError(f"{path}:{n}: the kernel lost events here ({s}): enlarge "
                                   "buffer_size_kb and capture again")
            m = _TRACEFS.match(line)
            if not m:
                raise CaptureError(f"{path}:{n}: not a tracefs event line (cut short?): {s[:60]!r}")
            kind = kinds.get(m["event"].rpartition(":")[2])
            if kind is None:
                continue
            r = _RQ.match(m["rest"])
            if not r:
                raise CaptureError(f"{path}:{n}: {m['event']} does not parse: {m['rest'][:60]!r}")
            comm = r["tail"] if kind in "DQ" else ""
            yield Event(f"{path}:{n}", float(m["ts"]), kind, f"{r['maj']},{r['min']}",
                        int(r["sector"]), int(r["nr"]), r["rwbs"], comm)


def blkparse_events(path: str):
    """Events of blkparse's default text output: Q, M, F, D, C, R lines; the other actions
    (G, I, P, U, X, A, m ...) are passed over; the per-CPU summary ends the events."""
    kinds = {"Q": "Q", "M": "M", "F": "F", "D": "D", "C": "C", "R": "R"}
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if not s:
                continue
            if re.match(r"^(CPU\d+|Total) \(", s):
                return                               # the summary after the events
            m = _BLKPARSE.match(line)
            if not m:
                raise CaptureError(f"{path}:{n}: not a blkparse event line (cut short?): {s[:60]!r}")
            kind = kinds.get(m["act"])
            if kind is None:
                continue
            r = _RANGE.match(m["rest"])
            if not r:
                if m["rest"].startswith("[") or re.match(r"^\d+\s+\(", m["rest"]):
                    continue                          # no sectors: a flush, a pass-through command
                raise CaptureError(f"{path}:{n}: {m['act']} event does not parse: {m['rest'][:60]!r}")
            comm = (r["comm"] or "") if kind in "QD" else ""
            yield Event(f"{path}:{n}", float(m["ts"]), kind, f"{m['maj']},{m['min']}",
                        int(r["sector"]), int(r["nr"]), m["rwbs"], comm)


_ACT_KIND = {bt.TA_QUEUE: "Q", 2: "M", 3: "F", bt.TA_ISSUE: "D", bt.TA_COMPLETE: "C", 6: "R"}
TC_FLUSH, TC_PC, TC_DISCARD, TC_FUA = 1 << 2, 1 << 9, 1 << 13, 1 << 15


def rwbs_of(action: int, nbytes: int) -> str:
    """blkparse's rwbs letters for an event's categories (blkparse's fill_rwbs)."""
    tc = action >> 16
    out = "F" if tc & TC_FLUSH else ""
    out += "D" if tc & TC_DISCARD else "W" if tc & bt.TC_WRITE else "R" if nbytes else "N"
    for bit, ch in ((TC_FUA, "F"), (bt.TC_AHEAD, "A"), (bt.TC_SYNC, "S"), (bt.TC_META, "M")):
        if tc & bit:
            out += ch
    return out


def blktrace_events(path: str):
    """Events of blktrace's binary files (every CPU's), in time order; the process names
    from the notify events."""
    raw, names = [], {}
    for fname in _blktrace_files(path):
        with open(fname, "rb") as f:
            data = f.read()
        order = "="
        if len(data) >= 4:
            order = next((o for o in "<>" if (struct.unpack(o + "I", data[:4])[0] & 0xFFFFFF00)
                          == 0x65617400), None)
            if order is None:
                raise CaptureError(f"{fname}: not a blktrace file (no blk_io_trace magic)")
        ev = struct.Struct(order + "IIQQIIIIIHH")
        off, n = 0, 0
        while off < len(data):
            n += 1
            where = f"{fname}: event {n} (byte {off})"
            if off + ev.size > len(data):
                raise CaptureError(f"{where}: cut short ({len(data) - off} of {ev.size} bytes)")
            magic, _seq, t, sector, nbytes, action, pid, device, cpu, _err, pdu = ev.unpack_from(data, off)
            if magic & 0xFFFFFF00 != 0x65617400:
                raise CaptureError(f"{where}: no blk_io_trace magic (a damaged file?)")
            if magic & 0xFF != 7:
                raise CaptureError(f"{where}: blk_io_trace version {magic & 0xFF}; this reads version 7")
            off += ev.size
            if off + pdu > len(data):
                raise CaptureError(f"{where}: its {pdu}-byte payload is cut short")
            payload = data[off:off + pdu]
            off += pdu
            tc, ta = action >> 16, action & 0xFF
            if tc & bt.TC_NOTIFY:
                if ta == bt.TN_PROCESS:
                    names[pid] = payload.split(b"\0", 1)[0].decode("utf-8", "replace")
                continue
            kind = _ACT_KIND.get(ta)
            if kind is None or tc & TC_PC:      # (bio events carry no FS bit; requests do)
                continue
            dev = f"{device >> 20},{device & 0xFFFFF}"
            raw.append((t, cpu, n, Event(where, t / 1e9, kind, dev, sector, nbytes // 512,
                                         rwbs_of(action, nbytes), str(pid))))
    raw.sort(key=lambda x: x[:3])
    for *_, e in raw:
        if e.kind in "QD":
            e.comm = names.get(int(e.comm), e.comm)
        else:
            e.comm = ""
        yield e


READERS = {"tracefs": tracefs_events, "blkparse": blkparse_events, "blktrace": blktrace_events}


# --- events -> requests ------------------------------------------------------------------------

def _has_data(rwbs: str, nr: int) -> bool:
    return nr > 0 and ("R" in rwbs or "W" in rwbs) and "D" not in rwbs.lstrip("F")[:1]


def _op(rwbs: str) -> str:
    return "W" if "W" in rwbs else "R"


def assemble(events, device: str | None = None) -> tuple[list[Request], dict]:
    """Requests (in issue order) from a capture's events, and notes: what was skipped.
    `device` ("7,0") keeps that device's events; without it the capture must hold one device."""
    queued: dict[tuple, deque] = {}       # (dev, sector) -> queue times and process of bios
    flight: dict[tuple, deque] = {}       # (dev, sector, nr) -> requests issued, not completed
    requeued: dict[tuple, deque] = {}
    out: list[Request] = []
    devices: dict[str, int] = {}
    notes = {"no_data": 0, "early_completions": 0}
    for e in events:
        devices[e.dev] = devices.get(e.dev, 0) + 1
        if device is not None and e.dev != device:
            continue
        if e.kind == "Q":
            queued.setdefault((e.dev, e.sector), deque()).append((e.time, e.comm))
        elif e.kind in "MF":                  # a bio merged into a request: no request of its own
            q = queued.get((e.dev, e.sector))
            if q:
                q.pop()
        elif e.kind == "D":
            if not _has_data(e.rwbs, e.nr):
                notes["no_data"] += 1
                continue
            key = (e.dev, e.sector, e.nr, _op(e.rwbs))
            back = requeued.get(key)
            if back:
                r = back.popleft()
                r.start = e.time                      # dispatched again
                flight.setdefault(key, deque()).append(r)
                continue
            q = queued.get((e.dev, e.sector))
            t, comm = q.popleft() if q else (e.time, e.comm)
            r = Request(t, e.time, -1.0, _op(e.rwbs), e.sector, e.nr, e.rwbs, comm or e.comm, e.dev, e.where)
            flight.setdefault(key, deque()).append(r)
            out.append(r)
        elif e.kind == "R":
            key = (e.dev, e.sector, e.nr, _op(e.rwbs))
            q = flight.get(key)
            if q:
                requeued.setdefault(key, deque()).append(q.popleft())
        elif e.kind == "C":
            if not _has_data(e.rwbs, e.nr):
                continue
            q = flight.get((e.dev, e.sector, e.nr, _op(e.rwbs)))
            if not q:
                notes["early_completions"] += 1   # issued before the capture began
                continue
            q.popleft().finish = e.time
    if device is None and len(devices) > 1:
        raise CaptureError(f"the capture holds {len(devices)} devices ("
                           + ", ".join(f"{d}: {n:,} events" for d, n in sorted(devices.items()))
                           + "): choose one with --device MAJOR,MINOR")
    if device is not None and device not in devices:
        raise CaptureError(f"the capture has no events of device {device}; it has "
                           + (", ".join(sorted(devices)) or "none"))
    for r in out:
        if r.finish < 0:
            raise CaptureError(f"{r.where}: the request issued here ({r.rwbs} {r.lba} + {r.sectors}) "
                               "never completes: the capture stops before it (cut short?)")
    out.sort(key=lambda r: r.issue)          # stable: dispatch order among equal queue times
    notes["devices"] = sorted(devices)
    return out, notes


def read_capture(path: str, device: str | None = None) -> tuple[str, list[Request], dict]:
    """(format, requests, notes) of a capture file; CaptureError (one line) if it cannot be read."""
    if device is not None and not re.fullmatch(r"\d+,\d+", device):
        raise CaptureError(f"--device {device!r}: give MAJOR,MINOR (e.g. 7,0 for /dev/loop0)")
    fmt = detect(path)
    try:
        reqs, notes = assemble(READERS[fmt](path), device)
    except OSError as e:
        raise CaptureError(f"cannot read {path}: {e.strerror}") from None
    if not reqs:
        raise CaptureError(f"{path}: no request with data in the capture"
                           + (f" of device {device}" if device else ""))
    return fmt, reqs, notes


# --- the simfs trace ---------------------------------------------------------------------------

def waited(op: str, rwbs: str) -> bool:
    """Whether the host waited for the request: a read that is not read-ahead, a sync or
    FUA write (rwbs letters after R or W: F FUA, A ahead, S sync, M meta)."""
    flags = rwbs.lstrip("F")[1:]
    return "A" not in flags if op == "R" else ("S" in flags or "F" in flags)


def rows(reqs: list[Request]) -> list[tuple]:
    """The trace rows (FIELDS + EXTRA) of the requests, times relative to the first issue."""
    t0 = min(r.issue for r in reqs)
    out = []
    for r in reqs:
        cause = META_CAUSE if "M" in r.rwbs.lstrip("F")[1:] else "data"
        out.append((f"{r.issue - t0:.9f}", f"{r.start - t0:.9f}", f"{r.finish - t0:.9f}", r.op, r.lba,
                    r.sectors, f"{r.start - r.issue:.9f}", *(["0.000000000"] * 6), 0, cause, 0, "all",
                    int(waited(r.op, r.rwbs)), r.rwbs, r.process, r.dev))
    return out


def write_trace(reqs: list[Request], path: str) -> None:
    """Write the requests as a simfs trace (read_trace reads it; plot, latency, export, replay)."""
    with open(outfile.open_stream(path), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS + EXTRA)
        w.writerows(rows(reqs))


def read_extras(path: str) -> dict:
    """The columns read_trace passes over (rwbs, process, device) as lists; empty strings
    for a trace simfs wrote itself."""
    with open(path, newline="") as f:
        rd = csv.DictReader(f)
        got = {k: [] for k in EXTRA[1:]}
        for row in rd:
            for k in got:
                got[k].append(row.get(k) or "")
    return got


def summary(reqs: list[Request]) -> dict:
    """What was imported: requests, reads and writes, bytes, flags, the capture's span."""
    t0 = min(r.issue for r in reqs)
    flags = lambda r: r.rwbs.lstrip("F")[1:]          # noqa: E731
    return {"requests": len(reqs),
            "reads": sum(r.op == "R" for r in reqs), "writes": sum(r.op == "W" for r in reqs),
            "bytes": 512 * sum(r.sectors for r in reqs),
            "metadata": sum("M" in flags(r) for r in reqs),
            "readahead": sum("A" in flags(r) for r in reqs),
            "sync": sum("S" in flags(r) for r in reqs),
            "span": max(r.finish for r in reqs) - t0,
            "processes": sorted({r.process for r in reqs})}
