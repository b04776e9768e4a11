"""Collect full runs into results/summary/: each run's files under its experiment's name, and one
README.md with every table, the seed ratios and the explanation of each difference.

    python -m experiments.summary results/ext2fs-2010-2026... results/readdir-order-... [--out results/summary]
        [--tree results/ext2fs-2010-usr-include ...]

`--tree` adds runs of the same experiments on other trees (`experiment run NAME --source DIR`,
possibly `--only`): each experiment's section then shows its ratios on every tree side by side,
and the runs' tables and results are kept under `<experiment>-<tree>/`.

The explanations are the `explain` texts of the experiments' ratios as their job files
(experiments/jobs/) say them now (they are written after looking at the figures; the measured
figures come from results.json).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from . import catalog, report

KEEP = (".json", ".csv", ".md", ".png")

INTRO = """# Results of the full seed experiments

The five built-in experiments (`simfs experiment run NAME`, full size) as run on this machine
(2 cores, Python FUSE), one run each. Every figure is simulated time on the named disk model;
wall-clock times are for information. Each section links the run's `table.md`, `results.json`
(every record: simulated seconds of the command, of the write-back drain and of the unmount,
disk counters, wall seconds) and `results.csv`, and shows its plots: bars per configuration
and phase, seekwatcher panels of the traced phases, and block maps of where the files landed.

`simfs / seed` is the model's ratio divided by the ratio the seed published: 1.00 is the seed's
figure, 0.30 means the model shows 30 % of the effect. "Why the model differs" says what in the
model explains the difference. Regenerate this page with
`python -m experiments.summary results/<run>... [--tree results/<run on another tree>...]
[--intro FILE] [--append EXPERIMENT=FILE] [--outro FILE]`.
"""


def recompare(doc: dict) -> dict:
    """The comparisons recomputed from the measured summary with the experiment's current
    definitions (labels, published figures, explanations); the measurements are untouched."""
    from .runner import Workload
    name = doc["experiment"]
    size = doc.get("params", {}).get("size") if catalog.takes_size(name) else None
    exp = catalog.build(name, doc["quick"], Workload("tree", bytes=100 << 20, files=1, dirs=1), size)
    doc["comparisons"] = report.compare(exp, doc["summary"])
    return doc


def section(doc: dict, rel: str) -> str:
    mins = doc["wall_seconds"] / 60
    out = [f"## {doc['title']}", "",
           f"`simfs experiment run {doc['experiment']}` — {doc['started']}, wall time {mins:.1f} min "
           f"({doc['host']}, kernel {doc['kernel']}). Files: [{rel}/]({rel}/) "
           f"([table]({rel}/table.md), [results.json]({rel}/results.json), [results.csv]({rel}/results.csv)).",
           "", doc["description"] + ".", "", f"Workload: {doc['workload'].get('describe', '')}.", "",
           report.markdown(*report.main_table(doc)), ""]
    lt = report.layout_table(doc)
    if lt:
        out += [report.markdown(*lt), ""]
    out += ["Ratios against the seed (`simfs / seed` = how far the model's ratio is from the published one):",
            "", report.markdown(*report.compare_table(doc)), "", report.DIRECTION_LEGEND, ""]
    for n in doc.get("notes", []):
        out.append(f"Note: {n}.")
    out.append("")
    return "\n".join(out)


def tree_label(doc: dict) -> str:
    src = doc["workload"].get("source", "generated")
    return "generated" if src.startswith("generated") else src


def tree_slug(doc: dict) -> str:
    return "-".join(p for p in tree_label(doc).replace("_", "-").split("/") if p).replace(".", "")


def trees_table(doc: dict, others: list[dict]) -> str:
    """The experiment's ratios on the generated tree and on each other tree, side by side."""
    runs = [doc] + others
    header = ["ratio", "seed"] + [f"{tree_label(d)} ({d['workload'].get('entries', 0):,} files"
                                  f"{', quick' if d['quick'] else ''})" for d in runs]
    rows = []
    for c in doc["comparisons"]:
        row = [c["label"], report.fmt_ratio(c["published"])]
        for d in runs:
            m = next((x for x in d["comparisons"] if x["label"] == c["label"]), None)
            row.append(report.fmt_ratio(m["measured"]) if m and m["measured"] else "—")
        rows.append(row)
    notes = [f"- {tree_label(d)}: {d['workload'].get('describe', '')}; "
             f"configurations {', '.join(x['name'] for x in d['configs'])}; "
             f"[table]({doc['experiment']}-{tree_slug(d)}/table.md)" for d in others]
    return "\n".join(["The same ratios on real trees of this machine (`--source`; `—`: configuration not run):",
                      "", report.markdown(header, rows), "", *notes, ""])


