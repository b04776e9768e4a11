"""The kernel as the oracle of the request stream, for one quick phase: `find . -type d` in
hash order on a tree the kernel's ext4 unpacked, the kernel's requests beside simfs's.

    python -m benchmarks.kernel_oracle [--tree DIR|TARBALL] [--size 1G] [--disk sas10k]
                                       [--cpu-op-us 0] [--keep DIR] [--json]

Needs root, loop devices, tracefs, e2fsprogs, GNU tar and FUSE; where one is missing it says
which in one line and exits with status 2. Steps:

  1. `mkfs.ext4 -O ^has_journal,^metadata_csum,^64bit` (fixed UUID and hash seed) on a loop
     device, `tar xf` of the tree by the kernel's ext4, unmount; a byte-for-byte copy is kept
  2. the kernel: the image mounted read-only, caches dropped, block_rq_issue and
     block_rq_complete enabled in tracefs, `find . -type d > /dev/null` (ext4's readdir is
     htree hash order); the loop device's lines imported (simfs/blockio/traceimport.py) and
     replayed on --disk (simfs/blockio/tracereplay.py) closed loop (--gaps none: no CPU time,
     as simfs at cpu_op_us=0) and with the captured gaps kept
  3. simfs: the copy mounted (noatime, simfs's default: no writes) with `-o disk=D,dirorder=hash,cpu_op_us=U,trace=`,
     its caches and the drive's buffer dropped (`.simfs/drop_caches`, as the kernel's after
     its mount), the same `find` in its own phase; its requests, bytes and simulated time, without the
     unmount's write-back (which the kernel did after the capture)

Printed: requests, reads, MiB, seeks, read-ahead requests and simulated seconds of each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.kernel_layout import MKFS_EXT4, Failed, check_tree, sh, simfs_argv, tarball_of, uuid

TRACING = Path("/sys/kernel/tracing")
LOOP_CONTROL = "/dev/loop-control"
EVENTS = ("block/block_rq_issue", "block/block_rq_complete")
PHASE = "find"
UUID = uuid(1)


def fail(msg: str) -> int:
    print(f"kernel_oracle: {msg}", file=sys.stderr)
    return 2


def preflight(a) -> str | None:
    """Why the harness cannot run here (one line), or None."""
    if os.geteuid() != 0:
        return "needs root: loop devices, mount and tracefs"
    if not os.path.exists(LOOP_CONTROL):
        return f"no loop devices here ({LOOP_CONTROL} missing)"
    for tool in ("losetup", "mount", "umount", "mkfs.ext4", "tar", "find", "fusermount3"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not os.path.exists("/dev/fuse"):
        return "no FUSE here (/dev/fuse missing)"
    if why := check_tree(a.tree):
        return why
    try:
        from disk_models import make_disk
        make_disk(a.disk)
    except ValueError as e:
        return f"--disk {a.disk}: {e}"
    return None


class Tracefs:
    """tracefs's block request events, on for the `with` block: mounted if it was not (and
    unmounted after), the buffer enlarged, both events enabled; all put back on exit."""

    def __init__(self, kib: int = 65536):
        self.kib, self.mounted, self.old_kib = kib, False, None

    def available(self) -> str | None:
        if not TRACING.is_dir():
            return f"tracefs unavailable: {TRACING} does not exist (a kernel without tracing)"
        if not (TRACING / "trace").exists():
            r = subprocess.run(["mount", "-t", "tracefs", "none", str(TRACING)], capture_output=True, text=True)
            if r.returncode != 0:
                return f"tracefs unavailable: mount -t tracefs: {(r.stderr.strip() or 'failed').splitlines()[-1]}"
            self.mounted = True
        missing = [e for e in EVENTS if not (TRACING / "events" / e / "enable").exists()]
        if missing:
            self.close()
            return f"tracefs has no {missing[0]} event (a kernel without block tracepoints)"
        return None

    def __enter__(self):
        self.old_kib = (TRACING / "buffer_size_kb").read_text().split()[0]
        (TRACING / "buffer_size_kb").write_text(str(self.kib))
        for e in EVENTS:
            (TRACING / "events" / e / "enable").write_text("1")
        (TRACING / "tracing_on").write_text("1")
        (TRACING / "trace").write_text("")
        return self

    def lines(self, dev: str, out: Path) -> None:
        """The header and the device's block_rq lines of the buffer, into `out`."""
        with open(TRACING / "trace") as f, open(out, "w") as o:
            for line in f:
                if line.startswith("#") or (f": {dev} " in line and "block_rq_" in line) or "LOST" in line:
                    o.write(line)

    def __exit__(self, *exc):
        for e in EVENTS:
            (TRACING / "events" / e / "enable").write_text("0")
        if self.old_kib:
            (TRACING / "buffer_size_kb").write_text(self.old_kib)
        self.close()

    def close(self):
        if self.mounted:
            subprocess.run(["umount", str(TRACING)], capture_output=True)
            self.mounted = False


