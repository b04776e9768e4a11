"""`simfs trace`: a request trace (`-o trace=PATH`) for other tools, and its latency percentiles.

  export TRACE --format blktrace OUT   binary blktrace files OUT.blktrace.N (simfs/blockio/blktrace.py)
                                       for blkparse, btt, iowatcher, seekwatcher
  latency TRACE                        per phase and disk request kind: count, mean, p50 ... max
                                       of the requests' simulated latency (finish - issue)
  import CAPTURE -o TRACE              a kernel's request stream (tracefs text, blkparse text,
                                       blktrace binary: simfs/blockio/traceimport.py) as a trace
  replay TRACE --disk D                the stream timed on a modelled drive, printed as
                                       `simfs stats` prints a phase (simfs/blockio/tracereplay.py)
"""

from __future__ import annotations

import json
import os

from simfs.cli.common import Fmt, fail

FORMATS = ("blktrace",)


def register(sub) -> None:
    s = sub.add_parser("trace", help="export, import, replay a request trace, or show its latency percentiles",
                       formatter_class=Fmt,
                       description="Work on a request trace written with -o trace=PATH (one CSV row "
                                   "per disk request).",
                       epilog="examples:\n  simfs trace export run.trace --format blktrace run\n"
                              "  simfs trace latency run.trace")
    ts = s.add_subparsers(dest="trace_cmd", metavar="COMMAND", required=True)
    e = ts.add_parser("export", formatter_class=Fmt,
                      help="write the trace in blktrace's binary format",
                      description="Write the trace as the binary files blktrace writes "
                                  "(OUT.blktrace.0: simfs has one queue), with the events a Linux "
                                  "block device emits per request: Q, G, I at issue, D when the "
                                  "drive starts it, C at its finish, in simulated time. Then print "
                                  "simfs's own Q2C and D2C means and seek distances, the figures "
                                  "btt computes from the files. iowatcher -t OUT -o OUT.svg draws "
                                  "them.",
                      epilog="examples:\n  simfs trace export run.trace --format blktrace run\n"
                             "  blkparse -i run -d run.bin > /dev/null && btt -i run.bin")
    e.add_argument("trace", metavar="TRACE")
    e.add_argument("--format", choices=FORMATS, default="blktrace", help="output format")
    e.add_argument("out", metavar="OUT", help="base name of the files written (OUT.blktrace.0)")
    e.add_argument("--json", action="store_true", help="print what was written as JSON")
    e.set_defaults(func=cmd_export)
    la = ts.add_parser("latency", formatter_class=Fmt,
                       help="latency percentiles of the trace's disk requests",
                       description="Count, mean, p50, p90, p99, p99.9 and max of the simulated "
                                   "latency (finish - issue) of the trace's requests, per phase and "
                                   "kind (R or W and the block kind that caused it), from an "
                                   "HDR-style histogram (simfs/blockio/histogram.py).")
    la.add_argument("trace", metavar="TRACE")
    la.add_argument("--json", action="store_true", help="print the figures as JSON")
    la.set_defaults(func=cmd_latency)
    im = ts.add_parser("import", formatter_class=Fmt,
                       help="read a kernel's request stream (tracefs, blkparse, blktrace) as a trace",
                       description="Read the requests a Linux block device was sent, from a tracefs "
                                   "capture (/sys/kernel/tracing/trace with block_rq_issue and "
                                   "block_rq_complete), blkparse's text output or blktrace's binary "
                                   "files (CAPTURE is one of them or their base name), told apart by "
                                   "their content, and write them as a simfs trace: each request "
                                   "with its issue, dispatch and completion times, R or W, its rwbs "
                                   "flags (M metadata, A read-ahead, S sync, F FUA), its process. "
                                   "Flushes and discards have no row (they are counted). A line "
                                   "that does not parse or a request that never completes (a "
                                   "capture cut short) is an error naming the line.",
                       epilog="examples:\n"
                              "  simfs trace import /sys/kernel/tracing/trace --device 7,0 -o find.trace\n"
                              "  simfs trace import sda.blktrace.0 -o sda.trace     # blktrace -d /dev/sda\n"
                              "  blkparse -i sda > sda.txt && simfs trace import sda.txt -o sda.trace\n"
                              "  simfs trace replay find.trace --disk sas10k")
    im.add_argument("capture", metavar="CAPTURE")
    im.add_argument("-o", dest="out", metavar="TRACE", required=True, help="the simfs trace to write")
    im.add_argument("--device", metavar="MAJOR,MINOR",
                    help="keep this device's requests (needed when the capture holds several)")
    im.add_argument("--json", action="store_true", help="print what was imported as JSON")
    im.set_defaults(func=cmd_import)
    rp = ts.add_parser("replay", formatter_class=Fmt,
                       help="time a request stream on a modelled drive",
                       description="Give the trace's requests to a modelled drive (one at a time, "
                                   "in the trace's order) and print what `simfs stats` prints for a "
                                   "phase: simulated time, requests, seeks, where the disk's time "
                                   "went, latency percentiles. A request issued while an earlier "
                                   "one was still outstanding in the capture queues behind it; one "
                                   "issued after earlier ones completed waits for their simulated "
                                   "completion plus the gap the capture shows (--gaps). Replaying "
                                   "a trace simfs wrote on its own drive gives the run's disk time. "
                                   "docs/trace-replay.md says what this cannot know.",
                       epilog="examples:\n  simfs trace replay find.trace --disk sas10k\n"
                              "  simfs trace replay find.trace --disk sata7200,rpm=5400 --gaps none\n"
                              "  simfs trace replay find.trace --disk wd-ears --json | jq .time.total.elapsed\n"
                              "  simfs trace replay find.trace --disk wd1200jb --out find-on-wd.csv\n"
                              "  simfs plot find-on-wd.csv run.trace -o both.png --label kernel --label simfs")
    rp.add_argument("trace", metavar="TRACE")
    rp.add_argument("--disk", metavar="D", required=True,
                    help="a drive as -o disk= names it (simfs disks list): preset[,key=value...]")
    rp.add_argument("--gaps", default="keep", metavar="keep|none|scale=F",
                    help="the host's time between a completion (or an issue) and the next issue: "
                         "keep it (default: it is CPU and application time, which the drive does "
                         "not change), drop it (a closed loop: the drive's time alone) or scale it")
    rp.add_argument("--json", action="store_true", help="print the statistics as JSON")
    rp.add_argument("--out", metavar="FILE",
                    help="also write the replayed stream as a simfs trace (each request's simulated "
                         "issue, finish and time split on this drive), for `simfs plot` beside "
                         "another run's trace")
    rp.set_defaults(func=cmd_replay)


