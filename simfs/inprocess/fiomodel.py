"""fio's jobs in simulated time: a job file's sections and settings, and a job's direct I/O
timed from a mount's trace with fio's iodepth in flight through the drive's queue (a closed loop
of one host thread, as fio's asynchronous engines keep it), as fio's latency objects
(lat_ns, slat_ns, clat_ns with its 17 percentiles). `simfs fio` (simfs/cli/fio.py) runs the
real fio and prints; benchmarks/bench_fio_depth sets the model beside DiskSim."""

from __future__ import annotations

import math
import re

SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_OPTION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:=\s*(.*?))?\s*$")
_PCT = {"p50": "50.000000", "p90": "90.000000", "p99": "99.000000", "p99.9": "99.900000"}


def sections(text: str) -> list[tuple[str, dict]]:
    """The job file's sections in order: (header, {option: value or None})."""
    out: list[tuple[str, dict]] = []
    for line in text.splitlines():
        if line.lstrip().startswith((";", "#")):
            continue
        m = SECTION.match(line)
        if m:
            out.append((m.group(1).strip(), {}))
            continue
        m = _OPTION.match(line)
        if m and out:
            out[-1][1][m.group(1).lower()] = m.group(2)
    return out


def _phases(stats: dict, name: str) -> list[dict]:
    return [p for p in stats["time"]["phases"] if p["name"] == name]


#: fio's default percentile_list (fio's `--percentile_list` default, stat.c)
PERCENTILES = (1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99)
ASYNC_ENGINES = ("libaio", "io_uring", "posixaio")
_TRUE = ("1", "true", "yes", "on")
_BATCH = ("iodepth_batch", "iodepth_batch_submit", "iodepth_batch_complete",
          "iodepth_batch_complete_min", "iodepth_batch_complete_max", "iodepth_low")


def percentile_key(p: float) -> str:
    """fio's key for a percentile: "99.900000"."""
    return f"{p:f}"


def nearest_rank(ordered: list, p: float):
    """fio's percentile of sorted values: the first value at which the running count reaches
    p/100 of the count (stat.c, calc_clat_percentiles; numpy's method="inverted_cdf")."""
    need = p / 100.0 * len(ordered)
    k = max(1, math.ceil(need))
    return ordered[min(k, len(ordered)) - 1]


