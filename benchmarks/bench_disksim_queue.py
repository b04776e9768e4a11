"""simfs's drive queue beside DiskSim 4.0's, one run: DiskSim's synthetic workload generator at
outstanding depths 1, 4, 16 and 32, DiskSim's SPTF and C-LOOK at the drive.

    .venv/bin/python -m benchmarks.bench_disksim_queue [--drives ibm18es,barracuda,cheetah9LP]
        [--requests N] [--depths 1,4,16,32] [--schedulers sptf,clook] [--workloads ...]
        [--tarball PATH | --disksim-src DIR] [--work DIR] [--simfs disksim|now] [--markdown]

DiskSim is built from its tarball with two lines added (PATCHES: each generated request, with
its generator, and each completion at the device driver, with its arrival and completion time,
on stderr), or --disksim-src is a build so patched. For every drive, workload, depth and
scheduler it writes a .parv: the drive's own file with the disk's `Max queue length` set to the
depth and its `Scheduling policy` to SPTF (8) or C-LOOK (3, CYCLE_LBN), the device driver
FCFS, and `depth` closed-loop generators (time-critical requests, no think time: each process
issues its next request when its last completes), so `depth` requests are outstanding at once.
DiskSim runs it; simfs then runs the same request stream - every generator's requests in
DiskSim's order - through `disk_models.queue.DriveQueue` on the same drive's preset
(disksim-NAME), closed-loop the same way, each generator's first request entering the drive
when it entered DiskSim's (its bus delivers the first ones one after another). Printed per row:
mean and 99th-percentile response time and throughput (requests per simulated second) of each,
and simfs's difference in %. `--simfs now` runs simfs's sptf-now/spctf-now (ranked from where the
head is at the pick) beside DiskSim's sptf/spctf rows instead of simfs's own sptf/spctf.

Workloads: random and sequential, reads and writes, 4 KiB and 64 KiB (DiskSim's synthgen with
blocking factor 8, constant size; "sequential" is each generator's own stream, from a random
start, so depth N is N interleaved streams).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

from .bench_disksim import DEFAULT_TARBALL, tarball_problem

#: (file, anchor, line added after it): a generated request (generator, block, count, read) and
#: a completion at a queue (the queue, arrival, completion time, block, count); DQ_TRACE gates both
PATCHES = (
    ("disksim_synthio.c", "    new_event->cause = tmp->cause;\n",
     '    if (getenv("DQ_TRACE")) fprintf(stderr, "dq-gen %d %d %d %d\\n", gennum, new_event->blkno, '
     'new_event->bcount, (new_event->flags & READ) ? 1 : 0);\n'),
    ("disksim_ioqueue.c", "        stat_update(&queue->outtimestats, (simtime - tmp->iob_un.time));\n"
                          "        // printf(",
     None),
)
_DONE = ('        if (getenv("DQ_TRACE")) fprintf(stderr, "dq-done %p %.9f %.9f %d %d\\n", (void *) queue->bigqueue, '
         'tmp->iob_un.time, simtime, tmp->blkno, tmp->totalsize);\n')

#: DiskSim's numbers for the schedulers compared (disksim_ioqueue.h)
DISKSIM_POLICY = {"sptf": 8, "spctf": 9, "clook": 3, "sstf": 4, "fcfs": 1}

WORKLOADS = ("rand-read-4k", "rand-read-64k", "rand-write-4k", "rand-write-64k",
             "seq-read-4k", "seq-read-64k", "seq-write-4k", "seq-write-64k")

DRIVES = {"ibm18es": "disksim-ibm18es", "barracuda": "disksim-barracuda", "cheetah9LP": "disksim-cheetah9lp",
          "atlas10k": "disksim-atlas10k", "atlas_III": "disksim-atlas_iii"}


def fail(msg: str) -> None:
    print(f"bench_disksim_queue: {msg}", file=sys.stderr)
    raise SystemExit(2)


class DiskSimFailed(Exception):
    """DiskSim stopped on a run (its message): the row says so instead of figures."""


def patch_source(src: str) -> None:
    """Add PATCHES' lines to DiskSim's src/ (once)."""
    for name, anchor, line in PATCHES:
        path = os.path.join(src, name)
        text = Path(path).read_text(encoding="latin-1")
        if "DQ_TRACE" in text:
            continue
        if anchor not in text:
            fail(f"{path}: the line the instrumentation goes after is not there")
        if line is None:              # before the anchor's second line
            first = anchor.split("\n")[0] + "\n"
            text = text.replace(anchor, first + _DONE + anchor[len(first):], 1)
        else:
            text = text.replace(anchor, anchor + line, 1)
        with open(path, "w", encoding="latin-1") as f:
            f.write(text)


def build(tarball: str, work: str) -> str:
    """Unpack, patch and `make` DiskSim; its src/ directory."""
    for tool in ("gcc", "make", "bison", "flex"):
        if shutil.which(tool) is None:
            fail(f"building DiskSim needs {tool} (Debian: apt-get install -y bison flex gcc make)")
    try:
        with tarfile.open(tarball) as t:
            top = t.getnames()[0].split("/")[0]
            if hasattr(tarfile, "data_filter"):
                t.extractall(work, filter="data")
            else:
                t.extractall(work)
    except (OSError, tarfile.TarError) as e:
        fail(f"cannot unpack {tarball}: {e}")
    src = os.path.join(work, top, "src")
    patch_source(src)
    with open(os.path.join(work, "make.log"), "w") as out:
        r = subprocess.run(["make"], cwd=os.path.join(work, top), stdout=out, stderr=subprocess.STDOUT)
    if r.returncode or not os.path.exists(os.path.join(src, "disksim")):
        fail(f"building DiskSim failed (see {work}/make.log)")
    return src


def _generator(capacity: int, kind: str) -> str:
    seq = 1.0 if kind.startswith("seq") else 0.0
    read = 1.0 if "-read-" in kind else 0.0
    size = 8 if kind.endswith("-4k") else 128
    return f"""disksim_synthgen {{
   Storage capacity per device = {capacity},
   devices = [ disk0 ],
   Blocking factor = 8,
   Probability of sequential access = {seq},
   Probability of local access = 0.0,
   Probability of read access = {read},
   Probability of time-critical request = 1.0,
   Probability of time-limited request = 0.0,
   Time-limited think times = [ normal, 30.0, 100.0 ],
   General inter-arrival times = [ uniform, 0.0, 0.0 ],
   Sequential inter-arrival times = [ uniform, 0.0, 0.0 ],
   Local inter-arrival times = [ uniform, 0.0, 0.0 ],
   Local distances = [ normal, 0.0, 40000.0 ],
   Sizes = [ uniform, {size}.0, {size}.0 ]
}}"""


def write_parv(data: str, stem: str, kind: str, depth: int, policy: str, requests: int, capacity: int) -> str:
    """A .parv for one run (see the module docstring) in `data`, a copy of the drives' files
    (DiskSim reads a `source`d file by a name relative to the .parv's directory); its path."""
    parv = open(os.path.join(data, f"{stem}.parv"), encoding="latin-1").read()
    m = re.search(r"^source\s+(\S+\.diskspecs)\s*$", parv, re.M)
    if not m:
        fail(f"{stem}.parv sources no .diskspecs")
    specs = open(os.path.join(data, m.group(1)), encoding="latin-1").read()
    specs, n1 = re.subn(r"Max queue length\s*=\s*\d+", f"Max queue length = {max(depth, 1)}", specs, count=1)
    specs, n2 = re.subn(r"(Scheduler\s*=\s*disksim_ioqueue\s*\{\s*Scheduling policy\s*=\s*)\d+",
                        rf"\g<1>{DISKSIM_POLICY[policy]}", specs, count=1)
    if n1 != 1 or n2 != 1:
        fail(f"{m.group(1)}: no 'Max queue length' or disk 'Scheduling policy' to set")
    name = f"{stem}-{kind}-{policy}-{depth}"
    with open(os.path.join(data, name + ".diskspecs"), "w") as f:
        f.write(specs)
    parv = parv.replace(m.group(0), f"source {name}.diskspecs\n")
    i = parv.index("disksim_synthio Synthio")
    gens = ",\n".join(_generator(capacity, kind) for _ in range(depth))
    parv = parv[:i] + f"""disksim_synthio Synthio {{
   Number of I/O requests to generate = {requests},
   Maximum time of trace generated = 100000000.0,
   System call/return with each request = 0,
   Think time from call to request = 0.0,
   Think time from request to return = 0.0,
   Generators = [
{gens}
   ]
}}
"""
    with open(os.path.join(data, name + ".parv"), "w") as f:
        f.write(parv)
    return os.path.join(data, name + ".parv")


def run_disksim(src: str, parv: str):
    """DiskSim on `parv`: (per-generator request lists [(op, lba, sectors)], response times in
    seconds in completion order at the device driver, the last completion time, wall seconds,
    per generator the time in seconds its first request reached the drive's queue)."""
    env = dict(os.environ, DQ_TRACE="1")
    t0 = time.perf_counter()
    r = subprocess.run([os.path.join(src, "disksim"), parv, parv[:-5] + ".outv", "ascii", "0", "1"],
                       cwd=os.path.dirname(parv), capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode:
        last = (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]
        raise DiskSimFailed(re.sub(r"^disksim: ", "", last)[:160])
    gens: dict[int, list] = {}
    done: dict[str, list] = {}
    order: list[str] = []
    for line in r.stderr.splitlines():
        if line.startswith("dq-gen "):
            g, blk, cnt, rd = (int(x) for x in line.split()[1:])
            gens.setdefault(g, []).append(("R" if rd else "W", blk, cnt))
        elif line.startswith("dq-done "):
            q, arr, fin, blk = line.split()[1:5]
            if q not in done:
                done[q] = []
                order.append(q)
            done[q].append((float(arr), float(fin), int(blk)))
    if not gens or not done:
        fail(f"{src}/disksim prints no dq- lines: build it with this script")
    # the driver's queue is the outer one: it sees each request arrive first and finish last;
    # the drive's is the inner one. The generators' first requests, all made at time 0, reach
    # the drive one after another (the bus carries one command at a time); later ones arrive
    # as the completion they follow is reported
    drv = max(order, key=lambda q: sum(f - a for a, f, _ in done[q]))
    disk = min(order, key=lambda q: sum(f - a for a, f, _ in done[q]))
    resp = np.array([(f - a) * 1e-3 for a, f, _ in done[drv]])
    end = max(f for _, f, _ in done[drv]) * 1e-3
    streams = [gens[g] for g in sorted(gens)]
    arrived = {}
    for a, _, blk in done[disk]:
        arrived.setdefault(blk, a * 1e-3)
    starts = [arrived.get(s[0][1], 0.0) for s in streams]
    return streams, resp, end, wall, starts


def simfs_policy(policy: str, variant: str) -> str:
    """simfs's scheduler for DiskSim's `policy`: the same name, or with --simfs now its -now
    variant (sptf, spctf ranked from where the head is at the pick)."""
    return policy + "-now" if variant == "now" and policy in ("sptf", "spctf") else policy


def run_simfs(preset: str, streams: list, depth: int, policy: str, count: int | None = None,
              starts: list | None = None):
    """The same generators, closed-loop, through DriveQueue: (response times s of the first
    `count` completions - DiskSim stops when the last request is generated, so its last
    depth - 1 never complete -, the last of their finish times s, CPU seconds). `starts`: when
    each generator's first request reaches the drive (DiskSim's; default 0): its response time
    counts from 0, as DiskSim's driver counts it."""
    from disk_models import make_disk
    from disk_models.queue import DriveQueue

    disk = make_disk(f"{preset},queue_depth={depth}")
    q = DriveQueue(disk, depth, policy)
    nxt = [0] * len(streams)
    starts = starts or [0.0] * len(streams)
    c0 = time.process_time()
    # the first requests in order of arrival; each submitted before the drive's first decision
    # or completion after it (DriveQueue's rule), a completion's follow-up on the completion
    pending = sorted(range(len(streams)), key=lambda g: (starts[g], g))
    pending.reverse()
    first = set(range(len(streams)))
    resp, end = [], 0.0

    def arrive(limit):
        while pending and (limit is None or starts[pending[-1]] <= limit):
            g = pending.pop()
            op, lba, n = streams[g][0]
            q.submit(op, lba, n, starts[g], tag=g)
            nxt[g] = 1

    while True:
        while pending:
            np_ = q.next_pick
            lim = np_ if np_ is not None else q.peek()
            t0 = starts[pending[-1]]
            if lim is not None and t0 > lim:
                break
            arrive(t0)
        if not q.outstanding or (count is not None and len(resp) >= count):
            break
        g, r = q.pop()
        if g in first:
            first.discard(g)
            resp.append(r.finish)
        else:
            resp.append(r.total)
        end = r.finish
        arrive(r.finish)
        s = streams[g]
        if nxt[g] < len(s):
            op, lba, n = s[nxt[g]]
            nxt[g] += 1
            q.submit(op, lba, n, r.finish, tag=g)
    return np.array(resp), end, time.process_time() - c0


def main(argv=None) -> int:
    from disk_models.disksim_drives import DATA

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tarball", default=DEFAULT_TARBALL, help="DiskSim's tarball (default: %(default)s)")
    ap.add_argument("--disksim-src", help="src/ of a DiskSim built (patched) by this script: skips the build")
    ap.add_argument("--work", help="directory for the build and the runs (default: a temporary one, removed)")
    ap.add_argument("--drives", default="ibm18es,barracuda,cheetah9LP", help=f"of: {', '.join(DRIVES)}")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated (default: all eight)")
    ap.add_argument("--depths", default="1,4,16,32")
    ap.add_argument("--schedulers", default="sptf,clook")
    ap.add_argument("--simfs", choices=("disksim", "now"), default="disksim",
                    help="simfs's side of sptf/spctf rows: DiskSim's definition (default) or sptf-now/spctf-now")
    ap.add_argument("--requests", type=int, default=2000, help="per run (default %(default)s)")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)

    def listed(text, valid, what):
        items = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in items if x not in valid]
        if bad or not items:
            ap.exit(2, f"bench_disksim_queue: unknown {what} {', '.join(bad) or '(none)'}; choose from "
                       f"{', '.join(valid)}\n")
        return items

    drives = listed(a.drives, DRIVES, "drive")
    kinds = listed(a.workloads, WORKLOADS, "workload")
    policies = listed(a.schedulers, tuple(DISKSIM_POLICY), "scheduler")
    try:
        depths = [int(x) for x in a.depths.split(",")]
        if not depths or min(depths) < 1 or max(depths) > 256:
            raise ValueError
    except ValueError:
        ap.exit(2, f"bench_disksim_queue: --depths wants whole numbers 1..256, not {a.depths!r}\n")
    if a.requests < 10:
        ap.exit(2, "bench_disksim_queue: --requests must be at least 10\n")
    if a.disksim_src and not os.path.isfile(os.path.join(a.disksim_src, "disksim")):
        ap.exit(2, f"bench_disksim_queue: {a.disksim_src} holds no built disksim\n")
    if not a.disksim_src and tarball_problem(a.tarball):
        ap.exit(2, f"bench_disksim_queue: {tarball_problem(a.tarball)}\n")
    if a.work:
        os.makedirs(a.work, exist_ok=True)
    work = a.work or tempfile.mkdtemp(prefix="bench_disksim_queue.")
    from disk_models import make_disk

    rows = []
    try:
        src = a.disksim_src or build(a.tarball, work)
        runs = os.path.join(work, "data")
        shutil.copytree(DATA, runs, dirs_exist_ok=True)
        for stem in drives:
            cap = make_disk(DRIVES[stem]).sectors
            cap -= cap % 8
            for kind in kinds:
                for policy in policies:
                    for depth in depths:
                        parv = write_parv(runs, stem, kind, depth, policy, a.requests, cap)
                        try:
                            streams, ds, ds_end, _, starts = run_disksim(src, parv)
                        except DiskSimFailed as e:
                            rows.append((stem, kind, policy, depth, str(e), None, None, None))
                            continue
                        sm, sm_end, _ = run_simfs(DRIVES[stem], streams, depth, simfs_policy(policy, a.simfs),
                                                  len(ds), starts)
                        rows.append((stem, kind, policy, depth, ds, ds_end, sm, sm_end))
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    print_table(rows, a.markdown)
    print_shape(rows, drives, depths, policies, a.requests, a.markdown)
    return 0


