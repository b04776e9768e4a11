"""Two commits side by side in one run: `make bench-compare BASE=<commit> [HEAD=<commit>]`.

    python -m benchmarks.compare BASE [--head COMMIT] [--rounds N] [--probes a,b] [--mounted]
                                      [--record]
    python -m benchmarks.compare --history

Checks BASE (and HEAD, else the working tree as it is) out under .bench-trees/, builds each one's
compiled hot path with this interpreter, then runs every probe (benchmarks/probes.py: seed 000
in-process, an ext4-profile unpack/tar/find/rm cycle, the disk models' request rate, htree
lookups; with --mounted the real tools through a mount) on both trees in turns, in fresh
processes, which side goes first alternating from round to round. Each figure is the least CPU
time of its rounds (real time is printed beside it): a busy host slows a process's CPU time far
less than its real time, and the least of several is what the code costs. Printed per probe:
both times and HEAD's speed against BASE's; and whether the simulated figure stayed the same
(a speed change must not move a result).

Not a gate: CI does not run it (noise). The developers run it before a change to the hot path
lands; --record appends the figures to benchmarks/history.jsonl, and --history prints that
history as the table docs/speed.md shows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = ROOT / ".bench-trees"
HISTORY = ROOT / "benchmarks" / "history.jsonl"
PROBES = ROOT / "benchmarks" / "probes.py"
QUICK = ("seed000", "ext4-cycle", "disk-models", "htree")


def fail(msg: str) -> int:
    print(f"bench-compare: {msg}", file=sys.stderr)
    return 2


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def resolve(commit: str) -> str:
    try:
        return git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    except subprocess.CalledProcessError:
        raise ValueError(f"{commit!r} is not a commit of this repository") from None


def checkout(sha: str) -> Path:
    """The commit's files under .bench-trees/SHA (git archive: no worktree to prune), with its
    compiled hot path built by this interpreter."""
    tree = TREES / sha
    if not (tree / ".complete").exists():
        subprocess.run(["rm", "-rf", str(tree)], check=True)
        tree.mkdir(parents=True)
        archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", sha], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(tree)], stdin=archive.stdout, check=True)
        if archive.wait() != 0:
            raise ValueError(f"git archive {sha} failed")
        (tree / ".complete").touch()
    build(tree)
    return tree


def build(tree: Path) -> None:
    subprocess.run([sys.executable, "-m", "simfs.compiled", "build", "-j", str(os.cpu_count() or 1)],
                   cwd=tree, env=dict(os.environ, PYTHONPATH=str(tree)), check=True,
                   stdout=subprocess.DEVNULL)


def run_probe(tree: Path, name: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="simfs-bench-compare-", dir="/var/tmp") as work:
        p = subprocess.run([sys.executable, str(PROBES), name, work], cwd=tree,
                           env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True)
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": tail}
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if Path(out["tree"]) != tree.resolve():
        raise RuntimeError(f"probe {name} imported simfs from {out['tree']}, not {tree}")
    return out


def compare(trees: dict[str, Path], probes, rounds: int, progress) -> dict:
    """{probe: {side: [runs]}}: every probe on both trees in turns, which side first alternating."""
    runs = {p: {side: [] for side in trees} for p in probes}
    sides = list(trees)
    for r in range(rounds):
        for p in probes:
            for side in (sides if r % 2 == 0 else sides[::-1]):
                runs[p][side].append(run_probe(trees[side], p))
                progress()
    return runs


def summarise(runs: dict) -> list[dict]:
    rows = []
    for probe, by_side in runs.items():
        row = {"probe": probe}
        for side, rs in by_side.items():
            errors = [r["error"] for r in rs if "error" in r]
            if errors:
                row[side] = {"error": errors[0]}
                continue
            row[side] = {"cpu": min(r["cpu"] for r in rs), "real": min(r["real"] for r in rs),
                         "sim": sorted({round(r["sim"], 9) for r in rs})}
        rows.append(row)
    return rows


def table(rows: list[dict], base: str, head: str) -> str:
    out = [f"| probe | BASE {base[:8]} CPU s (real s) | HEAD {head[:8]} CPU s (real s) | "
           "HEAD's speed (BASE CPU / HEAD CPU) | simulated figure |", "|:--|--:|--:|--:|:--|"]
    for row in rows:
        b, h = row["base"], row["head"]
        if "error" in b or "error" in h:
            msg = "; ".join(f"{side}: {row[side]['error']}" for side in ("base", "head") if "error" in row[side])
            out.append(f"| {row['probe']} | | | | failed: {msg} |")
            continue
        same = "same" if b["sim"] == h["sim"] else f"MOVED: {b['sim']} -> {h['sim']}"
        out.append(f"| {row['probe']} | {b['cpu']:.2f} ({b['real']:.2f}) | {h['cpu']:.2f} ({h['real']:.2f}) | "
                   f"{b['cpu'] / h['cpu']:.2f}x | {same} |")
    return "\n".join(out)


def history() -> str:
    if not HISTORY.exists():
        return "no history yet: python -m benchmarks.compare BASE --record"
    out = ["| date | BASE | HEAD | probe | BASE CPU s | HEAD CPU s | HEAD's speed |", "|:--|:--|:--|:--|--:|--:|--:|"]
    for line in HISTORY.read_text().splitlines():
        e = json.loads(line)
        out.append(f"| {e['date']} | {e['base'][:8]} | {e['head'][:8]} | {e['probe']} | {e['base_cpu']:.2f} | "
                   f"{e['head_cpu']:.2f} | {e['base_cpu'] / e['head_cpu']:.2f}x |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compare",
                                 description="Time two commits side by side in one run (CPU time, least of the rounds).")
    ap.add_argument("base", nargs="?", metavar="BASE", help="the commit to compare against")
    ap.add_argument("--head", metavar="COMMIT", help="the other commit (default: the working tree as it is)")
    ap.add_argument("--rounds", type=int, default=3, metavar="N", help="runs of each probe on each side (default 3)")
    ap.add_argument("--probes", default=",".join(QUICK),
                    help=f"comma-separated probes (default {','.join(QUICK)}; also mounted-cycle)")
    ap.add_argument("--mounted", action="store_true", help="also the mounted untar/tar/rm cycle (root, FUSE)")
    ap.add_argument("--record", action="store_true", help="append the figures to benchmarks/history.jsonl")
    ap.add_argument("--history", action="store_true", help="print the recorded history as a table and stop")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args(argv)
    if a.history:
        print(history())
        return 0
    if not a.base:
        return fail("give BASE, the commit to compare against (e.g. make bench-compare BASE=HEAD~1)")
    from benchmarks.probes import PROBES as KNOWN
    probes = [p for p in a.probes.split(",") if p] + (["mounted-cycle"] if a.mounted else [])
    unknown = [p for p in probes if p not in KNOWN]
    if unknown or a.rounds < 1:
        return fail(f"unknown probe {unknown[0]!r} (known: {', '.join(KNOWN)})" if unknown
                    else "--rounds must be at least 1")
    try:
        base = resolve(a.base)
        head = resolve(a.head) if a.head else git("rev-parse", "HEAD") + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")
        trees = {"base": checkout(base), "head": checkout(head) if a.head else ROOT}
        if not a.head:
            build(ROOT)
    except (ValueError, subprocess.CalledProcessError) as e:
        return fail(str(e))
    from rich.progress import Progress
    with Progress(transient=True) as bar:
        task = bar.add_task(f"{len(probes)} probes x {a.rounds} rounds x 2 trees", total=len(probes) * a.rounds * 2)
        runs = compare(trees, probes, a.rounds, lambda: bar.advance(task))
    rows = summarise(runs)
    if a.json:
        print(json.dumps({"base": base, "head": head, "rows": rows}, indent=2))
    else:
        print(f"BASE {base}, HEAD {head}; least of {a.rounds} rounds each, sides in turns\n")
        print(table(rows, base, head))
    if a.record:
        with open(HISTORY, "a") as f:
            for row in rows:
                if "error" not in row["base"] and "error" not in row["head"]:
                    f.write(json.dumps({"date": time.strftime("%Y-%m-%d"), "base": base, "head": head,
                                        "probe": row["probe"], "base_cpu": row["base"]["cpu"],
                                        "head_cpu": row["head"]["cpu"]}) + "\n")
    return 1 if any("error" in row["base"] or "error" in row["head"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
