"""`simfs report RESULTS_DIR`: one self-contained HTML page of an experiment run (or of every run
under a directory such as results/summary/), to put in front of a class or attach to an issue.

    simfs report results/ext2fs-2010-quick-20261124-031500       # writes .../report.html
    python -m experiments.htmlreport results/summary -o summary.html

Each run's section: what it measures, how it was run (command, options per configuration, mkfs
parameters, versions, host, wall time), the tables of experiments/report.py (simulated seconds,
where the files landed, ratios against the seed with the reasons the model differs), a chart of
the seed's published ratios beside the model's, and every PNG of the run with a caption. Images
are inlined as data: URIs and the style is inline: the page needs no network and no other file.
Registered as `simfs report` through the entry-point group `simfs.commands` (setup.cfg), since
simfs itself never imports experiments. Bad input: one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import sys
from pathlib import Path

from simfs.pictures.labels import human_options, human_value

from . import report

EXAMPLES = """examples:
  simfs experiment run ext2fs-2010 --quick --out /tmp/q000
  simfs report /tmp/q000                      # writes /tmp/q000/report.html
  simfs report results/summary -o /tmp/summary.html --title 'simfs: the seeds on this machine'
"""

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
h1 { font-size: 1.9em; } h2 { border-bottom: 2px solid #ccc; padding-top: .6em; } h3 { margin-top: 1.4em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .92em; }
th, td { border: 1px solid #bbb; padding: .25em .55em; vertical-align: top; }
th { background: #eef1f6; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.ok { background: #e4f4e4; } td.bad { background: #fbe3e3; } td.none { background: #f3f3f3; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: .93em; color: #444; margin-top: .3em; }
code, pre { background: #f5f5f5; padding: .1em .3em; border-radius: 3px; }
pre { padding: .6em; overflow-x: auto; }
nav ul { columns: 2; }
.meta td:first-child { font-weight: 600; white-space: nowrap; }
"""


class ReportError(Exception):
    """Bad input: the message is the one line printed."""


def esc(x) -> str:
    return html.escape(str(x), quote=True)


