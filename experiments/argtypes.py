"""argparse types for the experiments' and benchmarks' own commands (`python -m ...`): a bad
value is argparse's one line and exit status 2 before any work starts, not a traceback half-way
through a run."""

from __future__ import annotations

import argparse
import os
from typing import Callable, Iterable


def positive(text: str) -> int:
    """A whole number of at least 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a whole number of at least 1: {text!r}")
    return int(text)


def directory(text: str) -> str:
    """An existing directory."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text}: no such directory")
    return text


def one_of(names: Iterable[str], what: str) -> Callable[[str], None]:
    """A check for `listed`: the name is one of `names`."""
    names = list(names)

    def check(name: str) -> None:
        if name not in names:
            raise ValueError(f"unknown {what} {name!r}; choose from {', '.join(names)}")
    return check


def checked(check: Callable[[str], object]) -> Callable[[str], str]:
    """A name accepted by `check`, which raises ValueError with the reason (as a plug-in
    registry's `resolve` and `disk_models.make_disk` do)."""
    def parse(text: str) -> str:
        try:
            check(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return text
    return parse


def listed(check: Callable[[str], object]) -> Callable[[str], list[str]]:
    """Comma-separated names, each accepted by `check` (as in `checked`)."""
    one = checked(check)
    return lambda text: [one(name) for name in text.split(",")]
