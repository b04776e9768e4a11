"""`simfs experiment list | run NAME [--quick] [--source DIR] [--out DIR]` (NAME git-aging: --source
is a git repository, see experiments/aging).

`register(subparsers)` adds the subcommand to simfs's parser: it is the entry point
`experiment` of the group `simfs.commands` (setup.cfg), so simfs.cli never imports experiments.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from simfs.cli.common import size_type
from simfs.cli.tables import add_markdown_option

EXAMPLES = """examples:
  simfs experiment list
  simfs experiment run ext2fs-2010 --quick            # a few minutes at most
  simfs experiment run readdir-order --source ~/src/linux
  simfs experiment run ext2fs-2010 --source /usr/include --only '*1K sync'
  simfs experiment run mmap-fragmentation --size 256M --out results/mmap-256m
  simfs experiment run all --quick
  simfs experiment run readdir-order --quick --aged git:100   # on images aged by 100 pulls of xfstests
  simfs experiment run git-aging --quick              # aging with git pulls, a generated history
  simfs experiment run git-aging --source ~/src/project --out results/aging-project
"""

#: aging with git pulls (experiments/aging): a history, not a job file; `python -m experiments.aging`
#: takes its every option, `simfs experiment run git-aging` the common ones (--source is the repository)
AGING = "git-aging"
AGING_TITLE = "Aging with git pulls: grep of the aged tree vs a clean copy (Conway et al., FAST'17)"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "experiment", help="run the seed experiments (configurations x phases, simulated time)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run an experiment (the job file experiments/jobs/NAME.toml, as `simfs run` runs "
                    "it): every configuration on a fresh image, each phase a real "
                    "command against the mount, unmounted and remounted between phases so each starts "
                    "cold. Results go to results/<experiment>-<time>/ (results.json, results.csv, "
                    "table.md, PNG plots); the table is printed.",
        epilog=EXAMPLES)
    sub = p.add_subparsers(dest="experiment_command", metavar="{list,run}")
    s = sub.add_parser("list", help="the experiments (experiments/jobs/NAME.toml)")
    s.add_argument("--json", action="store_true", help="print the experiments as JSON")
    s.set_defaults(func=cmd_list)
    s = sub.add_parser("run", help="run one experiment (or all)", formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=EXAMPLES)
    s.add_argument("name", metavar="NAME", help="an experiment from `simfs experiment list`, or all")
    s.add_argument("--quick", action="store_true", help="the small version (minutes; what CI runs)")
    s.add_argument("--source", type=Path, default=None, metavar="DIR|TARBALL",
                   help="copy this directory, or unpack this tarball, instead of a generated tree "
                        "(tree experiments)")
    s.add_argument("--out", type=Path, default=None,
                   help="results directory (default results/<experiment>[-quick]-<time>): new, empty, or "
                        "an earlier run of the same experiment, which is replaced (not a full one by --quick)")
    s.add_argument("--size", type=size_type, default=None, help="mmap-fragmentation: the file size (default 1G, 64M with --quick; the modelled RAM scales with it); "
                        f"{AGING}: the image size")
    s.add_argument("--fill", type=float, default=None, metavar="PCT",
                   help=f"{AGING}: fill the image to PCT%% of its blocks with static files before the "
                        "first pull (the nearly-full variant; with --size, e.g. --fill 80 --size 512M)")
    s.add_argument("--profile", choices=("ext2", "ext4"), default=None,
                   help=f"{AGING}: the images' mkfs profile (ext4: mounted with mballoc)")
    s.add_argument("--aged", metavar="git:N[@REPO]|synthetic:PROFILE[,full=PCT,...]", default=None,
                   help="start every configuration from an image aged by N pulls of a git history (the "
                        "shared xfstests history, or REPO: a repository or bundle; recorded once, replayed "
                        "per configuration) or by a Geriatrix-style synthetic profile (agrawal, or a "
                        "directory; full=80, churn=1, seed=42, frag=BLOCKS) instead of a fresh one; cached "
                        "(experiments/aging/aged.py)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--workers", "-j", type=int, default=None, metavar="N",
                   help=f"{AGING}: replay N allocators at once (Dask tasks on N local processes)")
    g.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help=f"{AGING}: replay on an existing Dask cluster")
    s.add_argument("--repetitions", "-r", type=int, default=None, help="override the experiment's repetitions")
    s.add_argument("--only", metavar="PATTERN", action="append", default=None,
                   help="run only the configurations whose name matches this shell pattern "
                        "(repeatable; see the names in a results table), e.g. --only '*1K sync'")
    s.add_argument("--work-dir", type=Path, default=None,
                   help="where images, mounts and traces live while running (default /var/tmp; made if "
                        "missing, as --out is)")
    s.add_argument("--keep", action="store_true", help="keep the work directory (images, traces, logs)")
    s.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    s.add_argument("--json", action="store_true",
                   help="print the results document (results.json) instead of the tables; with all, "
                        "one per experiment name")
    add_markdown_option(s)
    s.set_defaults(func=cmd_run)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def cmd_list(a) -> int:
    from . import catalog
    rows = []
    for name in catalog.names():
        j = catalog.load(name).doc["job"]
        rows.append({"name": name, "seed": j.get("seed"), "title": j.get("title", name)})
    rows.append({"name": AGING, "seed": None, "title": AGING_TITLE})
    if getattr(a, "json", False):
        import json
        print(json.dumps(rows, indent=1))
        return 0
    for r in rows:
        seed = f"seed {r['seed']}" if r["seed"] is not None else ""
        print(f"{r['name']:20s} {seed:8s}  {r['title']}")
    return 0


def run_aging(a) -> int:
    """`simfs experiment run git-aging`: experiments.aging with the options both commands have."""
    from .aging import cli as aging
    from .aging.jobtable import argv
    table = {k: v for k, v in (("size", a.size), ("fill", a.fill), ("profile", a.profile)) if v is not None}
    return aging.main(argv(Path.cwd(), table, quick=a.quick, out=a.out, source=a.source)
                      + (["--workers", str(a.workers)] if a.workers is not None else [])
                      + (["--scheduler", a.scheduler] if a.scheduler else []))


class _Progress:
    """The runner's progress callback on a rich progress bar (stderr)."""

    def __init__(self, progress, task):
        self.progress, self.task = progress, task

    def __call__(self, label):
        if label is None:
            self.progress.advance(self.task)
        else:
            self.progress.update(self.task, status=label)


