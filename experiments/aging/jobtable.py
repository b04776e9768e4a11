"""An aging job file: a TOML file whose `[aging]` table holds experiments.aging's options, so a
user copies examples/jobs/git-aging.toml, edits it and runs `simfs run FILE`. A history loop
and a replay across configurations are not a job file's workload × matrix, so `simfs run` hands
such a file to experiments.aging instead of the job runner."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

#: key -> (types it takes, experiments.aging's option)
KEYS = {"source": ((str,), None), "commits": ((str,), "--commits"), "pulls": ((int,), "--pulls"),
        "every": ((int,), "--every"), "alloc": ((str,), "--alloc"), "replay": ((list,), "--replay"),
        "profile": ((str,), "--profile"), "dirorder": ((str,), "--dirorder"),
        "fill": ((int, float), "--fill"), "disk": ((str,), "--disk"),
        "size": ((str, int), "--size"), "dataless": ((bool,), "--dataless"), "quick": ((bool,), "--quick"),
        "pictures": ((bool,), "--no-pictures")}


class AgingJobError(ValueError):
    """A bad [aging] table: one line naming the file and the key."""


def aging_table(path: Path) -> dict | None:
    """The file's [aging] table, or None when it has none (or is not TOML: the job loader says
    what is wrong with it)."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    table = doc.get("aging")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise AgingJobError(f"{path}: [aging] must be a table")
    others = sorted(set(doc) - {"aging"})
    if others:
        raise AgingJobError(f"{path}: an aging job has only an [aging] table, not {', '.join(others)}")
    return table


def argv(path: Path, table: dict, *, quick: bool = False, out: Path | None = None,
         resume: Path | None = None, source: Path | None = None) -> list[str]:
    """experiments.aging's command line for an [aging] table, or for the options `simfs
    experiment run git-aging` takes (simfs run's --quick, --out, --resume and --source win over
    the file). A relative source is taken from the job file's folder."""
    if resume:
        return ["--resume", str(resume)]
    args: list[str] = []
    for key, value in table.items():
        if key not in KEYS:
            from plugin_registry import did_you_mean
            raise AgingJobError(f"{path}: [aging] has no key {key!r}; keys: {', '.join(KEYS)}"
                                + did_you_mean(key, list(KEYS)))
        types, option = KEYS[key]
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            raise AgingJobError(f"{path}: [aging] {key} = {value!r}: give a "
                                + " or ".join(t.__name__ for t in types))
        if key == "source":
            if source is None:
                source = Path(os.path.expanduser(value))
                source = source if source.is_absolute() else path.parent / source
        elif key == "replay":
            args += [option, ",".join(str(v) for v in value)]
        elif key == "pictures":
            args += [] if value else [option]
        elif isinstance(value, bool):
            args += [option] if value else []
        else:
            args += [option, str(value)]
    if quick and "--quick" not in args:
        args.append("--quick")
    if "--quick" in args:
        source = None
    args += [str(source)] if source is not None else []
    return args + (["--out", str(out)] if out else [])
