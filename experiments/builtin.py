"""The built-in experiments, one per seed phenomenon (see docs/design.md's table)."""

from __future__ import annotations

from . import seed000, seed001, seed002, seed003, seed004

MODULES = (seed000, seed001, seed002, seed003, seed004)
EXPERIMENTS = {m.NAME: m for m in MODULES}


def get(name: str):
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise KeyError(f"unknown experiment {name!r}; choose one of: {', '.join(EXPERIMENTS)}") from None
