"""Compiling a checked job into the `spec.Experiment` the runner runs: its configurations, its
phases (a run = command with its placeholders replaced, a verb run in-process, a builtin's
Python hook), ratios, panels and block maps."""

from __future__ import annotations

import inspect
import shlex
from fnmatch import fnmatchcase
from pathlib import Path

from .. import phases as ph
from ..builtins import BUILTINS
from ..spec import Compare, Experiment, Panel, Phase
from .check import configs as check_configs, fio_path, verb_params
from .expand import _fmt
from .schema import Job, _looks_size


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


def _fio_phase(p: dict, fio: Path, flags: dict) -> Phase:
    """A fio = phase: `simfs fio MNT JOB.fio --out WORK/fio-NAME` (one simulated phase per fio
    job); its extra metrics are each fio job's simulated IOPS and MB/s per direction, read
    from the fio-shaped JSON it writes (simfs/cli/fio.py)."""
    import json
    import sys
    out = lambda c: c.work / f"fio-{p['name']}"

    def after(c, rec: dict) -> dict:
        doc = json.loads((out(c) / "fio-sim.json").read_text())
        extra = {}
        for j in doc["jobs"]:
            for d in ("read", "write"):
                x = j.get(d) or {}
                if x.get("total_ios"):
                    extra[f"{j['jobname']}.{d}_iops"] = x["iops"]
                    extra[f"{j['jobname']}.{d}_mb_s"] = x["bw_bytes"] / 1e6
        return extra

    return Phase(p["name"], p.get("description", f"fio {fio.name} on MNT (one simulated phase per fio job)"),
                 kind="mount", command=lambda c: [sys.executable, "-m", "simfs.cli", "fio", str(c.mnt), str(fio),
                                                  "--out", str(out(c))],
                 prepare=(lambda c, t=p["prepare"]: _render(t, c)) if "prepare" in p else None,
                 after=after, metrics=tuple(p.get("metrics", ())), **flags)


def _phase(p: dict, fio: Path | None = None) -> Phase:
    flags = {k: p[k] for k in ("drain", "writes", "trace", "setup", "cold") if k in p}
    if fio is not None:
        return _fio_phase(p, fio, flags)
    if "builtin" in p:
        fn = BUILTINS()[p["builtin"]]
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
    configs, sizes = check_configs(job, wl.bytes)
    reps = j.get("repetitions", 1)
    vars_ = {**sizes, "repetitions": reps}
    names = {c.name for c in configs}
    phases = [_phase(p, fio_path(job, p)) for p in doc["phase"]]
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
    exp.aged = doc.get("aged")          # [aged]: the runner ages each fresh image (experiments.aging.aged)
    if exp.aged:
        from experiments.aging.aged import describe
        exp.notes.append(f"aged: every configuration and repetition starts from its fresh image aged by "
                         f"{describe(exp.aged)}" + (" (files created and deleted in-process to a profile, Geriatrix-style)"
                                                    if exp.aged.get("history") == "synthetic" else
                                                    " (pulls of a git history, recorded once, replayed per configuration)"))
    return exp


def needs_mount(exp: Experiment) -> bool:
    return any(p.kind == "mount" for p in exp.phases)


def shell_words(cmd) -> list[str]:
    return [str(c) for c in cmd] if not isinstance(cmd, str) else shlex.split(cmd)
