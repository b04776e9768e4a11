"""`simfs run JOB.toml [--quick] [--out DIR] [--resume DIR] [--workers N | --scheduler ADDRESS]`.

`register(subparsers)` is the entry point `run` of the group `simfs.commands` (setup.cfg);
`python -m experiments.jobcli JOB.toml ...` is the same command before the package is
re-installed. The job file is checked whole before anything runs (bad input: one line
`JOB.toml:LINE: ...`, exit status 2, nothing mounted); see experiments/jobfile/ for the
format and experiments/jobrun.py for how tasks run and results are kept.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from simfs.cli.tables import add_markdown_option

EXAMPLES = """examples:
  simfs run examples/jobs/alloc-ab.toml --quick             # seconds: a tiny generated tree
  simfs run examples/jobs/alloc-ab.toml --source ~/src/linux --out results/linux-ab
  simfs run experiments/jobs/readdir-order.toml --quick --workers 2   # 2 Dask worker processes
  simfs run examples/jobs/dirorder-ab.toml --scheduler tcp://10.0.0.5:8786
  simfs run examples/jobs/alloc-ab.toml --resume results/linux-ab   # only what is missing
  simfs compare results/a/results.json results/b/results.json

exit status: 0 every configuration finished; 1 some failed (the summary says which and why;
the others' results are kept); 2 bad input; 130 interrupted (finished results kept: --resume).
"""


DESCRIPTION = ("Run a job file (TOML): a workload, a matrix of configurations (mkfs geometry and mount "
               "options), phases (a shell command in the mount or an in-process verb, cold or not, with or "
               "without the write-back they leave) and the ratios to report. Each configuration gets a "
               "fresh image. Writes results.json, results.csv, table.md and PNG plots, and every finished "
               "configuration to DIR/configs/ as it finishes. The format: docs/experiments.md, \"Job files\", "
               "and experiments/jobfile/.")


def _seconds(text: str) -> float:
    """An argparse type for --timeout: finite and above 0 (Dask takes nan, inf or -1 apart
    with a traceback or a garbled message)."""
    import math
    try:
        t = float(text)
    except ValueError:
        t = math.nan
    if not (math.isfinite(t) and t > 0):
        raise argparse.ArgumentTypeError(f"invalid number of seconds: {text!r} "
                                         "(give a number above 0, e.g. 30)")
    return t


def add_arguments(p) -> None:
    p.add_argument("job", metavar="JOB.toml", type=Path, help="the job file (experiments/jobs/, examples/jobs/)")
    p.add_argument("--quick", action="store_true", help="the job's [quick] version (CI: seconds to minutes)")
    p.add_argument("--out", type=Path, default=None,
                   help="results directory, made if missing (its parent must exist; default "
                        "results/<job name>[-quick]-<time>)")
    p.add_argument("--resume", metavar="DIR", type=Path, default=None,
                   help="add to the results in DIR: run only the configurations x repetitions "
                        "DIR/configs/ does not hold yet (same job and options)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", "-j", type=int, default=None, metavar="N",
                   help="run configurations x repetitions as tasks on N local Dask worker processes "
                        "(mounted phases need FUSE and root there, as here)")
    g.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run the tasks on an existing Dask cluster (tcp://HOST:8786); mounted phases "
                        "need FUSE and root on every worker, a workload directory the same path there")
    p.add_argument("--timeout", type=_seconds, default=10, metavar="SECONDS",
                   help="how long to try reaching the --scheduler (default 10)")
    p.add_argument("--source", type=Path, default=None, metavar="DIR|TARBALL",
                   help="copy this directory, or unpack this tarball (what tar -xf reads: .tar, .tar.gz, "
                        "...), instead of the job's workload")
    p.add_argument("--only", metavar="PATTERN", action="append", default=None,
                   help="only the configurations whose name matches this shell pattern (repeatable)")
    p.add_argument("--work-dir", type=Path, default=None, metavar="DIR",
                   help="where images, mounts and traces live while running (default /var/tmp; made if missing, as --out is)")
    p.add_argument("--keep", action="store_true", help="keep the work directory (images, traces, logs)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--json", action="store_true",
                   help="print the results document (results.json) instead of the tables")
    add_markdown_option(p)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="run a job file: configurations x phases on fresh images, ratios, plots",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=DESCRIPTION,
        epilog=EXAMPLES)
    add_arguments(p)
    p.set_defaults(func=cmd_run)


def fail(msg: str) -> int:
    print(f"simfs run: {msg}", file=sys.stderr)
    return 2


def cmd_run(a) -> int:
    from rich.console import Console

    from . import jobfile, jobrun, runner

    err = Console(stderr=True, highlight=False)
    aging = _aging_job(a)
    if aging is not None:
        return aging
    if a.workers is not None and a.workers < 1:
        return fail(f"--workers {a.workers}: give 1 or more")
    if a.resume and a.out and a.resume != a.out:
        return fail("--resume DIR is also the results directory; leave --out out")
    loaded = _load(a)
    if isinstance(loaded, int):
        return loaded
    job, spec, probe = loaded
    why = _dirs_problem(a)
    if why:
        return fail(why)
    mounted = jobfile.needs_mount(probe)
    if mounted and a.workers is None and a.scheduler is None:
        why = jobrun.fuse_problem()
        if why:
            return fail(f"this job has mounted phases (run =), which need FUSE and root: {why}")
    out = a.resume or a.out or Path("results") / f"{job.name}{'-quick' if a.quick else ''}-{time.strftime('%Y%m%d-%H%M%S')}"
    # what --resume compares: the job compiled against a nominal workload (sizes relative to it)
    fp = jobrun.fingerprint(probe, spec)
    why = _resume_problem(a, out, fp)
    if why:
        return fail(why)
    client = cluster = None
    if a.workers is not None or a.scheduler:
        try:
            client, cluster = jobrun.start_dask(a.workers, a.scheduler, a.timeout)
            jobrun.check_workers(client, mounted)
        except jobrun.RunError as e:
            _close(client, cluster)
            return fail(str(e))
    # SIGTERM as Ctrl-C: finished results are kept and mounts released on the way out
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    def close_dask() -> None:
        nonlocal client, cluster
        _close(client, cluster)
        client = cluster = None

    root = a.work_dir or runner.default_work_root()
    root.mkdir(exist_ok=True)                  # --work-dir is made as --out is (its parent exists)
    work = Path(tempfile.mkdtemp(prefix=f"simfs-run-{job.name}-", dir=root))
    try:
        return _execute(a, job, spec, fp, out, work, client, err, close_dask)
    except KeyboardInterrupt:
        print(f"interrupted; finished configurations are in {out}/configs (--resume {out})", file=sys.stderr)
        return 130
    except runner.ExperimentError as e:
        print(f"simfs run: {e}", file=sys.stderr)
        return 1
    finally:
        close_dask()
        runner.release_mounts(work)
        if a.keep:
            err.print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _aging_job(a) -> int | None:
    """An aging job file ([aging]: experiments/aging/jobtable.py) is run by experiments.aging;
    None for any other job file."""
    from .aging.jobtable import AgingJobError, aging_table, argv
    try:
        table = aging_table(a.job)
        if table is None:
            return None
        ignored = [o for o, v in (("--only", a.only), ("--work-dir", a.work_dir), ("--keep", a.keep),
                                  ("--json", a.json)) if v]
        if ignored:
            return fail(f"{a.job} is an aging job ([aging]), run on this machine by experiments.aging: "
                        f"{', '.join(ignored)} is for other job files")
        from .aging import cli as aging
        return aging.main(argv(a.job, table, quick=a.quick, out=a.out, resume=a.resume, source=a.source)
                          + (["--no-pictures"] if a.no_plots else [])
                          + (["--workers", str(a.workers)] if a.workers is not None else [])
                          + (["--scheduler", a.scheduler] if a.scheduler else []))
    except AgingJobError as e:
        return fail(str(e))


def _load(a):
    """(job, workload spec, the job compiled against a nominal workload), or the exit status
    after saying what is wrong with the job file or the options."""
    from . import jobfile, runner
    from .spec import SelectionError
    try:
        job = jobfile.load(a.job, quick=a.quick)
        jobfile.check_paths(job, workload=a.source is None)
        spec = job.workload_spec()
        if a.source is not None:
            if spec["kind"] != "tree":
                return fail(f"{a.job} has no tree workload ([workload] kind = \"none\"); "
                            "--source (a directory or a tarball) replaces a tree")
            try:
                spec = source_spec(a.source)
            except ValueError as e:
                return fail(str(e))
        # compiled once against a nominal workload: the phases' kinds and the --only patterns
        probe = jobfile.compile_job(job, runner.Workload(spec["kind"], bytes=1 << 30))
        if a.only:
            probe.select(a.only)
    except jobfile.JobError as e:
        print(str(e), file=sys.stderr)
        return 2
    except SelectionError as e:
        return fail(str(e))
    return job, spec, probe


#: compressions GNU tar unpacks that Python's tarfile cannot recognise
TAR_SUFFIXES = (".zst", ".tzst")


def source_spec(source: Path) -> dict:
    """The runner's workload for --source (experiments/runner.py prepare_workload): a directory
    is copied ({"kind": "tree", "path": DIR}), a tar archive unpacked first ({"kind": "tree",
    "tarball": FILE}, as a job's [workload] kind = "tarball"). ValueError with the one-line
    reason for anything else."""
    import tarfile
    p = source.expanduser()
    if p.is_dir():
        return {"kind": "tree", "path": str(p.resolve())}
    if not p.exists():
        raise ValueError(f"--source {source}: no such directory or tarball")
    if not p.is_file():
        raise ValueError(f"--source {source}: neither a directory nor a tarball")
    try:
        archive = tarfile.is_tarfile(p) or p.name.endswith(TAR_SUFFIXES)
    except OSError as e:
        raise ValueError(f"--source {source}: cannot read it: {e.strerror}") from None
    if not archive:
        raise ValueError(f"--source {source}: not a directory or a tarball (give a tree, or an archive "
                         "tar -xf unpacks)")
    return {"kind": "tree", "tarball": str(p.resolve())}


def _resume_problem(a, out: Path, fp: dict) -> str | None:
    """Why the results directory cannot take this run: --resume of another job or other
    options, or (without --resume) a directory that already holds a run's results."""
    if a.resume:
        try:
            before = json.loads((a.resume / "job.json").read_text())
        except (OSError, ValueError):
            return f"--resume {a.resume}: no job.json there (not a `simfs run` results directory)"
        if before.get("fingerprint") != json.loads(json.dumps(fp)):
            return (f"--resume {a.resume}: its results are of another job or other options "
                    f"({before.get('job', '?')}{' --quick' if before.get('fingerprint', {}).get('quick') else ''})")
    if not a.resume and any((out / "configs").glob("*.json")):
        return (f"{out} already holds a run's results (configs/): --resume {out} adds to them, "
                "or give another --out")
    return None


def _execute(a, job, spec: dict, fp: dict, out: Path, work: Path, client, err, close) -> int:
    """Prepare the workload, run the tasks not done yet (serially or on Dask), then report;
    `close` releases the Dask client once the tasks are done."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from . import jobfile, jobrun, runner
    err.print(f"[bold]{job.doc['job'].get('title', job.name)}[/]{' (quick)' if a.quick else ''}: "
              "preparing the workload")
    wl = runner.prepare_workload(spec if "path" not in spec else {"kind": "tree"}, work,
                                 Path(spec["path"]) if "path" in spec else None)
    if wl.kind == "tree":
        err.print(f"workload: {wl.describe()}")
    exp = jobfile.compile_job(job, wl)
    if a.only:
        exp.select(a.only)
    out.mkdir(parents=True, exist_ok=True)
    if not a.resume:
        (out / "job.json").write_text(json.dumps({"job": str(a.job), "fingerprint": fp}, indent=1) + "\n")
        (out / "job.toml").write_text(a.job.read_text())
    results = jobrun.Results(out)
    all_tasks = jobrun.tasks(exp)
    done = results.done()
    todo = [t for t in all_tasks if t.key not in done]
    if a.resume:
        err.print(f"resume: {len(all_tasks) - len(todo)} of {len(all_tasks)} tasks already in {out}/configs")
    names = ", ".join(c.name for c in exp.configs)
    nw = len(client.scheduler_info()["workers"]) if client is not None else 0
    how = "serially" if client is None else f"on {nw} Dask worker{'s' if nw != 1 else ''}"
    reps = f" x {exp.repetitions} repetitions" if exp.repetitions > 1 else ""
    err.print(f"{len(exp.configs)} configurations{reps} ({names}): {len(todo)} tasks {how}")
    started = time.time()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.fields[status]}"), console=err) as prog:
        bar = prog.add_task(job.name, total=len(all_tasks), completed=len(all_tasks) - len(todo),
                            status="")

        def on_done(res):
            t = res["task"]
            prog.update(bar, advance=1, status=f"{t.config}" + (f" rep {t.rep + 1}" if exp.repetitions > 1
                                                                 else "") + (" FAILED" if res["error"] else ""))

        def on_phase(t, label):
            if label:
                prog.update(bar, status=label)

        failures, interrupted = jobrun.run_tasks(
            todo, job_text=a.job.read_text(), job_name=str(a.job), quick=a.quick, wl=wl, spec=spec,
            work=work, results=results, client=client, on_done=on_done, on_phase=on_phase, keep_images=a.keep)
    close()
    return _report(a, exp, wl, results, all_tasks, failures, interrupted, started, out, work, err)


def _report(a, exp, wl, results, all_tasks, failures, interrupted: bool, started: float, out: Path,
            work: Path, err) -> int:
    """Results, tables and plots of the finished tasks; what is missing, and the exit status."""
    from . import plots as plotting, report
    records, layouts = results.load(all_tasks)
    raw = {"records": records, "layouts": layouts, "started": started, "wall": time.time() - started}
    doc = report.assemble(exp, wl, raw, quick=a.quick, argv=sys.argv[1:])
    finished = {t.key for t in all_tasks} & results.done()
    missing = [t for t in all_tasks if t.key not in finished]
    why = {t: e for t, e in failures}
    doc["command"] = f"simfs run {a.job}"
    doc["job"] = {"file": str(a.job), "tasks": len(all_tasks), "finished": len(finished),
                  "failed": [{"config": t.config, "rep": t.rep,
                              "error": why.get(t, "interrupted" if interrupted else "not run")}
                             for t in missing]}
    report.write_all(doc, out)
    made = plotting.draw_all(exp, doc, raw, work, out, warn=lambda m: err.print(f"[yellow]{m}[/]")) \
        if not a.no_plots and records else []
    report.write_all(doc, out, made)
    if getattr(a, "json", False):
        print(json.dumps(doc, indent=1))
    else:
        if records:
            report.print_tables(doc, getattr(a, "markdown", False))
        print(f"results: {out}/ (results.json, results.csv, table.md"
              + (", " + ", ".join(made) if made else "") + f", configs/); wall {doc['wall_seconds']:.0f} s")
    if missing:
        print(f"{len(finished)} of {len(all_tasks)} tasks finished; "
              f"{'interrupted' if interrupted else 'failed'}: {len(missing)}", file=sys.stderr)
        for f in doc["job"]["failed"]:
            rep = f" rep {f['rep'] + 1}" if exp.repetitions > 1 else ""
            print(f"  {f['config']}{rep}: {f['error']}", file=sys.stderr)
        print(f"run again with --resume {out} for what is missing", file=sys.stderr)
        return 130 if interrupted else 1
    return 0


def _dirs_problem(a) -> str | None:
    """Why --work-dir, --out or --resume cannot be used, or None: checked before anything is
    made, so a run does not fail after preparing the workload. --out may be missing (it is
    made, as mkdir makes it) but not its parent."""
    import os

    from .outdir import work_dir_problem
    if a.work_dir is not None:
        why = work_dir_problem(a.work_dir)
        if why:
            return why
    for flag, d in (("--out", a.out), ("--resume", a.resume)):
        if d is None:
            continue
        if d.exists() and not d.is_dir():
            return f"{flag} {d}: exists and is not a directory"
        if d.is_dir():
            if not os.access(d, os.W_OK | os.X_OK):
                return f"{flag} {d}: not writable"
        elif flag == "--resume":
            return f"--resume {d}: no such directory"
        else:
            parent = d.absolute().parent
            if not parent.is_dir():
                return f"--out {d}: directory {parent} does not exist (the results directory is made, its parent is not)"
            if not os.access(parent, os.W_OK | os.X_OK):
                return f"--out {d}: cannot make it in {parent} (not writable)"
    return None


def _close(client, cluster) -> None:
    for x in (client, cluster):
        if x is not None:
            try:
                x.close()
            except Exception:
                pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="simfs run", formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=DESCRIPTION, epilog=EXAMPLES)
    add_arguments(p)
    return cmd_run(p.parse_args(argv)) or 0


if __name__ == "__main__":
    sys.exit(main())
