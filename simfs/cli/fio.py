"""`simfs fio MNT JOB.fio`: the real fio against a mount, its figures in simulated time.

fio measures the host: its IOPS and latencies are those of FUSE and the page cache, not of the
modelled disk. So each fio job becomes one simulated phase (the issue-43 recipe, done for the
user): a copy of the job file gets, in every job section, `exec_prerun=` running
`simfs ctl MNT mark fio-setup; sync; drop-caches; mark JOBNAME` (fio runs it in the job's
thread after laying out its files, so the lay-out's write-back and fio's page-cache
invalidation, `invalidate=1` by default, are modelled before the job's phase starts), and jobs
run one after another (`stonewall` is added where a job would start beside the previous one:
two jobs at once cannot be two phases); a phase `fio-end` closes the last. fio writes its own JSON (host figures);
from the mount's statistics simfs writes a fio-shaped JSON in simulated time: per job and
direction, fio's own request and byte counts over the job's simulated seconds (`iops`, `bw`
in KiB/s, `bw_bytes`, `runtime` in ms). On a mount with a trace, a direct=1 job's requests are
timed one by one from its phase's rows (tracereplay.host_requests / closed_loop): iodepth of
them in flight through the drive's queue for fio's asynchronous engines, one for the others,
and `lat_ns`, `slat_ns`, `clat_ns` carry fio's fields and 17 percentiles (docs/statistics.md
says exactly what is modelled). Otherwise `clat_ns` is the phase's FUSE read/write latency
histogram (count, max, mean, percentiles 50/90/99/99.9; N is FUSE's count). With numjobs > 1
the clones share one name: the job's time runs from the first clone's mark to the last one's end.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from simfs.blockio.trace import read_trace
from simfs.cli import tables
from simfs.cli.common import Fmt, fail

SETUP = "fio-setup"
END = "fio-end"
_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*$")
_OPTION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:=\s*(.*?))?\s*$")
_PCT = {"p50": "50.000000", "p90": "90.000000", "p99": "99.000000", "p99.9": "99.900000"}


def register(sub) -> None:
    s = sub.add_parser("fio", help="run fio on a mount; its figures in simulated time", formatter_class=Fmt,
                       description="Run the real fio with JOB.fio against the mounted simfs MNT, one "
                                   "simulated phase per fio job (jobs one after another), and write "
                                   "beside fio's own JSON (OUT/fio.json, host figures) a fio-shaped "
                                   "JSON whose iops, bw and clat_ns are simulated (OUT/fio-sim.json). "
                                   "The job's files go to MNT unless the job names a directory or "
                                   "filename.",
                       epilog="examples:\n  simfs fio /mnt/sim examples/fio/rand-read.fio --out fio-out\n"
                              "  simfs fio /mnt/sim job.fio --json     # the simulated JSON on stdout")
    s.add_argument("mountpoint", metavar="MNT")
    s.add_argument("jobfile", metavar="JOB.fio")
    s.add_argument("--out", metavar="DIR", default="fio-out",
                   help="where fio.json, fio-sim.json, the job file run and fio's prerun logs go "
                        "(made if missing; default: fio-out)")
    s.add_argument("--json", action="store_true", help="print the simulated fio-shaped JSON")
    tables.add_markdown_option(s)
    s.set_defaults(func=cmd_fio)


def sections(text: str) -> list[tuple[str, dict]]:
    """The job file's sections in order: (header, {option: value or None})."""
    out: list[tuple[str, dict]] = []
    for line in text.splitlines():
        if line.lstrip().startswith((";", "#")):
            continue
        m = _SECTION.match(line)
        if m:
            out.append((m.group(1).strip(), {}))
            continue
        m = _OPTION.match(line)
        if m and out:
            out[-1][1][m.group(1).lower()] = m.group(2)
    return out


def _simfs() -> str:
    return f"{shlex.quote(sys.executable)} -m simfs.cli"


def prepare(text: str, mnt: str) -> tuple[str, list[str], list[str]]:
    """(the job file to run, its jobs' names, notes). ValueError when a job has its own
    exec_prerun (the phase mark needs it)."""
    secs = sections(text)
    glob = {}
    for name, opts in secs:
        if name == "global":
            glob.update(opts)
    names, notes, inject = [], [], {}
    serial_global = "stonewall" in glob or "wait_on" in glob
    for i, (name, opts) in enumerate(s for s in secs if s[0] != "global"):
        if "exec_prerun" in opts or "exec_prerun" in glob:
            raise ValueError(f"job {name} has its own exec_prerun; simfs fio needs it to mark the "
                             "job's phase (run the command from exec_postrun, or mark by hand)")
        job = opts.get("name") or name          # fio names a job by its section (global name= is not used)
        names.append(job)
        invalidate = opts.get("invalidate", glob.get("invalidate", "1"))
        q = shlex.quote(mnt)
        steps = [f"{_simfs()} ctl {q} mark {SETUP}", f"{_simfs()} ctl {q} sync"]
        if invalidate not in ("0",):
            steps.append(f"{_simfs()} ctl {q} drop-caches")
        steps.append(f"{_simfs()} ctl {q} mark {shlex.quote(job)}")
        lines = [f"exec_prerun={' && '.join(steps)}"]
        if i and not serial_global and not ({"stonewall", "wait_for", "wait_on"} & set(opts)):
            lines.append("stonewall")
            notes.append(f"job {name} starts after the one before it (stonewall added): one phase per job")
        inject[(name, i)] = lines
    out, i = [], -1
    for line in text.splitlines():
        out.append(line)
        m = _SECTION.match(line) if not line.lstrip().startswith((";", "#")) else None
        if m and m.group(1).strip() != "global":
            i += 1
            out.extend(inject[(m.group(1).strip(), i)])
    return "\n".join(out) + "\n", names, notes


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


