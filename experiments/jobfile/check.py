"""Checking a job: every key known, every value valid, each problem one `JobError` naming the
file and line (schema.Source), found before anything runs: the phases' verbs, builtins and
args, the matrix's axes and values, every configuration's mount options and mkfs geometry as
`simfs mount` and `simfs mkfs` check them, the names ratios and panels refer to.
"""

from __future__ import annotations

import inspect
import re
from fnmatch import fnmatchcase
from pathlib import Path

from ..builtins import BUILTIN_NAMES, BUILTINS
from ..spec import Config
from .expand import _resolve, configs as _expand_configs, expand
from .schema import (JOB_KEYS, MATRIX_SPECIAL, PANEL_KEYS, PHASE_KEYS, PLACEHOLDERS, PLOTS_KEYS, RATIO_KEYS,
                     RUNNER_OWNED, TEXT_VARS, TREE_KEYS, VALUE_KEYS, WORKLOAD_KINDS, Job, Source, _label, _mkfs_keys,
                     _mount_keys, _placeholders, _scalar, _suggest, _table, _toml, _types, _unknown, axes)


def check(job: Job) -> None:
    """Every key known, every value valid: raise JobError at the first problem."""
    _types(job.src, (), job.doc, "", "")
    _check_job(job)
    _check_workload(job)
    _check_aged(job)
    mkfs_keys, mount_keys = _mkfs_keys(), _mount_keys()
    _check_options(job, mkfs_keys, mount_keys)
    names = _check_phases(job)
    _check_matrix(job, mkfs_keys, mount_keys)
    configs(job, 1 << 30, check_mkfs=True)    # every configuration's mount options and mkfs geometry,
                                               # as simfs mount and simfs mkfs check them
    cnames = [n for n, _, _ in expand(job)]
    known = set(cnames) | set(job.full_names)
    _check_ratios(job, names, cnames, known)
    _check_panels(job, names, cnames, known)


def configs(job: Job, wl_bytes: int, check_mkfs: bool = False) -> tuple[list[Config], dict]:
    """expand.configs with the checks of simfs mount (always) and of simfs mkfs (`check_mkfs`)."""
    return _expand_configs(job, wl_bytes, _check_mount, _check_mkfs if check_mkfs else None)


def _check_job(job: Job) -> None:
    src = job.src
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


def _check_aged(job: Job) -> None:
    """[aged]: its keys and values (the history itself is read by check_paths and the run)."""
    if "aged" not in job.doc:
        return
    from experiments.aging.aged import AgedError, check_table
    try:
        check_table(job.doc["aged"])
    except AgedError as e:
        from experiments.aging.aged import KEYS
        bad = next((k for k in job.doc["aged"] if k not in KEYS), None) \
            if isinstance(job.doc["aged"], dict) else None
        raise job.src.error(("aged", bad) if bad else ("aged",), str(e)) from None


def _check_workload(job: Job) -> None:
    src = job.src
    w = _table(job, "workload")
    _types(src, ("workload",), w, "workload", "[workload]")
    kind = w.get("kind", "none")
    if kind not in WORKLOAD_KINDS:
        raise src.error(("workload", "kind"), f"unknown workload kind {kind!r}; valid: tree, dir, tarball, none"
                        + _suggest(kind, WORKLOAD_KINDS))
    allowed = {"kind"} | {"tree": TREE_KEYS, "dir": {"path"}, "tarball": {"path"}, "none": {"describe"}}[kind]
    _unknown(src, ("workload",), w, allowed, f"[workload] of kind {kind!r}")
    if kind in ("dir", "tarball"):
        if not isinstance(w.get("path"), str):
            raise src.error(("workload", "kind"), f"a workload of kind \"{kind}\" needs path = "
                            + ("\"DIR\"" if kind == "dir" else "\"FILE.tar\" (any archive tar -xf reads)"))
    if kind == "tree":
        for k, v in w.items():
            why = _tree_value(k, v)
            if why:
                raise src.error(("workload", k), f"[workload] {k} = {_toml(v)}: {why}")


def _check_options(job: Job, mkfs_keys: set, mount_keys: set) -> None:
    """[mkfs], [mount], [params] and [plots]."""
    src = job.src
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