def devno(loop: str) -> str:
    st = os.stat(loop)
    return f"{os.major(st.st_rdev)},{os.minor(st.st_rdev)}"


class Loop:
    """A loop device for an image, mounted on `mnt` with the kernel's ext4 (`mount` False: the
    device alone, for e2fsck); detached on exit."""

    def __init__(self, img: Path, mnt: Path, ro: bool, options: str = "", mount: bool = True):
        self.img, self.mnt, self.ro, self.dev, self.mounted, self.mount = img, mnt, ro, "", False, mount
        self.options = ("ro" if ro else "rw") + (f",{options}" if options else "")

    def __enter__(self):
        self.dev = sh(["losetup", "-f", "--show"] + (["-r"] if self.ro else []) + [self.img]).strip()
        if self.mount:
            try:
                sh(["mount", "-t", "ext4", "-o", self.options, self.dev, self.mnt])
            except BaseException:
                sh(["losetup", "-d", self.dev])
                raise
            self.mounted = True
        return self

    def __exit__(self, *exc):
        try:
            if self.mounted:
                sh(["umount", self.mnt])
        finally:
            sh(["losetup", "-d", self.dev])


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3")


def unpack_kernel(tarball: Path, img: Path, mnt: Path, size: str) -> None:
    sh(["truncate", "-s", size, img])
    sh(MKFS_EXT4 + ["-U", UUID, "-E", f"lazy_itable_init=0,nodiscard,hash_seed={UUID}", img])
    with Loop(img, mnt, ro=False):
        sh(["tar", "xf", tarball, "-C", mnt])


def find_kernel(img: Path, mnt: Path, capture: Path) -> float:
    """The kernel's cold `find . -type d` on the image, its requests captured; wall seconds."""
    with Loop(img, mnt, ro=True) as lo, Tracefs() as tr:
        drop_caches()
        (TRACING / "trace").write_text("")
        t = time.monotonic()
        subprocess.run(["find", ".", "-type", "d"], cwd=mnt, stdout=subprocess.DEVNULL, check=True)
        wall = time.monotonic() - t
        tr.lines(devno(lo.dev), capture)
    return wall


def cold_mark(mnt: Path, phase: str) -> None:
    """Start simfs's phase `phase` as cold as the kernel's, whose caches are dropped after its
    mount: what a phase's untimed preparation read or dirtied is written back and forgotten with
    the drive's buffer (`.simfs/drop_caches`, whose own superblock write falls before the
    phase); what the kernel's drop keeps, simfs's keeps too (the superblock and descriptor
    buffers, the root inode). The phase is marked through a descriptor opened before the drop,
    so that no path walk of the host's (lookups, attributes) falls between the two."""
    fd = os.open(mnt / ".simfs" / "mark", os.O_WRONLY)
    try:
        (mnt / ".simfs" / "drop_caches").write_text("1")
        os.write(fd, phase.encode())
    finally:
        os.close(fd)


