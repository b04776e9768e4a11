"""`simfs disks`: list the disk-model presets, show one with provenance, or probe it.

    simfs disks [list] [--json]         one line per preset
    simfs disks show NAME[,k=v...]      every parameter, its value and where it came from [--json]
    simfs disks probe NAME[,k=v...] [-o probe.png] [--json]
    simfs disks validate TRACE --disk NAME[,k=v...] [--disksim OUT.outv] [--plot OUT.png] [--json]

The top-level parser (simfs/cli/main.py) calls `register(subparsers)`; each handler takes the parsed
arguments and returns an exit code.  Bad names or parameters: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers) -> argparse.ArgumentParser:
    from simfs.cli.common import Fmt
    p = subparsers.add_parser("disks", help="list disk-model presets, show or probe one", formatter_class=Fmt,
                              description="Disk-model presets: list them, show one with the provenance "
                                          "of every figure, or run a geometry probe through the model.",
                              epilog="examples:\n  simfs disks\n  simfs disks list --json\n"
                                     "  simfs disks show wd1200jb\n  simfs disks probe sata7200")
    p.add_argument("--json", action="store_true", help="print the presets as JSON")
    p.set_defaults(func=cmd_list)
    sub = p.add_subparsers(dest="disks_command", metavar="{list,show,probe,validate}")
    lst = sub.add_parser("list", help="one line per preset (the same as `simfs disks`)", formatter_class=Fmt,
                         description="One line per preset: its name and what drive it stands for.",
                         epilog="examples:\n  simfs disks list\n  simfs disks list --json")
    lst.add_argument("--json", action="store_true", help="print the presets as JSON")
    lst.set_defaults(func=cmd_list)
    show = sub.add_parser("show", help="every parameter of a preset, with provenance", formatter_class=Fmt,
                          description="Print every parameter of a preset (overrides allowed: "
                                      "'sata7200,rpm=5400'), where each value came from, and the "
                                      "figures the model derives from them. Sources cited as "
                                      "docs/reference/disk-models.md N.N are sections of that file.",
                          epilog="examples:\n  simfs disks show wd1200jb\n  simfs disks show sata7200,rpm=5400\n"
                                 "  simfs disks show wd-ears --json")
    show.add_argument("name", help="preset, optionally with overrides: NAME[,key=value...]")
    show.add_argument("--json", action="store_true", help="print the parameters as JSON")
    show.set_defaults(func=cmd_show)
    probe = sub.add_parser("probe", help="microbenchmark a preset through the model", formatter_class=Fmt,
                           description="Seek time vs distance, sequential rate vs LBA, random 4 KiB IOPS "
                                       "and the read-modify-write penalty, measured through the model.",
                           epilog="examples:\n  simfs disks probe sata7200\n"
                                  "  simfs disks probe wd-ears --json\n"
                                  "  simfs disks probe wd1200jb -o probe.png")
    probe.add_argument("name", help="preset, optionally with overrides: NAME[,key=value...]")
    probe.add_argument("-o", "--output", metavar="PNG", help="also draw the results into this PNG file")
    probe.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    probe.set_defaults(func=cmd_probe)
    val = sub.add_parser("validate", help="replay a measured trace (DiskSim's validate format) and score the model",
                         formatter_class=Fmt,
                         description="Replay a trace measured on a real drive, in DiskSim's 'validate' format "
                                     "(one request a line: R|W Hit|Miss LBN SECTORS SERVICE_US "
                                     "NEXT_INTERARRIVAL_US), the way DiskSim issues it: one request at a "
                                     "time, each one the previous line's interarrival after the previous "
                                     "completes (the Hit/Miss column is what the real drive did; it is "
                                     "reported, not used). Prints the demerit (the RMS horizontal distance "
                                     "in ms between the measured and simulated service-time CDFs, as "
                                     "DiskSim's rms computes it) and the mean, p50, p90, p99 of both.",
                         epilog="examples:\n"
                                "  simfs disks validate disk_models/data/disksim/cheetah9LP.trace --disk disksim-cheetah9lp\n"
                                "  simfs disks validate my.trace --disk disksim:my/drive.parv --json\n"
                                "  simfs disks validate disk_models/data/disksim/ibm18es.trace --disk disksim-ibm18es "
                                "--plot cdf.png")
    val.add_argument("trace", help="the trace file (validate format)")
    val.add_argument("--disk", required=True, help="the drive: a preset, disksim:PATH.parv, with overrides NAME[,key=value...]")
    val.add_argument("--disksim", metavar="OUTV", help="DiskSim's output of the same run (disksim PARV OUTV validate "
                                                       "TRACE 0): its demerit and CDF are shown too; refused unless its header names "
                                                       "TRACE's file name and request count")
    val.add_argument("--plot", metavar="PNG", help="draw the CDFs into this picture")
    val.add_argument("--json", action="store_true", help="print the results as JSON")
    val.set_defaults(func=cmd_validate)
    return p


def _fail(msg: str) -> int:
    print(f"simfs disks: {msg}", file=sys.stderr)
    return 2


def cmd_list(args) -> int:
    from disk_models import PRESETS

    if args.json:
        print(json.dumps([{"name": n, "model": p.kind, "summary": p.summary, "drive": p.drive}
                          for n, p in PRESETS.items()], indent=1))
        return 0
    width = max(len(n) for n in PRESETS)
    for name, preset in PRESETS.items():
        print(f"{name:<{width}}  {preset.summary}")
    return 0


def show_doc(name: str) -> dict:
    """`disks show --json`: the resolved spec, every parameter with its provenance, and the
    figures the model derives."""
    from disk_models import make_disk, resolve
    from disk_models.params import format_value

    s = resolve(name)
    params = {}
    for key, value in s.values.items():
        params[key] = {"value": value, "shown": "auto" if value is None else format_value(value),
                       "provenance": s.provenance.get(key, "")}
    derived = {k: {"value": v, "unit": u, "how": how} for k, (v, u, how) in make_disk(s).derived().items()}
    return {"name": s.name, "model": s.kind, "drive": s.drive, "overrides": s.overrides,
            "parameters": params, "derived": derived}


def cmd_show(args) -> int:
    from disk_models import describe

    try:
        if args.json:
            print(json.dumps(show_doc(args.name), indent=1, default=str))
            return 0
        text = describe(args.name)
    except ValueError as e:
        return _fail(str(e))
    print(text)
    return 0


def cmd_probe(args) -> int:
    from disk_models import resolve
    from disk_models.probe import format_report, run_probe

    try:
        spec = resolve(args.name)
    except ValueError as e:
        return _fail(str(e))
    if args.output:                     # before the probe: a bad -o is refused at once
        why = _picture_ok(args.output, "-o")
        if why:
            return _fail(why)
    report = run_probe(spec)
    from disk_models.probe_plot import plot_report
    return _show(report, format_report, plot_report, args.output, args.json)


def _picture_ok(path: str, option: str) -> str | None:
    """Why a picture cannot be written to `path` (None if it can), before any work."""
    import os
    from simfs.cli.common import picture_problem
    out_dir = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(out_dir):
        return f"cannot write {path}: directory {out_dir} does not exist"
    if os.path.isdir(path):
        return f"cannot write {path}: is a directory"
    return picture_problem(path, option)


def cmd_validate(args) -> int:
    from disk_models import make_disk
    from disk_models.validate import format_report, validate

    if args.plot:
        why = _picture_ok(args.plot, "--plot")
        if why:
            return _fail(why)
    try:
        disk = make_disk(args.disk)
        v = validate(disk, args.trace, args.disksim)
    except ValueError as e:                 # bad spec, DiskSim file, trace line or output file
        return _fail(str(e))
    from disk_models.validate_plot import plot_validation
    return _show(v, format_report, plot_validation, args.plot, args.json)


def _show(result, format_report, plot, picture: str | None, as_json: bool) -> int:
    """Draw the picture (if asked), then print the result as a table or as JSON."""
    if picture:
        try:
            plot(result, picture)
        except OSError as e:
            return _fail(f"cannot write {picture}: {e.strerror or e}")
    if as_json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        print(format_report(result))
        if picture:
            print(f"\nplot written to {picture}")
    return 0
