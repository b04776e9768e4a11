"""Job files: an experiment written in TOML, compiled to the `spec.Experiment` the runner runs.

A job file is an experiment — a workload, a matrix of configurations, phases, ratios — and
`simfs run JOB.toml` and `simfs experiment run NAME` (experiments/jobs/NAME.toml) share one
runner. The format (docs/experiments.md, "Job files", has an example;
experiments/jobs/*.toml are the five seeds, examples/jobs/*.toml more):

    [job]       name (required), title, description, repetitions, seed, notes = [...]
    [workload]  kind = "tree" (generate_tree's keywords: seed, files, total_size, svn, ...),
                "dir" (path = "~/src": your tree), "tarball" (path = "src.tar": an archive,
                unpacked; any tar -xf reads) or "none" (describe = "...")
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
                experiments/builtins/); prepare = "..." (untimed, before), cold (default true: remount,
                buffer cache and drive cache empty; false: stay on the previous phase's mount),
                drain (the time includes writing back what the phase left dirty), writes, trace,
                setup, description
    [[ratio]]   num, den (configuration names), phase (default: every phase), label, metric,
                published, source, expect (">" or "<": the direction expected; default "": none),
                check (flag a wrong direction in capitals; default false), explain, headline
    [[panel]]   phase (required), title, configs (seekwatcher plots); [plots] blockmap = [patterns],
                blockmap_files
    [aged]      history = "git", pulls = N, repo = PATH (default: the shared xfstests history):
                every configuration starts from its fresh image aged by N pulls (experiments.aging.aged);
                or history = "synthetic", profile = NAME|DIR, full = PCT (80), churn = X (1), seed = N,
                frag = BLOCKS: aged Geriatrix-style by a profile (experiments.aging.synthetic)
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

The package, one job per module: schema.py (the keys, their types, positions for messages,
`Job`), check.py (every value valid), expand.py (the matrix into configurations), compiler.py
(the `spec.Experiment`); here `load`, which reads and checks.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from .check import check, check_paths, verb_args, verb_params
from .compiler import compile_job, needs_mount, shell_words
from .expand import expand
from .schema import TOP, Job, JobError, Source, _merge, _unknown, axes

__all__ = ["Job", "JobError", "axes", "check", "check_paths", "compile_job", "expand", "load", "loads",
           "needs_mount", "overlay", "shell_words", "verb_args", "verb_params"]


def load(path, quick: bool = False, over: dict | None = None, over_label: str = "") -> Job:
    """Read and check a job file (keys, values, options; nothing is run). JobError on bad input.
    `over`: tables merged over the job (after [quick], as [quick] merges), what a command-line
    option changes (experiments/builtins: `simfs experiment run mmap-fragmentation --size`),
    named `over_label` in messages (e.g. "with --size 5G")."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise JobError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        line = path.read_bytes()[:e.start].count(b"\n") + 1
        raise JobError(f"{path}:{line}: not a job file: not UTF-8 text (byte 0x{e.object[e.start]:02x} "
                       f"at offset {e.start}); a job file is TOML") from None
    return loads(text, path, quick, over, over_label)


def loads(text: str, path, quick: bool = False, over: dict | None = None, over_label: str = "") -> Job:
    """`load` of a job file's text (`path` names it in messages; Dask workers get the text)."""
    job = _loads(text, Path(path), quick)
    return overlay(job, over, over_label) if over else job


def overlay(job: Job, over: dict, over_label: str = "") -> Job:
    """JOB with the tables OVER merged over it (as `load`'s `over`), checked again."""
    out = Job(job.path, _merge(job.doc, over), job.quick, job.src.merged(over, over_label or "with options"),
              job.full_names, base=job.base)
    check(out)
    return out


def _loads(text: str, path: Path, quick: bool) -> Job:
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