def find_simfs(img: Path, mnt: Path, disk: str, cpu_us: float, trace: Path, stats: Path) -> dict:
    """simfs's cold `find . -type d` (hash order) on the copy, in its own phase; its statistics."""
    opts = f"disk={disk},dirorder=hash,cpu_op_us={cpu_us},trace={trace},stats={stats}"
    sh(simfs_argv() + ["mount", img, mnt, "-o", opts])
    try:
        cold_mark(mnt, PHASE)
        subprocess.run(["find", ".", "-type", "d"], cwd=mnt, stdout=subprocess.DEVNULL, check=True)
    finally:
        try:
            sh(simfs_argv() + ["umount", "--quiet", mnt])
        except Failed:
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)
            raise
    return json.loads(stats.read_text())


def stream_figures(cols: dict, extras: dict | None = None) -> dict:
    """Requests, reads, MiB, read-ahead requests of a trace's rows."""
    wait = cols["wait"]
    return {"requests": len(cols["op"]), "reads": cols["op"].count("R"),
            "mib": sum(cols["sectors"]) * 512 / 2**20,
            "readahead": sum(1 for o, w in zip(cols["op"], wait) if o == "R" and not w)}


def replayed(cols: dict, extras: dict, disk: str, g: float) -> dict:
    from disk_models import make_disk
    from simfs.blockio.tracereplay import replay
    out = replay(cols, make_disk(disk), g, extras)
    t = out["time"]["total"]
    return {"seconds": out["elapsed"], "seeks": t["counters"]["seeks"]}


def step(what: str) -> None:
    print(f"kernel_oracle: {time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)


def run(a, work: Path) -> dict:
    from simfs.blockio.trace import read_trace
    from simfs.blockio.traceimport import read_capture, read_extras, write_trace
    step(f"tarball of {a.tree}")
    tarball = tarball_of(a.tree, work)
    img, copy, mnt = work / "kernel.img", work / "simfs.img", work / "mnt"
    mnt.mkdir(exist_ok=True)
    step("the kernel's ext4 unpacks it")
    unpack_kernel(tarball, img, mnt, a.size)
    sh(["cp", "--sparse=always", img, copy])
    capture, ktrace = work / "kernel.tracefs", work / "kernel.trace"
    step("the kernel's find, captured")
    wall = find_kernel(img, mnt, capture)
    _, reqs, _ = read_capture(str(capture))
    write_trace(reqs, str(ktrace))
    kcols, kext = read_trace(ktrace), read_extras(str(ktrace))
    strace, sstats = work / "simfs.trace", work / "simfs.stats.json"
    step("simfs's find on the copy")
    doc = find_simfs(copy, mnt, a.disk, a.cpu_op_us, strace, sstats)
    scols = read_trace(strace)
    # the find phase without the unmount's write-back (superblock writes, FLUSH CACHE), which
    # simfs records in the last phase and the kernel did after the capture
    um = doc.get("unmount") or {"start": float("inf"), "elapsed": 0.0, "counters": {}}
    keep = [i for i, (p, t) in enumerate(zip(scols["phase"], scols["issue"])) if p == PHASE and t < round(um["start"], 9)]
    sfind = {k: [v[i] for i in keep] for k, v in scols.items()}
    phase = next(p for p in doc["phases"] if p["name"] == PHASE)
    step("replays")
    rows = {
        "kernel, replayed closed loop (gaps none)": {**stream_figures(kcols), **replayed(kcols, kext, a.disk, 0.0)},
        "kernel, replayed with its gaps": {**stream_figures(kcols), **replayed(kcols, kext, a.disk, 1.0)},
        f"simfs mounted (cpu_op_us={a.cpu_op_us:g})": {
            **stream_figures(sfind), "seconds": phase["elapsed"] - um["elapsed"],
            "seeks": phase["counters"]["seeks"] - um["counters"].get("seeks", 0)},
    }
    if a.keep:
        keep_dir = Path(a.keep)
        keep_dir.mkdir(parents=True, exist_ok=True)
        for f in (capture, ktrace, strace, sstats):
            shutil.copy(f, keep_dir / f.name)
    return {"tree": a.tree, "size": a.size, "disk": a.disk, "kernel": os.uname().release,
            "phase": "find . -type d (hash order), cold", "kernel_wall_seconds": wall, "rows": rows}


def render(res: dict) -> str:
    head = ["", "requests", "reads", "MiB", "read-ahead", "seeks", "simulated s"]
    body = [[name, f"{r['requests']:,}", f"{r['reads']:,}", f"{r['mib']:.1f}", f"{r['readahead']:,}",
             f"{r['seeks']:,}", f"{r['seconds']:.3f}"] for name, r in res["rows"].items()]
    w = [max(len(str(x[i])) for x in [head] + body) for i in range(len(head))]
    line = lambda cells: "| " + " | ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i])   # noqa: E731
                                           for i, c in enumerate(cells)) + " |"
    rule = "|" + "|".join(("-" * (w[i] + 1) + ":") if i else ("-" * (w[i] + 2)) for i in range(len(w))) + "|"
    return (f"{res['phase']} of {res['tree']} unpacked by the kernel's ext4 ({res['kernel']}), "
            f"on {res['disk']}\n\n" + "\n".join([line(head), rule] + [line(b) for b in body]) + "\n")