def one_stream(preset: str, kind: str, depth: int, policy: str, requests: int) -> float:
    """simfs alone: requests per simulated second of ONE sequential read stream with `depth`
    consecutive requests outstanding (fio's sequential read at iodepth N; DiskSim's synthgen
    makes each outstanding request a stream of its own, so it has no such row)."""
    from disk_models import make_disk
    from disk_models.queue import DriveQueue

    size = 8 if kind.endswith("-4k") else 128
    disk = make_disk(preset)
    q = DriveQueue(disk, depth, policy)
    nxt = disk.sectors // 4 // 8 * 8
    for _ in range(depth):
        q.submit("R", nxt, size, 0.0)
        nxt += size
    issued, end = depth, 0.0
    while q.outstanding:
        _, r = q.pop()
        end = r.finish
        if issued < requests:
            q.submit("R", nxt, size, r.finish)
            nxt += size
            issued += 1
    return requests / end


def print_shape(rows, drives, depths, policies, requests: int, markdown: bool) -> None:
    """Random 4 KiB reads: IOPS at each depth over depth 1, DiskSim's and simfs's; then one
    sequential stream at each depth (simfs)."""
    iops = {}
    for stem, kind, policy, depth, ds, ds_end, sm, sm_end in rows:
        if kind == "rand-read-4k" and not isinstance(ds, str):
            iops[stem, policy, depth] = (figures(ds, ds_end)[2], figures(sm, sm_end)[2])
    bullet = "- " if markdown else "  "
    print("\nrandom 4 KiB reads, IOPS at depth N / IOPS at depth 1 (DiskSim, simfs):")
    for stem in drives:
        for policy in policies:
            if (stem, policy, 1) not in iops:
                continue
            base = iops[stem, policy, 1]
            gains = [f"{d}: {iops[stem, policy, d][0] / base[0]:.2f}x, {iops[stem, policy, d][1] / base[1]:.2f}x"
                     for d in depths if (stem, policy, d) in iops]
            print(f"{bullet}{stem} {policy}: " + "; ".join(gains))
    print("\none sequential read stream with N requests outstanding (simfs; IOPS):")
    for stem in drives:
        for kind in ("seq-read-4k", "seq-read-64k"):
            for policy in ("spctf", "spctf-now", "sptf", "clook"):
                got = [f"{d}: {one_stream(DRIVES[stem], kind, d, policy, requests):.0f}" for d in depths]
                print(f"{bullet}{stem} {kind} {policy}: " + "; ".join(got))


