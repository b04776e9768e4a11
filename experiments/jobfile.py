"""Job files: an experiment written in TOML, compiled to the `spec.Experiment` the runner runs.

A job file says what `experiments/seed00N.py` says in Python — a workload, a matrix of
configurations, phases, ratios — so `simfs run JOB.toml` and `simfs experiment run NAME` share
one runner. The format (docs/experiments.md, "Job files", has an example;
experiments/jobs/*.toml are the five seeds, examples/jobs/*.toml more):

    [job]       name (required), title, description, repetitions, seed, notes = [...]
    [workload]  kind = "tree" (generate_tree's keywords: seed, files, total_size, svn, ...),
                "dir" (path = "~/src": your tree) or "none" (describe = "...")
    [params]    values handed to the phases (a size such as "64M" becomes bytes)
    [mkfs]      size (required), block_size, inode_size, bytes_per_inode, ... (simfs mkfs)
    [mount]     any `simfs mount -o` option, for every configuration
    [matrix]    axes: `alloc = ["ext2", "cg"]` (a mount option or mkfs key; lists multiply),
                or labelled values `block = [{label = "1K", block_size = 1024}, ...]` whose
                other keys set options (and `columns = {...}` extra table columns);
                name = "{alloc} {block}" (default: "alloc=ext2 block=1K", the axes with >1 value);
                [[matrix.exclude]] drops the combinations matching all its keys;
                [[matrix.add]] adds a named configuration (name = ..., one value per axis, a
                label for a labelled axis; other options of its own)
    [[phase]]   name, and one of: run = "shell command" (in the mount; {mnt} {source}
                {tarball} {work} {image} are replaced, quoted), verb = "find" with path and
                args = {...} (in-process, simfs.inprocess.verbs), builtin = "NAME" (a Python hook,
                BUILTINS below); prepare = "..." (untimed, before), cold (default true: remount,
                buffer cache and drive cache empty; false: stay on the previous phase's mount),
                drain (the time includes writing back what the phase left dirty), writes, trace,
                setup, description
    [[ratio]]   num, den (configuration names), phase (default: every phase), label, metric,
                published, source, expect (">" or "<": the direction expected; default "": none),
                check (flag a wrong direction in capitals; default false), explain, headline
    [[panel]]   phase (required), title, configs (seekwatcher plots); [plots] blockmap = [patterns],
                blockmap_files
    [quick]     any of the above, merged over the job with --quick (tables merge, lists replace);
                the merged job is checked on every run, so a broken [quick] is found early

Sizes are strings ("512M") or, for mkfs.size and mount.cache, `{workload = 16, min = "512M"}`:
a multiple of the workload's bytes (experiments/sizing.py: image_for, cache_for). Notes,
descriptions and titles may use {cache_mib}, {size_mib}, {repetitions}.

Errors are `JobError`s whose message is one line `FILE:LINE: ...` (tomllib does not give the
positions of keys; the line is found by searching the text for the key, inside [quick] for what
[quick] gave). Every documented key has a type (TYPES); names that refer to configurations,
phases or axis values must match one, placeholders must be known ones: a typo is refused with
the valid names, not silently ignored or found only after mounting. `check_paths` (simfs run)
checks the paths of this machine the job reads.
"""

from __future__ import annotations

import difflib
import inspect
import itertools
import math
import re
import shlex
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from . import phases as ph
from . import sizing
from .spec import Compare, Config, Experiment, Panel, Phase


class JobError(ValueError):
    """Bad input in a job file; str() is one line naming the file and line."""


TOP = {"job", "workload", "params", "mkfs", "mount", "matrix", "phase", "ratio", "panel", "plots", "quick"}
JOB_KEYS = {"name", "title", "description", "repetitions", "seed", "notes"}
WORKLOAD_KINDS = {"tree", "dir", "none"}
TREE_KEYS = {"seed", "files", "total_size", "max_file_size", "max_depth", "fanout", "svn", "symlinks",
             "hardlinks", "empty_files", "empty_dirs", "deep_paths", "mtime"}
PHASE_KEYS = {"name", "run", "verb", "builtin", "prepare", "path", "args", "cold", "drain", "writes",
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
    "phase": {"name": TEXT, "run": TEXT, "verb": TEXT, "builtin": TEXT, "prepare": TEXT, "path": TEXT, "args": TABLE,
              "cold": FLAG, "drain": FLAG, "writes": FLAG, "trace": FLAG, "setup": FLAG, "description": TEXT,
              "metrics": TEXTS},
    "ratio": {"num": TEXT, "den": TEXT, "phase": TEXT, "label": TEXT, "metric": TEXT, "published": NUMBER,
              "source": TEXT, "expect": TEXT, "check": FLAG, "explain": TEXT, "headline": FLAG},
    "panel": {"title": TEXT, "phase": TEXT, "configs": TEXTS},
    "plots": {"blockmap": TEXTS, "blockmap_files": TEXT},
    "matrix": {"name": TEXT, "exclude": TABLES, "add": TABLES},
    "": {"job": TABLE, "workload": TABLE, "params": TABLE, "mkfs": TABLE, "mount": TABLE, "matrix": TABLE,
         "plots": TABLE, "quick": TABLE, "phase": TABLES, "ratio": TABLES, "panel": TABLES},
}


def _mkfs_keys() -> set[str]:
    from simfs.ondisk.mkfs import mkfs
    sig = inspect.signature(mkfs)
    return {"size"} | {n for n in sig.parameters
                       if n not in ("path", "size_bytes", "uuid", "hash_seed", "now", "uid", "gid", "writer")}


def _mount_keys() -> set[str]:
    from simfs.fuse import mountopts
    return set(mountopts.valid_keys()) - set(mountopts.FRONTEND)


