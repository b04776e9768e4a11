"""The kernel oracle's tables from its saved runs: each run's rows (as benchmarks.kernel_oracle
--experiment prints them) and the verdicts per seed ratio, recomputed from the rows and the
experiment's job file, so that results/summary/kernel-oracle/table.md is regenerated rather than
edited:

    python -m benchmarks.kernel_oracle_report results/summary/kernel-oracle/results.json > table.md
    python -m benchmarks.kernel_oracle_report results.json --verdicts      # the verdicts alone

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
    job = jobfile.load(seed.job) if seed and seed.job else catalog.load(name)
    out = []
    for r in job.doc.get("ratio", []):
        if "phase" in r:
            out.append(Compare(r.get("label", f"{r['phase']}: {r['num']} / {r['den']}"), r["phase"], r["num"],
                               r["den"], r.get("published"), metric=r.get("metric", "sim")))
    return out


def runs(doc: dict) -> dict:
    return {title: res for title, res in doc.items() if isinstance(res, dict) and "rows" in res and "experiment" in res}


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
    a = ap.parse_args(argv)
    try:
        with open(a.results) as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or not runs(doc):
            raise ValueError("no kernel-oracle run in it (a mapping of titles to --experiment --json output)")
        print(report(doc, a.verdicts), end="")
    except (OSError, ValueError, KeyError) as e:
        print(f"kernel_oracle_report: {a.results}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
