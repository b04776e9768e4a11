"""The matrix expanded into configurations: the product of the axes minus the exclusions plus
the added ones (`expand`: names), then each made a `spec.Config` with its mkfs keywords and
mount options, sizes given as multiples of the workload resolved to bytes (`configs`)."""

from __future__ import annotations

import itertools
import math
from typing import Callable

from .. import sizing
from ..spec import Config
from .schema import NUMBER, VALUE_KEYS, Job, Source, _label, _looks_size, _mkfs_keys, _size, _toml, _unknown, axes


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


def configs(job: Job, wl_bytes: int, check_mount: Callable,
            check_mkfs: Callable | None = None) -> tuple[list[Config], dict]:
    """The matrix expanded: (configurations in the file's order, sizes used for notes). Each
    configuration's mount options go through `check_mount(src, mount, where_of)`; with
    `check_mkfs(src, mkfs_kw, where_of, raw)` its mkfs keywords too, which returns the inodes of
    the largest image the configuration can be (check.py has both: this module only expands)."""
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
        if check_mkfs is not None:
            raw = next((v.get("size") if isinstance(v, dict) else v for a, v in choice.items()
                        if (v if isinstance(v, dict) else {a: v}).get("size") is not None),
                       doc.get("mkfs", {}).get("size"))
            inodes.append(check_mkfs(src, mkfs_kw, where_of, raw))
        check_mount(src, mount, where_of)
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
