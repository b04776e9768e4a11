"""`make test`'s two parts, checked: every test in exactly one, and each file within its time.

With SIMFS_TEST_RECORD=PREFIX (tests/conftest.py registers `Recorder`), a pytest run writes
PREFIX.collection.json (every test collected, those marked `long`, those this run selected:
from the run itself, or its first xdist worker: they all collect the same) and, once it has
run tests, PREFIX.durations.json (per test file, the seconds of its tests' setup, call and
teardown summed; the tests that reported; the run's wall time). Then

    python -m tests.suite_split PREFIX_A PREFIX_B [--budget tests/test_budget.toml] [--strict-budget]

fails unless both parts collected the same tests, selected disjoint sets, and together every
test not marked `long` (`make test-long` runs those: a run records those it deselected for the
mark), and, given durations, every selected test reported. A file over its budget, or a part
whose wall time is over its own, is a warning line (a failure with --strict-budget: a busy host
slows any run, and a time is a benchmark's figure rather than a test's verdict). It prints the
files by time and the totals.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tomllib
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUDGET = REPO / "tests" / "test_budget.toml"


class Recorder:
    """pytest plugin: what a run collected and selected, and its per-file durations."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.deselected: list[str] = []
        self.long: list[str] = []
        self.files: dict[str, float] = defaultdict(float)
        self.reported: set[str] = set()
        self.t0 = time.monotonic()

    def _write(self, suffix: str, doc: dict) -> None:
        path = Path(f"{self.prefix}.{suffix}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=0, sort_keys=True) + "\n")

    def pytest_deselected(self, items):
        self.deselected += [i.nodeid for i in items]
        self.long += [i.nodeid for i in items if i.get_closest_marker("long")]

    def pytest_collection_finish(self, session):
        if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
            return
        selected = [i.nodeid for i in session.items]
        long_ = [i.nodeid for i in session.items if i.get_closest_marker("long")]
        self._write("collection", {"selected": selected, "all": sorted(selected + self.deselected),
                                   "long": sorted(self.long + long_), "long_selected": long_})

    def pytest_runtest_logreport(self, report):
        if os.environ.get("PYTEST_XDIST_WORKER"):
            return                          # the xdist controller has every worker's reports
        self.files[report.nodeid.split("::")[0]] += report.duration
        if report.when == "call" or report.skipped or report.failed:
            self.reported.add(report.nodeid)

    def pytest_sessionfinish(self, session):
        if os.environ.get("PYTEST_XDIST_WORKER") or not self.reported:
            return
        self._write("durations", {"wall": round(time.monotonic() - self.t0, 1),
                                  "files": {f: round(s, 2) for f, s in sorted(self.files.items())},
                                  "reported": sorted(self.reported)})


def _load(prefix: str, suffix: str) -> dict | None:
    path = Path(f"{prefix}.{suffix}.json")
    return json.loads(path.read_text()) if path.exists() else None


def check(prefixes: list[str], budget: dict | None) -> list[str]:
    """The problems (empty: the split holds)."""
    problems = []
    cols = {p: _load(p, "collection") for p in prefixes}
    for p, c in cols.items():
        if c is None:
            problems.append(f"{p}.collection.json is missing (was the run made with SIMFS_TEST_RECORD={p}?)")
    if problems:
        return problems
    alls = {p: set(c["all"]) for p, c in cols.items()}
    first = prefixes[0]
    for p in prefixes[1:]:
        if alls[p] != alls[first]:
            diff = sorted(alls[p] ^ alls[first])
            problems.append(f"{first} and {p} collected different tests ({len(diff)}: {diff[:5]} ...)")
    seen: dict[str, str] = {}
    for p, c in cols.items():
        for nodeid in c["selected"]:
            if nodeid in seen:
                problems.append(f"{nodeid} is in both {seen[nodeid]} and {p}")
            seen[nodeid] = p
        if c["long_selected"]:
            problems.append(f"{p} ran tests marked long: {c['long_selected'][:5]}")
    left = alls[first] - set(seen) - set(cols[first]["long"])
    if left:
        problems.append(f"{len(left)} tests neither long nor in a part: {sorted(left)[:5]}")
    durs = {p: _load(p, "durations") for p in prefixes}
    if all(d is not None for d in durs.values()):
        for p, d in durs.items():
            missing = set(cols[p]["selected"]) - set(d["reported"])
            if missing:
                problems.append(f"{p}: {len(missing)} selected tests never reported: {sorted(missing)[:5]}")
        if budget:
            problems += over_budget(durs, budget)
    return problems


def budget_overruns(prefixes: list[str], budget: dict) -> list[str]:
    """The files and parts over `budget`, from the durations the runs recorded ([] if none)."""
    durs = {p: _load(p, "durations") for p in prefixes}
    return over_budget(durs, budget) if all(d is not None for d in durs.values()) else []


def over_budget(durs: dict, budget: dict) -> list[str]:
    out = []
    files_budget = budget.get("files", {})
    default = files_budget.get("default", 60)
    for p, d in durs.items():
        for f, s in d["files"].items():
            limit = files_budget.get(f, default)
            if s > limit:
                out.append(f"{f} took {s:.0f} s, over its budget of {limit} s (tests/test_budget.toml)")
        name = Path(p).name
        limit = budget.get("parts", {}).get(name)
        if limit is not None and d["wall"] > limit:
            out.append(f"the {name} part took {d['wall']:.0f} s, over its budget of {limit} s")
    total = sum(d["wall"] for d in durs.values())
    limit = budget.get("parts", {}).get("total")
    if limit is not None and total > limit:
        out.append(f"make test's parts took {total:.0f} s, over the budget of {limit} s")
    return out


def report(prefixes: list[str]) -> str:
    lines = []
    for p in prefixes:
        d = _load(p, "durations")
        if d is None:
            continue
        lines.append(f"{Path(p).name}: {len(d['reported'])} tests, {d['wall']:.0f} s wall, "
                     f"{sum(d['files'].values()):.0f} s summed over files")
        for f, s in sorted(d["files"].items(), key=lambda kv: -kv[1])[:25]:
            lines.append(f"  {s:8.1f} s  {f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prefixes", nargs="+", help="the SIMFS_TEST_RECORD prefix of each part")
    ap.add_argument("--budget", default=str(BUDGET), help="per-file and per-part seconds (TOML); '' for none")
    ap.add_argument("--strict-budget", action="store_true",
                    help="fail past the budget (by default an overrun is a warning: a busy host slows a "
                         "run, and a time is a benchmark's figure, not a test's verdict)")
    a = ap.parse_args(argv)
    budget = tomllib.loads(Path(a.budget).read_text()) if a.budget else None
    text = report(a.prefixes)
    if text:
        print(text)
    problems = check(a.prefixes, None)
    for p in problems:
        print(f"suite split: {p}", file=sys.stderr)
    over = budget_overruns(a.prefixes, budget) if budget else []
    for p in over:
        print(f"suite split: {'' if a.strict_budget else 'warning: '}{p}", file=sys.stderr)
    if a.strict_budget:
        problems += over
    if not problems:
        cols = [_load(p, "collection") for p in a.prefixes]
        print("suite split: " + ", ".join(f"{Path(p).name} {len(c['selected'])}" for p, c in zip(a.prefixes, cols))
              + f" of {len(cols[0]['all'])} collected"
              + f", {len(cols[0]['long'])} long (make test-long): each other test in one part")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
