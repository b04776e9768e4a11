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
import re
import sys
from importlib.metadata import entry_points

from simfs import __version__
from simfs.cli.common import EXIT_USAGE, Fmt
from plugin_registry import did_you_mean

GROUP = "simfs.commands"

# `simfs --help` order: simfs's own command modules, and at "*" the commands of the group
COMMANDS = ("mkfs", "mount", "ctl", "fsck", "stats", "compare", "replay", "verb", "disks", "policies", "frag",
            "layout", "helper", "trace", "fio", "*",
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


class Parser(argparse.ArgumentParser):
    """argparse with a suggestion for a mistyped command or choice ("did you mean ...?"), whose
    usage errors are one line: `simfs mkfs: error: argument SIZE: ... (simfs mkfs --help)`, exit
    status 2, instead of the whole usage block first. Subcommand parsers are of this class too
    (add_subparsers uses the parent's class, at every level: `simfs verb dd`, `simfs disks show`)."""

    def error(self, message: str):
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            message += suggestion(m.group(1), choices)
        message = " ".join(message.splitlines())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} ({self.prog} --help)\n")


def suggestion(word: str, candidates) -> str:
    return did_you_mean(word, candidates, show=str)


def _deepest(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The (sub)command parser the words of argv lead to: `simfs disks show ...` -> show's."""
    p = parser
    for word in argv:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and word in subs[0].choices:
            p = subs[0].choices[word]
    return p


def _unrecognized(parser: argparse.ArgumentParser, argv: list[str], extra: list[str]):
    """Report arguments no parser took, with the nearest option of the command they were
    given to (argparse in Python 3.11 names none)."""
    p = _deepest(parser, argv)
    options = [o for a in p._actions for o in a.option_strings]
    hint = ""
    for word in extra:
        if word.startswith("-"):
            hint = suggestion(word.split("=", 1)[0], options)
            if hint:
                break
    p.error(f"unrecognized arguments: {' '.join(extra)}{hint}")


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="simfs", formatter_class=Fmt,
        description="simfs: an ext2 file system in an image file, mounted with FUSE, whose block "
                    "I/O is charged to a modelled disk.",
        epilog="examples:\n"
               "  simfs mkfs disk.img 256M\n"
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
    argv = sys.argv[1:] if argv is None else list(argv)
    a, extra = parser.parse_known_args(argv)
    if extra:
        _unrecognized(parser, argv, extra)
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