def _builtins() -> dict:
    """Python hooks a job file names with `builtin = "NAME"` (args = {...} go to the function)."""
    from . import seed003, seed004
    return {
        "mkfs": ph.mkfs_phase,                 # the runner's timed mkfs, shown as a phase
        "newfs": seed003.newfs_phase,          # FreeBSD newfs's request pattern (seed 003)
        "fsck-scan": ph.metadata_scan,         # the fsck-like metadata scan, in-process
        "mmap-write": ph.mmap_write,           # seed 004's alloctest (params.size; column writes=pwrite)
        "dd-read": ph.dd_read,                 # dd bs=1M of the file "big", with MB/s (params.size)
        "mmap-fill": seed004.fill_phase,       # the same fill in-process through the modelled page
                                               # cache (columns writes, pagecache), extents counted
        "dd-verb": seed004.dd_phase,           # dd bs=1M of "big" in-process, with MB/s
    }


BUILTIN_NAMES = ("mkfs", "newfs", "fsck-scan", "mmap-write", "dd-read", "mmap-fill", "dd-verb")


# positions ---------------------------------------------------------------------------------------
class Source:
    """The job file's text, for finding the line of a key (tomllib gives no positions).
    `overlay`: the [quick] table when the job checked is the one merged with it, so that a
    value [quick] gave is named at its own line, not at the job's."""

    def __init__(self, path: Path, text: str, overlay: dict | None = None):
        self.path, self.lines, self.overlay = path, text.splitlines(), overlay

    def merged(self, overlay: dict) -> "Source":
        out = Source(self.path, "", overlay)
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
            return JobError(f"{self.path}:{self.line_of(('quick',) + where)}: in [quick]: {msg}")
        return JobError(f"{self.path}:{self.line_of(where)}: with [quick] merged: {msg}")


# loading -----------------------------------------------------------------------------------------
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
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean {show(close[0])}?)" if close else ""


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
        if kind == "none":
            return {"kind": "none", **({"describe": w["describe"]} if "describe" in w else {})}
        if "fanout" in w:
            w["fanout"] = tuple(w["fanout"])
        return {"kind": "tree", **w}


def load(path, quick: bool = False) -> Job:
    """Read and check a job file (keys, values, options; nothing is run). JobError on bad input."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise JobError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        line = path.read_bytes()[:e.start].count(b"\n") + 1
        raise JobError(f"{path}:{line}: not a job file: not UTF-8 text (byte 0x{e.object[e.start]:02x} "
                       f"at offset {e.start}); a job file is TOML") from None
    return loads(text, path, quick)


def loads(text: str, path, quick: bool = False) -> Job:
    """`load` of a job file's text (`path` names it in messages; Dask workers get the text)."""
    path = Path(path)
    src = Source(path, text)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise JobError(f"{path}:{m.group(1) if m else 1}: not TOML: {str(e).split(' (at')[0]}") from None
    _unknown(src, (), doc, TOP, "the job file")
    full = Job(path, {k: v for k, v in doc.items() if k != "quick"}, quick and "quick" not in doc, src)
    check(full)
    if "quick" not in doc:
        return full
    # the job with [quick] merged is checked on every run, so a broken [quick] is found before
    # the --quick run that would use it
    if not isinstance(doc["quick"], dict):
        raise src.error(("quick",), "[quick] must be a table")
    _unknown(src, ("quick",), doc["quick"], TOP - {"quick"}, "[quick]")
    merged = Job(path, _merge(full.doc, doc["quick"]), True, src.merged(doc["quick"]),
                 [n for n, _, _ in expand(full)], base=full)
    check(merged)
    return merged if quick else full


def _table(job: Job, key: str) -> dict:
    v = job.doc.get(key, {})
    if not isinstance(v, dict):
        raise job.src.error((key,), f"[{key}] must be a table")
    return v


