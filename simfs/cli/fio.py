"""`simfs fio MNT JOB.fio`: the real fio against a mount, its figures in simulated time.

fio measures the host: its IOPS and latencies are those of FUSE and the page cache, not of the
modelled disk. So each fio job becomes one simulated phase (the issue-43 recipe, done for the
user): a copy of the job file gets, in every job section, `exec_prerun=` running
`simfs ctl MNT mark fio-setup; sync; drop-caches; mark JOBNAME` (fio runs it in the job's
thread after laying out its files, so the lay-out's write-back and fio's page-cache
invalidation, `invalidate=1` by default, are modelled before the job's phase starts), and jobs
run one after another (`stonewall` is added where a job would start beside the previous one:
two jobs at once cannot be two phases); a phase `fio-end` closes the last. fio writes its own JSON (host figures);
from the mount's statistics simfs writes a fio-shaped JSON in simulated time: per job and
direction, fio's own request and byte counts over the job's simulated seconds (`iops`, `bw`
in KiB/s, `bw_bytes`, `runtime` in ms). On a mount with a trace, a direct=1 job's requests are
timed one by one from its phase's rows (tracereplay.host_requests / closed_loop): iodepth of
them in flight through the drive's queue for fio's asynchronous engines, one for the others,
and `lat_ns`, `slat_ns`, `clat_ns` carry fio's fields and 17 percentiles (docs/statistics.md
says exactly what is modelled). Otherwise `clat_ns` is the phase's FUSE read/write latency
histogram (count, max, mean, percentiles 50/90/99/99.9; N is FUSE's count). With numjobs > 1
the clones share one name: the job's time runs from the first clone's mark to the last one's end.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from simfs.blockio.trace import read_trace
from simfs.cli import tables
from simfs.inprocess.fiomodel import SECTION, sections, settings, simulate
from simfs.cli.common import Fmt, fail

SETUP = "fio-setup"
END = "fio-end"


def register(sub) -> None:
    s = sub.add_parser("fio", help="run fio on a mount; its figures in simulated time", formatter_class=Fmt,
                       description="Run the real fio with JOB.fio against the mounted simfs MNT, one "
                                   "simulated phase per fio job (jobs one after another), and write "
                                   "beside fio's own JSON (OUT/fio.json, host figures) a fio-shaped "
                                   "JSON whose iops, bw and clat_ns are simulated (OUT/fio-sim.json). "
                                   "The job's files go to MNT unless the job names a directory or "
                                   "filename.",
                       epilog="examples:\n  simfs fio /mnt/sim examples/fio/rand-read.fio --out fio-out\n"
                              "  simfs fio /mnt/sim job.fio --json     # the simulated JSON on stdout")
    s.add_argument("mountpoint", metavar="MNT")
    s.add_argument("jobfile", metavar="JOB.fio")
    s.add_argument("--out", metavar="DIR", default="fio-out",
                   help="where fio.json, fio-sim.json, the job file run and fio's prerun logs go "
                        "(made if missing; default: fio-out)")
    s.add_argument("--json", action="store_true", help="print the simulated fio-shaped JSON")
    tables.add_markdown_option(s)
    s.set_defaults(func=cmd_fio)


def _simfs() -> str:
    return f"{shlex.quote(sys.executable)} -m simfs.cli"


def prepare(text: str, mnt: str) -> tuple[str, list[str], list[str]]:
    """(the job file to run, its jobs' names, notes). ValueError when a job has its own
    exec_prerun (the phase mark needs it)."""
    secs = sections(text)
    glob = {}
    for name, opts in secs:
        if name == "global":
            glob.update(opts)
    names, notes, inject = [], [], {}
    serial_global = "stonewall" in glob or "wait_on" in glob
    for i, (name, opts) in enumerate(s for s in secs if s[0] != "global"):
        if "exec_prerun" in opts or "exec_prerun" in glob:
            raise ValueError(f"job {name} has its own exec_prerun; simfs fio needs it to mark the "
                             "job's phase (run the command from exec_postrun, or mark by hand)")
        job = opts.get("name") or name          # fio names a job by its section (global name= is not used)
        names.append(job)
        invalidate = opts.get("invalidate", glob.get("invalidate", "1"))
        q = shlex.quote(mnt)
        steps = [f"{_simfs()} ctl {q} mark {SETUP}", f"{_simfs()} ctl {q} sync"]
        if invalidate not in ("0",):
            steps.append(f"{_simfs()} ctl {q} drop-caches")
        steps.append(f"{_simfs()} ctl {q} mark {shlex.quote(job)}")
        lines = [f"exec_prerun={' && '.join(steps)}"]
        if i and not serial_global and not ({"stonewall", "wait_for", "wait_on"} & set(opts)):
            lines.append("stonewall")
            notes.append(f"job {name} starts after the one before it (stonewall added): one phase per job")
        inject[(name, i)] = lines
    out, i = [], -1
    for line in text.splitlines():
        out.append(line)
        m = SECTION.match(line) if not line.lstrip().startswith((";", "#")) else None
        if m and m.group(1).strip() != "global":
            i += 1
            out.extend(inject[(m.group(1).strip(), i)])
    return "\n".join(out) + "\n", names, notes


def table(doc: dict) -> tables.Table:
    """The simulated figures per job and direction (fio's count of I/Os, simulated IOPS beside
    fio's host IOPS, MB/s and the p50/p99 completion latency in ms), numbers as fio prints them."""
    rows = []
    for j in doc["jobs"]:
        for d in ("read", "write"):
            x = j.get(d)
            if not x or not x["total_ios"]:
                continue
            pct = x["clat_ns"].get("percentile", {})
            rows.append((j["jobname"], d, f"{x['total_ios']:,}", tables.number(x["iops"]),
                         tables.number(j["host"][d]["iops"] or 0), tables.number(x["bw_bytes"] / 1e6),
                         tables.ms(pct.get("50.000000", 0) / 1e9), tables.ms(pct.get("99.000000", 0) / 1e9)))
    return tables.Table("fio's jobs in simulated time", ["job", "dir", "ios", "sim IOPS", "host IOPS", "sim MB/s",
                                                         "sim p50 ms", "sim p99 ms"], rows,
                        right=[False, False] + [True] * 6)


def cmd_fio(a) -> int:
    mnt = os.path.abspath(a.mountpoint)
    if not os.path.isfile(os.path.join(mnt, ".simfs", "stats")):
        return fail(f"{a.mountpoint} is not a simfs mount (no .simfs/stats)", "fio")
    fio = shutil.which("fio")
    if not fio:
        return fail("fio is not installed (Debian: apt-get install fio)", "fio")
    try:
        text = Path(a.jobfile).read_text()
    except (OSError, UnicodeDecodeError) as e:
        return fail(f"cannot read {a.jobfile}: {getattr(e, 'strerror', None) or e}", "fio")
    try:
        job, names, notes = prepare(text, mnt)
    except ValueError as e:
        return fail(str(e), "fio")
    if not names:
        return fail(f"{a.jobfile} has no job section", "fio")
    out = Path(a.out)
    if out.exists() and not out.is_dir():
        return fail(f"--out {a.out} is not a directory", "fio")
    out.mkdir(parents=True, exist_ok=True)
    run = out / ("simfs-" + Path(a.jobfile).name)
    run.write_text(job)
    check = subprocess.run([fio, "--parse-only", str(run.resolve())], capture_output=True, text=True, cwd=out)
    if check.returncode:
        last = (check.stderr.strip() or check.stdout.strip() or "fio refused it").splitlines()[-1]
        return fail(f"{a.jobfile}: {last}", "fio")
    for n in notes:
        print(f"simfs fio: {n}", file=sys.stderr)
    r = subprocess.run([fio, "--output-format=json", "--output=fio.json", f"--directory={mnt}", run.name],
                       cwd=out, capture_output=True, text=True)
    if r.returncode:
        last = (r.stderr.strip() or "no message").splitlines()[-1]
        print(f"simfs fio: fio failed (status {r.returncode}): {last}", file=sys.stderr)
        return 1
    with open(os.path.join(mnt, ".simfs", "mark"), "wb") as f:     # closes the last job's phase
        f.write(END.encode())
    with open(os.path.join(mnt, ".simfs", "stats"), "rb") as f:
        stats = json.loads(f.read())
    try:
        fio_doc = json.loads((out / "fio.json").read_text())
    except ValueError:
        print(f"simfs fio: fio wrote no JSON to {out / 'fio.json'}", file=sys.stderr)
        return 1
    with open(os.path.join(mnt, ".simfs", "info"), "rb") as f:
        opts = json.loads(f.read()).get("options") or {}
    cols = None
    if opts.get("trace"):
        try:
            cols = read_trace(opts["trace"])
        except (OSError, ValueError) as e:
            print(f"simfs fio: the mount's trace is unreadable ({getattr(e, 'strerror', None) or e}): "
                  "figures from the statistics", file=sys.stderr)
    late: list[str] = []
    doc = simulate(fio_doc, stats, settings(text), cols, opts.get("disk"), late)
    for n in late:
        print(f"simfs fio: {n}", file=sys.stderr)
    (out / "fio-sim.json").write_text(json.dumps(doc, indent=2) + "\n")
    if a.json:
        print(json.dumps(doc, indent=2))
    else:
        tables.echo(table(doc), a.markdown)
    return 0
