"""Regenerate docs/lessons/ from full runs of the lessons on this machine:

    python -m experiments.lessons.docs [--out docs/lessons] [--only NAME]

Each page is the lesson's module docstring (what it is about), how to run it, its key figure with
the direction the tests check (tests/report/test_lessons.py reads the line "The key figure: ... > 1"),
and the README.md the run wrote, its pictures copied to img/NAME-*.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from pathlib import Path

from . import LESSONS, run


def page(name: str, src: Path, fig: dict, docs: Path) -> str:
    mod = LESSONS[name]
    body = (src / "README.md").read_text()
    _, _, rest = body.partition("\n")
    for p in sorted(src.glob("*.png")) + sorted(src.glob("*.gif")):
        shutil.copyfile(p, docs / "img" / f"{name}-{p.name}")
    rest = re.sub(r"\]\(([^)]+\.(png|gif))\)", lambda m: f"](img/{name}-{m.group(1)})", rest)
    k = fig["key"]
    return "\n".join([
        f"# Lesson: {mod.TITLE}", "", " ".join(mod.__doc__.split()), "",
        "```sh", f"simfs lesson {name}            # about {fig['wall_seconds']:.0f} s here; --quick: a few seconds",
        "```", "",
        f"The key figure: {k['label']} {k['expect']} 1 (here {k['ratio']:.2f}x).", "",
        "## A run on this machine", "", f"What `simfs lesson {name}` wrote (its README.md):", "",
        rest.strip().replace("\n## Questions", "\n## Questions for students"), ""])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/lessons"))
    ap.add_argument("--only", choices=list(LESSONS), default=None)
    a = ap.parse_args(argv)
    docs = a.out
    (docs / "img").mkdir(parents=True, exist_ok=True)
    rows = []
    for name, mod in LESSONS.items():
        if a.only and name != a.only:
            continue
        from simfs.cli.progress import Bar
        with tempfile.TemporaryDirectory() as tmp, Bar(name, mod.STEPS) as bar:   # on a terminal only
            src = Path(tmp) / name
            fig = run(name, src, progress=bar)
            (docs / f"{name}.md").write_text(page(name, src, fig, docs))
        k = fig["key"]
        rows.append(f"| [{mod.TITLE.split(' (')[0]}]({name}.md) | {mod.SEED} | {k['label']} {k['expect']} 1 "
                    f"| {k['ratio']:.2f}x | {fig['wall_seconds']:.0f} s |")
        print(f"{name}: {k['ratio']:.2f}x, {fig['wall_seconds']:.0f} s", file=sys.stderr)
    if not a.only:
        (docs / "README.md").write_text("\n".join([
            "# Lessons", "",
            "Three short runnable lessons for a class, one per seed effect, each well under two minutes on a",
            "2-core machine (in-process verbs, no FUSE, small trees). `simfs lesson NAME` runs one and writes",
            "`lessons/NAME/README.md` with the numbers just measured, its pictures and questions for students,",
            "and `figures.json`; `--quick` is a smaller run of a few seconds (what",
            "`tests/report/test_lessons.py` runs: it checks each lesson's key figure goes the way its page",
            "says). These pages come from `python -m experiments.lessons.docs` (full runs).", "",
            "| lesson | seed | key figure | on this machine | wall time |", "|---|---|---|---:|---:|",
            *rows, ""]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
