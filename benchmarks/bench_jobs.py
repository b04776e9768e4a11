"""Wall-time speed-up of `simfs run --workers 2` over a serial run of the same quick job.

    python -m benchmarks.bench_jobs [--files 400] [--workers 2] [--keep DIR]

The job is examples/jobs/dirorder-ab.toml (in-process verbs: no mount, so the workers need no
FUSE) with a second axis, alloc = ext2 / cg (4 tasks), at --files working files in quick mode.
Both runs go one after the other in this process's machine; the figure is the ratio of their wall
times (including the LocalCluster's start), measured side by side in one run, and the two
results.json must agree in every simulated figure (otherwise the benchmark fails).
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

from experiments.report import without_wall

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "examples" / "jobs" / "dirorder-ab.toml"


def run(job: Path, out: Path, extra: list[str]) -> float:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "experiments.jobcli", str(job), "--quick", "--no-plots",
                        "--out", str(out), *extra], capture_output=True, text=True, env=env, cwd=REPO)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"simfs run {' '.join(extra) or '(serial)'} failed ({r.returncode}): {r.stderr[-2000:]}")
    return wall


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=400, help="working files of the generated svn tree")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None, help="keep both results directories here")
    a = ap.parse_args(argv)
    text = JOB.read_text()
    for old, new in (('dirorder = ["hash", "inode"]', 'dirorder = ["hash", "inode"]\nalloc = ["ext2", "cg"]'),
                     ("workload = {files = 40}", f"workload = {{files = {a.files}}}")):
        assert old in text, old
        text = text.replace(old, new)
    text = text[:text.index("[[ratio]]")] + text[text.index("[quick]"):]      # the ratios name one axis
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        root = a.keep or Path(tmp)
        job = Path(tmp) / "bench-jobs.toml"
        job.write_text(text.replace('name = "dirorder-ab"', 'name = "bench-jobs"'))
        load = os.getloadavg()[0]
        serial = run(job, root / "serial", [])
        parallel = run(job, root / "workers", ["--workers", str(a.workers)])
        da = json.loads((root / "serial" / "results.json").read_text())
        db = json.loads((root / "workers" / "results.json").read_text())
        if without_wall(da) != without_wall(db):
            print("FAIL: the simulated figures differ between the serial and the parallel run", file=sys.stderr)
            return 1
        tasks = da["job"]["tasks"]
        print(f"job: dirorder x alloc, {tasks} tasks, {da['workload']['describe']} (in-process verbs)")
        print(f"serial:             {serial:6.1f} s wall")
        print(f"--workers {a.workers}:        {parallel:6.1f} s wall (LocalCluster start included)")
        print(f"speed-up:           {serial / parallel:6.2f}x on {os.cpu_count()} CPUs (load average "
              f"{load:.1f} at the start: other work shares them); simulated figures identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
