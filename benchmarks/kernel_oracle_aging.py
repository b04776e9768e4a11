"""Kernel-driven rows of the git-aging experiment (issue 50, item 3; experiments/aging, Conway et
al.'s aging): its read phases, the cold `grep -r` of the aged tree and of the clean copy, run by
the kernel's ext4 driver on byte-for-byte copies of simfs's own images at the measurement point
(the same layouts), beside simfs's figure for the same phase, and the aged/clean ratio of each.

The images are the experiment's own: `python -m experiments.aging --quick --record-only` (as root,
on a simfs mount: git pulls a generated history of 60 pulls) leaves the aged image and the clean
copy of the last measurement in OUT/work (`aged-ALLOC.img`, `clean-mounted-ALLOC.img`). Then, per
image, as benchmarks.kernel_oracle_seeds does for every read phase: the kernel's copy mounted
read-only (noatime), caches dropped, the grep inside the memory cgroup, its requests captured
through tracefs and replayed closed loop on the drive; simfs mounted on its own copy with the
recording's options and cpu_op_us=0, cold (`.simfs/drop_caches` then the mark), the same grep.
The pulls themselves are simfs's recording: their row has a note and no figure (the recording
charges simfs's CPU per request).

Configuration `kernel-aged`: the kernel ages an image itself. The same history's pulls (the
experiment's own `init` and `pull`, git's settings those of the recording) run on a loop-mounted
copy of the recording's pristine image (simfs's mkfs, ext2 profile) under the ext4 driver
(noatime), captured and replayed as a write phase (its `sync -f` inside); then the kernel's cp -a
of its aged tree onto another copy of the pristine image, and the two cold greps, kernel only.
Its aged/clean ratio is Linux's own answer to the experiment, on the kernel's allocator.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.kernel_layout import Failed
from benchmarks.kernel_oracle_sides import MemCgroup, kernel_phase, kernel_stream, kernel_time, simfs_phase
from benchmarks.kernel_oracle_table import figures, misses

#: simfs's images (the recording's mounted allocator), and the kernel's own aging of the same history
CONFIGS = ("ext2", "kernel-aged")
PHASES = ("pulls", "aged-grep", "clean-grep")
#: (phase, the recording's image of it, the phase the recording measured it in)
IMAGES = (("aged-grep", "aged-{alloc}.img", "aged"), ("clean-grep", "clean-mounted-{alloc}.img", "clean"))
PULLS_NOTE = ("git's pulls on simfs mounted (the recording, experiments.aging --quick; no figure: it charges "
              "simfs's CPU per request); the kernel's pulls are the kernel-aged configuration's")
READ_NOTE = ("the kernel's ext4 driver reads a byte copy of simfs's image at the last measurement (ext2 "
             "profile, linear directories: the driver's order without dir_index)")


def grep_command(mnt: Path) -> str:
    """The experiment's grep (experiments.aging.measure.GREP_ARGV) of MNT/tree: no match is exit
    status 1, which is success here."""
    from experiments.aging.measure import GREP_ARGV
    return " ".join(GREP_ARGV + [str(mnt / "tree")]) + " || [ $? -eq 1 ]"


def record(out: Path, step=print) -> dict:
    """The experiment's quick recording into OUT (its public command); its plan (run.json)."""
    step("git-aging: the quick recording (python -m experiments.aging --quick --record-only)")
    r = subprocess.run([sys.executable, "-m", "experiments.aging", "--quick", "--record-only", "--no-pictures",
                        "--out", str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["failed"])[-1]
        raise Failed("the git-aging recording (experiments.aging --quick): " + why.removeprefix("aging: "))
    return json.loads((out / "run.json").read_text())


def mounted_figures(out: Path, pulls: int) -> dict:
    """The recording's own grep figures at PULLS (simfs mounted with its default CPU charge)."""
    for line in (out / "measurements.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("engine") == "mounted" and row.get("pulls") == pulls:
            return {"aged_grep_s": row["aged_grep_s"], "clean_grep_s": row["clean_grep_s"], "ratio": row["ratio"]}
    return {}


def simfs_options(plan: dict, disk: str, extra: str = "") -> str:
    """The recording's mount options (experiments.aging.cli.config) with cpu_op_us=0, the drive
    both streams are timed on, and --simfs-options last (they win)."""
    from experiments.aging.cli import config
    cfg = config(plan, plan["mounted"])
    spec = ",".join(kv for kv in cfg.spec().split(",") if not kv.startswith("disk="))
    return ",".join(x for x in (spec, "cpu_op_us=0", f"disk={disk}", extra) if x)


def ratio(rows: list, side: str) -> float | None:
    """aged-grep's simulated time over clean-grep's on one side (None where one is missing)."""
    t = {r["phase"]: (r.get(side) or {}).get("seconds") for r in rows}
    a, c = t.get("aged-grep"), t.get("clean-grep")
    return a / c if a is not None and c else None


def run_aging(name: str, work: Path, disk: str | None, step=print, keep: Path | None = None,
              config: str | None = None, simfs_extra: str = "", files: int | None = None,
              phases: list[str] | None = None) -> dict:
    """The git-aging rows (benchmarks.kernel_oracle_seeds.run_seed's signature and result)."""
    from benchmarks.kernel_oracle_seeds import DEFAULT_CACHE, HEADROOM, vm_dirty
    out = work / "aging"
    plan = record(out, step)
    d = disk or plan["disk"]
    alloc, pulls = plan["mounted"], plan["pulls"]
    cfg = alloc
    options = simfs_options(plan, d, simfs_extra)
    mnt = work / "mnt"
    mnt.mkdir(exist_ok=True)
    cmd = grep_command(mnt)
    base = {"experiment": name, "config": cfg, "disk": d, "cache_mib": DEFAULT_CACHE / 2**20,
            "kernel_setup": "", "pulls": pulls}
    rows = []
    want = lambda c, p: (not phases or p in phases) and fnmatch.fnmatch(c, config or "*")   # noqa: E731
    if want(cfg, "pulls"):
        rows.append({**base, "phase": "pulls", "kind": "simfs only", "note": PULLS_NOTE, "kernel": None,
                     "simfs": {}})
    with MemCgroup(DEFAULT_CACHE + HEADROOM) as cg:
        for phase, image, measured in IMAGES:
            if not want(cfg, phase):
                continue
            src = out / "work" / image.format(alloc=alloc)
            kin, sin = work / "read-copy.img", work / "simfs.img"
            shutil.copyfile(src, kin)
            shutil.copyfile(src, sin)
            step(f"{cfg} {phase}: kernel")
            cap, ktr = work / "k.tracefs", work / "k.trace"
            wall = kernel_phase(kin, mnt, cmd, ro=True, cg=cg, capture=cap)
            kcols, kext = kernel_stream(cap, ktr)
            step(f"{cfg} {phase}: simfs")
            strace = work / "s.trace"
            scols, ssec = simfs_phase(sin, mnt, phase, cmd, False, options, strace, work / "s.stats.json")
            row = {**base, "phase": phase, "kind": "read (copies of one image)", "note": READ_NOTE,
                   "measured_as": measured,
                   "kernel": {**figures(kcols), "seconds": kernel_time(kcols, kext, d), "wall": wall},
                   "simfs": {**figures(scols), "seconds": ssec}}
            row["misses"] = misses(row)
            rows.append(row)
            _keep(keep, f"{cfg}-{phase}", ktr if kcols["op"] else None, strace)
            for f in (kin, sin, strace):
                f.unlink(missing_ok=True)
        if any(want("kernel-aged", p) for p in PHASES):
            rows += [r for r in kernel_aged(plan, out, work, mnt, cg, d, {**base, "config": "kernel-aged"}, step, keep)
                     if want("kernel-aged", r["phase"])]        # its greps need its pulls
    return {"experiment": name, "quick": True, "files": files, "rows": rows, "simfs_options": simfs_extra,
            "notes": [f"the experiment's quick recording: {pulls} pulls of a generated history on simfs "
                      f"(alloc={alloc}, {plan.get('profile', 'ext2')} profile, {plan['size'] >> 20} MiB), "
                      f"measured at its last measurement"],
            "ratios": {"aged/clean grep": {"kernel": ratio([r for r in rows if r["config"] == cfg], "kernel"),
                                           "simfs": ratio([r for r in rows if r["config"] == cfg], "simfs"),
                                           "recording": mounted_figures(out, pulls).get("ratio")},
                       "aged/clean grep, the kernel's own aging": {
                           "kernel": ratio([r for r in rows if r["config"] == "kernel-aged"], "kernel")}},
            "recording": mounted_figures(out, pulls), "verdicts": [],
            "cgroup_headroom_mib": HEADROOM / 2**20, "vm": vm_dirty(), "kernel": os.uname().release}


KERNEL_AGED_NOTE = ("the kernel ages its own copy of the recording's pristine image with the same pulls (ext4 "
                    "driver on an ext2 image, noatime; git outside the memory cgroup) and makes its own clean "
                    "copy (cp -a); kernel only: simfs's side of this configuration is the ext2 rows")


def kernel_aged(plan: dict, out: Path, work: Path, mnt: Path, cg, disk: str, base: dict, step,
                keep: Path | None) -> list[dict]:
    """The kernel's own aging of the recording's history (configuration `kernel-aged`): the
    pulls captured as a write phase, then its cold greps of its aged tree and of its clean copy."""
    from benchmarks.kernel_oracle import TRACING, Loop, Tracefs, devno, drop_caches
    from experiments.aging.mounted import init, pull
    pristine, aged, clean = out / "work" / "pristine.img", work / "kernel-aged.img", work / "kernel-clean.img"
    src = str(out / "work" / "source.git")
    shutil.copyfile(pristine, aged)
    shutil.copyfile(pristine, clean)
    cap, ktr = work / "k.tracefs", work / "k.trace"
    step(f"kernel-aged pulls: {plan['pulls']} pulls by the kernel")
    with Loop(aged, mnt, ro=False, options="noatime") as lo:
        with Tracefs() as tr:
            drop_caches()
            (TRACING / "trace").write_text("")
            t = time.monotonic()
            tree, gitdir = str(mnt / "tree"), str(mnt / "git")
            init(tree, gitdir)
            for i, sha in enumerate(plan["commits"]):
                pull(tree, src, sha, i == 0, gitdir)
            subprocess.run(["sync", "-f", str(mnt)], check=True)
            wall = time.monotonic() - t
            tr.lines(devno(lo.dev), cap)
    kcols, kext = kernel_stream(cap, ktr)
    rows = [{**base, "phase": "pulls", "kind": "write (the kernel alone)", "note": KERNEL_AGED_NOTE,
             "kernel": {**figures(kcols), "seconds": kernel_time(kcols, kext, disk), "wall": wall}, "simfs": {}}]
    _keep(keep, "kernel-aged-pulls", ktr if kcols["op"] else None, None)
    step("kernel-aged clean copy: the kernel's cp -a")
    cmnt = work / "clean.mnt"
    cmnt.mkdir(exist_ok=True)
    with Loop(aged, mnt, ro=True, options="noatime"), Loop(clean, cmnt, ro=False, options="noatime"):
        subprocess.run(["cp", "-a", str(mnt / "tree"), str(cmnt / "tree")], check=True)
    for phase, img in (("aged-grep", aged), ("clean-grep", clean)):
        step(f"kernel-aged {phase}: kernel")
        wall = kernel_phase(img, mnt, grep_command(mnt), ro=True, cg=cg, capture=cap)
        kcols, kext = kernel_stream(cap, ktr)
        rows.append({**base, "phase": phase, "kind": "read (the kernel's own image)", "note": KERNEL_AGED_NOTE,
                     "kernel": {**figures(kcols), "seconds": kernel_time(kcols, kext, disk), "wall": wall},
                     "simfs": {}})
        _keep(keep, f"kernel-aged-{phase}", ktr if kcols["op"] else None, None)
    for f in (aged, clean):
        f.unlink(missing_ok=True)
    return rows


def _keep(keep: Path | None, slug: str, ktrace: Path | None, strace: Path | None) -> None:
    if keep is None:
        return
    keep.mkdir(parents=True, exist_ok=True)
    for src, side in ((ktrace, "kernel"), (strace, "simfs")):
        if src is not None and src.exists():
            shutil.copy(src, keep / f"{slug}.{side}.trace")
