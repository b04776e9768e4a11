"""The `simfs` command: builds the parser from the command modules and dispatches.

Each command is a module with `register(subparsers)`, which adds its subparser and sets
`func` (the handler: parsed arguments -> exit status). simfs's own are simfs/cli/NAME.py,
named in COMMANDS; other packages add theirs as entry points of the group `simfs.commands`
(experiments registers `simfs experiment` in setup.cfg), so nothing here imports them. They
appear where COMMANDS has "*", by entry-point name, once the package is installed
(`pip install -e .`, which the Makefile re-runs when setup.cfg changes); one that cannot be
imported is left out.

Bad input (missing or unusable image or mount point, unknown option or value) is one line on
stderr and exit status 2, like argparse's own usage errors.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from importlib.metadata import entry_points

from simfs import __version__
from simfs.cli.common import EXIT_USAGE, Fmt

GROUP = "simfs.commands"

# `simfs --help` order: simfs's own command modules, and at "*" the commands of the group
COMMANDS = ("mkfs", "mount", "fsck", "stats", "compare", "replay", "verb", "disks", "policies", "frag", "layout", "*",
            "plot")


def command_registrars() -> list:
    """The `register` functions of every command, in `simfs --help` order."""
    out = []
    for name in COMMANDS:
        if name != "*":
            out.append(importlib.import_module(f"simfs.cli.{name}").register)
            continue
        for ep in sorted(entry_points(group=GROUP), key=lambda ep: ep.name):
            try:
                out.append(ep.load())
            except ImportError:
                continue
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="simfs", formatter_class=Fmt,
        description="simfs: an ext2 file system in an image file, mounted with FUSE, whose block "
                    "I/O is charged to a modelled disk.",
        epilog="examples:\n"
               "  simfs mkfs disk.img --size 256M\n"
               "  simfs mount disk.img /mnt/sim\n"
               "  tar xf src.tar -C /mnt/sim && simfs stats /mnt/sim\n"
               "  simfs umount /mnt/sim && simfs fsck disk.img\n"
               "\n'simfs COMMAND --help' explains each command.")
    p.add_argument("--version", action="version", version=f"simfs {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for register in command_registrars():
        register(sub)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    if not getattr(a, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return a.func(a) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:       # `simfs ... | head`: the reader left, as with any Unix tool
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
