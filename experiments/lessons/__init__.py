"""`simfs lesson list | NAME [--quick] [--out DIR]`: short runnable lessons for a class, one per
seed effect, each under two minutes on a small machine (in-process verbs, small trees).

A lesson writes into DIR (default lessons/NAME/) a README.md that tells the story with the
numbers just measured, its pictures (PNG, and a GIF of the head moving), the questions for
students, and figures.json with every number the text quotes plus `key`: the figure whose
direction the lesson is about (`num / den`, `expect` ">" or "<"). The text of each lesson, with
the pictures of a full run, is docs/lessons/NAME.md. Registered as `simfs lesson` through the
entry-point group `simfs.commands` (setup.cfg); `python -m experiments.lessons` is the same.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from experiments.outdir import out_problem, work_dir_problem
from simfs.fs.operation import Interrupted, deferred_signals

from . import common, readdir_order, seven_free, unaligned

LESSONS = {m.NAME: m for m in (seven_free, readdir_order, unaligned)}

EXAMPLES = """examples:
  simfs lesson list
  simfs lesson seven-free                  # writes lessons/seven-free/README.md and pictures
  simfs lesson readdir-order --out /tmp/l2
  simfs lesson unaligned-4k --quick        # smaller, for a first look
"""


def run(name: str, out: Path, quick: bool = False, work_dir: Path | None = None, progress=None) -> dict:
    """Run lesson `name` into `out`; returns its figures (figures.json). `progress(label)` /
    `progress(None)`: a step starts / ends (the lesson's STEPS of them; common.quiet)."""
    mod = LESSONS[name]
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"simfs-lesson-{name}-", dir=work_dir or "/var/tmp"))
    t0 = time.perf_counter()
    try:
        page = mod.run(out, quick, work, progress or common.quiet)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    page.figures["lesson"] = name
    page.figures["wall_seconds"] = round(time.perf_counter() - t0, 1)
    page.figures["quick"] = quick
    page.write()
    return page.figures


def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "lesson", help="short runnable lessons (seed 000, 001, 003) with pictures and questions",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a lesson: a small in-process experiment (under two minutes) that shows one "
                    "effect of the seeds, and writes README.md (the story with the numbers just "
                    "measured, pictures, questions for students) and figures.json into --out. "
                    "The lessons' text is in docs/lessons/.",
        epilog=EXAMPLES)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help=f"list, or one of: {', '.join(LESSONS)}")
    p.add_argument("--quick", action="store_true", help="a smaller tree and a shorter movie (seconds)")
    p.add_argument("--out", type=Path, default=None, help="where to write (default lessons/NAME): new, empty, or an "
                   "earlier run of the same lesson, which is replaced")
    p.add_argument("--work-dir", type=Path, default=None, help="where the images go while running (/var/tmp)")
    p.add_argument("--json", action="store_true",
                   help="print the lessons (list) or the lesson's figures (figures.json) as JSON")
    p.set_defaults(func=cmd_lesson)


def _lesson_of(out: Path) -> str | None:
    """The lesson a directory holds the output of (its figures.json says), if any."""
    try:
        return json.loads((out / "figures.json").read_text()).get("lesson")
    except (OSError, ValueError, AttributeError):
        return None


def cmd_lesson(a) -> int:
    as_json = getattr(a, "json", False)
    if a.name == "list":
        if as_json:
            print(json.dumps([{"name": n, "seed": m.SEED, "title": m.TITLE} for n, m in LESSONS.items()],
                             indent=1))
            return 0
        for n, m in LESSONS.items():
            print(f"{n:15s} seed {m.SEED}  {m.TITLE}")
        return 0
    if a.name not in LESSONS:
        from plugin_registry import did_you_mean
        print(f"simfs lesson: unknown lesson {a.name!r}; choose one of: {', '.join(LESSONS)} (or list)"
              + did_you_mean(a.name, [*LESSONS, "list"]), file=sys.stderr)
        return 2
    out = a.out or Path("lessons") / a.name
    why = work_dir_problem(a.work_dir) or out_problem(out, lambda d: _lesson_of(d) == a.name, "lesson")
    if why:
        print(f"simfs lesson: {why}", file=sys.stderr)
        return 2
    existed = out.exists()
    from simfs.cli.progress import Bar
    try:
        # a signal stops between two volume operations; the bar is on stderr, on a terminal only
        with deferred_signals(), Bar(a.name, LESSONS[a.name].STEPS) as bar:
            fig = run(a.name, out, a.quick, a.work_dir, bar)
    except Interrupted as e:
        if not existed:
            shutil.rmtree(out, ignore_errors=True)
        print(f"simfs lesson: {e}: stopped; " + (f"{out} holds part of the lesson (no README.md)"
                                                 if existed else "nothing written"), file=sys.stderr)
        return 128 + e.signum
    if as_json:
        print(json.dumps(fig, indent=1))
        return 0
    k = fig["key"]
    print(f"{LESSONS[a.name].TITLE}: {k['label']} = {k['ratio']:.2f}x "
          f"({k['num']:.3f} / {k['den']:.3f}); wall {fig['wall_seconds']:.0f} s")
    print(f"wrote {out}/README.md, figures.json and {len(list(out.glob('*.png')) + list(out.glob('*.gif')))} "
          "pictures")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="simfs lesson", formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0], epilog=EXAMPLES)
    add_arguments(p)
    return cmd_lesson(p.parse_args(argv))
