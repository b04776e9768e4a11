"""Results of a run: the summary per configuration and phase, the seed comparisons, and the
files results.json, results.csv and table.md (plots are experiments/plots.py).

`assemble()` turns the runner's records into one JSON-able document; everything printed or
written is derived from it, so a rerun that gives the same records gives the same files
(apart from dates and wall-clock seconds).
"""

from __future__ import annotations

import csv
import json
import platform
import shlex
import statistics
import time
from pathlib import Path

from simfs import __version__
from simfs.pictures.labels import human_options, human_value

from .spec import Experiment

EXTRA_METRICS = ("extents", "data_extents", "blocks_per_extent", "perfect", "touch_s", "msync_s", "mb_s")
EFFECT = 0.02        # a ratio within 2 % of 1 is no effect: neither direction holds
METRIC_LABELS = {"extents": "extents", "data_extents": "data extents", "blocks_per_extent": "blocks/extent",
                 "perfect": "perfection would be", "touch_s": "touch s", "msync_s": "msync s", "mb_s": "MB/s"}


def _stat(values: list[float]) -> dict:
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values), "n": len(values)}


def summarize(exp: Experiment, records: list[dict]) -> list[dict]:
    """One row per (configuration, phase): mean/min/max over repetitions."""
    out = []
    names = ["mkfs"] + [p.name for p in exp.phases if p.kind != "mkfs"] + ["layout"]
    for cfg in exp.configs:
        for ph in names:
            recs = [r for r in records if r["config"] == cfg.name and r["phase"] == ph]
            if not recs:
                continue
            row = {"config": cfg.name, "phase": ph, "sim": _stat([r["sim"] for r in recs]),
                   "sim_cmd": statistics.fmean(r.get("sim_cmd", r["sim"]) for r in recs),
                   "sim_drain": statistics.fmean(r.get("sim_drain", 0.0) for r in recs),
                   "wall": statistics.fmean(r["wall"] for r in recs),
                   "counters": recs[0].get("counters", {}), "extra": {}}
            if recs[0].get("latency"):        # simulated, so the same in every repetition
                row["latency"] = recs[0]["latency"]
            keys = sorted({k for r in recs for k, v in r.get("extra", {}).items() if isinstance(v, (int, float))})
            for k in keys:
                vals = [r["extra"][k] for r in recs if k in r.get("extra", {})]
                row["extra"][k] = _stat(vals)
            out.append(row)
    return out


def _value(summary: list[dict], config: str, phase: str, metric: str) -> float | None:
    for row in summary:
        if row["config"] == config and row["phase"] == phase:
            if metric == "sim":
                return row["sim"]["mean"]
            m = row["extra"].get(metric)
            return m["mean"] if m else None
    return None


def direction_ok(ratio: float | None, expect: str) -> bool | None:
    """Has the effect the expected direction, by more than EFFECT? None: no claim or no ratio."""
    if ratio is None or not expect:
        return None
    return ratio > 1 + EFFECT if expect == ">" else ratio < 1 / (1 + EFFECT)


def compare(exp: Experiment, summary: list[dict]) -> list[dict]:
    out = []
    for c in exp.compares:
        a, b = _value(summary, c.num, c.phase, c.metric), _value(summary, c.den, c.phase, c.metric)
        ratio = a / b if (a is not None and b) else None
        ok = direction_ok(ratio, c.expect)
        out.append({"label": c.label, "phase": c.phase, "metric": c.metric, "num": c.num, "den": c.den,
                    "num_value": a, "den_value": b, "measured": ratio, "published": c.published,
                    "vs_seed": (ratio / c.published) if (ratio and c.published) else None,
                    "expect": c.expect, "direction_ok": ok, "check": c.check, "source": c.source,
                    "explain": c.explain, "headline": c.headline})
    return out