def check(job: Job) -> None:
    """Every key known, every value valid: raise JobError at the first problem."""
    src, doc = job.src, job.doc
    _types(src, (), doc, "", "")
    j = _table(job, "job")
    _unknown(src, ("job",), j, JOB_KEYS, "[job]")
    _types(src, ("job",), j, "job", "[job]")
    if not isinstance(j.get("name"), str) or not j.get("name"):
        raise src.error(("job", "name"), "[job] needs name = \"...\" (the results directory's name)")
    why = _name_problem(j["name"])
    if why:
        raise src.error(("job", "name"), f"name = {_toml(j['name'])}: {why}")
    reps = j.get("repetitions", 1)
    if not isinstance(reps, int) or reps < 1:
        raise src.error(("job", "repetitions"), f"repetitions must be a whole number >= 1, not {reps!r}")
    for k in ("title", "description"):
        _placeholders(src, ("job", k), j.get(k, ""), TEXT_VARS, f"[job] {k}")
    for n in j.get("notes", []):
        _placeholders(src, ("job", "notes"), n, TEXT_VARS, "[job] notes")
    w = _table(job, "workload")
    _types(src, ("workload",), w, "workload", "[workload]")
    kind = w.get("kind", "none")
    if kind not in WORKLOAD_KINDS:
        raise src.error(("workload", "kind"), f"unknown workload kind {kind!r}; valid: tree, dir, none")
    allowed = {"kind"} | {"tree": TREE_KEYS, "dir": {"path"}, "none": {"describe"}}[kind]
    _unknown(src, ("workload",), w, allowed, f"[workload] of kind {kind!r}")
    if kind == "dir":
        if not isinstance(w.get("path"), str):
            raise src.error(("workload", "kind"), "a workload of kind \"dir\" needs path = \"DIR\"")
    if kind == "tree":
        for k, v in w.items():
            why = _tree_value(k, v)
            if why:
                raise src.error(("workload", k), f"[workload] {k} = {_toml(v)}: {why}")
    mkfs_keys, mount_keys = _mkfs_keys(), _mount_keys()
    _unknown(src, ("mkfs",), _table(job, "mkfs"), mkfs_keys, "[mkfs] (simfs mkfs keywords)")
    for k, v in _table(job, "mkfs").items():
        _option_value(src, ("mkfs", k), k, v)
    if "size" not in _table(job, "mkfs"):
        raise src.error(("mkfs",), "[mkfs] needs size = \"512M\" (or {workload = 16, min = \"512M\"})")
    for k, v in _table(job, "mount").items():
        _mount_key(src, ("mount", k), k, mount_keys)
        _option_value(src, ("mount", k), k, v)
    for k, v in _table(job, "params").items():
        if not _scalar(v):
            raise src.error(("params", k), f"[params] {k} = {_toml(v)}: must be a string, a number or true/false")
    _unknown(src, ("plots",), _table(job, "plots"), PLOTS_KEYS, "[plots]")
    _types(src, ("plots",), _table(job, "plots"), "plots", "[plots]")
    phases = doc.get("phase", [])
    if not isinstance(phases, list) or not phases:
        raise src.error(("phase",), "the job has no [[phase]]: nothing to run")
    names = set()
    verbs = _verb_names()
    builtins = _builtins()
    placeholders = PLACEHOLDERS + tuple(f"params.{k}" for k in _table(job, "params"))
    for i, p in enumerate(phases):
        _unknown(src, ("phase", i), p, PHASE_KEYS, "[[phase]]")
        _types(src, ("phase", i), p, "phase", "[[phase]]")
        if not isinstance(p.get("name"), str) or not p["name"]:
            raise src.error(("phase", i), f"[[phase]] number {i + 1} has no name")
        if p["name"] in names or p["name"] in ("mkfs", "layout") and p.get("builtin") != "mkfs":
            raise src.error(("phase", i, "name"), f"phase name {p['name']!r} is taken")
        names.add(p["name"])
        how = [k for k in ("run", "verb", "builtin") if k in p]
        if len(how) != 1:
            raise src.error(("phase", i, "name"), f"phase {p['name']!r} needs one of run = \"COMMAND\", "
                            f"verb = \"VERB\" or builtin = \"NAME\"" + (f" (has {', '.join(how)})" if how else
                                                                      " (it has no command)"))
        if "run" in p and not p["run"].strip():
            raise src.error(("phase", i, "run"), f"phase {p['name']!r}: run = is empty")
        for k in ("run", "prepare"):
            _placeholders(src, ("phase", i, k), p.get(k, ""), placeholders, f"phase {p['name']!r}, {k}")
        if "prepare" in p and "builtin" in p:
            raise src.error(("phase", i, "prepare"), f"phase {p['name']!r}: prepare = is for run = phases")
        if "verb" in p:
            if p["verb"] not in verbs:
                raise src.error(("phase", i, "verb"), f"unknown verb {p['verb']!r}; valid: {', '.join(verbs)}")
            if p.get("cold") is False:
                raise src.error(("phase", i, "cold"), f"phase {p['name']!r}: a verb phase always starts cold "
                                "(it opens the image as one mount)")
            if "prepare" in p:
                raise src.error(("phase", i, "prepare"), f"phase {p['name']!r}: prepare = is for run = phases")
            if not isinstance(p.get("path"), str):
                raise src.error(("phase", i, "verb"), f"phase {p['name']!r}: a verb needs path = \"tree\" "
                                "(where in the image it works)")
        if "builtin" in p and p["builtin"] not in builtins:
            raise src.error(("phase", i, "builtin"), f"unknown builtin {p['builtin']!r}; valid: "
                            f"{', '.join(BUILTIN_NAMES)}")
        if "args" in p and "run" in p:
            raise src.error(("phase", i, "args"), f"phase {p['name']!r}: args = is for verb = and builtin = "
                            "phases (a run = phase's command says everything)")
        if "args" in p:
            if not isinstance(p["args"], dict):
                raise src.error(("phase", i, "args"), f"phase {p['name']!r}: args must be a table, "
                                "e.g. {type = \"d\"}")
            what = f"verb {p['verb']!r}" if "verb" in p else f"builtin {p['builtin']!r}"
            valid = verb_args(p["verb"]) if "verb" in p else builtin_args(builtins[p["builtin"]])
            for k in p["args"]:
                if k not in valid:
                    raise src.error(("phase", i, "args", k), f"phase {p['name']!r}: {what} takes no argument "
                                    f"{k!r}; valid: {', '.join(sorted(valid)) or 'none'}")
        if "verb" in p:
            _check_verb(src, i, p)
        if p.get("cold") is False and (i == 0 or "run" not in phases[i - 1] or "run" not in p):
            raise src.error(("phase", i, "cold"), f"phase {p['name']!r}: cold = false continues the previous "
                            "phase's mount, so both must be run = phases")
    m = _table(job, "matrix")
    _types(src, ("matrix",), m, "matrix", "[matrix]")
    _placeholders(src, ("matrix", "name"), m.get("name", ""), axes(job), "[matrix] name")
    for k, v in m.items():
        if k in MATRIX_SPECIAL:
            continue
        values = v if isinstance(v, list) else [v]
        if not values:
            raise src.error(("matrix", k), f"matrix axis {k!r} has no values: the matrix is empty")
        for val in values:
            _axis_value(src, ("matrix", k), k, val, mkfs_keys, mount_keys)
    for which in ("exclude", "add"):
        for i, e in enumerate(m.get(which, [])):
            for k in e:
                if k == "name" and which == "add":
                    continue
                if which == "add" and k not in m and (k in mkfs_keys or k in mount_keys):
                    _axis_value(src, ("matrix", which, i, k), k, e[k], mkfs_keys, mount_keys)
                    continue            # an option of this configuration only
                if k not in m or k in MATRIX_SPECIAL:
                    raise src.error(("matrix", which, i, k), f"[[matrix.{which}]]: {k!r} is not an axis of "
                                    f"the matrix; axes: {', '.join(axes(job)) or 'none'}")
                labels = [x["label"] for x in (m[k] if isinstance(m[k], list) else [m[k]]) if isinstance(x, dict)]
                if which == "add" and e[k] not in labels:
                    _axis_value(src, ("matrix", which, i, k), k, e[k], mkfs_keys, mount_keys)
                if which == "exclude":
                    _excluded_value(src, job, i, k, e[k])
            if which == "add" and not isinstance(e.get("name"), str):
                raise src.error(("matrix", which, i), "[[matrix.add]] needs name = \"...\"")
    _configs(job, 1 << 30, check_mkfs=True)   # every configuration's mount options and mkfs geometry,
                                               # as simfs mount and simfs mkfs check them
    cnames = [n for n, _, _ in expand(job)]
    known = set(cnames) | set(job.full_names)
    for i, r in enumerate(doc.get("ratio", [])):
        _unknown(src, ("ratio", i), r, RATIO_KEYS, "[[ratio]]")
        _types(src, ("ratio", i), r, "ratio", "[[ratio]]")
        for k in ("num", "den"):
            if not isinstance(r.get(k), str):
                raise src.error(("ratio", i), f"[[ratio]] needs {k} = \"CONFIGURATION NAME\"")
            if r[k] not in known:
                raise src.error(("ratio", i, k), f"[[ratio]] {k} = {r[k]!r} is no configuration; "
                                f"configurations: {', '.join(cnames)}" + _suggest(r[k], known))
        if "phase" in r and r["phase"] not in names | {"mkfs"}:
            raise src.error(("ratio", i, "phase"), f"[[ratio]]: unknown phase {r['phase']!r}; phases: "
                            f"{', '.join(sorted(names | {'mkfs'}))}" + _suggest(r["phase"], names | {"mkfs"}))
        if r.get("expect", ">") not in (">", "<", ""):
            raise src.error(("ratio", i, "expect"), f"expect must be \">\", \"<\" or \"\", not {r['expect']!r}")
    for i, p in enumerate(doc.get("panel", [])):
        _unknown(src, ("panel", i), p, PANEL_KEYS, "[[panel]]")
        _types(src, ("panel", i), p, "panel", "[[panel]]")
        if "phase" not in p:
            raise src.error(("panel", i), "[[panel]] needs phase = \"PHASE NAME\" (the traced phase it draws)")
        if p["phase"] not in names:
            raise src.error(("panel", i, "phase"), f"[[panel]]: unknown phase {p['phase']!r}; phases: "
                            f"{', '.join(sorted(names))}" + _suggest(p["phase"], names))
        for c in p.get("configs", []):
            if c not in known:
                raise src.error(("panel", i, "configs"), f"[[panel]] configs: {c!r} is no configuration; "
                                f"configurations: {', '.join(cnames)}" + _suggest(c, known))
    for pat in _table(job, "plots").get("blockmap", []):
        if not any(fnmatchcase(n, pat) for n in known):
            raise src.error(("plots", "blockmap"), f"[plots] blockmap: {pat!r} matches no configuration; "
                            f"configurations: {', '.join(cnames)}" + _suggest(pat, known))