def _read(path: str, cmd: str):
    from simfs.blockio.trace import read_trace
    if not os.path.isfile(path):
        raise ValueError(f"{path} does not exist" if not os.path.exists(path) else f"{path} is not a file")
    try:
        return read_trace(path)
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a simfs trace (not text)") from None
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None


def cmd_export(a) -> int:
    from simfs.blockio.blktrace import export, own_figures
    try:
        cols = _read(a.trace, "trace export")
    except ValueError as e:
        return fail(str(e), "trace export")
    d = os.path.dirname(a.out) or "."
    if not os.path.isdir(d):
        return fail(f"{d} is not a directory (OUT is a base name: OUT.blktrace.0 is written)", "trace export")
    try:
        out = export(cols, a.out)
    except OSError as e:
        return fail(f"cannot write {a.out}.blktrace.0: {e.strerror}", "trace export")
    out["simfs"] = own_figures(cols)
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    f = out["simfs"]
    print(f"wrote {', '.join(out['files'])}: {out['events']:,} events of {out['requests']:,} requests")
    if f["requests"]:
        print(f"simfs's figures (btt's names): Q2C mean {f['q2c']:.9f} s, D2C mean {f['d2c']:.9f} s, "
              f"Q2D mean {f['q2d']:.9f} s; mean seek distance {f['q2q_seek_mean']:.1f} sectors (Q2Q), "
              f"{f['d2d_seek_mean']:.1f} (D2D)")
        if f["overlapping_in_flight"]:
            print(f"note: {f['overlapping_in_flight']:,} requests overlap an earlier request still in flight "
                  "(a trace from before simfs modelled the buffer lock, or a plug-in's requests); btt pairs "
                  "events by sector, so its Q2C and D2C will differ from these figures")
    return 0


def latency_by_phase(cols: dict) -> dict:
    """phase -> kind -> summary (count, mean, percentiles, max) of finish - issue."""
    from simfs.blockio.histogram import Histogram
    hists: dict = {}
    for op, cause, phase, q, f in zip(cols["op"], cols["cause"], cols["phase"], cols["issue"], cols["finish"]):
        per = hists.setdefault(phase, {})
        for kind in (f"{op} {cause}", "all"):
            per.setdefault(kind, Histogram()).add(f - q)
    return {p: {k: h.summary() for k, h in sorted(kinds.items())} for p, kinds in hists.items()}


