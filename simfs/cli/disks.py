"""`simfs disks`: list the disk-model presets, show one with provenance, or probe it.

    simfs disks                         one line per preset
    simfs disks show NAME[,k=v...]      every parameter, its value and where it came from
    simfs disks probe NAME[,k=v...] [-o probe.png] [--json]

The top-level parser (simfs/cli/main.py) calls `register(subparsers)`; each handler takes the parsed
arguments and returns an exit code.  Bad names or parameters: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("disks", help="list disk-model presets, show or probe one",
                              description="Disk-model presets: list them, show one with the provenance "
                                          "of every figure, or run a geometry probe through the model.")
    p.set_defaults(func=cmd_list)
    sub = p.add_subparsers(dest="disks_command", metavar="{show,probe}")
    show = sub.add_parser("show", help="every parameter of a preset, with provenance",
                          description="Print every parameter of a preset (overrides allowed: "
                                      "'sata7200,rpm=5400'), where each value came from, and the "
                                      "figures the model derives from them.")
    show.add_argument("name", help="preset, optionally with overrides: NAME[,key=value...]")
    show.set_defaults(func=cmd_show)
    probe = sub.add_parser("probe", help="microbenchmark a preset through the model",
                           description="Seek time vs distance, sequential rate vs LBA, random 4 KiB IOPS "
                                       "and the read-modify-write penalty, measured through the model.")
    probe.add_argument("name", help="preset, optionally with overrides: NAME[,key=value...]")
    probe.add_argument("-o", "--output", metavar="PNG", help="also draw the results into this PNG file")
    probe.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    probe.set_defaults(func=cmd_probe)
    return p


def _fail(msg: str) -> int:
    print(f"simfs disks: {msg}", file=sys.stderr)
    return 2


def cmd_list(args) -> int:
    from disk_models import PRESETS

    width = max(len(n) for n in PRESETS)
    for name, preset in PRESETS.items():
        print(f"{name:<{width}}  {preset.summary}")
    return 0


def cmd_show(args) -> int:
    from disk_models import describe

    try:
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
    report = run_probe(spec)
    if args.output:
        from disk_models.probe_plot import plot_report

        try:
            plot_report(report, args.output)
        except OSError as e:
            return _fail(f"cannot write {args.output}: {e.strerror or e}")
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print(format_report(report))
        if args.output:
            print(f"\nplot written to {args.output}")
    return 0