def check_paths(job: Job, workload: bool = True) -> None:
    """The directories and archives the job reads on this machine exist: the workload's
    directory (unless `workload` is False: --source replaces it) and each unpack verb's
    args.from. Apart from `check`, because a Dask worker loads the job where they may not be."""
    src, w = job.src, job.doc.get("workload", {})
    if workload and w.get("kind") == "dir":
        why = _path_problem(w["path"], want_dir=True)
        if why:
            raise src.error(("workload", "path"), f"[workload] path = {_toml(w['path'])}: {why}")
    for i, p in enumerate(job.doc.get("phase", [])):
        frm = p.get("args", {}).get("from") if "verb" in p else None
        why = isinstance(frm, str) and _path_problem(frm, want_dir=False)
        if why:
            raise src.error(("phase", i, "args", "from"), f"phase {p['name']!r}: from = {_toml(frm)}: {why}")


def _path_problem(path: str, want_dir: bool) -> str | None:
    p = Path(path).expanduser()
    if not p.exists():
        return "no such " + ("directory" if want_dir else "directory or archive")
    if want_dir and not p.is_dir():
        return "not a directory"
    return None


def _axis_values(doc: dict, axis: str) -> list:
    v = doc.get("matrix", {}).get(axis, [])
    return v if isinstance(v, list) else [v]


def _excluded_value(src: Source, job: Job, i: int, axis: str, value) -> None:
    """A [[matrix.exclude]] value must be one of the axis's (a label for a labelled axis): one
    that matches nothing excludes nothing, silently. With [quick] merged the full job's values
    count too (an exclusion of the job's that [quick]'s shorter axis does not need)."""
    values = _axis_values(job.doc, axis) + (_axis_values(job.base.doc, axis) if job.base else [])
    if any(value == x or _label(value) == _label(x) for x in values):
        return
    shown = list(dict.fromkeys(_toml(_label(x)) for x in values))
    raise src.error(("matrix", "exclude", i, axis), f"[[matrix.exclude]] {axis} = {_toml(value)} matches no "
                    f"value of the axis; its values: {', '.join(shown)}"
                    + _suggest(_label(value), [_label(x) for x in values]))


NAME_MAX_BYTES = 200        # [job] name: a directory name with "-quick-YYYYmmdd-HHMMSS" after it


def _name_problem(name: str) -> str | None:
    """Why a job's name cannot name its results directory, or None: a plain file name (no
    "/", not "." or ".."), as --out's default results/NAME-TIME and the work directory use it."""
    if "/" in name or name in (".", "..") or "\0" in name:
        return "the name of the results directory must be a plain file name (no \"/\", not \".\" or \"..\")"
    if not name.strip():
        return "the name is blank"
    if len(name.encode("utf-8", "surrogateescape")) > NAME_MAX_BYTES:
        return f"at most {NAME_MAX_BYTES} bytes (it names the results directory)"
    return None


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