def table(doc: dict) -> tables.Table:
    """The simulated figures per job and direction (fio's count of I/Os, simulated IOPS beside
    fio's host IOPS, MB/s and the p50/p99 completion latency in ms), numbers as fio prints them."""
    rows = []
    for j in doc["jobs"]:
        for d in ("read", "write"):
            x = j.get(d)
            if not x or not x["total_ios"]:
                continue
            pct = x["clat_ns"].get("percentile", {})
            rows.append((j["jobname"], d, f"{x['total_ios']:,}", tables.number(x["iops"]),
                         tables.number(j["host"][d]["iops"] or 0), tables.number(x["bw_bytes"] / 1e6),
                         tables.ms(pct.get("50.000000", 0) / 1e9), tables.ms(pct.get("99.000000", 0) / 1e9)))
    return tables.Table("fio's jobs in simulated time", ["job", "dir", "ios", "sim IOPS", "host IOPS", "sim MB/s",
                                                         "sim p50 ms", "sim p99 ms"], rows,
                        right=[False, False] + [True] * 6)


def cmd_fio(a) -> int:
    mnt = os.path.abspath(a.mountpoint)
    if not os.path.isfile(os.path.join(mnt, ".simfs", "stats")):
        return fail(f"{a.mountpoint} is not a simfs mount (no .simfs/stats)", "fio")
    fio = shutil.which("fio")
    if not fio:
        return fail("fio is not installed (Debian: apt-get install fio)", "fio")
    try:
        text = Path(a.jobfile).read_text()
    except (OSError, UnicodeDecodeError) as e:
        return fail(f"cannot read {a.jobfile}: {getattr(e, 'strerror', None) or e}", "fio")
    try:
        job, names, notes = prepare(text, mnt)
    except ValueError as e:
        return fail(str(e), "fio")
    if not names:
        return fail(f"{a.jobfile} has no job section", "fio")
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        return fail(f"--out {a.out} is not a directory", "fio")
    out.mkdir(parents=True, exist_ok=True)
    run = out / ("simfs-" + Path(a.jobfile).name)
    run.write_text(job)
    check = subprocess.run([fio, "--parse-only", str(run.resolve())], capture_output=True, text=True, cwd=out)
    if check.returncode:
        last = (check.stderr.strip() or check.stdout.strip() or "fio refused it").splitlines()[-1]
        return fail(f"{a.jobfile}: {last}", "fio")
    for n in notes:
        print(f"simfs fio: {n}", file=sys.stderr)
    r = subprocess.run([fio, "--output-format=json", "--output=fio.json", f"--directory={mnt}", run.name],
                       cwd=out, capture_output=True, text=True)
    if r.returncode:
        last = (r.stderr.strip() or "no message").splitlines()[-1]
        print(f"simfs fio: fio failed (status {r.returncode}): {last}", file=sys.stderr)
        return 1
    with open(os.path.join(mnt, ".simfs", "mark"), "wb") as f:     # closes the last job's phase
        f.write(END.encode())
    with open(os.path.join(mnt, ".simfs", "stats"), "rb") as f:
        stats = json.loads(f.read())
    try:
        fio_doc = json.loads((out / "fio.json").read_text())
    except ValueError:
        print(f"simfs fio: fio wrote no JSON to {out / 'fio.json'}", file=sys.stderr)
        return 1
    with open(os.path.join(mnt, ".simfs", "info"), "rb") as f:
        opts = json.loads(f.read()).get("options") or {}
    cols = None
    if opts.get("trace"):
        try:
            cols = read_trace(opts["trace"])
        except (OSError, ValueError) as e:
            print(f"simfs fio: the mount's trace is unreadable ({getattr(e, 'strerror', None) or e}): "
                  "figures from the statistics", file=sys.stderr)
    late: list[str] = []
    doc = simulate(fio_doc, stats, settings(text), cols, opts.get("disk"), late)
    for n in late:
        print(f"simfs fio: {n}", file=sys.stderr)
    (out / "fio-sim.json").write_text(json.dumps(doc, indent=2) + "\n")
    if a.json:
        print(json.dumps(doc, indent=2))
    else:
        tables.echo(table(doc), a.markdown)
    return 0