def cmd_latency(a) -> int:
    from simfs.cli.stats import latency_table
    try:
        cols = _read(a.trace, "trace latency")
    except ValueError as e:
        return fail(str(e), "trace latency")
    out = latency_by_phase(cols)
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    for phase, kinds in out.items():
        print(latency_table(f"phase {phase}: disk request latency (finish - issue)", kinds))
        print()
    return 0


def cmd_import(a) -> int:
    from simfs.blockio.traceimport import CaptureError, read_capture, summary, write_trace
    from simfs.cli.common import same_file
    if os.path.exists(a.out) and os.path.exists(a.capture) and same_file(a.capture, a.out):
        return fail(f"-o {a.out} is the capture itself", "trace import")
    d = os.path.dirname(a.out) or "."
    if not os.path.isdir(d):
        return fail(f"{d} is not a directory", "trace import")
    try:
        fmt, reqs, notes = read_capture(a.capture, a.device)
    except CaptureError as e:
        return fail(str(e), "trace import")
    try:
        write_trace(reqs, a.out)
    except OSError as e:
        return fail(f"cannot write {a.out}: {e.strerror or e}", "trace import")
    out = {"capture": a.capture, "format": fmt, "trace": a.out, **summary(reqs),
           "skipped_without_data": notes["no_data"], "skipped_early_completions": notes["early_completions"]}
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{a.capture} ({fmt}): {out['requests']:,} requests ({out['reads']:,} reads, "
          f"{out['writes']:,} writes, {out['bytes'] / 2**20:,.1f} MiB; {out['metadata']:,} metadata, "
          f"{out['readahead']:,} read-ahead, {out['sync']:,} sync) over {out['span']:.6f} s "
          f"by {', '.join(out['processes'])}; wrote {a.out}")
    skipped = [f"{notes['no_data']:,} flushes or discards (no data)" if notes["no_data"] else "",
               f"{notes['early_completions']:,} completions of requests issued before the capture"
               if notes["early_completions"] else ""]
    if any(skipped):
        print("skipped: " + "; ".join(s for s in skipped if s))
    return 0


def _write_replayed(path: str, cols: dict, results: list) -> str:
    """The replayed rows as a simfs trace at PATH; the reason it could not be written, or ""."""
    from simfs.blockio.trace import TraceWriter
    try:
        w = TraceWriter(path)
    except OSError as e:
        return f"--out {path}: {e.strerror or e}"
    for i, r in enumerate(results):
        w.record(cols["op"][i], cols["lba"][i], cols["sectors"][i], r, cols["cause"][i],
                 cols["ino"][i], cols["phase"][i], bool(cols["wait"][i]))
    w.close()
    return w.error


def cmd_replay(a) -> int:
    from simfs.blockio.traceimport import read_extras
    from simfs.blockio.tracereplay import gap_factor, replay
    from simfs.cli.stats import time_tables
    try:
        g = gap_factor(a.gaps)
    except ValueError as e:
        return fail(str(e), "trace replay")
    try:
        from disk_models import make_disk
        disk = make_disk(a.disk)
    except (ValueError, KeyError) as e:
        return fail(f"--disk {a.disk}: {str(e).strip(chr(39))}", "trace replay")
    try:
        cols = _read(a.trace, "trace replay")
        extras = read_extras(a.trace)
    except ValueError as e:
        return fail(str(e), "trace replay")
    if not cols["op"]:
        return fail(f"{a.trace}: no requests", "trace replay")
    try:
        out = replay(cols, disk, g, extras)
    except ValueError as e:
        return fail(str(e), "trace replay")
    if a.out and (err := _write_replayed(a.out, cols, out["results"])):
        return fail(err, "trace replay")
    t = out["time"]
    t.update({"trace": a.trace, "gaps": a.gaps})
    if a.json:
        print(json.dumps({"trace": a.trace, "disk": disk.name, "gaps": a.gaps, "requests": out["requests"],
                          "elapsed": out["elapsed"], "captured_elapsed": out["captured_elapsed"],
                          "time": t}, indent=1))
        return 0
    print(f"{a.trace}: {out['requests']:,} requests replayed on {disk.name} (gaps {a.gaps}): "
          f"{out['elapsed']:.6f} simulated s from the first issue to the last completion "
          f"(the trace: {out['captured_elapsed']:.6f} s)\n")
    print("\n\n".join(time_tables(t)))
    return 0