def _tree_value(k: str, v) -> str | None:
    """Why `v` is no value for generate_tree's keyword `k` (TREE_KEYS), or None."""
    def whole(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)
    if k in ("seed", "max_depth", "mtime"):
        if not whole(v) or (k != "mtime" and v < 0):
            return "must be a whole number >= 0" if k != "mtime" else "must be a whole number (seconds since 1970)"
    elif k == "files":
        if not whole(v) or v < 1:
            return "must be a whole number >= 1 (the tree's regular files)"
    elif k in ("total_size", "max_file_size"):
        from simfs.units import parse_size
        try:
            n = parse_size(v) if not isinstance(v, bool) else None
        except (ValueError, TypeError):
            n = None
        if n is None:
            return "not a size (e.g. \"50M\", or a number of bytes)"
        if n < 1:
            return "must be at least 1 byte"
    elif k == "fanout":
        if not (isinstance(v, list) and len(v) == 2 and all(whole(x) for x in v) and 1 <= v[0] <= v[1]):
            return "must be [LO, HI], whole numbers with 1 <= LO <= HI (subdirectories per directory)"
    elif k != "kind" and not isinstance(v, bool):
        return "must be true or false"
    return None


def verb_args(verb: str) -> set[str]:
    """The args = keys a verb phase takes: the verb's own keywords (simfs.inprocess.verbs), and what
    the phase runner takes for every verb (mkdir, mark, options, oplog); unpack's source is
    `from` (a directory or an archive; default the workload's tarball)."""
    from simfs.inprocess.verbs import VERBS
    own = {n for n, q in inspect.signature(VERBS[verb]).parameters.items()
           if n not in ("k", "where") and q.kind not in (q.VAR_KEYWORD, q.VAR_POSITIONAL)}
    if verb == "unpack":
        own = (own - {"source"}) | {"from"}
    return own | {"mkdir", "mark", "options", "oplog"}


def verb_params(verb: str, args: dict) -> dict:
    """`args` as `simfs verb VERB` takes its options: each through the CLI's own type and
    choices (dd's bs, mmap-fill's size "64M" -> bytes, find's type d or f); ValueError says
    which value is refused and why. Keys the command line has no option for pass as they are."""
    import argparse
    from simfs.cli.verb import VERBS as CLI
    opts = {kw.get("dest") or flag.lstrip("-").replace("-", "_"): (flag, kw) for flag, kw in CLI[verb][2]}
    out = dict(args)
    for k, v in args.items():
        if k not in opts:
            continue
        flag, kw = opts[k]
        if "type" not in kw and not isinstance(v, str):
            raise ValueError(f"{k} = {_toml(v)}: must be a string (as simfs verb {verb} {flag} takes it)")
        try:
            out[k] = kw["type"](str(v) if not isinstance(v, bool) else _toml(v)) if "type" in kw else v
        except (argparse.ArgumentTypeError, ValueError, TypeError) as e:
            why = str(e) if isinstance(e, argparse.ArgumentTypeError) else f"invalid value {_toml(v)}"
            raise ValueError(f"{k} = {_toml(v)}: {why} (as simfs verb {verb} {flag} refuses it)") from None
        if "choices" in kw and out[k] not in kw["choices"]:
            raise ValueError(f"{k} = {_toml(v)}: choose from {', '.join(map(repr, kw['choices']))} "
                             f"(simfs verb {verb} {flag})")
    return out


def _check_verb(src: Source, i: int, p: dict) -> None:
    """A verb phase's args and path as `simfs verb` checks them before it opens the image: the
    options' types and choices, and the tool's own refusals (simfs.inprocess.verbs.REFUSE: rm -rf
    of the root, cp -a into itself, ...), so they are refused here, not after the workload."""
    from simfs.inprocess.verbs import REFUSE
    from simfs.errors import VerbRefused
    try:
        params = verb_params(p["verb"], p.get("args", {}))
    except ValueError as e:
        bad = str(e).split(" = ")[0]
        raise src.error(("phase", i, "args", bad), f"phase {p['name']!r}: {e}") from None
    if p["verb"] in REFUSE:
        try:
            REFUSE[p["verb"]](p["path"], **params)
        except VerbRefused as e:
            raise src.error(("phase", i, "path"),
                            f"phase {p['name']!r}: path = {_toml(p['path'])}: {e}") from None


def builtin_args(fn) -> set[str]:
    """The args = keys a builtin phase takes: its function's keywords but those the phase's own
    keys set (name, drain, trace, setup)."""
    return {n for n, q in inspect.signature(fn).parameters.items()
            if q.kind not in (q.VAR_KEYWORD, q.VAR_POSITIONAL)} - {"name", "drain", "trace", "setup"}


def _verb_names() -> list[str]:
    from simfs.inprocess.verbs import VERBS
    return list(VERBS)


def _mount_key(src: Source, where: tuple, k: str, mount_keys: set) -> None:
    if k in RUNNER_OWNED:
        raise src.error(where, f"mount option {k!r} is set by the runner for each phase; leave it out")
    if k not in mount_keys:
        raise src.error(where, f"unknown mount option {k!r}; valid: {', '.join(sorted(mount_keys))}")


