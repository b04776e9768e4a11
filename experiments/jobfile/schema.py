"""What a job file may say, and where it says it: the keys and their types, the positions of keys
for messages (`Source`: `FILE:LINE: ...`), the parsed `Job`, and the small helpers every other
part of the package uses to refuse a value (unknown keys with a near miss, types, placeholders).
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path

from plugin_registry import did_you_mean


class JobError(ValueError):
    """Bad input in a job file; str() is one line naming the file and line."""


TOP = {"job", "workload", "params", "mkfs", "mount", "matrix", "phase", "ratio", "panel", "plots", "quick", "aged"}
JOB_KEYS = {"name", "title", "description", "repetitions", "seed", "notes"}
WORKLOAD_KINDS = {"tree", "dir", "tarball", "none"}
TREE_KEYS = {"seed", "files", "total_size", "max_file_size", "max_depth", "fanout", "svn", "symlinks",
             "hardlinks", "empty_files", "empty_dirs", "deep_paths", "mtime"}
PHASE_KEYS = {"name", "run", "verb", "builtin", "fio", "prepare", "path", "args", "cold", "drain", "writes",
              "trace", "setup", "description", "metrics"}
RATIO_KEYS = {"num", "den", "phase", "label", "metric", "published", "source", "expect", "check",
              "explain", "headline"}
PANEL_KEYS = {"title", "phase", "configs"}
PLOTS_KEYS = {"blockmap", "blockmap_files"}
MATRIX_SPECIAL = {"name", "exclude", "add"}
VALUE_KEYS = {"label", "columns"}          # besides options, in a labelled axis value
RUNNER_OWNED = {"stats", "trace", "log", "oplog"}   # the runner sets these per phase
PLACEHOLDERS = ("mnt", "source", "tarball", "work", "image")      # run = and prepare = ({params.KEY} too)
TEXT_VARS = ("cache_mib", "size_mib", "repetitions")               # title, description, notes


# the type of every documented key: (test, what the message says it must be)
def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


TEXT = (lambda v: isinstance(v, str), "a string")
FLAG = (lambda v: isinstance(v, bool), "true or false")
WHOLE = (_whole, "a whole number")
NUMBER = (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number")
TEXTS = (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings, e.g. [\"a\", \"b\"]")
TABLE = (lambda v: isinstance(v, dict), "a table, e.g. {key = value}")
TABLES = (lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v), "a list of tables ([[...]] sections)")

TYPES = {
    "job": {"name": TEXT, "title": TEXT, "description": TEXT, "repetitions": WHOLE, "notes": TEXTS,
            "seed": (lambda v: isinstance(v, str) or _whole(v), "a string or a whole number")},
    "workload": {"kind": TEXT, "path": TEXT, "describe": TEXT},
    "phase": {"name": TEXT, "run": TEXT, "verb": TEXT, "builtin": TEXT, "fio": TEXT, "prepare": TEXT, "path": TEXT, "args": TABLE,
              "cold": FLAG, "drain": FLAG, "writes": FLAG, "trace": FLAG, "setup": FLAG, "description": TEXT,
              "metrics": TEXTS},
    "ratio": {"num": TEXT, "den": TEXT, "phase": TEXT, "label": TEXT, "metric": TEXT, "published": NUMBER,
              "source": TEXT, "expect": TEXT, "check": FLAG, "explain": TEXT, "headline": FLAG},
    "panel": {"title": TEXT, "phase": TEXT, "configs": TEXTS},
    "plots": {"blockmap": TEXTS, "blockmap_files": TEXT},
    "matrix": {"name": TEXT, "exclude": TABLES, "add": TABLES},
    "": {"job": TABLE, "workload": TABLE, "params": TABLE, "mkfs": TABLE, "mount": TABLE, "matrix": TABLE,
         "plots": TABLE, "quick": TABLE, "aged": TABLE, "phase": TABLES, "ratio": TABLES, "panel": TABLES},
}


def _mkfs_keys() -> set[str]:
    from simfs.ondisk.mkfs import mkfs
    sig = inspect.signature(mkfs)
    return {"size"} | {n for n in sig.parameters
                       if n not in ("path", "size_bytes", "uuid", "hash_seed", "now", "uid", "gid", "writer")}


def _mount_keys() -> set[str]:
    from simfs.fuse import mountopts
    return set(mountopts.valid_keys()) - set(mountopts.FRONTEND)


class Source:
    """The job file's text, for finding the line of a key (tomllib gives no positions).
    `overlay`: the [quick] table when the job checked is the one merged with it, so that a
    value [quick] gave is named at its own line, not at the job's."""

    def __init__(self, path: Path, text: str, overlay: dict | None = None, label: str = "[quick]"):
        self.path, self.lines, self.overlay, self.label = path, text.splitlines(), overlay, label

    def merged(self, overlay: dict, label: str = "[quick]") -> "Source":
        """`label`: what gave the overlay; not "[quick]" (a command-line option), its values
        have no line in the file."""
        out = Source(self.path, "", overlay, label)
        out.lines = self.lines
        return out

    def from_overlay(self, where: tuple) -> bool:
        """Whether the merged job has `where` from [quick] (lists and values replace, tables
        merge: see _merge)."""
        node = self.overlay
        for depth, w in enumerate(where):
            if not (isinstance(node, dict) and w in node):
                return False
            node = node[w]
            if not isinstance(node, dict) or (depth == 0 and w == "workload" and "kind" in node):
                return True
        return True

    def line_of(self, where: tuple) -> int:
        """The line of `where` = ("phase", 2, "verb"): the table's header (the n-th `[[phase]]`),
        then the first line after it defining the key. Falls back to the header, then line 1."""
        tables = [w for w in where if isinstance(w, str)]
        key = tables[-1] if tables else None
        index = next((w for w in where if isinstance(w, int)), None)
        header_line = None
        # candidate headers: [a], [a.b], [[a]], [quick.a]...
        best = None
        for depth in range(len(where), 0, -1):
            names = [w for w in where[:depth] if isinstance(w, str)]
            if not names:
                continue
            dotted = ".".join(names)
            pat = re.compile(r"^\s*\[\[?\s*" + re.escape(dotted) + r"\s*\]\]?\s*(#.*)?$")
            hits = [i for i, ln in enumerate(self.lines) if pat.match(ln)]
            if hits:
                pick = hits[index] if (index is not None and index < len(hits) and "[[" in self.lines[hits[0]]) \
                    else hits[0]
                best = (pick, dotted)
                break
        if best:
            header_line = best[0]
        start = header_line if header_line is not None else 0
        if key is not None:
            kpat = re.compile(r"(^|[\s{,])(\"?)" + re.escape(key) + r"\2\s*=")
            for i in range(start, len(self.lines)):
                if i > start and header_line is not None and self.lines[i].lstrip().startswith("["):
                    break
                if kpat.search(self.lines[i]):
                    return i + 1
            if header_line is None:
                for i, ln in enumerate(self.lines):
                    if kpat.search(ln):
                        return i + 1
        return (header_line + 1) if header_line is not None else 1

    def error(self, where: tuple, msg: str) -> JobError:
        if self.overlay is None:
            return JobError(f"{self.path}:{self.line_of(where)}: {msg}")
        if self.from_overlay(where):
            if self.label != "[quick]":
                return JobError(f"{self.path}: {self.label}: {msg}")
            return JobError(f"{self.path}:{self.line_of(('quick',) + where)}: in [quick]: {msg}")
        return JobError(f"{self.path}:{self.line_of(where)}: with [quick] merged: {msg}")