def assemble(exp: Experiment, wl, raw: dict, *, quick: bool, argv: list | None = None) -> dict:
    records = [{k: v for k, v in r.items() if k != "trace"} for r in raw["records"]]
    summary = summarize(exp, records)
    return {
        "experiment": exp.name, "seed": exp.seed, "title": exp.title, "description": exp.description,
        "quick": quick, "repetitions": exp.repetitions,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(raw["started"])),
        "wall_seconds": raw["wall"], "simfs": __version__, "host": platform.node(),
        "python": platform.python_version(), "kernel": platform.release(), "argv": argv or [],
        "workload": {"describe": wl.describe(), **wl.summary},
        "params": exp.params,
        "configs": [{"name": c.name, "params": c.params, "mount": c.mount_string(), "mkfs": c.mkfs}
                    for c in exp.configs],
        "phases": [{"name": p.name, "description": p.description, "kind": p.kind, "drain_included": p.drain,
                    "writes": p.writes, "setup": p.setup, **({"metrics": list(p.metrics)} if p.metrics else {})}
                   for p in exp.phases],
        "notes": exp.notes,
        "records": records, "summary": summary, "comparisons": compare(exp, summary),
    }


#: the fields of a results document that are wall clock, dates or where it ran
WALL_FIELDS = {"wall", "wall_seconds", "started", "argv", "root"}


def without_wall(doc):
    """A results document field for field, minus WALL_FIELDS at any depth: what must be equal
    between two runs of the same job however they were run (serially, on Dask workers)."""
    if isinstance(doc, dict):
        return {k: without_wall(v) for k, v in doc.items() if k not in WALL_FIELDS}
    if isinstance(doc, list):
        return [without_wall(x) for x in doc]
    return doc


def figures(doc: dict) -> dict:
    """The simulated figures of a results document, for reproducibility checks: everything
    but wall-clock seconds, dates and host."""
    return {"summary": [{k: v for k, v in row.items() if k != "wall"} for row in doc["summary"]],
            "comparisons": [{k: c[k] for k in ("label", "measured")} for c in doc["comparisons"]]}


# formatting ---------------------------------------------------------------------------------
def fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:,.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def fmt_stat(s: dict | None, fmt=fmt_s) -> str:
    if not s:
        return "—"
    if s["n"] > 1 and s["max"] - s["min"] > 1e-9 * max(1.0, abs(s["mean"])):
        return f"{fmt(s['mean'])} ({fmt(s['min'])}–{fmt(s['max'])})"
    return fmt(s["mean"])


def fmt_ratio(x: float | None) -> str:
    return "—" if x is None else (f"{x:.2f}x" if x < 100 else f"{x:,.0f}x")


def fmt_metric(name: str, x: float) -> str:
    """An extra metric's cell: counts whole, MB/s with one decimal, anything else (a fio job's
    IOPS, blocks per extent, seconds) as people read numbers, never '1.2e+03'."""
    if name in ("extents", "data_extents", "perfect", "files", "data_blocks"):
        return f"{x:,.0f}"
    if name == "mb_s":
        return f"{x:.1f}"
    from simfs.cli.tables import number
    return number(x)


def _phase_columns(doc: dict) -> list[tuple[str, str, str]]:
    """(header, phase, what) for the main table: headline seconds, a +wb column where the
    phase left write-back outside its headline, and the extra metrics."""
    cols = []
    rows = doc["summary"]
    for p in doc["phases"]:
        name = p["name"]
        cols.append((f"{name} s", name, "sim"))
        these = [r for r in rows if r["phase"] == name]
        if p.get("writes") and not p["drain_included"] and p["kind"] == "mount":
            cols.append((f"{name} +wb s", name, "drain"))
        # the known metrics, then those the phase names (metrics = [...] in a job file)
        named = EXTRA_METRICS + tuple(m for m in p.get("metrics", ()) if m not in EXTRA_METRICS)
        metrics = [m for m in named if any(m in r["extra"] for r in these)]
        for m in metrics:
            cols.append((f"{name} {METRIC_LABELS.get(m, m)}", name, m))
    return cols


