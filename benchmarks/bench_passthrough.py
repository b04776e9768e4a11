"""Mounted simfs against pyfuse3's passthrough example: untar, cold tar, rm -rf (issue 52).

Run (root, FUSE): python -m benchmarks.bench_passthrough [--source /usr/include] [--cycles 3]
                                                         [-o disk=wd1200jb] [--json]

The floor for a Python FUSE file system is pyfuse3's own examples/passthroughfs.py (vendored
unchanged in third_party/pyfuse3-examples/): the same pyfuse3 and trio, run by the same
interpreter, mirroring a host directory with no model behind it. Each cycle mounts both in turn
(which goes first alternating from cycle to cycle) — simfs on a fresh 1 GiB image with the
options given (default `disk=wd1200jb`, everything else the defaults), the example over a fresh
empty directory beside the image — and times on each, with the host's caches dropped before
every phase: `tar -xf` of a tarball of SOURCE, a cold `tar -cf - | cat >/dev/null` (every byte
read back) and `rm -rf`. Printed: the median real seconds of each phase on each, simfs's over
the example's (the issue's targets: untar at most 1.2x, the whole cycle at most 1.0x), and every
cycle's own ratio; then the same for the daemons' CPU seconds (user + system, from /proc), and
the host's load average before and after. Real time on a shared host is noisy: only a ratio
measured side by side counts, and the load says how busy the host was. (On a busy host tar and
the daemon take turns on one CPU and real time follows the daemon's CPU; on an idle one each
request also pays the wake-ups of two CPUs.)
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_mount import timed

ROOT = Path(__file__).resolve().parents[1]
PASSTHROUGH = ROOT / "third_party" / "pyfuse3-examples" / "passthroughfs.py"
PHASES = ("untar", "cold tar", "rm -rf")
SIMFS = [sys.executable, "-m", "simfs.cli"]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat; 0.0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")     # utime, stime


def cycle(mnt: Path, tarball: Path, pid: int) -> dict:
    """Each phase's real seconds, and in "daemon_cpu" the daemon's (`pid`) CPU seconds in it."""
    m, t = shlex.quote(str(mnt)), shlex.quote(str(tarball))
    out: dict = {"daemon_cpu": {}}
    for phase, cmd in (("untar", f"tar -xf {t} -C {m}"),
                       ("cold tar", f"tar -cf - -C {m} . | cat >/dev/null"),
                       ("rm -rf", f"rm -rf {m}/*")):
        before = cpu_seconds(pid)
        out[phase] = timed(cmd)
        out["daemon_cpu"][phase] = cpu_seconds(pid) - before
    return out


def wait_mounted(mnt: Path, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not os.path.ismount(mnt):
        if proc.poll() is not None or time.monotonic() > end:
            raise RuntimeError(f"passthroughfs.py did not mount {mnt} (exit {proc.poll()})")
        time.sleep(0.05)


def run_simfs(work: Path, mnt: Path, tarball: Path, options: str) -> dict[str, float]:
    image, stats = work / "simfs.img", work / "simfs.stats.json"
    image.unlink(missing_ok=True)
    subprocess.run(SIMFS + ["mkfs", "-q", str(image), "1G"], check=True)
    quiet = {"stdout": subprocess.DEVNULL}     # their summaries: --json stays parseable
    subprocess.run(SIMFS + ["mount", str(image), str(mnt), "-o", f"{options},stats={stats}"],
                   check=True, **quiet)
    try:
        pid = json.loads((mnt / ".simfs" / "info").read_text())["pid"]
        out = cycle(mnt, tarball, pid)
    finally:
        subprocess.run(SIMFS + ["umount", str(mnt)], check=True, **quiet)
    final = json.loads(stats.read_text())
    out["simulated"] = final.get("time", final)["now"]
    image.unlink()
    return out


def run_passthrough(work: Path, mnt: Path, tarball: Path) -> dict[str, float]:
    src = work / "passthrough-src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    proc = subprocess.Popen([sys.executable, str(PASSTHROUGH), str(src), str(mnt)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_mounted(mnt, proc)
        out = cycle(mnt, tarball, proc.pid)
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)])
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    shutil.rmtree(src)
    return out


def measure(source: Path, cycles: int, options: str, progress=print) -> dict:
    runs: dict[str, list[dict]] = {"simfs": [], "passthrough": []}
    with tempfile.TemporaryDirectory(prefix="simfs-bench-pt-", dir="/var/tmp") as work:
        work = Path(work)
        tarball, mnt = work / "source.tar", work / "mnt"
        mnt.mkdir()
        subprocess.run(["tar", "-cf", str(tarball), "-C", str(source.parent), source.name], check=True)
        for c in range(cycles):
            order = ("simfs", "passthrough") if c % 2 == 0 else ("passthrough", "simfs")
            for side in order:
                r = (run_simfs(work, mnt, tarball, options) if side == "simfs"
                     else run_passthrough(work, mnt, tarball))
                runs[side].append(r)
                progress(f"cycle {c + 1} {side}: " + ", ".join(
                    f"{p} {r[p]:.2f} s (daemon CPU {r['daemon_cpu'][p]:.2f} s)" for p in PHASES))
    return runs


def summarise(runs: dict, cpu: bool = False) -> list[dict]:
    """Per phase: the medians of each side and their ratio, and each cycle's ratio; of real
    seconds, or (`cpu`) of the daemons' CPU seconds."""
    rows = []
    for phase in PHASES + ("whole cycle",):
        def value(r):
            r = r["daemon_cpu"] if cpu else r
            return sum(r[p] for p in PHASES) if phase == "whole cycle" else r[phase]
        s = [value(r) for r in runs["simfs"]]
        p = [value(r) for r in runs["passthrough"]]
        rows.append({"phase": phase, "simfs_s": statistics.median(s), "passthrough_s": statistics.median(p),
                     "ratio": statistics.median(s) / statistics.median(p),
                     "per_cycle": [a / b for a, b in zip(s, p)]})
    return rows


