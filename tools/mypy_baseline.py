"""mypy against a committed baseline: only a NEW finding fails (`make lint`, so `make test`).

The layers mypy checks (pyproject.toml's [tool.mypy]) are partly annotated and had findings when
the check came in; fixing them all at once would touch files other work was changing. So the
findings of that time are kept in tools/mypy_baseline.txt, one a line, as `file: [code] message`
without line numbers (an edit above a finding moves it, and must not make it new). A finding
counts as new when its file has more of that code and message than the baseline holds.
A baseline finding no longer found is reported, not failed on: fewer findings is progress, and
`--update` drops it.

    python tools/mypy_baseline.py            # mypy, then the new findings; exit 1 if any
    python tools/mypy_baseline.py --update   # rewrite the baseline from today's findings
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "tools" / "mypy_baseline.txt"
HEADER = ("# mypy's findings accepted for now (tools/mypy_baseline.py): `file: [code] message`,\n"
          "# line numbers left out. Made by `python tools/mypy_baseline.py --update`.\n")


def key(finding: dict) -> str:
    """A finding without its place in the file (a message's own `line N` too)."""
    message = re.sub(r"\bline \d+", "line N", finding["message"])
    return f"{finding['file']}: [{finding['code']}] {message}"


def run_mypy(extra: list[str]) -> list[dict]:
    """mypy's errors (not its notes) as JSON records; a crash or bad usage exits 2."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "-O", "json", *extra],
                          cwd=ROOT, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stdout + proc.stderr)
        sys.exit(f"mypy_baseline: mypy failed (exit status {proc.returncode})")
    found = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record["severity"] == "error":
                found.append(record)
    if proc.returncode == 1 and not found:
        sys.stderr.write(proc.stdout + proc.stderr)
        sys.exit("mypy_baseline: mypy reported failure but no finding")
    return found


def read_baseline(path: Path) -> collections.Counter:
    if not path.exists():
        return collections.Counter()
    lines = path.read_text().splitlines()
    return collections.Counter(ln for ln in lines if ln and not ln.startswith("#"))


def new_findings(found: list[dict], base: collections.Counter) -> list[dict]:
    """The findings beyond what the baseline holds of their key (for a key found more often
    than it holds, the last ones in the file), in file and line order."""
    by_key = collections.defaultdict(list)
    for f in found:
        by_key[key(f)].append(f)
    new = []
    for k, fs in by_key.items():
        excess = len(fs) - base[k]
        if excess > 0:
            new += sorted(fs, key=lambda r: r["line"])[-excess:]
    return sorted(new, key=lambda r: (r["file"], r["line"]))


def write_baseline(path: Path, found: list[dict]) -> None:
    path.write_text(HEADER + "".join(f"{k}\n" for k in sorted(key(f) for f in found)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite the baseline from today's findings")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    args, extra = parser.parse_known_args(argv)
    found = run_mypy(extra)
    now = collections.Counter(key(f) for f in found)
    if args.update:
        write_baseline(args.baseline, found)
        print(f"mypy_baseline: {len(found)} findings written to {args.baseline}")
        return 0
    base = read_baseline(args.baseline)
    new = new_findings(found, base)
    gone = sum((base - now).values())
    for f in new:
        print(f"{f['file']}:{f['line']}: error: {f['message']}  [{f['code']}]")
    summary = f"mypy: {len(found)} findings, {len(found) - len(new)} in the baseline, {len(new)} new"
    if gone:
        summary += (f"; {gone} baseline finding(s) no longer found"
                    " (python tools/mypy_baseline.py --update drops them)")
    print(summary)
    if new:
        print("a new mypy finding: fix it (or, if mypy is wrong, `# type: ignore[code]` with the reason)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