def _axis_value(src, where, axis, val, mkfs_keys, mount_keys) -> None:
    if isinstance(val, dict):
        if "label" not in val:
            raise src.error(where, f"matrix axis {axis!r}: a table value needs label = ...")
        if not _scalar(val["label"]):
            raise src.error(where + ("label",), f"matrix axis {axis!r}: label = {_toml(val['label'])}: must be "
                            "a string or a number")
        for k in val:
            if k in VALUE_KEYS:
                continue
            if k not in mkfs_keys:
                _mount_key(src, where + (k,), k, mount_keys)
            _option_value(src, where + (k,), k, val[k])
        if "columns" in val and not isinstance(val["columns"], dict):
            raise src.error(where + ("columns",), "columns must be a table, e.g. {aligned = \"yes\"}")
    elif axis not in mkfs_keys and axis not in mount_keys:
        raise src.error(where, f"unknown key {axis!r} in [matrix]: an axis of plain values must be a mount "
                        f"option or an mkfs key (or give labelled values: [{{label = ..., OPTION = ...}}])")
    else:
        _option_value(src, where, axis, val)


def _scalar(v) -> bool:
    return isinstance(v, (str, int, float))


def _option_value(src: Source, where: tuple, k: str, v) -> None:
    """A mount option's or mkfs key's value is a string, a number or true/false, as on the
    command line; a table only where a size may follow the workload (mkfs size, mount cache)."""
    if _scalar(v) or (isinstance(v, dict) and k in ("size", "cache")):
        return
    raise src.error(where, f"[{where[0]}] {k} = {_toml(v)}: must be a string, a number or true/false"
                    + (" ({workload = ...} is for mkfs size and mount cache)" if isinstance(v, dict) else ""))


def axes(job: Job) -> list[str]:
    return [k for k in job.doc.get("matrix", {}) if k not in MATRIX_SPECIAL]


# compiling ---------------------------------------------------------------------------------------
def _resolve(v, what: str, wl_bytes: int, src: Source, where: tuple):
    """mkfs.size / mount.cache: {workload = F, min, max} -> bytes; sizes -> bytes."""
    if isinstance(v, dict):
        _unknown(src, where, v, {"workload", "min", "max"}, f"{what} (a multiple of the workload)")
        if "workload" not in v:
            raise src.error(where, f"{what}: {{workload = FACTOR}} needs the factor")
        f = v["workload"]
        if not (NUMBER[0](f) and math.isfinite(f) and f > 0):
            raise src.error(where, f"{what} = {_toml(v)}: workload must be a number above 0 (the "
                            f"{what} is that many times the workload's bytes; sizes go in min and max)")
        kw = {}
        if "min" in v:
            kw["lo"] = _size(v["min"], src, where)
        if "max" in v:
            kw["hi"] = _size(v["max"], src, where)
        if kw.get("lo", 0) > kw.get("hi", kw.get("lo", 0)):
            raise src.error(where, f"{what} = {_toml(v)}: min is more than max")
        fn = sizing.cache_for if what == "cache" else sizing.image_for
        return fn(wl_bytes, v["workload"], **kw)
    return v


def _mount_value(k: str, v, src, where):
    from simfs.units import parse_size
    if isinstance(v, bool):
        return "yes" if v else "no"
    if k in ("maxio",) and isinstance(v, str):
        return _size(v, src, where)
    if k == "cache" and _looks_size(v):
        return parse_size(v)
    return v


def _fmt(text: str, vars_: dict) -> str:
    try:
        return text.format(**vars_)
    except (KeyError, IndexError, ValueError):
        return text


def _label(v):
    return v["label"] if isinstance(v, dict) else v


def expand(job: Job) -> list[tuple[str, dict, tuple]]:
    """The matrix's configurations: (name, {axis: value}, position) in the file's order: the
    product of the axes (first axis outermost) minus the exclusions, then the added ones."""
    src, m = job.src, job.doc.get("matrix", {})
    ax = axes(job)
    values = {a: (m[a] if isinstance(m[a], list) else [m[a]]) for a in ax}
    template = m.get("name")
    excludes = m.get("exclude", [])

    def excluded(choice: dict) -> bool:
        return any(all(_label(choice[k]) == _label(e[k]) or choice[k] == e[k] for k in e) for e in excludes)

    def name_of(choice: dict) -> str:
        if template:
            return _fmt(template, {a: _label(v) for a, v in choice.items()})
        shown = [a for a in ax if len(values[a]) > 1] or ax
        return " ".join(f"{a}={_label(choice[a])}" for a in shown if a in choice) or "default"

    def by_label(a, v):
        """In [[matrix.add]], a labelled axis may be given by its label alone."""
        if isinstance(v, dict) or a not in values:
            return v
        return next((x for x in values[a] if isinstance(x, dict) and x["label"] == v), v)

    out = []
    for combo in itertools.product(*(values[a] for a in ax)):
        choice = dict(zip(ax, combo))
        if not excluded(choice):
            out.append((name_of(choice), choice, ("matrix",)))
    for i, e in enumerate(m.get("add", [])):
        out.append((e["name"], {k: by_label(k, v) for k, v in e.items() if k != "name"}, ("matrix", "add", i)))
    if not out:
        raise src.error(("matrix",), "the matrix expands to no configuration (every combination is excluded)")
    seen = set()
    for name, _, where in out:
        if name in seen:
            raise src.error(where + ("name",), f"two configurations are named {name!r}: give [matrix] a "
                            "name = \"...\" template using every axis")
        seen.add(name)
    return out


