"""What every `simfs` command shares: the help formatter, one-line failures, size arguments."""

from __future__ import annotations

import argparse
import os
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


def picture_problem(path: str, option: str = "-o") -> str | None:
    """Why matplotlib cannot write a picture to `path` (the format is the file name's extension;
    none means PNG), or None."""
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if not ext:
        return None
    from matplotlib.backend_bases import FigureCanvasBase
    formats = FigureCanvasBase.get_supported_filetypes()
    if ext in formats:
        return None
    return f"{option} {path}: cannot write a .{ext} picture (formats: {', '.join(sorted(formats))})"


def same_file(a: str, b: str) -> bool:
    """Whether the paths name one file (the second one need not exist)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)