def main_table(doc: dict) -> tuple[list[str], list[list[str]]]:
    params = list(doc["configs"][0]["params"]) if doc["configs"] else []
    cols = _phase_columns(doc)
    header = ["configuration"] + params + [c[0] for c in cols]
    rows = []
    index = {(r["config"], r["phase"]): r for r in doc["summary"]}
    for c in doc["configs"]:
        row = [human_options(c["name"])] + [human_value(p, c["params"].get(p, "")) for p in params]
        for _, phase, what in cols:
            r = index.get((c["name"], phase))
            if r is None:
                row.append("—")
            elif what == "sim":
                row.append(fmt_stat(r["sim"]))
            elif what == "drain":
                row.append(fmt_s(r["sim_drain"]))
            else:
                row.append(fmt_stat(r["extra"].get(what), lambda x, w=what: fmt_metric(w, x)))
        rows.append(row)
    return header, rows


def layout_table(doc: dict) -> tuple[list[str], list[list[str]]] | None:
    rows = [r for r in doc["summary"] if r["phase"] == "layout"]
    if not rows:
        return None
    header = ["configuration", "files", "extents", "data blocks", "blocks per extent"]
    out = []
    for r in rows:
        e = r["extra"]
        out.append([human_options(r["config"]), fmt_metric("files", e["files"]["mean"]),
                    fmt_metric("extents", e["extents"]["mean"]), fmt_metric("data_blocks", e["data_blocks"]["mean"]), f"{e['blocks_per_extent']['mean']:.2f}"])
    return header, out


def latency_table(doc: dict) -> tuple[list[str], list[list[str]]] | None:
    """Per configuration and phase: the disk requests' simulated latency percentiles (ms) and
    where the disk's time went (s), with the rotational misses (docs/statistics.md)."""
    from simfs.cli.tables import ms
    rows = [r for r in doc["summary"] if (r.get("latency") or {}).get("disk", {}).get("all")]
    if not rows:
        return None
    header = ["configuration", "phase", "requests", "mean ms", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms",
              "queue s", "overhead s", "seek s", "rotation s", "transfer s", "rotational misses"]
    out = []
    for r in rows:
        d, split = r["latency"]["disk"]["all"], r["latency"].get("split", {})
        out.append([human_options(r["config"]), r["phase"], f"{d['count']:,}",
                    *(ms(d[k]) for k in ("mean", "p50", "p90", "p99", "p99.9", "max")),
                    *(f"{split.get(k, 0.0):.3f}" for k in ("queue", "overhead", "seek", "rotation", "transfer")),
                    f"{r['latency'].get('rotational_misses', 0):,}"])
    return header, out


def has_published(doc: dict) -> bool:
    """Do the ratios have published figures beside them (the seeds), or only measured ones (jobs)?"""
    return any(c["published"] is not None for c in doc["comparisons"])


def compare_table(doc: dict, explain: bool = True, only=None) -> tuple[list[str], list[list[str]]]:
    seedcols = has_published(doc)
    claims = seedcols or any(c["expect"] for c in doc["comparisons"])
    header = ["ratio", "simfs", "seed", "simfs / seed", "expected", "direction"] if seedcols else \
        ["ratio", "simfs"] + (["expected", "direction"] if claims else [])
    if explain and (seedcols or any(c["explain"] for c in doc["comparisons"])):
        header.append("why the model differs" if seedcols else "note")
    else:
        explain = False
    rows = []
    for c in doc["comparisons"]:
        if only is not None and not only(c):
            continue
        exp = {">": "> 1", "<": "< 1", "": "—"}[c["expect"]]
        d = direction_ok(c["measured"], c["expect"])
        ok = {True: "ok", False: "WRONG", None: "—"}[d]
        if d is False and abs(c["measured"] - 1) <= EFFECT:
            ok = "NONE" if c["check"] else "none"
        elif d is False and not c["check"]:
            ok = "differs"
        row = [human_options(c["label"]), fmt_ratio(c["measured"])] + ([fmt_ratio(c["published"]),
               "—" if c["vs_seed"] is None else f"{c['vs_seed']:.2f}"] if seedcols else []) + ([exp, ok] if claims else [])
        if explain:
            row.append(c["explain"] or "")
        rows.append(row)
    return header, rows


