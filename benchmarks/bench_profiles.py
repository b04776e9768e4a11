"""The ext4 profile's cost per operation against ext2's: bench_volume on both, side by side.

    python -m benchmarks.bench_profiles [--pairs 5] [--files 3000] [--big-mib 64] [--repeat 20]

Runs `python -m benchmarks.bench_volume --json --profile ext2,ext4` --pairs times, each pair a
process of its own in which the two profiles' volumes are measured in turns (ext4 first in
every other pair), and prints a Markdown table: the median of each measure per profile, the
ratio of the medians, and the median and range of the pairs' own ratios (ext4 / ext2; issue
41's target is at most 1.2x per operation). Each measure is CPU time, the least of several
timings (bench_volume says why; --repeat is its count for single operations). Taking turns
inside one process, a change in the host's load touches both profiles alike; the pairs'
spread says how much the host moved anyway.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from rich.progress import Progress

from experiments import argtypes

PROFILES = ("ext2", "ext4")


def run_pair(profiles: tuple[str, ...], files: int, big_mib: int, repeat: int) -> dict[str, dict[str, float]]:
    """{profile: measures} of one bench_volume process measuring the profiles in turns."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.bench_volume", "--json", "--profile", ",".join(profiles),
                          "--files", str(files), "--big-mib", str(big_mib), "--repeat", str(repeat)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["measures"]


def table(runs: dict[str, list[dict[str, float]]]) -> str:
    """Markdown: per measure the medians, their ratio and the pairs' ratios."""
    lines = ["| measure | ext2 | ext4 | ratio of medians | median of pair ratios | pair ratios |",
             "|:--|--:|--:|--:|--:|--:|"]
    for m in runs["ext2"][0]:
        a = [r[m] for r in runs["ext2"]]
        b = [r[m] for r in runs["ext4"]]
        pairs = [y / x for x, y in zip(a, b)]
        ma, mb = statistics.median(a), statistics.median(b)
        lines.append(f"| {m} | {ma:.3g} | {mb:.3g} | {mb / ma:.2f} | {statistics.median(pairs):.2f} | "
                     f"{min(pairs):.2f}–{max(pairs):.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_profiles",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=argtypes.positive, default=5, help="ext2/ext4 pairs, each a process (default 5)")
    ap.add_argument("--files", type=argtypes.positive, default=3000, help="small files per run (default 3000)")
    ap.add_argument("--big-mib", type=argtypes.positive, default=64, help="size of the large file (default 64 MiB)")
    ap.add_argument("--repeat", type=argtypes.positive, default=20,
                    help="bench_volume's timings of each single operation, the least kept (default 20)")
    a = ap.parse_args(argv)
    runs: dict[str, list[dict[str, float]]] = {p: [] for p in PROFILES}
    with Progress(transient=True) as bar:
        task = bar.add_task("bench_volume pairs", total=a.pairs)
        for k in range(a.pairs):
            pair = run_pair(PROFILES if k % 2 == 0 else PROFILES[::-1], a.files, a.big_mib, a.repeat)
            for p in PROFILES:
                runs[p].append(pair[p])
            bar.advance(task)
    print(table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