def table(rows: list[dict]) -> str:
    out = ["| phase | simfs s | passthroughfs.py s | simfs / passthrough | each cycle |",
           "|:--|--:|--:|--:|:--|"]
    for r in rows:
        out.append(f"| {r['phase']} | {r['simfs_s']:.2f} | {r['passthrough_s']:.2f} | {r['ratio']:.2f}x | "
                   + ", ".join(f"{x:.2f}" for x in r["per_cycle"]) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench_passthrough",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--source", default="/usr/include", help="the tree to untar (default /usr/include)")
    ap.add_argument("--cycles", type=int, default=3, help="cycles, each on both (default 3)")
    ap.add_argument("-o", dest="options", default="disk=wd1200jb", help="simfs mount options")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args(argv)
    source = Path(a.source)
    problem = ("must run as root (it drops the host's caches and mounts)" if os.geteuid() != 0
               else "needs /dev/fuse" if not os.path.exists("/dev/fuse")
               else f"no directory {source}" if not source.is_dir()
               else "--cycles must be at least 1" if a.cycles < 1 else None)
    if problem:
        print(f"bench_passthrough: {problem}", file=sys.stderr)
        return 2
    load = [os.getloadavg()]
    runs = measure(source, a.cycles, a.options, progress=lambda m: print(m, file=sys.stderr))
    load.append(os.getloadavg())
    rows, cpu_rows = summarise(runs), summarise(runs, cpu=True)
    sim = [r["simulated"] for r in runs["simfs"]]
    if a.json:
        print(json.dumps({"source": str(source), "options": a.options, "rows": rows, "cpu_rows": cpu_rows,
                          "runs": runs, "load_before": load[0], "load_after": load[1],
                          "python": sys.version}, indent=1))
        return 0
    print(f"{source}, simfs -o {a.options} against passthroughfs.py (pyfuse3 3.5.0's example), "
          f"{sys.executable} {sys.version.split()[0]}, median of {a.cycles} cycles round-robin, "
          f"caches dropped before each phase; simfs's simulated time {', '.join(f'{x:.3f}' for x in sim)} s; "
          f"load average {' '.join(f'{x:.2f}' for x in load[0])} before, "
          f"{' '.join(f'{x:.2f}' for x in load[1])} after\n")
    print(table(rows))
    print("\nThe daemons' CPU seconds (user + system) in each phase:\n")
    print(table(cpu_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