def _check_phases(job: Job) -> set[str]:
    """Every [[phase]]; returns their names."""
    src, phases = job.src, job.doc.get("phase", [])
    if not isinstance(phases, list) or not phases:
        raise src.error(("phase",), "the job has no [[phase]]: nothing to run")
    names: set[str] = set()
    placeholders = PLACEHOLDERS + tuple(f"params.{k}" for k in _table(job, "params"))
    for i, p in enumerate(phases):
        _unknown(src, ("phase", i), p, PHASE_KEYS, "[[phase]]")
        _types(src, ("phase", i), p, "phase", "[[phase]]")
        if not isinstance(p.get("name"), str) or not p["name"]:
            raise src.error(("phase", i), f"[[phase]] number {i + 1} has no name")
        if p["name"] in names or p["name"] in ("mkfs", "layout") and p.get("builtin") != "mkfs":
            raise src.error(("phase", i, "name"), f"phase name {p['name']!r} is taken")
        names.add(p["name"])
        how = [k for k in ("run", "verb", "builtin", "fio") if k in p]
        if len(how) != 1:
            raise src.error(("phase", i, "name"), f"phase {p['name']!r} needs one of run = \"COMMAND\", "
                            f"verb = \"VERB\", builtin = \"NAME\" or fio = \"JOB.fio\"" + (f" (has {', '.join(how)})" if how else
                                                                      " (it has no command)"))
        if "run" in p and not p["run"].strip():
            raise src.error(("phase", i, "run"), f"phase {p['name']!r}: run = is empty")
        for k in ("run", "prepare"):
            _placeholders(src, ("phase", i, k), p.get(k, ""), placeholders, f"phase {p['name']!r}, {k}")
        if "prepare" in p and "builtin" in p:
            raise src.error(("phase", i, "prepare"), f"phase {p['name']!r}: prepare = is for run = phases")
        _check_phase_kind(src, i, p)
        if p.get("cold") is False and (i == 0 or "run" not in phases[i - 1] or "run" not in p):
            raise src.error(("phase", i, "cold"), f"phase {p['name']!r}: cold = false continues the previous "
                            "phase's mount, so both must be run = phases")
    return names


def _check_phase_kind(src: Source, i: int, p: dict) -> None:
    """What a verb = or builtin = phase says: a known verb or builtin, and the args it takes."""
    builtins = BUILTINS()
    if "verb" in p:
        verbs = _verb_names()
        if p["verb"] not in verbs:
            raise src.error(("phase", i, "verb"), f"unknown verb {p['verb']!r}; valid: {', '.join(verbs)}"
                            + _suggest(p["verb"], verbs))
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
                        f"{', '.join(BUILTIN_NAMES)}" + _suggest(p["builtin"], BUILTIN_NAMES))
    if "args" in p and ("run" in p or "fio" in p):
        raise src.error(("phase", i, "args"), f"phase {p['name']!r}: args = is for verb = and builtin = "
                        "phases (a run = or fio = phase's command says everything)")
    if "args" in p:
        if not isinstance(p["args"], dict):
            raise src.error(("phase", i, "args"), f"phase {p['name']!r}: args must be a table, "
                            "e.g. {type = \"d\"}")
        what = f"verb {p['verb']!r}" if "verb" in p else f"builtin {p['builtin']!r}"
        valid = verb_args(p["verb"]) if "verb" in p else builtin_args(builtins[p["builtin"]])
        for k in p["args"]:
            if k not in valid:
                raise src.error(("phase", i, "args", k), f"phase {p['name']!r}: {what} takes no argument "
                                f"{k!r}; valid: {', '.join(sorted(valid)) or 'none'}" + _suggest(k, valid))
    if "verb" in p:
        _check_verb(src, i, p)


def _check_matrix(job: Job, mkfs_keys: set, mount_keys: set) -> None:
    src, m = job.src, _table(job, "matrix")
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


def _check_ratios(job: Job, names: set, cnames: list, known: set) -> None:
    src = job.src
    for i, r in enumerate(job.doc.get("ratio", [])):
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


