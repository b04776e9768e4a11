"""What every `simfs` command shares: the help formatter, one-line failures, size arguments."""

from __future__ import annotations

import argparse
import sys

from simfs import units

EXIT_USAGE = 2


class Fmt(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs (the examples) printed as written."""


def fail(msg: str, cmd: str = "") -> int:
    """One-line error for bad input on stderr ("simfs CMD: ..."); returns exit status 2."""
    print(f"simfs{' ' + cmd if cmd else ''}: {msg}", file=sys.stderr)
    return EXIT_USAGE


def size_type(text: str) -> int:
    """An argparse type: '64M', '1G', '512KiB', '4096' -> bytes (simfs.units.parse_size)."""
    try:
        return units.parse_size(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 64M, 1G, 4096)") from None