def _configs(job: Job, wl_bytes: int, check_mkfs: bool = False) -> tuple[list[Config], dict]:
    """The matrix expanded: (configurations in the file's order, sizes used for notes). With
    `check_mkfs`, each configuration's mkfs keywords are checked as simfs mkfs checks them."""
    src, doc = job.src, job.doc
    mkfs_keys = _mkfs_keys()
    base_mkfs = {k: _resolve(v, "size" if k == "size" else k, wl_bytes, src, ("mkfs", k))
                 for k, v in doc.get("mkfs", {}).items()}
    base_mount = {k: _mount_value(k, _resolve(v, k, wl_bytes, src, ("mount", k)), src, ("mount", k))
                  for k, v in doc.get("mount", {}).items()}

    def build(choice: dict, name: str, where: tuple) -> Config:
        mkfs_kw, mount = dict(base_mkfs), dict(base_mount)
        params, where_of = {}, {}
        for a, v in choice.items():
            params[a] = _label(v)
            sets = {k: x for k, x in v.items() if k not in VALUE_KEYS} if isinstance(v, dict) else {a: v}
            for k, x in sets.items():
                where_of[k] = where + (a,)
                if k in mkfs_keys:
                    mkfs_kw[k] = _resolve(x, "size" if k == "size" else k, wl_bytes, src, where)
                else:
                    mount[k] = _mount_value(k, _resolve(x, k, wl_bytes, src, where), src, where)
            if isinstance(v, dict):
                params.update(v.get("columns", {}))
        size_where = where_of.get("size", ("mkfs", "size"))
        mkfs_kw["size_bytes"] = _size(mkfs_kw.pop("size"), src, size_where)
        for k, x in list(mkfs_kw.items()):
            if _looks_size(x):
                mkfs_kw[k] = _size(x, src, where_of.get(k, ("mkfs", k)))
        if check_mkfs:
            raw = next((v.get("size") if isinstance(v, dict) else v for a, v in choice.items()
                        if (v if isinstance(v, dict) else {a: v}).get("size") is not None),
                       doc.get("mkfs", {}).get("size"))
            inodes.append(_check_mkfs(src, mkfs_kw, where_of, raw))
        _check_mount(src, mount, where_of)
        return Config(name, mount=mount, mkfs=mkfs_kw, params=params)

    inodes = []
    configs = [build(choice, name, where) for name, choice, where in expand(job)]
    files = doc.get("workload", {}).get("files") if doc.get("workload", {}).get("kind") == "tree" else None
    most = max((n for n in inodes if n), default=None)
    if files is not None and most is not None and files > most:
        raise src.error(("workload", "files"),
                        f"[workload] files = {files}: more than the {most:,} inodes of the largest image "
                        "of any configuration (one a file): give fewer files or a larger [mkfs] size")
    sizes = {"size_mib": base_mkfs.get("size", 0), "cache_mib": base_mount.get("cache", 0)}
    sizes = {k: (_size(v, src, ("mkfs",)) if v else 0) >> 20 for k, v in sizes.items()}
    return configs, sizes


# which mkfs keyword an ImageError of simfs.ondisk.mkfs.plan is about (its words)
_MKFS_ERRORS = (("block size", "block_size"), ("inode size", "inode_size"), ("reserved", "reserved_ratio"),
                ("label", "label"), ("bytes per inode", "bytes_per_inode"), ("blocks per group", "blocks_per_group"),
                ("inodes per group", "inodes_per_group"), ("image too", "size"))


def _check_mkfs(src: Source, kw: dict, where_of: dict, raw) -> int | None:
    """The image's geometry as simfs mkfs checks it (simfs.ondisk.mkfs.plan: nothing written):
    a size too small or too large, a block size other than 1K or 4K, ... A size that follows
    the workload (`raw` a table) is checked when the workload is known (here 1 GiB stands in
    for it). Returns the inodes of the largest image it can be: a generated tree of more files
    than any configuration holds was generated for hours before the first unpack ran out."""
    from simfs.errors import ImageError
    from simfs.ondisk.mkfs import plan
    kw = dict(kw)
    size = kw.pop("size_bytes")
    relative = isinstance(raw, dict)
    if relative:
        size = 1 << 30
    for k, v in kw.items():
        if k == "label":
            if not isinstance(v, str):
                raise src.error(where_of.get(k, ("mkfs", k)), f"mkfs {k} must be a string, not {_toml(v)}")
            kw[k] = v.encode()
        elif isinstance(v, bool) or not isinstance(v, (int, float)) or (k != "reserved_ratio" and
                                                                          not isinstance(v, int)):
            raise src.error(where_of.get(k, ("mkfs", k)), f"mkfs {k} must be a number, not {_toml(v)}")
    try:
        _, _, groups, per_group = plan(size, **kw)
    except ImageError as e:
        key = next((k for words, k in _MKFS_ERRORS if words in str(e)), None)
        raise src.error(where_of.get(key, ("mkfs", key) if key else ("mkfs",)), f"mkfs: {e}") from None
    if relative:                        # its largest: the workload's bytes past any factor
        try:
            _, _, groups, per_group = plan(_resolve(raw, "size", 1 << 62, src, ("mkfs", "size")), **kw)
        except ImageError:
            return None
    return groups * per_group


POLICY_OPTIONS = {"alloc": ("policies", "ALLOCATORS"), "inode_placement": ("policies", "INODE_PLACERS"),
                  "dirorder": ("policies.dirorder", "DIR_ORDERS"), "writeback": ("policies.writeback", "WRITEBACK")}


def _check_mount(src: Source, mount: dict, where_of: dict) -> None:
    """Validate with the parser `simfs mount` uses (unknown values, ranges, disk models) and the
    policy registries the volume opens them with. `where_of`: option -> its position in the file."""
    import importlib
    from simfs.fuse import mountopts
    text = Config("", mount=mount, mkfs={}).mount_string()

    def where(key):
        return where_of.get(key, ("mount", key))

    try:
        vol = mountopts.parse([text]).volume
    except mountopts.OptionError as e:
        bad = re.search(r"option '?(\w+)", str(e))
        raise src.error(where(bad.group(1)) if bad else ("mount",), str(e)) from None
    for key, (mod, reg) in POLICY_OPTIONS.items():
        name = getattr(vol, key, "")
        if key in mount and name:
            try:
                getattr(importlib.import_module(mod), reg).resolve(name)
            except ValueError as e:
                raise src.error(where(key), f"bad value for mount option {key}: {e}") from None