def _check_panels(job: Job, names: set, cnames: list, known: set) -> None:
    """[[panel]] and [plots] blockmap."""
    src = job.src
    for i, p in enumerate(job.doc.get("panel", [])):
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
    if "aged" in job.doc:                       # the history exists and has the pulls
        from experiments.aging.aged import AgedError, check
        try:
            check(job.doc["aged"])
        except AgedError as e:
            raise src.error(("aged",), str(e)) from None
    if workload and w.get("kind") in ("dir", "tarball"):
        why = _path_problem(w["path"], want_dir=w["kind"] == "dir")
        if not why and w["kind"] == "tarball" and not Path(w["path"]).expanduser().is_file():
            why = "not a file"
        if why:
            raise src.error(("workload", "path"), f"[workload] path = {_toml(w['path'])}: {why}")
    for i, p in enumerate(job.doc.get("phase", [])):
        frm = p.get("args", {}).get("from") if "verb" in p else None
        why = isinstance(frm, str) and _path_problem(frm, want_dir=False)
        if why:
            raise src.error(("phase", i, "args", "from"), f"phase {p['name']!r}: from = {_toml(frm)}: {why}")
        fio = fio_path(job, p)
        if fio is not None and not fio.is_file():
            raise src.error(("phase", i, "fio"), f"phase {p['name']!r}: fio = {_toml(p['fio'])}: no such file "
                            f"(looked for {fio})")


def fio_path(job: Job, p: dict) -> Path | None:
    """A fio = phase's job file: a relative path is the job file's neighbour."""
    if "fio" not in p:
        return None
    f = Path(p["fio"]).expanduser()
    return f if f.is_absolute() else Path(job.path).resolve().parent / f


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
        raise src.error(where, f"unknown mount option {k!r}; valid: {', '.join(sorted(mount_keys))}"
                        + _suggest(k, mount_keys))


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
                        f"option or an mkfs key (or give labelled values: [{{label = ..., OPTION = ...}}])"
                        + _suggest(axis, set(mkfs_keys) | set(mount_keys)))
    else:
        _option_value(src, where, axis, val)


def _option_value(src: Source, where: tuple, k: str, v) -> None:
    """A mount option's or mkfs key's value is a string, a number or true/false, as on the
    command line; a table only where a size may follow the workload (mkfs size, mount cache)."""
    if _scalar(v) or (isinstance(v, dict) and k in ("size", "cache")):
        return
    raise src.error(where, f"[{where[0]}] {k} = {_toml(v)}: must be a string, a number or true/false"
                    + (" ({workload = ...} is for mkfs size and mount cache)" if isinstance(v, dict) else ""))


# which mkfs keyword an ImageError of simfs.ondisk.mkfs.plan is about (its words)
_MKFS_ERRORS = (("block size", "block_size"), ("inode size", "inode_size"), ("reserved", "reserved_ratio"),
                ("label", "label"), ("bytes per inode", "bytes_per_inode"), ("blocks per group", "blocks_per_group"),
                ("inodes per group", "inodes_per_group"), ("image too", "size"), ("profile", "profile"),
                ("-O", "features"), ("flex group", "groups_per_flex"), ("flex_bg", "groups_per_flex"))

# the mkfs keys whose values are words (simfs mkfs --label, --profile, -O), not numbers
_MKFS_TEXT = ("label", "profile", "features")


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
        if k in _MKFS_TEXT:
            if not isinstance(v, str):
                raise src.error(where_of.get(k, ("mkfs", k)), f"mkfs {k} must be a string, not {_toml(v)}")
            if k == "label":
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


# the option-value check: the one place a job's mount options are validated (every configuration's,
# from check() and from compile_job())
def _check_mount(src: Source, mount: dict, where_of: dict) -> None:
    """Validate with the parser `simfs mount` uses: unknown keys, and each value as its
    VolumeOptions field declares it (simfs.fs.optionspec: ranges, policy names through their
    registries, disk models built). `where_of`: option -> its position in the file."""
    from simfs.fuse import mountopts
    text = Config("", mount=mount, mkfs={}).mount_string()

    def where(key):
        return where_of.get(key, ("mount", key))

    try:
        mountopts.parse([text])
    except mountopts.OptionError as e:
        bad = re.search(r"option '?(\w+)", str(e))
        raise src.error(where(bad.group(1)) if bad else ("mount",), str(e)) from None