def run_one(name: str, *, quick: bool = False, source: Path | None = None, out: Path | None = None,
            size: int | None = None, repetitions: int | None = None, work_dir: Path | None = None,
            keep: bool = False, plots: bool = True, show: bool = True, argv=None,
            only: list[str] | None = None, markdown: bool = False, aged: dict | None = None) -> tuple[dict, Path]:
    """Run experiment `name`; returns (results document, results directory)."""
    import tempfile
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from . import catalog, jobfile, plots as plotting, report, runner

    err = Console(stderr=True)
    root = work_dir or runner.default_work_root()
    root.mkdir(exist_ok=True)                  # --work-dir is made as --out is (its parent exists)
    work = Path(tempfile.mkdtemp(prefix=f"simfs-{name}-", dir=root))
    try:
        sized = catalog.takes_size(name)
        job = catalog.load(name, quick, size if sized else None)
        if aged:
            from .aging.aged import describe
            job = jobfile.overlay(job, {"aged": aged}, f"with --aged {describe(aged)}")
        spec = job.workload_spec()
        if source is not None and spec.get("kind") != "tree":
            err.print(f"[yellow]note:[/] {name} writes its own file; --source is ignored")
            source = None
        if source is not None and not source.is_dir():        # a tarball: unpacked, as kind = "tarball"
            from .jobcli import source_spec
            spec, source = source_spec(source), None
        title = job.doc["job"].get("title", name)
        err.print(f"[bold]{title}[/]{' (quick)' if quick else ''}: preparing the workload", highlight=False)
        wl = runner.prepare_workload(spec, work, source)
        if size and not sized:
            err.print(f"[yellow]note:[/] {name} copies a tree; --size (mmap-fragmentation's file) is ignored")
        exp = jobfile.compile_job(job, wl)
        if repetitions:
            exp.repetitions = repetitions
        if only:
            exp.select(only)
        if wl.kind == "tree":
            err.print(f"workload: {wl.describe()}", highlight=False)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        out = out or Path("results") / f"{name}{'-quick' if quick else ''}{'-aged' if aged else ''}-{stamp}"
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), TextColumn("{task.fields[status]}"), console=err,
                      transient=False) as prog:
            task = prog.add_task(name, total=runner.phase_count(exp), status="")
            raw = runner.run_experiment(exp, wl, work, progress=_Progress(prog, task), keep_images=keep)
            prog.update(task, status="done")
        doc = report.assemble(exp, wl, raw, quick=quick, argv=argv)
        report.write_all(doc, out)              # the measurements first, then the plots
        made = plotting.draw_all(exp, doc, raw, work, out, warn=lambda m: err.print(f"[yellow]{m}[/]")) \
            if plots else []
        report.write_all(doc, out, made)
        if show:
            report.print_tables(doc, markdown)
            print(f"results: {out}/ (results.json, results.csv, table.md"
                  + (", " + ", ".join(made) if made else "") + f"); wall {doc['wall_seconds']:.0f} s")
        return doc, out
    finally:
        runner.release_mounts(work)
        if keep:
            err.print(f"work directory kept: {work}")
        else:
            runner.remove_work(work)


def _source_problem(source: Path) -> str | None:
    """Why --source is neither a directory nor a tarball (experiments/jobcli.py source_spec), or None."""
    from .jobcli import source_spec
    if not source.exists():
        return f"--source {source}: not a directory or a tarball (no such file)"
    try:
        source_spec(source)
    except ValueError as e:
        return str(e)
    return None


