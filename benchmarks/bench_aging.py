"""Aging speed (issue 42): a replayed configuration of 1,000 pulls of a real history, measured
ten times, in real time (target: under one hour on this machine; a data-less image is fine).

Run: python -m benchmarks.bench_aging [--repo DIR | --bundle FILE] [--pulls 1000] [--every 100]
     [--alloc ext2] [--replay ext2] [--profile ext2|ext4] [--fill PCT] [--size 512M] [--out DIR]

The history defaults to ../shared/third_party/xfstests-history.bundle (6,657 first-parent
commits, a tree of 4,650 small files), cloned next to the output. The op log comes from one
mounted run (real git on a simfs mount: the slow part, done once; an existing run in --out is
continued with --resume, so the mounted run is not repeated); then the replay under --replay on
a data-less image is timed. Prints the real time of each, the simulated figures of the last
measurement, and the replay's operations per real second. Not in `make bench` (the mounted run
takes hours here); tests must not depend on the bundle.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from experiments.aging.cli import DEFAULT_ALLOC

BUNDLE = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "third_party", "xfstests-history.bundle")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.bench_aging")
    p.add_argument("--bundle", default=os.path.normpath(BUNDLE))
    p.add_argument("--repo", help="a repository instead of the bundle")
    p.add_argument("--pulls", type=int, default=1000)
    p.add_argument("--every", type=int, default=100)
    p.add_argument("--alloc", help="the mounted run's allocator (the experiment's default for the profile)")
    p.add_argument("--replay", default=None, help="the replayed configuration(s) timed (--alloc's)")
    p.add_argument("--profile", default="ext2", help="the images' mkfs profile (ext2 or ext4)")
    p.add_argument("--fill", help="the nearly-full variant: fill to PCT%% first (give --size too)")
    p.add_argument("--size", help="image size (default: the experiment's rule, 4x its estimate)")
    p.add_argument("--out", default="/tmp/bench-aging")
    a = p.parse_args(argv)
    aging = [sys.executable, "-m", "experiments.aging"]
    if os.path.exists(os.path.join(a.out, "run.json")):
        cmd = aging + ["--resume", a.out]
    else:
        repo = a.repo or os.path.join(os.path.dirname(os.path.abspath(a.out)), "bench-aging-history")
        if not a.repo and not os.path.isdir(repo):
            if not os.path.exists(a.bundle):
                print(f"bench_aging: no history: {a.bundle} is missing (give --repo)", file=sys.stderr)
                return 2
            subprocess.run(["git", "clone", "-q", a.bundle, repo], check=True)
        alloc = a.alloc or DEFAULT_ALLOC.get(a.profile, "ext2")
        cmd = aging + [repo, "--pulls", str(a.pulls), "--every", str(a.every), "--alloc", alloc,
                       "--replay", a.replay or alloc, "--profile", a.profile, "--dataless", "--out", a.out]
        cmd += (["--size", a.size] if a.size else []) + (["--fill", a.fill] if a.fill else [])
    r = subprocess.run(cmd)
    if r.returncode:
        return r.returncode
    with open(os.path.join(a.out, "run.json")) as f:
        plan = json.load(f)
    with open(os.path.join(a.out, "results.json")) as f:
        rows = json.load(f)["measurements"]
    print(f"history: {plan['history']}, {plan['pulls']} pulls, measured every {plan['every']}; profile "
          f"{plan.get('profile', 'ext2')}" + (f", filled to {plan['fill']:g}%" if plan.get("fill") else ""))
    for what, seconds in plan["wall"].items():
        print(f"  {what:24} {seconds:9.1f} s real ({seconds / 3600:.2f} h)")
    for r in rows:
        if r["pulls"] == max(x["pulls"] for x in rows):
            print(f"  {r['engine']:8} {r['config']:18} after {r['pulls']} pulls: grep aged "
                  f"{r['aged_grep_s']:.2f} s, clean {r['clean_grep_s']:.2f} s, ratio {r['ratio']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
