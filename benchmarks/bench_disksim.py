"""simfs's disk model beside DiskSim 4.0 on DiskSim's validation suite: demerit and speed, one run.

    .venv/bin/python -m benchmarks.bench_disksim [--tarball PATH] [--work DIR] [--drives a,b] [--markdown]

Builds DiskSim from its tarball (needs gcc, make, bison and flex:
`make system` installs them), then for each of the ten drives in disk_models/data/disksim/
runs DiskSim (`disksim NAME.parv OUT validate NAME.trace 0`, DiskSim's own valid/runvalid) and
simfs (`simfs disks validate`'s code, the disksim-NAME preset) on the same measured trace and
prints one table: the demerit of each against the measured service times (ms; DiskSim's is
computed from its output by DiskSim's own `rms` and checked against simfs's reproduction of it),
and requests simulated per second by each: DiskSim's whole process (reading its parameters,
simulating, writing statistics) and simfs's replay alone and with loading (parsing the drive's
files and the trace). Nothing is fitted: both simulators read the same drive files.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

#: DiskSim's tarball (github.com/westerndigitalcorporation/DiskSim at dc21ab0, packed as
#: disksim-wd-2.01.016.tar.gz), looked for beside the checkout unless --tarball names it
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TARBALL = os.path.normpath(os.path.join(CHECKOUT, "..", "shared", "third_party",
                                                "disksim-wd-2.01.016.tar.gz"))

#: the per-request instrumentation (benchmarks/disksim_requests.py): after each request of a
#: validate run, DiskSim's service time of it (disksim->lastphystime, the "Physical access
#: time" its demerit is computed from) on stderr, when DISKSIM_PER_REQUEST is set
PER_REQUEST = ("void io_validate_do_stats1 ()\n{\n   int i;\n",
               "void io_validate_do_stats1 ()\n{\n   int i;\n"
               "   if (getenv(\"DISKSIM_PER_REQUEST\")) fprintf(stderr, \"per-request %.6f\\n\", "
               "disksim->lastphystime);\n")


def fail(msg: str) -> None:
    print(f"bench_disksim: {msg}", file=sys.stderr)
    raise SystemExit(2)


def tarball_problem(tarball: str) -> str | None:
    """Why DiskSim cannot be built from `tarball` (None if it can be tried): one line."""
    if os.path.isfile(tarball):
        return None
    return (f"DiskSim is not built and its tarball is not at {tarball}: give --tarball PATH (DiskSim 4.0 "
            "as Western Digital keeps it, github.com/westerndigitalcorporation/DiskSim, commit dc21ab0, "
            "as disksim-wd-2.01.016.tar.gz), or --disksim-src DIR of a built DiskSim")


def build_disksim(tarball: str, work: str, per_request: bool = False) -> str:
    """Unpack and `make` DiskSim (with `per_request`, instrumented: PER_REQUEST); the path of
    its src/ directory (disksim and rms)."""
    for tool in ("gcc", "make", "bison", "flex"):
        if shutil.which(tool) is None:
            fail(f"building DiskSim needs {tool} (Debian: apt-get install -y bison flex gcc make)")
    try:
        with tarfile.open(tarball) as t:
            top = t.getnames()[0].split("/")[0]
            if hasattr(tarfile, "data_filter"):          # Python >= 3.11.4: refuse unsafe members
                t.extractall(work, filter="data")
            else:
                t.extractall(work)
    except (OSError, tarfile.TarError) as e:
        fail(f"cannot unpack {tarball}: {e}")
    root = os.path.join(work, top)
    if per_request:
        c = os.path.join(root, "src", "disksim_iosim.c")
        text = Path(c).read_text(encoding="latin-1")
        if PER_REQUEST[0] not in text:
            fail(f"{c}: io_validate_do_stats1 is not where the per-request instrumentation expects it")
        with open(c, "w", encoding="latin-1") as f:
            f.write(text.replace(PER_REQUEST[0], PER_REQUEST[1], 1))
    log = os.path.join(work, "make.log")
    with open(log, "w") as out:
        r = subprocess.run(["make"], cwd=root, stdout=out, stderr=subprocess.STDOUT)
    src = os.path.join(root, "src")
    if r.returncode or not os.path.exists(os.path.join(src, "disksim")):
        fail(f"building DiskSim failed (see {log})")
    return src


def run_disksim(src: str, data: str, stem: str) -> tuple[str, float, float]:
    """(output file, wall seconds of the disksim process, rms as DiskSim's rms prints it)."""
    out = os.path.join(data, f"{stem}.outv")
    t0 = time.perf_counter()
    r = subprocess.run([os.path.join(src, "disksim"), f"{stem}.parv", out, "validate", f"{stem}.trace", "0"],
                       cwd=data, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        fail(f"disksim failed on {stem}: {r.stderr.strip().splitlines()[-1:] or r.returncode}")
    r = subprocess.run([os.path.join(src, "rms"), out, out, "-1", "-1", "1"], cwd=data, capture_output=True, text=True)
    try:
        rms = float(r.stdout.split("=")[1])
    except (IndexError, ValueError):
        fail(f"DiskSim's rms printed {r.stdout!r} for {stem}")
    return out, wall, rms


def run_simfs(stem: str, preset: str, trace: str, outv: str):
    from disk_models import make_disk
    from disk_models.disksim_drives import forget_loaded
    from disk_models.validate import validate

    forget_loaded()                            # load the drive's files inside the timing
    t0 = time.perf_counter()
    disk = make_disk(preset)
    v = validate(disk, trace, outv)
    total = time.perf_counter() - t0
    return v, total


def main(argv=None) -> int:
    from disk_models.disksim_drives import DATA, DRIVES

    stems = {f[:-5]: n for n, (f, _, _) in DRIVES.items()}
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tarball", default=DEFAULT_TARBALL, help="DiskSim's tarball (default: %(default)s)")
    ap.add_argument("--disksim-src", help="an already built DiskSim src/ directory (skips the build)")
    ap.add_argument("--work", help="directory for the build and the runs (default: a temporary one, removed)")
    ap.add_argument("--drives", help=f"comma-separated subset of: {', '.join(stems)}")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    a = ap.parse_args(argv)
    chosen = list(stems)
    if a.drives:
        chosen = [s.strip() for s in a.drives.split(",") if s.strip()]
        bad = [s for s in chosen if s not in stems]
        if bad or not chosen:
            ap.exit(2, f"bench_disksim: unknown drive {', '.join(bad) or '(none)'}; choose from {', '.join(stems)}\n")
    if not a.disksim_src and tarball_problem(a.tarball):
        ap.exit(2, f"bench_disksim: {tarball_problem(a.tarball)}\n")
    if a.disksim_src and not os.path.isfile(os.path.join(a.disksim_src, "disksim")):
        ap.exit(2, f"bench_disksim: {a.disksim_src} holds no built disksim\n")
    if a.work:
        os.makedirs(a.work, exist_ok=True)
    work = a.work or tempfile.mkdtemp(prefix="bench_disksim.")
    try:
        t0 = time.perf_counter()
        src = a.disksim_src or build_disksim(a.tarball, work)
        build = time.perf_counter() - t0
        data = os.path.join(work, "data")
        shutil.copytree(DATA, data, dirs_exist_ok=True)
        rows = []
        for stem in chosen:
            outv, ds_wall, ds_rms = run_disksim(src, data, stem)
            v, total = run_simfs(stem, stems[stem], os.path.join(DATA, f"{stem}.trace"), outv)
            if abs(v.disksim_demerit - ds_rms) > 5e-6:
                fail(f"{stem}: simfs's rms reproduction gives {v.disksim_demerit:.6f}, DiskSim's rms {ds_rms:.6f}")
            rows.append((stem, v.requests, v.demerit, ds_rms, v.requests / v.wall, v.requests / total,
                         v.requests / ds_wall, v.measured["mean"], v.simulated["mean"]))
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    head = ("drive", "requests", "simfs demerit ms", "DiskSim demerit ms", "simfs req/s (replay)",
            "simfs req/s (load+replay)", "DiskSim req/s (process)", "measured mean ms", "simfs mean ms")
    fmt = lambda r: (r[0], str(r[1]), f"{r[2]:.3f}", f"{r[3]:.3f}", f"{r[4]:,.0f}", f"{r[5]:,.0f}",  # noqa: E731
                     f"{r[6]:,.0f}", f"{r[7]:.2f}", f"{r[8]:.2f}")
    if a.markdown:
        print("| " + " | ".join(head) + " |")
        print("|---|" + "---:|" * (len(head) - 1))
        for r in rows:
            print("| " + " | ".join(fmt(r)) + " |")
    else:
        w = [max(len(h), *(len(fmt(r)[i]) for r in rows)) for i, h in enumerate(head)]
        print("  ".join(h.rjust(w[i]) if i else h.ljust(w[i]) for i, h in enumerate(head)))
        for r in rows:
            print("  ".join(c.rjust(w[i]) if i else c.ljust(w[i]) for i, c in enumerate(fmt(r))))
    better = sum(1 for r in rows if r[2] <= r[3])
    print(f"\nsimfs at or below DiskSim's demerit on {better} of {len(rows)} drives; "
          f"DiskSim built in {build:.0f} s" + (" (given)" if a.disksim_src else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
