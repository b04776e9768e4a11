"""`simfs plot`: seekwatcher-style panels of request traces (`-o trace=PATH`) on one time axis.

    simfs plot TRACE [TRACE...] -o out.png [--label A --label B ...] [--title TEXT]

Draws (simfs.cli.seekplot.plot_traces) disk offset vs simulated time, MB/s, seeks/s and IO/s, and
prints seekwatcher's summary per trace: run time, requests, MB, avg MB/s, avg IO/s, avg
seeks/s (a seek: more than 128 sectors between one request's end and the next one's start).
The top-level parser (simfs/cli/main.py) calls `register(subparsers)`. Bad input (a missing file,
a file that is not a simfs trace, a label count that does not match): one line, exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "plot", help="draw request traces (-o trace=PATH) seekwatcher-style",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Draw one or more request traces, written by `simfs mount -o trace=PATH`, as "
                    "seekwatcher-style panels on one simulated-time axis: disk offset of every "
                    "request (reads and writes), throughput (MB/s), seeks per second and IO/s, "
                    "each a rolling average over run-length/25. Prints a summary per trace.",
        epilog="examples:\n"
               "  simfs mount disk.img /mnt/sim -o trace=/tmp/unpack.csv\n"
               "  tar xf src.tar -C /mnt/sim && simfs umount /mnt/sim\n"
               "  simfs plot /tmp/unpack.csv -o unpack.png\n"
               "  simfs plot a.csv b.csv -o ab.png --label first-free --label cg-2010 --title 'tar xf'")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace CSV files")
    p.add_argument("-o", "--output", required=True, metavar="PNG", help="the picture to write")
    p.add_argument("--label", "-l", action="append", default=None,
                   help="legend label of each trace, in order (default: the file names)")
    p.add_argument("--title", "-t", default=None, help="title of the top panel (default: Disk IO)")
    p.set_defaults(func=cmd_plot)
    return p


def _fail(msg: str) -> int:
    print(f"simfs plot: {msg}", file=sys.stderr)
    return 2


def check_trace(path: str) -> str | None:
    """None if `path` looks like a simfs trace, else why not (one line)."""
    from simfs.blockio.trace import FIELDS
    if not os.path.exists(path):
        return f"{path}: no such file"
    if os.path.isdir(path):
        return f"{path}: is a directory, not a trace file"
    try:
        with open(path, "rb") as f:
            head = f.readline(4096)
    except OSError as e:
        return f"{path}: cannot read: {e.strerror}"
    if not head:
        return f"{path}: empty file, not a simfs trace (write one with simfs mount -o trace=PATH)"
    try:
        columns = head.decode("ascii").strip().split(",")
    except UnicodeDecodeError:
        columns = None
    if columns is None or columns[:len(FIELDS)] != list(FIELDS):
        return (f"{path}: not a simfs trace (its first line must be the header "
                f"{','.join(FIELDS[:4])},...; write one with simfs mount -o trace=PATH)")
    return None


def summary_rows(summaries: list[dict]) -> list[tuple]:
    rows = []
    for s in summaries:
        if not s.get("requests"):
            rows.append((s["label"], "0.000", "0", "0.0", "-", "-", "-"))
            continue
        rows.append((s["label"], f"{s['run_time']:.3f}", f"{s['requests']:,}", f"{s['mb']:.1f}",
                     f"{s['avg_mb_s']:.2f}", f"{s['avg_iops']:.1f}", f"{s['avg_seeks_s']:.1f}"))
    return rows


SUMMARY_COLUMNS = ("trace", "run time (s)", "requests", "MB", "avg MB/s", "avg IO/s", "avg seeks/s")


def print_summary(summaries: list[dict], file=None) -> None:
    """seekwatcher's stats table, as plain aligned text (pastes anywhere)."""
    file = file or sys.stdout
    rows = [SUMMARY_COLUMNS] + summary_rows(summaries)
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(SUMMARY_COLUMNS))]
    for n, r in enumerate(rows):
        cells = [str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i]) for i, c in enumerate(r)]
        print("  ".join(cells).rstrip(), file=file)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=file)


def cmd_plot(a) -> int:
    for path in a.traces:
        why = check_trace(path)
        if why:
            return _fail(why)
    if a.label is not None and len(a.label) != len(a.traces):
        return _fail(f"{len(a.label)} --label for {len(a.traces)} traces; give one label per trace or none")
    out_dir = os.path.dirname(os.path.abspath(a.output))
    if not os.path.isdir(out_dir):
        return _fail(f"cannot write {a.output}: directory {out_dir} does not exist")
    if os.path.isdir(a.output):
        return _fail(f"cannot write {a.output}: is a directory")
    labels = a.label or [os.path.basename(p) for p in a.traces]
    from simfs.cli.seekplot import plot_traces
    try:
        summaries = plot_traces(list(a.traces), a.output, labels=labels, title=a.title)
    except ValueError as e:       # a row that does not parse
        return _fail(f"bad trace: {e}")
    except OSError as e:
        return _fail(f"cannot write {a.output}: {e.strerror}")
    print_summary(summaries)
    print(f"wrote {a.output}")
    return 0