def parse(argv):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.kernel_oracle", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", default="/usr/include", help="a directory or tarball (default /usr/include)")
    ap.add_argument("--size", default="1G", help="image size (default 1G)")
    ap.add_argument("--disk", help="the drive both streams are timed on (default sas10k; the seed's with --experiment)")
    ap.add_argument("--cpu-op-us", type=float, default=0.0,
                    help="simfs's CPU charge per FUSE request (default 0: the replay charges none)")
    ap.add_argument("--work", help="directory for the images (default: a temporary one)")
    ap.add_argument("--keep", help="copy the capture, both traces and simfs's statistics here")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--experiment", metavar="NAME",
                    help="instead of the find: every phase of a built-in experiment at its quick size, "
                         "kernel beside simfs (every built-in experiment, and readdir-order-ext4: the ext4 profile; "
                         "benchmarks/kernel_oracle_seeds.py); "
                         "--disk then overrides the seed's drive only if given")
    ap.add_argument("--simfs-options", default="", metavar="OPTS",
                    help="with --experiment: more -o options for simfs's side (e.g. inode_readahead_blks=32)")
    ap.add_argument("--config", metavar="PATTERN",
                    help="with --experiment: only the configurations matching this shell pattern")
    ap.add_argument("--files", type=int, metavar="N",
                    help="with --experiment: the workload's files instead of the quick size's")
    ap.add_argument("--phases", metavar="LIST",
                    help="with --experiment: only these phases, comma-separated (a read phase needs the "
                         "write phase before it: unpack,find-d)")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    a = parse(argv)
    from benchmarks import kernel_oracle_seeds as seeds
    if why := seeds.refusal(a.experiment, a.config, a.files, a.phases):
        return fail(why)
    seed_disk, a.disk = a.disk, a.disk or "sas10k"
    if why := preflight(a):
        return fail(why)
    tr = Tracefs()
    if why := tr.available():
        return fail(why)
    try:
        with tempfile.TemporaryDirectory(prefix="kernel-oracle-", dir=a.work) as tmp:
            if a.experiment:
                res = seeds.run_seed(a.experiment, Path(tmp), seed_disk, step, Path(a.keep) if a.keep else None,
                                     a.config, a.simfs_options, a.files,
                                     a.phases.split(",") if a.phases else None)
                print(json.dumps(res, indent=1) if a.json else seeds.render(res))
                return 0
            res = run(a, Path(tmp))
    except (Failed, ValueError) as e:
        return fail(str(e))
    except subprocess.CalledProcessError as e:
        return fail(f"{' '.join(map(str, e.cmd))} exited {e.returncode}")
    except OSError as e:
        return fail(f"{e.filename or ''}: {e.strerror or e}")
    finally:
        tr.close()
    print(json.dumps(res, indent=1) if a.json else render(res))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("kernel_oracle: interrupted", file=sys.stderr)
        sys.exit(130)