def _merge(base: dict, over: dict) -> dict:
    """[quick] over the job: tables merge, lists and values replace; a workload with a kind
    replaces the whole workload (a generated tree instead of your directory, say)."""
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and not (k == "workload" and "kind" in v):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _size(v, src: Source, where: tuple) -> int:
    from simfs.units import parse_size
    try:
        return parse_size(v)
    except (ValueError, TypeError):
        raise src.error(where, f"{'.'.join(map(str, where))}: not a size: {v!r} (e.g. 512M, 4G)") from None


def _looks_size(v) -> bool:
    return isinstance(v, str) and re.fullmatch(r"\s*\d+(\.\d+)?\s*[KMGT](i?B)?\s*", v, re.I) is not None


def _unknown(src: Source, where: tuple, got, allowed: set, what: str) -> None:
    for k in got:
        if k not in allowed:
            raise src.error(where + (k,), f"unknown key {k!r} in {what}; valid: {', '.join(sorted(allowed))}"
                            + _suggest(k, allowed))


def _suggest(word, choices, show=repr) -> str:
    """ " (did you mean 'x'?)" for a near miss among `choices`, else "": typos are the usual mistake."""
    return did_you_mean(word, choices, show)


def _types(src: Source, where: tuple, table: dict, section: str, what: str) -> None:
    """Every documented key of `table` of the type TYPES says, before anything uses it: a wrong
    type found here is one line, not a crash or a failure after mounting."""
    for k, v in table.items():
        ok, want = TYPES[section].get(k, (None, ""))
        if ok is not None and not ok(v):
            raise src.error(where + (k,), f"{what + ' ' if what else ''}{k} = {_toml(v)}: must be {want}")