def _render(template: str, ctx) -> str:
    """A run = / prepare = command with {mnt}, {source}, ... replaced by quoted paths."""
    vals = {"mnt": ctx.mnt, "source": ctx.source, "tarball": ctx.tarball, "work": ctx.work,
            "image": ctx.image}
    out = template
    for k, v in vals.items():
        out = out.replace("{" + k + "}", ph.q(v) if v is not None else "")
    for k, v in (ctx.params or {}).items():
        out = out.replace("{params." + k + "}", ph.q(v))
    return out


def _verb_record(verb: str, path: str, args: dict, drain: bool):
    """An in-process phase: simfs.inprocess.verbs.run on the unmounted image (one cold mount). sim_cmd
    is the tool's time; sim_drain what the close added (the write-back it left, as `-o stats=`
    includes it, and the mount's set-up); the headline adds it when drain = true
    (phases.run_verb)."""
    def command(ctx) -> dict:
        params = verb_params(verb, args)
        if verb == "unpack":
            from simfs.inprocess.treedesc import from_directory, from_tarball
            frm = params.pop("from", None)
            if frm:
                p = Path(frm).expanduser()
                params["source"] = from_directory(str(p), with_data=True) if p.is_dir() \
                    else from_tarball(str(p), with_data=True)
            else:
                params["source"] = from_tarball(str(ctx.tarball), with_data=True)
            params.setdefault("mkdir", True)
        return ph.run_verb(ctx, verb, path, drain=drain, **params)
    return command


def _phase(p: dict) -> Phase:
    flags = {k: p[k] for k in ("drain", "writes", "trace", "setup", "cold") if k in p}
    if "builtin" in p:
        fn = _builtins()[p["builtin"]]
        kw = dict(p.get("args", {}))
        if "name" in inspect.signature(fn).parameters:
            kw.setdefault("name", p["name"])
        for k in ("drain", "trace", "setup"):
            if k in p and k in inspect.signature(fn).parameters:
                kw[k] = p[k]
        phase = fn(**kw)
        phase.name = p["name"]
        for k, v in flags.items():
            setattr(phase, k, v)
        if "description" in p:
            phase.description = p["description"]
        return phase
    if "verb" in p:
        args = dict(p.get("args", {}))
        shown = " ".join(f"--{k} {v}" for k, v in args.items())
        return Phase(p["name"], p.get("description", f"simfs verb {p['verb']} {p['path']} {shown}".strip()
                                      + " (in-process)"),
                     kind="volume", command=_verb_record(p["verb"], p["path"], args, p.get("drain", False)),
                     metrics=tuple(p.get("metrics", ())), **{k: v for k, v in flags.items() if k != "cold"})
    run, prep = p["run"], p.get("prepare")
    shown = run
    for k, v in (("{mnt}", "MNT"), ("{source}", "SRC"), ("{tarball}", "SRC.tar"), ("{work}", "WORK"),
                 ("{image}", "IMAGE")):
        shown = shown.replace(k, v)
    return Phase(p["name"], p.get("description", shown), kind="mount",
                 command=lambda c, t=run: _render(t, c),
                 prepare=(lambda c, t=prep: _render(t, c)) if prep else None,
                 metrics=tuple(p.get("metrics", ())), **flags)


def compile_job(job: Job, wl) -> Experiment:
    """The Experiment of `job` for the prepared workload `wl` (runner.Workload: its bytes size
    the images and caches given as multiples of the workload)."""
    from simfs.units import parse_size
    doc = job.doc
    j = doc["job"]
    configs, sizes = _configs(job, wl.bytes)
    reps = j.get("repetitions", 1)
    vars_ = {**sizes, "repetitions": reps}
    names = {c.name for c in configs}
    phases = [_phase(p) for p in doc["phase"]]
    params = {k: parse_size(v) if _looks_size(v) else v for k, v in doc.get("params", {}).items()}
    compares = []
    measured = [p.name for p in phases if p.kind != "mkfs" and not p.setup]
    for r in doc.get("ratio", []):
        # a ratio between configurations --quick leaves out is dropped, as --only drops it
        if r["num"] in names and r["den"] in names:
            kw = {k: r[k] for k in ("published", "source", "metric", "expect", "check", "explain", "headline")
                  if k in r}
            kw.setdefault("published", None)
            kw.setdefault("expect", "")             # a job claims no direction unless it says so
            kw.setdefault("check", False)
            for phase in ([r["phase"]] if "phase" in r else measured):
                label = r.get("label", f"{phase}: {r['num']} / {r['den']}")
                if "phase" not in r and "label" in r:
                    label = f"{phase}: {r['label']}"
                compares.append(Compare(label, phase, r["num"], r["den"], **kw))
    panels = [Panel(p.get("title", p["phase"]), p["phase"], list(p.get("configs", [c.name for c in configs])))
              for p in doc.get("panel", [])]
    plots = doc.get("plots", {})
    blockmap = [c.name for c in configs if any(fnmatchcase(c.name, pat) for pat in plots.get("blockmap", []))]
    exp = Experiment(
        name=j["name"], seed=str(j.get("seed", "")), title=_fmt(j.get("title", j["name"]), vars_),
        description=_fmt(j.get("description", ""), vars_), configs=configs, phases=phases,
        compares=compares, workload=job.workload_spec(), repetitions=reps, panels=panels,
        blockmap=blockmap, blockmap_files=plots.get("blockmap_files", "all"),
        notes=[_fmt(n, vars_) for n in j.get("notes", [])], params=params, quick=job.quick)
    return exp


def needs_mount(exp: Experiment) -> bool:
    return any(p.kind == "mount" for p in exp.phases)


def shell_words(cmd) -> list[str]:
    return [str(c) for c in cmd] if not isinstance(cmd, str) else shlex.split(cmd)