def png_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def table(header: list, rows: list, classes=None) -> str:
    """An HTML table; numeric columns right-aligned, as report.markdown aligns them."""
    numeric = [i > 0 and report._numeric([str(r[i]) for r in rows]) for i in range(len(header))]
    out = ["<table>", "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>"]
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            cls = [("num" if numeric[i] else "")] + ([classes(header[i], c)] if classes else [])
            cls = " ".join(x for x in cls if x)
            cells.append(f"<td class=\"{cls}\">{esc(c)}</td>" if cls else f"<td>{esc(c)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _direction_class(col: str, cell: str) -> str:
    if col != "direction":
        return ""
    return {"ok": "ok", "WRONG": "bad", "differs": "bad", "NONE": "bad", "none": "none"}.get(cell, "")


def caption(name: str, doc: dict) -> str:
    """What a run's PNG shows, by its file name (experiments/plots.py names them)."""
    if name == "bars.png":
        return ("Simulated seconds per configuration, one panel per phase (and per extra metric: extents, "
                "MB/s); the bar's label is its value, error bars span the repetitions.")
    if name.startswith("seekwatcher-"):
        phase = name.rsplit("-", 1)[-1].removesuffix(".png")
        return (f"Seekwatcher panels of phase “{phase}”, each configuration from the phase's first request: "
                "disk offset of every request (reads and writes in distinct colours; one panel per configuration "
                "where their offsets overlap, on one scale), throughput, seeks per second (a jump of more than "
                "128 sectors) and requests per second. The offset axis spans where the requests are; the few "
                "beyond an empty stretch of the disk are arrows on its edge, counted in a note.")
    if name == "blockmap.png":
        return ("Where the files landed. Left: the same 4,096 blocks in every configuration (the range holding "
                "the most file blocks), 64 per row (white free, grey metadata, black directories, red indirect "
                "blocks, a colour per file). Right: the disk offset of every file block, files in inode order, "
                "on one scale for every configuration, zoomed to where the blocks are.")
    if name == "seed-vs-model.png":
        return ("Each ratio the seed published (grey) beside the same ratio measured on the model (blue), "
                "on a log scale: 1 is no effect; a bar on the same side of 1 as the seed's is the same direction.")
    return name


def seed_chart(doc: dict) -> bytes | None:
    """The seed's published ratios beside the model's, one pair of bars per comparison (PNG)."""
    rows = [c for c in doc.get("comparisons", []) if c.get("published") and c.get("measured")]
    if len(rows) > 16 and any(c.get("headline") for c in rows):
        rows = [c for c in rows if c.get("headline")]        # the table below has them all
    if not rows:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    n = len(rows)
    fig, ax = plt.subplots(figsize=(11, 0.55 * n + 1.6))
    y = np.arange(n)
    seed = [c["published"] for c in rows]
    model = [c["measured"] for c in rows]
    # bars grow from 1 (no effect): right for a ratio above 1, left below it
    ax.barh(y - 0.2, [v - 1 for v in seed], left=1, height=0.38, color="0.6", label="seed (published)")
    ax.barh(y + 0.2, [v - 1 for v in model], left=1, height=0.38, color="#1f77b4", label="simfs (this run)")
    for yi, s, m in zip(y, seed, model):
        ax.annotate(report.fmt_ratio(s), (s, yi - 0.2), va="center", xytext=(3, 0), textcoords="offset points",
                    fontsize=9)
        ax.annotate(report.fmt_ratio(m), (m, yi + 0.2), va="center", xytext=(3, 0), textcoords="offset points",
                    fontsize=9)
    ax.set_xscale("log")
    ax.axvline(1, color="black", linewidth=1)
    ax.set_yticks(y)
    ax.set_yticklabels([c["label"] for c in rows], fontsize=10)
    ax.invert_yaxis()
    lo = min(seed + model + [1.0]) / 1.5
    hi = max(seed + model + [1.0]) * 2.5
    ax.set_xlim(lo, hi)
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    ticks = [t for t in (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 1000, 10000, 100000) if lo <= t <= hi]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_xlabel("ratio (log scale; 1 = no effect)", fontsize=11)
    ax.set_title(f"{doc.get('title', '')}: the seed's ratios beside the model's", fontsize=12)
    ax.legend(loc="lower right", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def how_run(doc: dict) -> str:
    argv = doc.get("argv") or ["experiment", "run", doc["experiment"]] + (["--quick"] if doc.get("quick") else [])
    cmd = "simfs " + " ".join(argv)
    meta = [("command", cmd), ("started", doc.get("started", "")),
            ("simfs", doc.get("simfs", "")), ("Python", doc.get("python", "")),
            ("kernel", doc.get("kernel", "")), ("host", doc.get("host", "")),
            ("wall time", f"{doc.get('wall_seconds', 0):.0f} s"),
            ("repetitions", doc.get("repetitions", 1)),
            ("workload", doc.get("workload", {}).get("describe", ""))]
    out = ["<h3>How it was run</h3>", "<table class=\"meta\">"]
    out += [f"<tr><td>{esc(k)}</td><td><code>{esc(v)}</code></td></tr>" if k == "command"
            else f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in meta]
    out.append("</table>")
    if doc.get("configs"):
        rows = [[human_options(c["name"]), human_options(c.get("mount", "")),
                 ", ".join(f"{k}={human_value(k, v)}" for k, v in c.get("mkfs", {}).items())]
                for c in doc["configs"]]
        out.append("<p>Each configuration on a fresh image, every phase on its own mount (started cold):</p>")
        out.append(table(["configuration", "mount options (-o)", "mkfs"], rows))
    if doc.get("phases"):
        out.append("<p>Phases:</p><ul>")
        for p in doc["phases"]:
            how = "in-process" if p["kind"] != "mount" else ("headline includes the write-back drain"
                                                             if p.get("drain_included") else "command only")
            out.append(f"<li><b>{esc(p['name'])}</b> — {esc(p['description'])} ({esc(how)})</li>")
        out.append("</ul>")
    return "\n".join(out)


def run_section(doc: dict, run_dir: Path, anchor: str) -> str:
    """The HTML of one run: text, how it was run, tables, the seed chart and the run's PNGs."""
    out = [f"<h2 id=\"{esc(anchor)}\">{esc(doc.get('title', run_dir.name))}{' (quick)' if doc.get('quick') else ''}</h2>"]
    description = str(doc.get("description") or "").strip().rstrip(".")
    if description:                         # a job may have none: no paragraph, not a lone "."
        out.append(f"<p>{esc(description)}.</p>")
    if "summary" not in doc or "configs" not in doc:       # another kind of results.json: its table.md
        md = run_dir / "table.md"
        out.append(f"<pre>{esc(md.read_text() if md.exists() else json.dumps(doc, indent=1)[:20000])}</pre>")
        return "\n".join(out)
    out.append("<h3>Simulated seconds</h3>")
    header, rows = report.main_table(doc)
    out.append(table(header, rows))
    notes = simulated_notes(header, doc)
    if notes:
        out.append(f"<p>{notes}</p>")
    lt = report.layout_table(doc)
    if lt:
        out += ["<h3>Where the files landed (filefrag extents, summed over files)</h3>", table(*lt)]
    lat = report.latency_table(doc)
    if lat:
        out += ["<h3>Disk request latency and where the disk's time went</h3>", table(*lat),
                "<p>Latency: finish − issue of each disk request, simulated milliseconds (from an HDR-style "
                "histogram, within 0.4%). Seconds: summed over the phase's requests. A rotational miss is a "
                "request that waited more than half a revolution without changing cylinder.</p>"]
    if doc.get("comparisons"):
        seed = report.has_published(doc)
        out.append("<h3>The seed's figures beside the model's</h3>" if seed else "<h3>Ratios</h3>")
        out.append(table(*report.compare_table(doc), classes=_direction_class))
        legend = report.direction_legend(doc)
        if legend:
            out.append(f"<p>{esc(legend.replace('`', ''))}</p>")
        srcs = sorted({c["source"] for c in doc["comparisons"] if c.get("source")})
        if srcs:
            out.append("<p>Sources: " + "; ".join(esc(s) for s in srcs) + ".</p>")
        chart = seed_chart(doc)
        if chart:
            out.append(figure(chart, "seed-vs-model.png", doc))
    for n in doc.get("notes", []):
        out.append(f"<p>Note: {esc(n)}.</p>")
    pngs = sorted(run_dir.glob("*.png"), key=lambda p: (not p.name.startswith("bars"), p.name))
    if pngs:
        out.append("<h3>Plots</h3>")
        out += [figure(p.read_bytes(), p.name, doc) for p in pngs]
    out.append(how_run(doc))
    out += ["<h3>Wall-clock seconds (information only)</h3>", table(*report.wall_table(doc))]
    return "\n".join(out)


def simulated_notes(header: list, doc: dict) -> str:
    """What the simulated-seconds table's marks mean, only those it has (as report.table_md says
    them): the `+wb s` columns, and the ranges where there is more than one repetition."""
    notes = []
    if any(str(h).endswith("+wb s") for h in header):
        notes.append("<code>+wb s</code>: simulated seconds of writing back what the phase left dirty, not in "
                     "the headline.")
    if (doc.get("repetitions") or 1) > 1:
        notes.append("Ranges are min–max over repetitions.")
    return " ".join(notes)


def figure(data: bytes, name: str, doc: dict) -> str:
    return (f"<figure><img src=\"{png_uri(data)}\" alt=\"{esc(name)}\">"
            f"<figcaption><b>{esc(name)}</b>: {esc(caption(name, doc))}</figcaption></figure>")


def find_runs(root: Path) -> list[Path]:
    """RESULTS_DIR itself if it holds results.json, else its subdirectories that do (sorted)."""
    if (root / "results.json").is_file():
        return [root]
    return sorted(p.parent for p in root.glob("*/results.json"))


def read_by(root: Path) -> list[Path]:
    """The files the page is made of (each run's results.json, table.md and PNGs): -o must not
    name one, or the page would be written over its own input."""
    return [f for run in find_runs(root)
            for f in [run / "results.json", run / "table.md", *run.glob("*.png")]]


def load(run: Path) -> dict:
    """A run's results: an experiment's (summary and configs lists, as report.assemble writes
    them) or another kind shown by its table.md; anything else (`{}`, a list) is no results file."""
    path = run / "results.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: not a results file ({e})") from None
    if not isinstance(doc, dict):
        what = {"list": "an array", "str": "a string", "NoneType": "null",
                "bool": "true or false"}.get(type(doc).__name__, "a number")
        raise ReportError(f"{path}: not a results file (JSON {what}, not an object)")
    if not doc:
        raise ReportError(f"{path}: not a results file (an empty object)")
    if "summary" in doc or "configs" in doc:
        if not (isinstance(doc.get("summary"), list) and isinstance(doc.get("configs"), list)):
            raise ReportError(f"{path}: not a results file (summary and configs must be lists)")
    elif not (run / "table.md").is_file():
        raise ReportError(f"{path}: not a results file (no summary and configs, and no table.md beside it)")
    return doc


def build(root: Path, title: str | None = None) -> tuple[str, int]:
    """The whole page for RESULTS_DIR; returns (html, number of runs)."""
    if not root.exists():
        raise ReportError(f"{root}: no such directory")
    if not root.is_dir():
        raise ReportError(f"{root}: not a directory (give a results directory: results.json and PNGs)")
    runs = find_runs(root)
    if not runs:
        raise ReportError(f"{root}: no results.json in it or in its subdirectories "
                          "(write one with simfs experiment run NAME --out DIR)")
    docs = [(run, load(run)) for run in runs]
    title = title or (docs[0][1].get("title", root.name) if len(docs) == 1 else f"simfs results: {root.name}")
    body = [f"<h1>{esc(title)}</h1>",
            f"<p>{len(docs)} experiment run{'s' if len(docs) != 1 else ''} from <code>{esc(root)}</code>. "
            "Every figure is simulated time on the named disk model (deterministic: a rerun gives the same "
            "numbers); wall-clock seconds are for information.</p>"]
    if len(docs) > 1:
        body.append("<nav><ul>" + "".join(f"<li><a href=\"#run{i}\">{esc(d.get('title', r.name))}</a></li>"
                                          for i, (r, d) in enumerate(docs)) + "</ul></nav>")
    for i, (run, doc) in enumerate(docs):
        try:
            body.append(run_section(doc, run, f"run{i}"))
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:   # a field's shape
            raise ReportError(f"{run / 'results.json'}: not a results file "
                              f"({type(e).__name__} {e} while reading it)") from None
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")
    return page, len(docs)


# the command --------------------------------------------------------------------------------------
def register(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report", help="one self-contained HTML page of experiment results",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write one HTML page (images inlined, no network needed) of an experiment run "
                    "directory, or of every run under a directory such as results/summary: how it was "
                    "run, the tables, the seed's ratios beside the model's, and every plot with a caption.",
        epilog=EXAMPLES)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", type=Path, metavar="RESULTS_DIR",
                   help="a run's directory (results.json, PNGs) or a directory of runs")
    p.add_argument("-o", "--output", type=Path, default=None, metavar="HTML",
                   help="the page to write (default RESULTS_DIR/report.html)")
    p.add_argument("--title", default=None, help="the page's title")
    p.set_defaults(func=cmd_report)


def cmd_report(a) -> int:
    out = a.output or a.results / "report.html"
    if out.is_dir():
        print(f"simfs report: cannot write {out}: is a directory", file=sys.stderr)
        return 2
    if not out.parent.resolve().is_dir() and a.results.is_dir():
        print(f"simfs report: cannot write {out}: directory {out.parent} does not exist", file=sys.stderr)
        return 2
    from simfs.cli.common import same_file
    if a.results.is_dir() and any(same_file(f, out) for f in read_by(a.results)):
        print(f"simfs report: -o {out} is one of the files the report reads: it would be written over; "
              "give another file", file=sys.stderr)
        return 2
    try:
        page, n = build(a.results, a.title)
    except ReportError as e:
        print(f"simfs report: {e}", file=sys.stderr)
        return 2
    try:
        out.write_text(page)
    except OSError as e:
        print(f"simfs report: cannot write {out}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({n} run{'s' if n != 1 else ''}, {len(page) / 1e6:.1f} MB)")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="simfs report", formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0], epilog=EXAMPLES)
    add_arguments(p)
    return cmd_report(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
