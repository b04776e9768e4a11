"""The kernel oracle's tables from its saved runs: each run's rows (as benchmarks.kernel_oracle
--experiment prints them) and the verdicts per seed ratio, recomputed from the rows and the
experiment's job file, so that results/summary/kernel-oracle/table.md is regenerated rather than
edited:

    python -m benchmarks.kernel_oracle_report results/summary/kernel-oracle/results.json > table.md
    python -m benchmarks.kernel_oracle_report results.json --verdicts      # the verdicts alone
    python -m benchmarks.kernel_oracle_report results.json --compact [--runs TITLE,...]
                                            # one table of every run's phases (the section's)

results.json maps a run's title to what `--experiment NAME --json` printed; entries without
rows (the CPU measurement) are passed over. Bad input: one line, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from benchmarks.kernel_oracle_table import render, render_verdicts, verdicts


def compares_of(name: str) -> list:
    """The experiment's published ratios ([[ratio]] of its job file), every configuration."""
    from experiments import catalog, jobfile
    from experiments.spec import Compare
    from benchmarks.kernel_oracle_seeds import SEEDS
    seed = SEEDS.get(name)
    if seed and seed.runner is not None:      # no job file (git-aging): its ratio is the run's own
        return []
    job = jobfile.load(seed.job) if seed and seed.job else catalog.load(name)
    out = []
    for r in job.doc.get("ratio", []):
        if "phase" in r:
            out.append(Compare(r.get("label", f"{r['phase']}: {r['num']} / {r['den']}"), r["phase"], r["num"],
                               r["den"], r.get("published"), metric=r.get("metric", "sim")))
    return out


def runs(doc: dict) -> dict:
    return {title: res for title, res in doc.items() if isinstance(res, dict) and "rows" in res and "experiment" in res}


SEED = {"readdir-order": "001", "readdir-order-ext4": "001 ext4", "ext2fs-2010": "000", "writeback": "002",
        "alignment": "003", "mmap-fragmentation": "004", "git-aging": "aging"}


def compact(doc: dict, titles: list[str] | None = None) -> str:
    """The chosen runs' phases with a kernel side as one Markdown table: requests, MiB,
    read-ahead share and simulated time of each side, and simfs's time against the kernel's."""
    from benchmarks.kernel_oracle_table import differ
    out = ["| seed, configuration | phase | kind | requests k / s | MiB k / s | read-ahead share k / s "
           "| simulated s k / s | time diff |", "|---|---|---|--:|--:|--:|--:|--:|"]
    for title, res in runs(doc).items():
        if titles and title not in titles:
            continue
        for r in res["rows"]:
            k, s = r.get("kernel"), r.get("simfs") or {}
            if not k or not s:            # simfs alone, or the kernel alone (git-aging's kernel-aged rows)
                continue
            d = differ(k["seconds"], s["seconds"])
            out.append(f"| {SEED.get(res['experiment'], res['experiment'])} {r['config']} | {r['phase']} | "
                       f"{r['kind'].split()[0]} | {k['requests']:,} / {s['requests']:,} | {k['mib']:.1f} / {s['mib']:.1f} | "
                       f"{k['readahead_share']:.0%} / {s['readahead_share']:.0%} | {k['seconds']:.3f} / {s['seconds']:.3f} | "
                       + ("—" if d != d else f"{d:+.0%}".replace("-", "−")) + " |")
    return "\n".join(out) + "\n"


def report(doc: dict, only_verdicts: bool = False) -> str:
    parts = []
    for title, res in runs(doc).items():
        res = {**res, "verdicts": verdicts(res["rows"], compares_of(res["experiment"]))}
        if only_verdicts:
            vs = render_verdicts(res["verdicts"])
            if vs:
                parts.append(f"### {title}\n\n{vs}")
        else:
            parts.append(f"### {title}\n\n{render(res)}")
    return "\n".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.kernel_oracle_report", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", help="results.json: run title -> the JSON of one --experiment run")
    ap.add_argument("--verdicts", action="store_true", help="only the verdicts per seed ratio")
    ap.add_argument("--compact", action="store_true", help="one table of the runs' phases (results/summary's)")
    ap.add_argument("--runs", help="with --compact: only these runs (titles, comma-separated)")
    a = ap.parse_args(argv)
    try:
        with open(a.results) as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or not runs(doc):
            raise ValueError("no kernel-oracle run in it (a mapping of titles to --experiment --json output)")
        if a.runs and not a.compact:
            raise ValueError("--runs goes with --compact")
        titles = a.runs.split(",") if a.runs else None
        if titles and (bad := [t for t in titles if t not in runs(doc)]):
            raise ValueError(f"no run titled {bad[0]!r} (the runs: {', '.join(runs(doc))})")
        print(compact(doc, titles) if a.compact else report(doc, a.verdicts), end="")
    except (OSError, ValueError, KeyError) as e:
        print(f"kernel_oracle_report: {a.results}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
