"""The `simfs` command: builds the parser from the command modules and dispatches.

Each command is a module with `register(subparsers)`, which adds its subparser and sets
`func` (the handler: parsed arguments -> exit status). simfs's own are simfs/cli/MODULE.py,
named in COMMANDS; other packages add theirs as entry points of the group `simfs.commands`
(experiments registers `simfs experiment` in setup.cfg), so nothing here imports them. They
appear where COMMANDS has "*", by entry-point name, once the package is installed
(`pip install -e .`, which the Makefile re-runs when setup.cfg changes); one that cannot be
imported is left out.

A run imports only the module of the command it was given (`simfs mkfs ...` builds mkfs's
parser alone): the others stand in the parser by their name and COMMANDS' one-line help, so
`simfs --help` lists them all without importing them (and their numpy, matplotlib...), and
`simfs --version` imports none. tests/unit/test_cli_start.py checks COMMANDS against the
parsers the modules build; `build_parser()` without a command line builds every one of them
(the manual's command pages).

Bad input (missing or unusable image or mount point, unknown option or value) is one line on
stderr and exit status 2, like argparse's own usage errors.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys

from simfs import __version__
from simfs.cli.common import EXIT_USAGE, Fmt

GROUP = "simfs.commands"

# `simfs --help` order: (command, its module simfs/cli/MODULE.py, aliases, the one-line help its
# register() gives it), and at "*" the commands of the group. A module may register several
# commands (mount: mount and umount); they stand next to each other here.
COMMANDS = (
    ("mkfs", "mkfs", (), "make an ext2 (or ext4-profile) image file"),
    ("mount", "mount", (), "mount an image (background daemon)"),
    ("umount", "mount", ("unmount",), "unmount and wait for the image to be written"),
    ("ctl", "ctl", (), "mark a phase, drop caches, sync or reset a mount"),
    ("fsck", "fsck", (), "check an (unmounted) image with e2fsck -fn, or repair it"),
    ("stats", "stats", (), "print a mount's counters, or compare two runs"),
    ("compare", "compare", (), "ratios between two results or statistics files, per phase and counter"),
    ("replay", "replay", (), "replay an op log (-o oplog=) on an image, in-process"),
    ("verb", "verb", (), "run a tool's work (tar, find, cp -a, rm -rf, ...) in-process, without FUSE"),
    ("disks", "disks", (), "list disk-model presets, show or probe one"),
    ("policies", "policies", (), "list allocators, inode placements, directory orders, write-back"),
    ("frag", "frag", (), "a file's extents, filefrag style"),
    ("layout", "layout", (), "draw an image's block map (PNG), coloured by owner"),
    ("install-helper", "helper", (), "install /sbin/mount.fuse.simfs (mount -t fuse.simfs, fstab)"),
    ("trace", "trace", (), "export, import, replay a request trace, or show its latency percentiles"),
    ("fio", "fio", (), "run fio on a mount; its figures in simulated time"),
    ("*", None, (), None),
    ("plot", "plot", (), "draw request traces (-o trace=PATH) seekwatcher-style"),
)

# the module of each command word, aliases included
MODULE_OF = {w: mod for name, mod, aliases, _ in COMMANDS if mod for w in (name, *aliases)}


def _entry_points() -> list:
    from importlib.metadata import entry_points
    return sorted(entry_points(group=GROUP), key=lambda ep: ep.name)


def _load(ep):
    """An entry point's `register`, or None if it cannot be imported."""
    try:
        return ep.load()
    except ImportError:
        return None


class Parser(argparse.ArgumentParser):
    """argparse with a suggestion for a mistyped command or choice ("did you mean ...?"), whose
    usage errors are one line: `simfs mkfs: error: argument SIZE: ... (simfs mkfs --help)`, exit
    status 2, instead of the whole usage block first. Subcommand parsers are of this class too
    (add_subparsers uses the parent's class, at every level: `simfs verb dd`, `simfs disks show`)."""

    #: more epilog, made only when the help is shown: `simfs mount`'s option list imports the
    #: volume and numpy, which `simfs umount` (built by the same module) does not need
    epilog_more = None

    def resolve_epilog(self) -> None:
        if self.epilog_more is not None:
            self.epilog, self.epilog_more = (self.epilog or "") + self.epilog_more(), None

    def format_help(self) -> str:
        self.resolve_epilog()
        return super().format_help()

    def error(self, message: str):
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            message += suggestion(m.group(1), choices)
        message = " ".join(message.splitlines())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} ({self.prog} --help)\n")


def suggestion(word: str, candidates) -> str:
    from plugin_registry import did_you_mean
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


class _Listing(Parser):
    """The top-level parser of a run given its command: its help is that of a parser that
    names every command, entry points included (loaded only then)."""

    def format_help(self) -> str:
        return _build(None, listing=True).format_help()


def command_word(argv: list[str]) -> str | None:
    """The command argv names: its first word that is not an option (the top-level options,
    -h and --version, take no value), or None."""
    for i, word in enumerate(argv):
        if word == "--":
            return argv[i + 1] if i + 1 < len(argv) else None
        if word == "-" or not word.startswith("-"):
            return word
    return None


def _build(word: str | None, listing: bool = False) -> argparse.ArgumentParser:
    """The parser: with `word`, that command's module alone builds its parser (the others are
    stand-ins with their help line); with neither word nor listing, every module's parser;
    with listing, stand-ins for simfs's own commands and the entry points' real parsers."""
    lazy = word is not None or listing
    p = (_Listing if word is not None else Parser)(
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
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    chosen = MODULE_OF.get(word) if word is not None else None
    done = set()
    for name, module, aliases, help_ in COMMANDS:
        if name == "*":
            if word is not None and (chosen is not None or not word):
                continue       # simfs's own command, or none (--version): the group is not needed
            for ep in _entry_points():
                register = _load(ep) if not lazy or listing or ep.name == word else None
                if register:
                    register(sub)
                elif lazy and not listing:
                    sub.add_parser(ep.name)          # named, so a mistyped word gets suggestions
        elif module in done:
            continue
        elif not lazy or module == chosen:
            done.add(module)
            importlib.import_module(f"simfs.cli.{module}").register(sub)
        else:
            sub.add_parser(name, aliases=list(aliases), help=help_)
    if not lazy:                 # every parser whole, as read by the manual's pages
        _resolve_epilogs(p)
    return p


def _resolve_epilogs(parser: argparse.ArgumentParser) -> None:
    if isinstance(parser, Parser):
        parser.resolve_epilog()
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                _resolve_epilogs(sp)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The `simfs` parser. Given the command line, only the module of the command it names is
    imported to build that command's parser; the others are named, with their help line. Without
    argv, every command's own parser (the manual's command pages, tests)."""
    if argv is None:
        return _build(None)
    return _build(command_word(list(argv)) or "")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
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