def _has_files(d: Path) -> bool:
    import os
    return any(files for _, _, files in os.walk(d))


def _results_of(out: Path, name: str, quick: bool) -> bool:
    """Does `out` hold results of experiment `name` that a run may replace? Not a full run's
    results by a --quick one."""
    import json
    try:
        doc = json.loads((out / "results.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("experiment") == name and (not quick or doc.get("quick"))


def _mount_problem(names: list[str], quick: bool) -> str | None:
    """Why this machine cannot run the mounted phases of `names` (not root, no FUSE), checked
    before anything is made: an experiment used to mount, then fail half-way."""
    from . import catalog, jobfile, jobrun, runner
    why = jobrun.fuse_problem()
    if why is None:
        return None
    for n in names:
        job = catalog.load(n, quick)
        spec = job.workload_spec()
        if jobfile.needs_mount(jobfile.compile_job(job, runner.Workload(spec["kind"], bytes=1 << 30))):
            return (f"{n} has mounted phases (real tools through FUSE), which need FUSE and root: {why}"
                    " (`simfs run` runs in-process verb jobs without either)")
    return None


def cmd_run(a) -> int:
    from simfs.fuse.mountopts import OptionError
    from . import catalog, jobfile, runner
    from .outdir import out_problem, work_dir_problem
    from .spec import SelectionError
    known = catalog.names()
    aged = None
    if a.aged is not None:
        from .aging.aged import AgedError, check, parse
        try:
            if a.name == AGING:
                raise AgedError(f"--aged is for the job experiments; {AGING} ages its own images")
            aged = parse(a.aged)
            check(aged)                         # the history has the pulls (the profile loads), before anything runs
        except AgedError as e:
            print(f"simfs experiment: {e}", file=sys.stderr)
            return 2
    if a.name == AGING:
        if a.json:
            print(f"simfs experiment: --json is not for {AGING} (its summary is in --out)", file=sys.stderr)
            return 2
        return run_aging(a)
    if a.workers is not None or a.scheduler:
        print(f"simfs experiment: --workers and --scheduler are {AGING}'s here; run another experiment's "
              "configurations on Dask with `simfs run experiments/jobs/NAME.toml --workers N`", file=sys.stderr)
        return 2
    if a.fill is not None or a.profile:
        print(f"simfs experiment: --fill and --profile are {AGING}'s; a job file's [mkfs] table sets "
              "another experiment's profile", file=sys.stderr)
        return 2
    names = known if a.name == "all" else [a.name]
    for n in names:
        if n not in known:
            from plugin_registry import did_you_mean
            print(f"simfs experiment: unknown experiment {n!r}; choose one of: "
                  f"{', '.join(known)}, {AGING}, all" + did_you_mean(n, [*known, AGING, "all"]), file=sys.stderr)
            return 2
    if a.out and len(names) > 1:
        print("simfs experiment: --out names one results directory; with `all` the default is used",
              file=sys.stderr)
        return 2
    why = (work_dir_problem(a.work_dir)
           or (a.out is not None and out_problem(a.out, lambda d: _results_of(d, a.name, a.quick), "results",
                                                 " (a --quick run replaces no full run's results)"
                                                 if a.quick else ""))
           or (a.size is not None and a.size <= 0 and f"--size {a.size}: give a size above 0, e.g. 256M")
           or (a.repetitions is not None and a.repetitions < 1
               and f"--repetitions {a.repetitions}: give 1 or more")
           or (a.source is not None and _source_problem(a.source))
           or (a.source is not None and a.source.is_dir() and not _has_files(a.source)
               and f"--source {a.source}: no files in it (the ratios would be of an empty tree)"))
    if why:
        print(f"simfs experiment: {why}", file=sys.stderr)
        return 2
    why = _mount_problem(names, a.quick)
    if why:
        print(f"simfs experiment: {why}", file=sys.stderr)
        return 2
    failed = 0
    docs = {}
    for n in names:
        try:
            docs[n] = run_one(n, quick=a.quick, source=a.source, out=a.out, size=a.size,
                              repetitions=a.repetitions, work_dir=a.work_dir, keep=a.keep,
                              plots=not a.no_plots, argv=sys.argv[1:], only=a.only, show=not a.json,
                              markdown=a.markdown, aged=aged)[0]
        except runner.ExperimentError as e:
            print(f"simfs experiment {n}: {e}", file=sys.stderr)
            failed += 1
        except SelectionError as e:             # --only matching nothing: bad input
            print(f"simfs experiment {n}: {e}", file=sys.stderr)
            return 2
        except (OptionError, jobfile.JobError) as e:   # --size whose modelled memory no mount takes
            print(f"simfs experiment {n}: {e}", file=sys.stderr)
            return 2
    if a.json:
        import json
        print(json.dumps(docs if a.name == "all" else docs.get(a.name), indent=1))
    return 1 if failed else 0