def _placeholders(src: Source, where: tuple, text: str, allowed, what: str) -> None:
    """Every {NAME} in `text` is one `allowed` names: an unknown one would be left in the command
    (or title) as it is, found only when the command fails. Shell's ${VAR} and find's {} are not
    placeholders."""
    for m in re.finditer(r"(?<![$\\])\{([A-Za-z_][\w.]*)\}", text):
        if m.group(1) not in allowed:
            shown = ", ".join("{" + a + "}" for a in allowed) or "none"
            raise src.error(where, f"{what}: unknown placeholder {m.group(0)}; the placeholders are {shown}"
                            + _suggest(m.group(1), allowed, show=lambda a: "{" + a + "}"))


@dataclass
class Job:
    """A parsed job file: its document (with --quick merged) and where it came from."""
    path: Path
    doc: dict
    quick: bool
    src: Source = field(repr=False, default=None)
    full_names: list = field(default_factory=list)   # with --quick: the full job's configurations
    base: "Job | None" = field(repr=False, default=None)  # with --quick: the full job

    @property
    def name(self) -> str:
        return self.doc["job"]["name"]

    def workload_spec(self) -> dict:
        """The runner's workload dict: {"kind": "tree", generate_tree keywords}, "none", or
        {"kind": "tree", "path": DIR} for a directory of this machine."""
        w = dict(self.doc.get("workload", {"kind": "none"}))
        kind = w.pop("kind", "none")
        if kind == "dir":
            return {"kind": "tree", "path": str(Path(w["path"]).expanduser())}
        if kind == "tarball":
            return {"kind": "tree", "tarball": str(Path(w["path"]).expanduser())}
        if kind == "none":
            return {"kind": "none", **({"describe": w["describe"]} if "describe" in w else {})}
        if "fanout" in w:
            w["fanout"] = tuple(w["fanout"])
        return {"kind": "tree", **w}


def _table(job: Job, key: str) -> dict:
    v = job.doc.get(key, {})
    if not isinstance(v, dict):
        raise job.src.error((key,), f"[{key}] must be a table")
    return v


def _toml(v) -> str:
    """`v` as the job file writes it."""
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + "}"
    return repr(v)


def _scalar(v) -> bool:
    return isinstance(v, (str, int, float))


def _label(v):
    return v["label"] if isinstance(v, dict) else v


def axes(job: Job) -> list[str]:
    return [k for k in job.doc.get("matrix", {}) if k not in MATRIX_SPECIAL]