def wall_table(doc: dict) -> tuple[list[str], list[list[str]]]:
    phases = ["mkfs"] + [p["name"] for p in doc["phases"] if p["kind"] != "mkfs"]
    index = {(r["config"], r["phase"]): r for r in doc["summary"]}
    rows = []
    for c in doc["configs"]:
        rows.append([human_options(c["name"])] + [f"{index[(c['name'], p)]['wall']:.1f}"
                                                  if (c["name"], p) in index else "—" for p in phases])
    return ["configuration"] + [f"{p} wall s" for p in phases], rows


def _numeric(cells: list[str]) -> bool:
    vals = [c for c in cells if c not in ("", "—")]
    return bool(vals) and sum(c[:1].isdigit() for c in vals) * 2 > len(vals)


def markdown(header: list[str], rows: list[list[str]]) -> str:
    def esc(s):
        return str(s).replace("|", "\\|")
    right = [i > 0 and _numeric([str(r[i]) for r in rows]) for i in range(len(header))]
    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|" + "|".join("---:" if r else "---" for r in right) + "|"]
    lines += ["| " + " | ".join(esc(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


DIRECTION_LEGEND = ("Direction: `ok` the effect goes the seed's way by more than 2 %; `none` within 2 % of 1 "
                    "(no effect); `differs` the other way; in capitals (`WRONG`, `NONE`) where the test "
                    "suite checks that direction on the quick run.")


JOB_DIRECTION_LEGEND = ("Direction: `ok` the ratio is on the expected side of 1 by more than 2 %; `none` "
                        "within 2 % of 1; `differs` the other way.")
JOB_CHECKED_LEGEND = " In capitals (`WRONG`, `NONE`) where the job says check = true."


def direction_legend(doc: dict) -> str | None:
    """What the direction column means: the seed's wording where the ratios have published
    figures, a job's where they only have expectations (its check = true words only if one has
    it), None where there is no direction column."""
    if has_published(doc):
        return DIRECTION_LEGEND
    if not any(c["expect"] for c in doc["comparisons"]):
        return None
    return JOB_DIRECTION_LEGEND + (JOB_CHECKED_LEGEND if any(c.get("check") for c in doc["comparisons"]) else "")


def table_md(doc: dict, plots: list[str] | None = None) -> str:
    wl = doc["workload"]
    argv = doc.get("argv")
    command = (doc.get("command") or (f"simfs {shlex.join(argv)}" if argv else None)
               or f"simfs experiment run {doc['experiment']}{' --quick' if doc['quick'] else ''}")
    out = [f"# {doc['title']}", "",
           f"`{command}` — "
           f"{doc['started']}, simfs {doc['simfs']}, wall time {doc['wall_seconds']:.0f} s"
           + (f", {doc['repetitions']} repetitions" if doc["repetitions"] > 1 else ""), "",
           *([doc["description"] + ".", ""] if doc["description"] else []),
           f"Workload: {wl.get('describe', '')}.", ""]
    out.append("Phases:")
    for p in doc["phases"]:
        how = "in-process" if p["kind"] != "mount" else ("headline includes the write-back drain"
                                                          if p["drain_included"] else "command only")
        out.append(f"- **{p['name']}** — {p['description']} ({how})")
    header, rows = main_table(doc)
    out += ["", "## Simulated seconds", "", markdown(header, rows), ""]
    notes = []
    if any(h.endswith("+wb s") for h in header):
        notes.append("`+wb s`: simulated seconds of writing back what the phase left dirty (sync after the "
                     "command), not included in the headline.")
    if doc["repetitions"] > 1:
        notes.append("Ranges are min–max over repetitions.")
    if notes:
        out += [" ".join(notes), ""]
    lt = layout_table(doc)
    if lt:
        out += ["## Where the files landed (filefrag extents, summed over files)", "", markdown(*lt), ""]
    lat = latency_table(doc)
    if lat:
        out += ["## Disk request latency and where the disk's time went", "", markdown(*lat), "",
                "Latency: finish - issue of each disk request, simulated ms (HDR-style histogram, "
                "within 0.4%). Seconds: summed over the phase's requests. A rotational miss waits "
                "more than half a revolution without changing cylinder.", ""]
    if doc["comparisons"]:
        out += [f"## Ratios{' against the seed' if has_published(doc) else ''}", "",
                markdown(*compare_table(doc)), ""]
        if direction_legend(doc):
            out += [direction_legend(doc), ""]
    srcs = sorted({c["source"] for c in doc["comparisons"] if c["source"]})
    if srcs:
        out += ["Sources: " + "; ".join(srcs) + ".", ""]
    for n in doc.get("notes", []):
        out.append(f"Note: {n}.")
    out += ["", "## Wall-clock seconds (information only)", "", markdown(*wall_table(doc)), ""]
    if plots:
        out += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    return "\n".join(out)


def write_csv(doc: dict, path: Path) -> None:
    counters = sorted({k for r in doc["records"] for k in r.get("counters", {})})
    extras = sorted({k for r in doc["records"] for k, v in r.get("extra", {}).items()
                     if isinstance(v, (int, float))})
    params = list(doc["configs"][0]["params"]) if doc["configs"] else []
    cparams = {c["name"]: c["params"] for c in doc["configs"]}
    lat = [k for k in LATENCY_CSV if any(k in latency_columns(r) for r in doc["records"])]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["experiment", "config", *params, "rep", "phase", "sim", "sim_cmd", "sim_drain", "sim_umount",
                    "wall", *counters, *extras, *lat])
        for r in doc["records"]:
            w.writerow([doc["experiment"], r["config"], *[cparams[r["config"]].get(p, "") for p in params],
                        r["rep"], r["phase"], *(f"{r.get(k, 0.0):.9f}" for k in ("sim", "sim_cmd", "sim_drain",
                                                                                  "sim_umount")),
                        f"{r['wall']:.3f}", *(r.get("counters", {}).get(k, "") for k in counters),
                        *(r.get("extra", {}).get(k, "") for k in extras),
                        *(latency_columns(r).get(k, "") for k in lat)])


#: results.csv's latency columns: disk requests' latency (all kinds), the disk-time split, misses
LATENCY_CSV = ("disk_lat_mean", "disk_lat_p50", "disk_lat_p90", "disk_lat_p99", "disk_lat_p99.9", "disk_lat_max",
               "disk_queue_s", "disk_overhead_s", "disk_seek_s", "disk_rotation_s", "disk_transfer_s",
               "disk_interface_s", "disk_rmw_s", "rotational_misses")


def latency_columns(r: dict) -> dict:
    """A record's (or summary row's) latency figures under their results.csv names, seconds."""
    lat = r.get("latency") or {}
    out = {}
    d = (lat.get("disk") or {}).get("all")
    if d:
        out.update({f"disk_lat_{k}": v for k, v in d.items() if k != "count"})
    out.update({f"disk_{k}_s": v for k, v in (lat.get("split") or {}).items()})
    if "rotational_misses" in lat:
        out["rotational_misses"] = lat["rotational_misses"]
    return out


def write_all(doc: dict, out: Path, plots: list[str] | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    write_csv(doc, out / "results.csv")
    (out / "table.md").write_text(table_md(doc, plots))


def print_tables(doc: dict, markdown: bool = False, file=None) -> None:
    """The run's tables on stdout (`simfs run`, `simfs experiment run`) through
    simfs/cli/tables.py: rich's on a terminal, Markdown elsewhere or with --markdown."""
    from simfs.cli.tables import Table, echo
    out = [Table(f"{doc['title']} — simulated seconds", *main_table(doc))]
    lt = layout_table(doc)
    if lt:
        out.append(Table("where the files landed", *lt))
    if doc["comparisons"]:
        out.append(Table("ratios against the seed" if has_published(doc) else "ratios",
                         *compare_table(doc, explain=False)))
    out += [f"note: {n}" for n in doc.get("notes", [])]
    echo(out, markdown, file)
