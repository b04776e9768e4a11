"""`simfs trace`: a request trace (`-o trace=PATH`) for other tools, and its latency percentiles.

  export TRACE --format blktrace OUT   binary blktrace files OUT.blktrace.N (simfs/blockio/blktrace.py)
                                       for blkparse, btt, iowatcher, seekwatcher
  latency TRACE                        per phase and disk request kind: count, mean, p50 ... max
                                       of the requests' simulated latency (finish - issue)
"""

from __future__ import annotations

import json
import os

from simfs.cli.common import Fmt, fail

FORMATS = ("blktrace",)


def register(sub) -> None:
    s = sub.add_parser("trace", help="export a request trace (blktrace) or show its latency percentiles",
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