def lat_stats(ns: list[int]) -> dict:
    """fio's latency object from whole nanoseconds: min, max, mean, stddev (n - 1, as fio's
    running variance), N and the 17 default percentiles, keyed as fio keys them."""
    if not ns:
        return {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    v = sorted(ns)
    n = len(v)
    mean = sum(v) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0
    return {"min": v[0], "max": v[-1], "mean": mean, "stddev": sd, "N": n,
            "percentile": {percentile_key(p): nearest_rank(v, p) for p in PERCENTILES}}


def _summary_lat(summary: dict | None) -> dict:
    """A latency object from the statistics' histogram summary (no trace): its count, max,
    mean and the four percentiles it keeps (50, 90, 99, 99.9)."""
    if not summary or not summary.get("count"):
        return {"min": 0, "max": 0, "mean": 0.0, "N": 0}
    return {"N": summary["count"], "max": round(summary["max"] * 1e9), "mean": summary["mean"] * 1e9,
            "percentile": {v: round(summary[k] * 1e9) for k, v in _PCT.items()}}


def settings(text: str) -> dict:
    """Per job name, what decides how its I/O is timed: ioengine, iodepth, direct, numjobs,
    invalidate and any iodepth_batch* / iodepth_low given (the job's section over [global])."""
    secs = sections(text)
    glob: dict = {}
    out = {}
    for name, opts in secs:
        if name == "global":
            glob.update(opts)
            continue
        o = {**glob, **opts}
        direct = (o.get("direct") or "0").lower() in _TRUE or (o.get("buffered") or "1").lower() in ("0", "false", "no", "off")
        try:
            depth = int(o.get("iodepth") or 1)
            numjobs = int(o.get("numjobs") or 1)
        except ValueError:
            depth = numjobs = 1
        out[o.get("name") if "name" in opts else name] = {
            "ioengine": (o.get("ioengine") or "psync").split(":")[0], "iodepth": max(1, depth),
            "direct": direct, "numjobs": numjobs, "invalidate": (o.get("invalidate") or "1") not in ("0",),
            "batch": {k: o[k] for k in _BATCH if k in o}}
    return out


def engine_depth(s: dict) -> tuple[int, bool]:
    """(requests in flight, asynchronous): fio's asynchronous engines keep iodepth in flight
    with direct I/O; buffered, the kernel completes libaio's I/O inside io_submit, and the
    synchronous engines have one, so depth is 1 for them."""
    if s["ioengine"] in ASYNC_ENGINES:
        return (s["iodepth"] if s["direct"] else 1), True
    return 1, False


def model_job(s: dict, cols: dict, phase: dict, disk: str, fuse_direct: int) -> tuple[dict | None, str]:
    """The job's direct I/O timed from its phase's trace rows: (result, "") or (None, why not).
    result: seconds, depth, and per direction lists of (slat, clat, lat) in nanoseconds."""
    from disk_models import make_disk
    from disk_models.queue import DriveQueue
    from simfs.blockio import tracereplay
    if not s["direct"]:
        return None, "buffered I/O: latencies are the FUSE requests' (the cache serves some)"
    name, start = phase["name"], phase["start"]
    rows = [i for i, p in enumerate(cols["phase"]) if p == name]
    requests, background = tracereplay.host_requests(cols, rows, start)
    if len(requests) != fuse_direct:
        return None, (f"{len(requests)} direct requests in the trace for {fuse_direct} FUSE direct reads and "
                      "writes (an I/O split on the drive, or a hole): timed as run, one at a time")
    depth, is_async = engine_depth(s)
    if depth == 1:
        timed = _captured(cols, rows, start)       # one at a time: as the mount ran it
    else:
        q = DriveQueue(make_disk(disk))
        first = rows[0] if rows else len(cols["op"])
        last = 0.0
        for i in range(first):                     # the drive as the phase found it
            r = q.disk.submit(cols["op"][i], cols["lba"][i], cols["sectors"][i], cols["issue"][i])
            last = max(last, r.finish)
        q.disk.flush(max(last, q.disk.busy_until))
        if s["invalidate"]:
            q.disk.drop_buffer(start)
        timed = tracereplay.closed_loop(requests, q, depth, start, background)
    ops = [req[-1][1] for req in requests]
    end_captured = phase["start"] + phase["elapsed"]
    tail = end_captured - max((c for _, _, c, _ in _captured(cols, rows, start)), default=start)
    seconds = max((c for _, _, c, _ in timed), default=start) - start + max(tail, 0.0)
    out: dict = {"seconds": seconds, "depth": depth, "read": [], "write": []}
    for op, (sub, arr, fin, _) in zip(ops, timed):
        ns = lambda x: round(x * 1e9)
        lat = ns(fin - sub)
        slat = ns(arr - sub) if is_async else None
        clat = ns(fin - arr) if is_async else lat
        out["read" if op == "R" else "write"].append((slat, clat, lat))
    return out, ""


def _captured(cols: dict, rows: list, start: float) -> list:
    """(submitted, arrived, finished, None) of each host request as the mount ran it."""
    issue, finish, cause, wait = cols["issue"], cols["finish"], cols["cause"], cols["wait"]
    out, free, arrived = [], start, None
    for i in rows:
        if cause[i] != "data" and not wait[i]:
            continue
        if arrived is None:
            arrived = issue[i]
        if cause[i] == "data":
            out.append((free, arrived, finish[i], None))
            free, arrived = finish[i], None
    return out


def _direction(host: dict, seconds: float, lats: dict) -> dict:
    ios, nbytes = host.get("total_ios", 0), host.get("io_bytes", 0)
    rate = (lambda n: n / seconds) if seconds > 0 else (lambda n: 0.0)
    return {"io_bytes": nbytes, "io_kbytes": nbytes // 1024, "total_ios": ios,
            "runtime": round(seconds * 1000), "iops": rate(ios), "bw_bytes": rate(nbytes),
            "bw": rate(nbytes) / 1024, **lats}


def _lats(timed: list | None, summary: dict | None) -> dict:
    if timed is None:
        return {"clat_ns": _summary_lat(summary)}
    slat = [s for s, _, _ in timed if s is not None]
    return {"slat_ns": lat_stats(slat), "clat_ns": lat_stats([c for _, c, _ in timed]),
            "lat_ns": lat_stats([x for _, _, x in timed])}


def simulate(fio_doc: dict, stats: dict, job_settings: dict | None = None, cols: dict | None = None,
             disk: str | None = None, notes: list | None = None) -> dict:
    """fio's JSON with every job's figures from simulated time (see the module's docstring).
    With the mount's trace (`cols`) and the job file's settings, a direct-I/O job is timed per
    request (iodepth in flight for fio's asynchronous engines); without, from the statistics."""
    jobs = []
    for j in fio_doc.get("jobs", []):
        ph = _phases(stats, j["jobname"])
        if not ph:
            jobs.append({"jobname": j["jobname"], "error": "no simulated phase of this name"})
            continue
        seconds = ph[-1]["start"] + ph[-1]["elapsed"] - ph[0]["start"]
        main = max(ph, key=lambda p: sum(o["count"] for o in p["operations"].values()))
        ops = main.get("latency", {}).get("operations", {})
        s = (job_settings or {}).get(j["jobname"])
        model, why = None, "the mount has no trace (-o trace=PATH)" if cols is None else ""
        if s is not None and cols is not None:
            if len(ph) > 1 or s["numjobs"] > 1:
                why = "numjobs > 1: its clones are not timed together (one phase per clone)"
            else:
                fuse = sum(main["operations"].get(k, {}).get("count", 0) for k in ("read_direct", "write_direct"))
                model, why = model_job(s, cols, main, disk, fuse)
        if model is not None:
            seconds = model["seconds"]
        depth = model["depth"] if model else 1
        if s is not None and notes is not None and model is None and engine_depth(s)[0] > 1:
            notes.append(f"job {j['jobname']}: iodepth={s['iodepth']} not modelled ({why}); one request at a time")
        if s is not None and notes is not None and s["batch"] and depth > 1:
            notes.append(f"job {j['jobname']}: {', '.join(s['batch'])} not modelled (fio's defaults are)")
        timing = ({"requests": "per request from the trace", "iodepth": depth} if model else
                  {"requests": "the FUSE requests' histogram", "iodepth": 1, "why": why})
        jobs.append({"jobname": j["jobname"], "groupid": j.get("groupid", 0), "sim_seconds": seconds,
                     "simfs_timing": timing,
                     "read": _direction(j.get("read", {}), seconds,
                                        _lats(model["read"] if model else None,
                                              ops.get("read") or ops.get("read_direct"))),
                     "write": _direction(j.get("write", {}), seconds,
                                         _lats(model["write"] if model else None,
                                               ops.get("write") or ops.get("write_direct"))),
                     "counters": {k: main["counters"].get(k, 0) for k in ("disk_reads", "disk_writes", "seeks")},
                     "host": {d: {k: j.get(d, {}).get(k) for k in ("iops", "bw", "runtime")}
                              for d in ("read", "write")}})
    return {"fio version": fio_doc.get("fio version"),
            "simfs": {"time": "simulated", "note": NOTE},
            "jobs": jobs}


NOTE = ("io_bytes and total_ios are fio's; runtime, iops and bw are over the job's simulated time; "
        "with the mount's trace, a direct-I/O job's lat_ns/slat_ns/clat_ns are per request (slat: the host's "
        "time to hand it to the drive, clat: from there to its completion) with iodepth in flight for "
        "libaio, io_uring and posixaio; otherwise clat_ns is the FUSE read/write requests' histogram; "
        "host holds fio's own figures")
