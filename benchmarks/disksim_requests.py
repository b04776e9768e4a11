"""simfs beside DiskSim request by request on DiskSim's validation traces: which requests differ,
and by how much (a whole revolution, or less).

    .venv/bin/python -m benchmarks.disksim_requests [--drives hp_c3323a,dec_rz26] [--list]
        [--tarball PATH | --disksim-src DIR] [--work DIR] [--threshold MS]

Builds DiskSim from its tarball with one line added (bench_disksim.PER_REQUEST: DiskSim's service
time of each request, the "Physical access time" its demerit is computed from, printed as it
completes), or uses --disksim-src, a build so instrumented. For each drive it runs DiskSim's
validate run and simfs's replay (the disksim-NAME preset, as `simfs disks validate`) of the same
trace and prints: the requests, those whose service times differ by more than --threshold (ms),
of those the ones off by a whole number of revolutions (within twice the threshold), the range of
the others' differences, and the pairs of consecutive requests whose differences cancel. --list prints every differing request (index in the trace, from 1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from .bench_disksim import DEFAULT_TARBALL, build_disksim, tarball_problem


def fail(msg: str) -> None:
    print(f"disksim_requests: {msg}", file=sys.stderr)
    raise SystemExit(2)


def disksim_times(src: str, data: str, stem: str) -> np.ndarray:
    """DiskSim's service time (ms) of every request of NAME.trace, in trace order."""
    env = dict(os.environ, DISKSIM_PER_REQUEST="1")
    r = subprocess.run([os.path.join(src, "disksim"), f"{stem}.parv", os.path.join(data, f"{stem}.outv"),
                        "validate", f"{stem}.trace", "0"], cwd=data, capture_output=True, text=True, env=env)
    if r.returncode:
        fail(f"disksim failed on {stem}: {r.stderr.strip().splitlines()[-1:] or r.returncode}")
    vals = [float(line.split()[1]) for line in r.stderr.splitlines() if line.startswith("per-request ")]
    if not vals:
        fail(f"{src}/disksim prints no per-request times: build it with this script (or bench_disksim's "
             "PER_REQUEST line added)")
    return np.array(vals[1:])          # the first call comes before any request completes


#: ms: two consecutive differences that cancel within this make a pair
PAIR_MS = 0.005


def compare(simfs_ms: np.ndarray, disksim_ms: np.ndarray, t_rev_ms: float, threshold: float) -> dict:
    """The requests that differ by more than `threshold` ms, split into whole revolutions
    (within 2 x `threshold` of k >= 1 revolutions) and the rest, and the pairs: a request
    whose difference the next request gives back (within PAIR_MS)."""
    diff = simfs_ms - disksim_ms
    off = np.flatnonzero(np.abs(diff) > threshold)
    revs = np.rint(diff[off] / t_rev_ms)
    whole = (revs != 0) & (np.abs(diff[off] - revs * t_rev_ms) <= 2 * threshold)
    rest = np.abs(diff[off[~whole]])
    # a request whose difference the next one gives back: the two simulators' clocks agree again
    given_back = [int(i) for i in off if i + 1 < len(diff) and abs(diff[i] + diff[i + 1]) <= PAIR_MS]
    return {"requests": len(diff), "differ": off, "revolution": off[whole], "other": off[~whole],
            "other_range": (float(rest.min()), float(rest.max())) if len(rest) else None, "diff": diff,
            "pairs": given_back}


def main(argv=None) -> int:
    from disk_models import make_disk
    from disk_models.disksim_drives import DATA, DRIVES
    from disk_models.validate import read_trace, replay

    stems = {f[:-5]: n for n, (f, _, _) in DRIVES.items()}
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tarball", default=DEFAULT_TARBALL, help="DiskSim's tarball (default: %(default)s)")
    ap.add_argument("--disksim-src", help="src/ of a DiskSim built by this script (skips the build)")
    ap.add_argument("--work", help="directory for the build and the runs (default: a temporary one, removed)")
    ap.add_argument("--drives", default="hp_c3323a,dec_rz26", help=f"comma-separated, of: {', '.join(stems)}")
    ap.add_argument("--threshold", type=float, default=0.05, help="ms (default %(default)s)")
    ap.add_argument("--list", action="store_true", help="print every differing request")
    a = ap.parse_args(argv)
    chosen = [s.strip() for s in a.drives.split(",") if s.strip()]
    bad = [s for s in chosen if s not in stems]
    if bad or not chosen:
        ap.exit(2, f"disksim_requests: unknown drive {', '.join(bad) or '(none)'}; choose from {', '.join(stems)}\n")
    if a.disksim_src and not os.path.isfile(os.path.join(a.disksim_src, "disksim")):
        ap.exit(2, f"disksim_requests: {a.disksim_src} holds no built disksim\n")
    if not a.disksim_src and tarball_problem(a.tarball):
        ap.exit(2, f"disksim_requests: {tarball_problem(a.tarball)}\n")
    if a.work:
        os.makedirs(a.work, exist_ok=True)
    work = a.work or tempfile.mkdtemp(prefix="disksim_requests.")
    try:
        src = a.disksim_src or build_disksim(a.tarball, work, per_request=True)
        data = os.path.join(work, "data")
        shutil.copytree(DATA, data, dirs_exist_ok=True)
        for stem in chosen:
            ds = disksim_times(src, data, stem)
            disk = make_disk(stems[stem])
            tr = read_trace(os.path.join(DATA, f"{stem}.trace"), disk.sectors)
            sim, _ = replay(disk, tr)
            if len(ds) != len(sim):
                fail(f"{stem}: DiskSim reported {len(ds)} requests, the trace has {len(sim)}")
            t_rev = disk.t_rev * 1e3
            c = compare(sim, ds, t_rev, a.threshold)
            rng = c["other_range"]
            print(f"{stem}: {c['requests']} requests, {len(c['differ'])} differ by more than {a.threshold} ms: "
                  f"{len(c['revolution'])} by a whole revolution ({t_rev:.3f} ms), {len(c['other'])} by less"
                  + (f" ({rng[0]:.3f}-{rng[1]:.3f} ms)" if rng else "")
                  + f"; the next request gives back the difference of {len(c['pairs'])}")
            if a.list:
                print(f"  {'request':>7} {'op':>2} {'after':>5} {'gap ms':>7} {'LBN':>9} {'sectors':>7} "
                      f"{'measured':>9} {'DiskSim':>9} {'simfs':>9} {'simfs-DiskSim':>13} {'revs':>5}")
                for i in c["differ"]:
                    after = tr.ops[i - 1] if i else "-"
                    gap = f"{tr.gaps[i - 1]:.3f}" if i else "-"
                    print(f"  {i + 1:>7} {tr.ops[i]:>2} {after:>5} {gap:>7} {tr.lbas[i]:>9} {tr.sizes[i]:>7} "
                          f"{tr.measured[i]:>9.3f} {ds[i]:>9.3f} {sim[i]:>9.3f} {c['diff'][i]:>+13.3f} "
                          f"{c['diff'][i] / t_rev:>+5.2f}" + ("  <- given back next" if i in c["pairs"] else ""))
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
