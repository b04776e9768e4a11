"""`simfs plot`: seekwatcher-style panels of request traces (`-o trace=PATH`) on one time axis.

    simfs plot TRACE [TRACE...] -o out.png [--label A --label B ...] [--title TEXT] [--phase NAME...]
    simfs plot TRACE --phase NAME --movie head.gif|head.mp4

Draws (simfs.pictures.seekplot) disk offset vs simulated time (reads and writes in distinct colours),
MB/s, seeks/s and IO/s, and prints seekwatcher's summary per trace: run time, requests, MB, avg
MB/s, avg IO/s, avg seeks/s (a seek: more than 128 sectors between one request's end and the
next one's start). `--phase` cuts phases out of the traces, each from its own t = 0; without it
a trace's phase boundaries are drawn as dashed lines. `--movie` animates one trace (or phase):
GIF with Pillow (comes with matplotlib), MP4 only where ffmpeg is installed.
The top-level parser (simfs/cli/main.py) calls `register(subparsers)`. Bad input (a missing file,
a file that is not a simfs trace, a row that is no request, a label count that does not match, an
empty -o): one line, exit 2.
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
               "  simfs mount disk.img /mnt/sim -o trace=/tmp/all.csv\n"
               "  echo unpack > /mnt/sim/.simfs/mark && tar xf src.tar -C /mnt/sim\n"
               "  echo 1 > /mnt/sim/.simfs/drop_caches && echo readback > /mnt/sim/.simfs/mark\n"
               "  tar cf /dev/zero -C /mnt/sim . && simfs umount /mnt/sim\n"
               "  simfs plot /tmp/all.csv -o all.png          # phases as dashed lines\n"
               "  simfs plot /tmp/all.csv --phase unpack --phase readback -o phases.png\n"
               "  simfs plot /tmp/all.csv --phase readback --movie head.gif\n"
               "  simfs plot /tmp/all.csv --phase readback --json\n"
               "  simfs plot a.csv b.csv -o ab.png --label first-free --label cg-2010 --title 'tar xf'")
    p.add_argument("traces", nargs="+", metavar="TRACE", help="trace CSV files")
    p.add_argument("-o", "--output", default=None, metavar="PNG",
                   help="the picture to write (needed unless --movie or --json)")
    p.add_argument("--label", "-l", action="append", default=None,
                   help="legend label of each trace, in order (default: the file names)")
    p.add_argument("--title", "-t", default=None, help="title of the top panel (default: Disk IO)")
    p.add_argument("--phase", "-p", action="append", default=None, metavar="NAME",
                   help="only this phase (a name given to `echo NAME > MNT/.simfs/mark`), its time from "
                        "the phase's first request; repeat for several phases side by side")
    p.add_argument("--movie", default=None, metavar="OUT.gif|OUT.mp4",
                   help="animate the head over the disk (one trace, at most one phase): GIF, or MP4 with ffmpeg")
    p.add_argument("--frames", type=int, default=80,
                   help=f"movie frames, {FRAMES[0]} to {FRAMES[1]} (default 80, at 8 per second: "
                        f"{FRAMES[1]} is a minute; a GIF holds every frame in memory while it is written)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    from simfs.cli.tables import add_markdown_option
    add_markdown_option(p)
    p.set_defaults(func=cmd_plot)
    return p


FRAMES = (2, 480)       # --frames: a GIF keeps ~2 MB per frame in memory until it is written


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


LBA_LIMIT = 2**48           # sectors: 128 PiB, past any disk model (numpy's int64 takes it)


def _bad_row(path: str, cols: dict) -> str | None:
    """A request is a read or a write (R, W) issued, started and finished at finite times from 0
    on, in that order, of 1 sector or more below LBA_LIMIT: anything else would be drawn as
    neither, or stop numpy mid-drawing (nan, inf, an lba past int64)."""
    import math
    for i, (op, issue, start, finish, lba, n) in enumerate(zip(
            cols["op"], cols["issue"], cols["start"], cols["finish"], cols["lba"], cols["sectors"])):
        where = f"{path}:{i + 2}"
        if op not in ("R", "W"):
            return f"{where}: op is {op!r}, not R or W"
        for k, t in (("issue", issue), ("start", start), ("finish", finish)):
            if not (math.isfinite(t) and t >= 0):
                return f"{where}: {k} is {t!r}, not a time (seconds, 0 or more)"
        if not issue <= start <= finish:
            return f"{where}: issue {issue!r}, start {start!r}, finish {finish!r}: not in that order"
        if not (0 <= lba and 1 <= n and lba + n <= LBA_LIMIT):
            return f"{where}: lba {lba}, sectors {n}: not a request on a disk (lba from 0, 1 sector or " \
                   f"more, below sector 2**48)"
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


def print_summary(summaries: list[dict], markdown: bool = False, file=None) -> None:
    """seekwatcher's stats table, through the shared renderer (rich on a terminal, Markdown
    in a pipe or with --markdown)."""
    from simfs.cli import tables
    tables.echo(tables.Table("seekwatcher's summary", list(SUMMARY_COLUMNS), summary_rows(summaries)),
                markdown=markdown, file=file)


def _check_out(path: str, what: str, traces: list[str]) -> str | None:
    from simfs.cli.common import same_file
    out_dir = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(out_dir):
        return f"cannot write {path}: directory {out_dir} does not exist"
    if os.path.isdir(path):
        return f"cannot write {path}: is a directory"
    if any(same_file(t, path) for t in traces):
        return f"{what} {path} is one of the traces: it would be written over; give another file"
    return None


def cmd_plot(a) -> int:
    import json
    for path in a.traces:
        why = check_trace(path)
        if why:
            return _fail(why)
    if a.label is not None and len(a.label) != len(a.traces):
        return _fail(f"{len(a.label)} --label for {len(a.traces)} traces; give one label per trace or none")
    for path, what in ((a.output, "-o"), (a.movie, "--movie")):
        if path == "":
            return _fail(f"{what} '': an empty path (give a file name, or leave the option out)")
    if a.output is None and a.movie is None and not a.json:
        return _fail("say where to draw: -o PNG, --movie OUT.gif, or --json for the summary alone")
    for path, what in ((a.output, "-o"), (a.movie, "--movie")):
        why = path and _check_out(path, what, a.traces)
        if why:
            return _fail(why)
    if a.output:
        from simfs.cli.common import picture_problem
        why = picture_problem(a.output, "-o")
        if why:
            return _fail(why)
    if a.movie:
        import shutil
        ext = os.path.splitext(a.movie)[1].lower()
        if ext not in (".gif", ".mp4"):
            return _fail(f"--movie {a.movie}: write a .gif (Pillow) or an .mp4 (ffmpeg)")
        if ext == ".mp4" and shutil.which("ffmpeg") is None:
            return _fail("--movie .mp4 needs ffmpeg, which is not installed (apt-get install ffmpeg); "
                         "or write a .gif")
        if len(a.traces) != 1 or (a.phase and len(a.phase) > 1):
            return _fail("--movie animates one trace and at most one --phase")
        if not FRAMES[0] <= a.frames <= FRAMES[1]:
            return _fail(f"--frames {a.frames}: give {FRAMES[0]} to {FRAMES[1]} (a minute at 8 per second)")
    labels = a.label or [os.path.basename(p) for p in a.traces]
    import csv
    from simfs.blockio.trace import read_trace
    from simfs.pictures.seekplot import movie, phase_series, phases_of, plot_series, boundaries
    traces = []
    for p in a.traces:
        try:
            traces.append(read_trace(p))
        except (ValueError, UnicodeDecodeError, csv.Error) as e:   # cut short, or not a number
            return _fail(f"bad trace: {e}")
        why = _bad_row(p, traces[-1])
        if why:
            return _fail(f"bad trace: {why}")
    if a.output and not any(len(cols["start"]) for cols in traces):
        shown = a.traces[0] if len(a.traces) == 1 else "the traces"
        return _fail(f"{shown}: no requests (only the header row): nothing to draw; --json prints the summary")
    series = []
    for path, label, cols in zip(a.traces, labels, traces):
        have = phases_of(cols)
        for ph in a.phase or [None]:
            if ph is not None and ph not in have:
                return _fail(f"{path}: no phase {ph!r}; its phases: {', '.join(have) or 'none (empty trace)'}")
            name = label if ph is None or len(a.phase) == 1 else (ph if len(a.traces) == 1 else f"{label} {ph}")
            series.append((name, phase_series(cols, ph)))
    marks = None
    if not a.phase and len(series) == 1 and len(set(series[0][1]["phase"])) > 1:
        marks = boundaries(series[0][1])
    title = a.title
    if title is None and a.phase:
        title = "Disk IO: " + ", ".join(a.phase)
    summaries = None
    try:
        if a.output:
            summaries = plot_series(series, a.output, title=title, marks=marks, phase_origin=bool(a.phase))
        if a.movie:
            if not len(series[0][1]["start"]):
                return _fail(f"{a.traces[0]}: no requests to animate")
            movie(series[0][1], a.movie, title=title or f"{labels[0]}: the head over the disk", frames=a.frames)
    except OSError as e:
        return _fail(f"cannot write {e.filename or a.output}: {e.strerror}")
    if summaries is None:
        from simfs.pictures.seekplot import summarize
        summaries = [summarize(name, cols) for name, cols in series]
    if a.json:
        print(json.dumps(summaries, indent=1))
    else:
        print_summary(summaries, a.markdown)
        for p in (a.output, a.movie):
            if p:
                print(f"wrote {p}")
    return 0
