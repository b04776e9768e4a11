"""How long `simfs` takes to start: `simfs --version` and `simfs mkfs --help` (issue 54's target:
under 0.3 s each), beside the bare interpreter, the import of the CLI module, and the parser of
every command built at once (what each run paid before the parser was built per command).

Wall time of a fresh process each, the best of --repeat runs (the host is shared: the least is
the least disturbed), then `python -X importtime` of both commands: the modules that take the
most of what remains (cumulative microseconds, the slowest top-level imports first).

    python -m benchmarks.bench_cli_start [--repeat 15] [--top 12]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

SIMFS = [sys.executable, "-m", "simfs.cli"]
CASES = [
    ("python -c pass (the interpreter alone)", [sys.executable, "-c", "pass"]),
    ("import simfs.cli.main", [sys.executable, "-c", "import simfs.cli.main"]),
    ("simfs --version", SIMFS + ["--version"]),
    ("simfs mkfs --help", SIMFS + ["mkfs", "--help"]),
    ("simfs umount --help", SIMFS + ["umount", "--help"]),
    ("simfs --help (every command listed)", SIMFS + ["--help"]),
    ("every parser built (as before: each run did this)",
     [sys.executable, "-c", "from simfs.cli.main import build_parser; build_parser()"]),
]


def best(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t)
    return min(times)


def importtime(argv: list[str], top: int) -> list[tuple[int, str]]:
    """(cumulative µs, module) of the `top` slowest imports of argv's run, nested ones included."""
    r = subprocess.run([argv[0], "-X", "importtime"] + argv[1:], capture_output=True, text=True,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    rows = []
    for line in r.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cum_us, name = line.split(":", 1)[1].split("|")
        rows.append((int(cum_us), name.rstrip()))
    rows.sort(reverse=True)
    return rows[:top]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15, help="runs per command; the least is kept")
    ap.add_argument("--top", type=int, default=12, help="imports listed per command")
    a = ap.parse_args(argv)
    print(f"best of {a.repeat} runs, wall seconds ({sys.executable}, "
          f"{'compiled' if not os.environ.get('SIMFS_PURE') else 'SIMFS_PURE'})\n")
    print("| run | s |\n|:--|--:|")
    for name, cmd in CASES:
        print(f"| {name} | {best(cmd, a.repeat):.3f} |", flush=True)
    for name, cmd in CASES[2:4]:
        print(f"\n`python -X importtime` of {name}: the {a.top} largest cumulative imports")
        for us, mod in importtime(cmd, a.top):
            print(f"  {us / 1000:7.1f} ms  {mod}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