def overview(docs: list[dict]) -> str:
    """The headline ratios of every experiment in one table, and the wall time of each run."""
    header, rows = None, []
    for doc in docs:
        h, r = report.compare_table(doc, only=lambda c: c.get("headline"))
        header = ["experiment"] + h
        rows += [[f"[{doc['experiment']}](#{anchor(doc['title'])}) (seed {doc['seed']})"] + x for x in r]
    out = ["## Overview", "", "The headline ratios of each experiment (all ratios are in the sections below).", "",
           report.markdown(header, rows), "", report.DIRECTION_LEGEND, "",
           "How long the full runs took on this machine (wall clock; simulated figures do not depend on it):", ""]
    wt = [[d["experiment"], str(len(d["configs"])), ", ".join(p["name"] for p in d["phases"]),
           str(d["repetitions"]), f"{d['wall_seconds'] / 60:.1f}"] for d in docs]
    out += [report.markdown(["experiment", "configurations", "phases", "repetitions", "wall minutes"], wt),
            "", f"Total: {sum(d['wall_seconds'] for d in docs) / 60:.0f} minutes.", ""]
    return "\n".join(out)


def anchor(title: str) -> str:
    keep = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_")
    return keep.replace(" ", "-")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.summary")
    ap.add_argument("runs", nargs="+", type=Path, help="results directories of full runs")
    ap.add_argument("--out", type=Path, default=Path("results/summary"))
    ap.add_argument("--intro", type=Path, default=None, help="Markdown put before the sections")
    ap.add_argument("--tree", type=Path, action="append", default=[],
                    help="a run of one of the experiments on another tree (--source), shown beside it")
    ap.add_argument("--append", action="append", default=[], metavar="EXPERIMENT=FILE",
                    help="Markdown added at the end of that experiment's section (e.g. "
                         "readdir-order=results/summary/readdir-order-full/section.md); "
                         "several for one experiment are added in their order")
    ap.add_argument("--outro", type=Path, action="append", default=[],
                    help="Markdown put after the sections (results beyond the seed experiments); "
                         "several are added in their order")
    a = ap.parse_args(argv)
    extra: dict[str, str] = {}
    for item in a.append:
        name, _, path = item.partition("=")
        extra[name] = extra.get(name, "") + ("\n" if name in extra else "") + Path(path).read_text()
    a.out.mkdir(parents=True, exist_ok=True)
    sections = []
    order = catalog.names()
    docs = []
    for run in a.runs:
        doc = json.loads((run / "results.json").read_text())
        docs.append((order.index(doc["experiment"]) if doc["experiment"] in order else 99, run, doc))
    trees: dict[str, list[dict]] = {}
    for run in a.tree:
        doc = recompare(json.loads((run / "results.json").read_text()))
        trees.setdefault(doc["experiment"], []).append(doc)
        dest = a.out / f"{doc['experiment']}-{tree_slug(doc)}"
        if dest.resolve() != run.resolve():
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            for f in run.iterdir():
                if f.suffix in KEEP and f.suffix != ".png":
                    shutil.copy2(f, dest / f.name)
    for _, run, doc in sorted(docs, key=lambda t: t[0]):
        dest = a.out / doc["experiment"]
        if dest.resolve() != run.resolve():
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            for f in run.iterdir():
                if f.suffix in KEEP:
                    shutil.copy2(f, dest / f.name)
        recompare(doc)
        plots = sorted(p.name for p in dest.glob("*.png"))
        report.write_all(doc, dest, plots)
        sec = section(doc, doc["experiment"])
        if doc["experiment"] in trees:
            sec += "\n" + trees_table(doc, trees[doc["experiment"]])
        if doc["experiment"] in extra:
            sec += "\n" + extra[doc["experiment"]].rstrip() + "\n"
        sec += "\n" + "\n".join(f"![{doc['experiment']} {p}]({doc['experiment']}/{p})" for p in plots) + "\n"
        sections.append(sec)
    intro = a.intro.read_text() if a.intro else INTRO
    docs_sorted = [d for _, _, d in sorted(docs, key=lambda t: t[0])]
    outro = "".join("\n" + f.read_text().rstrip() + "\n" for f in a.outro)
    (a.out / "README.md").write_text(intro.rstrip() + "\n\n" + overview(docs_sorted) + "\n" + "\n".join(sections)
                                     + outro)
    print(f"wrote {a.out / 'README.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