def figures(resp: np.ndarray, end: float) -> tuple[float, float, float]:
    """(mean ms, p99 ms, requests per simulated second)."""
    return float(resp.mean() * 1e3), float(np.percentile(resp, 99) * 1e3), len(resp) / end


def print_table(rows, markdown: bool) -> None:
    head = ("drive", "workload", "sched", "depth", "DiskSim mean ms", "simfs mean ms", "diff %",
            "DiskSim p99 ms", "simfs p99 ms", "diff %", "DiskSim IOPS", "simfs IOPS", "diff %")
    out, worst = [], 0.0
    failed = []
    for stem, kind, policy, depth, ds, ds_end, sm, sm_end in rows:
        if isinstance(ds, str):
            failed.append(f"{stem} {kind} {policy} depth {depth}: DiskSim stops: {ds}")
            continue
        d, s = figures(ds, ds_end), figures(sm, sm_end)
        diffs = [(s[i] - d[i]) / d[i] * 100 for i in range(3)]
        worst = max(worst, *(abs(x) for x in diffs))
        out.append((stem, kind, policy, str(depth), f"{d[0]:.2f}", f"{s[0]:.2f}", f"{diffs[0]:+.1f}",
                    f"{d[1]:.2f}", f"{s[1]:.2f}", f"{diffs[1]:+.1f}", f"{d[2]:.1f}", f"{s[2]:.1f}", f"{diffs[2]:+.1f}"))
    if markdown:
        print("| " + " | ".join(head) + " |")
        print("|---|---|---|" + "---:|" * (len(head) - 3))
        for r in out:
            print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[i]) for r in out)) for i, h in enumerate(head)]
        print("  ".join(h.rjust(w[i]) if i > 2 else h.ljust(w[i]) for i, h in enumerate(head)))
        for r in out:
            print("  ".join(c.rjust(w[i]) if i > 2 else c.ljust(w[i]) for i, c in enumerate(r)))
    within = sum(1 for r in out if all(abs(float(r[i])) <= 5.0 for i in (6, 9, 12)))
    print(f"\n{within} of {len(out)} rows within +-5 % on mean, p99 and IOPS; largest difference {worst:.1f} %")
    for line in failed:
        print(("- " if markdown else "") + line)


if __name__ == "__main__":
    raise SystemExit(main())
