"""The two sides of a kernel-oracle phase (benchmarks/kernel_oracle_seeds.py): the command run by
the kernel on a loop device with its requests captured through tracefs, and the same phase run
by simfs (mounted for a command, in-process for an experiment's volume phase), each giving the
rows of its request trace."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from benchmarks.kernel_layout import sh, simfs_argv
from benchmarks.kernel_oracle import TRACING, Loop, Tracefs, cold_mark, devno, drop_caches

CGROUP = Path("/sys/fs/cgroup/memory")
BDI = Path("/sys/class/bdi")
EMPTY = {"op": [], "lba": [], "sectors": [], "wait": []}


class MemCgroup:
    """A cgroup v1 memory group limited to `limit` bytes, for one command at a time."""

    def __init__(self, limit: int, root: Path = CGROUP):
        self.path = root / f"simfs-kernel-oracle-{os.getpid()}"
        self.limit = limit

    def __enter__(self):
        self.path.mkdir(exist_ok=True)
        (self.path / "memory.limit_in_bytes").write_text(str(self.limit))
        return self

    def argv(self, command: str) -> list[str]:
        return ["sh", "-c", f'echo $$ > {self.path}/cgroup.procs && exec sh -c "$0"', command]

    def __exit__(self, *exc):
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)


class BdiDirty:
    """The loop device's own dirty limit (cgroup v1 has none per group): the backing device's
    `max_bytes` with `strict_limit`, so that its write-back starts at its share of the
    background threshold and its dirtier is throttled at `limit` bytes, as a machine whose
    dirty limit is `limit` would; put back on exit. `limit` None: nothing changed."""

    def __init__(self, dev: str, limit: int | None):
        self.dir, self.limit, self.old = BDI / devno(dev).replace(",", ":"), limit, {}

    def __enter__(self):
        if self.limit:
            for k in ("max_ratio", "strict_limit"):
                self.old[k] = (self.dir / k).read_text().strip()
            (self.dir / "max_bytes").write_text(str(self.limit))
            (self.dir / "strict_limit").write_text("1")
        return self

    def __exit__(self, *exc):
        for k, v in self.old.items():
            (self.dir / k).write_text(v)


def kernel_phase(img: Path, mnt: Path, command: str, *, ro: bool, cg: MemCgroup, capture: Path,
                 prepare: str | None = None, preload: Path | None = None, options: str = "",
                 mount: bool = True, dirty: int | None = None) -> float:
    """`command` by the kernel on the image's loop device, mounted with the ext4 driver
    (`mount` False: the device alone, `{dev}` in the command), its requests captured; a write
    phase ends with `sync -f` inside the capture. Wall seconds."""
    with Loop(img, mnt, ro=ro, options=",".join(o for o in ("noatime", options) if o), mount=mount) as lo, \
            BdiDirty(lo.dev, dirty):
        if prepare:
            subprocess.run(prepare, shell=True, check=True)
        with Tracefs() as tr:
            drop_caches()
            (TRACING / "trace").write_text("")
            env = dict(os.environ, **({"LD_PRELOAD": str(preload)} if preload else {}))
            t = time.monotonic()
            subprocess.run(cg.argv(command.replace("{dev}", lo.dev)), env=env, check=True,
                           stdout=subprocess.DEVNULL)
            if not ro and mount:
                subprocess.run(["sync", "-f", str(mnt)], check=True)
            wall = time.monotonic() - t
            tr.lines(devno(lo.dev), capture)
    return wall


def kernel_stream(capture: Path, ktrace: Path) -> tuple[dict, dict]:
    """The capture's requests as trace columns and their extras (empty when there were none)."""
    from simfs.blockio.trace import read_trace
    from simfs.blockio.traceimport import read_capture, read_extras, write_trace
    _, reqs, _ = read_capture(str(capture))
    if not reqs:
        return dict(EMPTY), {}
    write_trace(reqs, str(ktrace))
    return read_trace(ktrace), read_extras(str(ktrace))


def kernel_time(cols: dict, extras: dict, disk: str) -> float:
    """The stream replayed closed loop on `disk` (no CPU time), in simulated seconds."""
    from disk_models import make_disk
    from simfs.blockio.tracereplay import replay
    return replay(cols, make_disk(disk), 0.0, extras)["elapsed"] if cols["op"] else 0.0


def simfs_phase(img: Path, mnt: Path, name: str, command: str, writes: bool, options: str, trace: Path,
                stats: Path, prepare: str | None = None) -> tuple[dict, float]:
    """The command on simfs mounted; (its trace rows, command + drain seconds; a read phase is
    not synced, as the kernel's read-only mount writes nothing)."""
    sh(simfs_argv() + ["mount", img, mnt, "-o", f"{options},trace={trace},stats={stats}"])
    try:
        if prepare:
            subprocess.run(prepare, shell=True, check=True)
        cold_mark(mnt, name)
        subprocess.run(command, shell=True, check=True, stdout=subprocess.DEVNULL)
        if writes:                        # a read phase leaves only the mount's superblock dirty
            (mnt / ".simfs" / "sync").write_text("1")
        s = json.loads((mnt / ".simfs" / "stats").read_bytes())
    finally:
        r = subprocess.run(simfs_argv() + ["umount", "--quiet", str(mnt)], capture_output=True)
        if r.returncode:
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)
    start = next(p["start"] for p in reversed(s["time"]["phases"]) if p["name"] == name)
    end = s["time"]["now"]
    return phase_rows(trace, name, end), end - start


def phase_rows(trace: Path, name: str | None, end: float = float("inf"), start: float = 0.0) -> dict:
    """The trace's rows of phase `name` (None: all) issued from `start` to before `end`."""
    from simfs.blockio.trace import read_trace
    cols = read_trace(trace)
    if not cols.get("op"):
        return dict(EMPTY)
    keep = [i for i, (p, t) in enumerate(zip(cols["phase"], cols["issue"]))
            if (name is None or p == name) and round(start, 9) <= t < round(end, 9)]
    return {k: [v[i] for i in keep] for k, v in cols.items()}


def simfs_volume(phase, ctx, trace: Path) -> tuple[dict, float]:
    """An experiment's in-process phase (the verbs, the fsck-like scan) on simfs's image with
    cpu_op_us=0 and a trace; (its trace rows, its headline simulated seconds)."""
    import dataclasses
    cfg = dataclasses.replace(ctx.config, mount={**ctx.config.mount, "cpu_op_us": 0, "trace": str(trace)})
    if phase.name == "fsck":             # experiments/fsscan.metadata_scan opens without a trace
        from simfs.fs.volume import Volume
        from simfs.fuse import mountopts
        opts = mountopts.parse([cfg.mount_string({"ro": True, "stats": None})]).volume
        with Volume.open(str(ctx.image), opts) as vol:
            t0 = vol.clock.now
            vol.metadata_scan()
            sim = vol.clock.now - t0
        return phase_rows(trace, None, t0 + sim, t0), sim
    rec = phase.command(dataclasses.replace(ctx, config=cfg))
    path = Path(rec.get("trace") or trace)
    return phase_rows(path, phase.name), rec["sim"]
