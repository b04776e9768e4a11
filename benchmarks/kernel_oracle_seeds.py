"""Kernel-driven rows of the built-in seeds' phases (issue 50, item 3): each phase's real command
run by the kernel's ext4 driver on a loop device and by simfs mounted, both request streams timed
on the seed's drive.

Per configuration, at the experiment's quick size:

  * the empty image is simfs's own mkfs of the configuration (the experiment's `timed_mkfs`;
    readdir-order's images get dir_index, so that the kernel's readdir is in htree hash order as
    the seed's ext4's was: the ext4 driver returns hash order for every directory of a dir_index
    file system, and simfs's `dirorder=hash` is that order);
  * the first write phase (unpack, tarcp) runs on two copies of it: each side allocates;
  * a read phase (find, tar cf) runs on byte-for-byte copies of simfs's image as it stands then
    (the kernel's copy mounted read-only), so that only the request stream differs;
  * a later write phase (cp -a, rm -rf) runs on each side's own image (the kernel's tree is the
    one it unpacked, simfs's the one simfs unpacked).

The kernel side: caches dropped, the command run inside a cgroup v1 memory controller limited to
the configuration's buffer cache plus HEADROOM (the processes and the kernel's own slab are
charged there too), under the machine's vm.dirty_* (printed; cgroup v1 has no per-group dirty
throttling), then `sync -f` on the mount, inside the capture: the phase's write-back is in the
stream. Inode order (`dirorder=inode`) is Ts'o's spd_readdir as an LD_PRELOAD. The stream is
imported (simfs/blockio/traceimport.py) and replayed closed loop on the drive (no CPU time).

The simfs side: `simfs mount` with the configuration's options and cpu_op_us=0 (the comparison
is of request streams; CPU per operation is issue 50's item 4), the command after a mark, then,
for a write phase, a write to .simfs/sync: its time is the command's plus that drain, its
requests the phase's up to the drain's end (the unmount's superblock writes are left out, as the
kernel's are; a read phase is not synced: the kernel's read-only mount writes nothing).
"""

from __future__ import annotations

import fnmatch
import math
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.kernel_layout import Failed, sh, simfs_argv
from benchmarks.kernel_oracle import TRACING, Loop, Tracefs, devno, drop_caches

CGROUP = Path("/sys/fs/cgroup/memory")
#: memory the cgroup allows beyond the modelled buffer cache (the commands' own pages, slab)
HEADROOM = 8 << 20
#: simfs's buffer cache when the configuration sets none (`simfs mount --help`: cache=128M)
DEFAULT_CACHE = 128 << 20
SPD = Path(__file__).resolve().parents[1] / "third_party" / "spd_readdir" / "spd_readdir.c"


@dataclass
class Seed:
    """Which configurations of an experiment get kernel rows, and the image edits they need."""
    configs: tuple
    features: str | None = None        # mke2fs -O edits of the configuration's image
    writeback: str | None = None       # simfs's writeback for the comparison (the kernel's is async)
    notes: list = field(default_factory=list)


SEEDS = {
    "readdir-order": Seed(("dirorder=hash", "dirorder=inode"), features="dir_index",
                          notes=["images get dir_index: the kernel's readdir is then htree hash order, "
                                 "as the seed's ext4's"]),
    "ext2fs-2010": Seed(("ext2fs-2010 4K sync", "ext2fs-2010-fixed 4K sync"), writeback="async",
                        notes=["simfs mounted writeback=async: the kernel's ext4 driver writes "
                               "metadata asynchronously (-o sync would make data synchronous too, "
                               "unlike FFS's sync metadata)"]),
}


def refusal(name: str | None, config: str | None = None) -> str | None:
    """Why --experiment NAME [--config PATTERN] cannot run (one line), or None; cheap: no mount,
    no root needed."""
    if name is None:
        return "--config needs --experiment" if config else None
    if name not in SEEDS:
        from experiments import catalog
        known = [n for n in catalog.names() if n not in SEEDS]
        return (f"--experiment {name}: kernel rows exist for {', '.join(sorted(SEEDS))}"
                + (f" ({', '.join(known)} not yet)" if name in known else " (not an experiment)"))
    if config and not fnmatch.filter(SEEDS[name].configs, config):
        return (f"--config {config}: no kernel-row configuration of {name} matches "
                f"(they are: {', '.join(SEEDS[name].configs)})")
    if not (CGROUP / "memory.limit_in_bytes").exists():
        return f"no cgroup v1 memory controller at {CGROUP} (the kernel's page cache cannot be limited)"
    if "dirorder=inode" in SEEDS[name].configs:
        if shutil.which("gcc") is None:
            return "gcc is not installed (spd_readdir.so, inode order on the kernel, is built from source)"
        if spd_source() is None:
            return f"spd_readdir.c not found ({SPD})"
    return None


def spd_source() -> Path | None:
    return SPD if SPD.exists() else None


def build_spd(work: Path) -> Path:
    so = work / "spd_readdir.so"
    sh(["gcc", "-o", so, "-shared", "-fpic", spd_source(), "-ldl"])
    return so


# -- request-stream figures ---------------------------------------------------------------------
SIZE_EDGES = (4, 8, 16, 32, 64, 128)                     # KiB: <=4, <=8, ... , >128
SEEK_EDGES = (0, 64, 1024, 16384, 262144)                # KiB of |jump|: 0, <=64K, <=1M, <=16M, <=256M, more


def _bucket(x: float, edges) -> int:
    for i, e in enumerate(edges):
        if x <= e:
            return i
    return len(edges)


def figures(cols: dict) -> dict:
    """Requests, MiB, reads, read-ahead share, and the two histograms of a trace's rows (in
    their issue order; a seek is the jump from the end of the previous request)."""
    ops, lba, n, wait = cols["op"], cols["lba"], cols["sectors"], cols["wait"]
    size = [0] * (len(SIZE_EDGES) + 1)
    seek = [0] * (len(SEEK_EDGES) + 1)
    prev = None
    for a, s in zip(lba, n):
        size[_bucket(s / 2, SIZE_EDGES)] += 1
        if prev is not None:
            seek[_bucket(abs(a - prev) / 2, SEEK_EDGES)] += 1
        prev = a + s
    reads = ops.count("R")
    ra = sum(1 for o, w in zip(ops, wait) if o == "R" and not w)
    return {"requests": len(ops), "reads": reads, "mib": sum(n) * 512 / 2**20,
            "readahead_share": ra / reads if reads else 0.0, "size_hist": size, "seek_hist": seek}


def kernel_time(cols: dict, extras: dict, disk: str) -> float:
    from disk_models import make_disk
    from simfs.blockio.tracereplay import replay
    return replay(cols, make_disk(disk), 0.0, extras)["elapsed"] if cols["op"] else 0.0


# -- the two sides --------------------------------------------------------------------------------
class MemCgroup:
    """A cgroup v1 memory group limited to `limit` bytes, for one command at a time."""

    def __init__(self, limit: int):
        self.path = CGROUP / f"simfs-kernel-oracle-{os.getpid()}"
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


def kernel_phase(img: Path, mnt: Path, phase, ctx, ro: bool, cg: MemCgroup, preload: Path | None,
                 capture: Path) -> float:
    """The phase's command on the kernel's ext4 driver, its requests captured; wall seconds."""
    with Loop(img, mnt, ro=ro, options="noatime") as lo:
        if phase.prepare:
            subprocess.run(phase.prepare(ctx), shell=True, check=True)
        with Tracefs() as tr:
            drop_caches()
            (TRACING / "trace").write_text("")
            env = dict(os.environ, **({"LD_PRELOAD": str(preload)} if preload else {}))
            t = time.monotonic()
            subprocess.run(cg.argv(command_text(phase, ctx)), env=env, check=True, stdout=subprocess.DEVNULL)
            if not ro:
                subprocess.run(["sync", "-f", str(mnt)], check=True)
            wall = time.monotonic() - t
            tr.lines(devno(lo.dev), capture)
    return wall


def command_text(phase, ctx) -> str:
    cmd = phase.command(ctx)
    return cmd if isinstance(cmd, str) else " ".join(map(str, cmd))


def simfs_phase(img: Path, mnt: Path, phase, ctx, options: str, trace: Path, stats: Path) -> tuple[dict, float]:
    """The phase's command on simfs mounted; (its trace rows, command + drain seconds; a read
    phase is not synced, as the kernel's read-only mount writes nothing)."""
    import json

    from simfs.blockio.trace import read_trace
    sh(simfs_argv() + ["mount", img, mnt, "-o", f"{options},trace={trace},stats={stats}"])
    try:
        if phase.prepare:
            subprocess.run(phase.prepare(ctx), shell=True, check=True)
        (mnt / ".simfs" / "mark").write_text(phase.name)
        subprocess.run(command_text(phase, ctx), shell=True, check=True, stdout=subprocess.DEVNULL)
        if phase.writes:                  # a read phase leaves only the mount's superblock dirty
            (mnt / ".simfs" / "sync").write_text("1")
        s = json.loads((mnt / ".simfs" / "stats").read_bytes())
    finally:
        r = subprocess.run(simfs_argv() + ["umount", "--quiet", str(mnt)], capture_output=True)
        if r.returncode:
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)
    start = next(p["start"] for p in reversed(s["time"]["phases"]) if p["name"] == phase.name)
    end = s["time"]["now"]
    cols = read_trace(trace)
    keep = [i for i, (p, t) in enumerate(zip(cols["phase"], cols["issue"])) if p == phase.name and t < round(end, 9)]
    return {k: [v[i] for i in keep] for k, v in cols.items()}, end - start


def run_seed(name: str, work: Path, disk: str | None, step=print, keep: Path | None = None,
             config: str | None = None, simfs_options: str = "") -> dict:
    """Every phase of the seed's chosen configurations, kernel beside simfs; `keep`: a directory
    that receives each phase's two traces (CONFIG-PHASE.kernel.trace, .simfs.trace)."""
    from experiments import catalog
    from experiments.phases import PhaseContext
    from experiments.runner import MKFS_HASH_SEED, MKFS_NOW, MKFS_UUID, prepare_workload
    from simfs.blockio.trace import read_trace
    from simfs.blockio.traceimport import read_capture, read_extras, write_trace
    from simfs.inprocess.timed_mkfs import timed_mkfs
    seed = SEEDS[name]
    job = catalog.load(name, quick=True)
    wl = prepare_workload(job.workload_spec(), work)
    exp = catalog.build(name, True, wl)
    configs = [c for c in exp.configs if c.name in seed.configs and fnmatch.fnmatch(c.name, config or "*")]
    preload = build_spd(work) if any(c.mount.get("dirorder") == "inode" for c in configs) else None
    mnt = work / "mnt"
    mnt.mkdir(exist_ok=True)
    rows = []
    for cfg in configs:
        mount = dict(cfg.mount, cpu_op_us=0)
        if seed.writeback:
            mount["writeback"] = seed.writeback
        d = disk or mount.get("disk", "sata7200")
        mount["disk"] = d
        options = ",".join(f"{k}={v}" for k, v in mount.items() if k != "disk") + f",disk={d}"
        if simfs_options:                 # e.g. inode_readahead_blks=32: what the ext4 driver does
            options = f"{simfs_options},{options}"
        cache = int(mount.get("cache", DEFAULT_CACHE))
        empty, simg, kimg = work / "empty.img", work / "simfs.img", work / "kernel.img"
        mk = dict(cfg.mkfs)
        size = mk.pop("size_bytes")
        if seed.features:
            mk["features"] = seed.features
        step(f"{cfg.name}: mkfs")
        timed_mkfs(empty, size, d, uuid=MKFS_UUID, hash_seed=MKFS_HASH_SEED, now=MKFS_NOW, uid=0, gid=0, **mk)
        shutil.copyfile(empty, simg)
        shutil.copyfile(empty, kimg)
        ctx = PhaseContext(mnt=mnt, image=simg, work=work, config=cfg, source=wl.path, tarball=wl.tarball,
                           params=exp.params)
        inode = mount.get("dirorder") == "inode"
        with MemCgroup(cache + HEADROOM) as cg:
            for phase in exp.phases:
                if phase.kind != "mount":
                    continue
                tag = f"{cfg.name} {phase.name}"
                read = not phase.writes
                if read:
                    kin = work / "read-copy.img"
                    shutil.copyfile(simg, kin)
                else:
                    kin = kimg
                step(f"{tag}: kernel")
                cap, ktr = work / "k.tracefs", work / "k.trace"
                wall = kernel_phase(kin, mnt, phase, ctx, read, cg, preload if inode else None, cap)
                _, reqs, _ = read_capture(str(cap))
                if reqs:
                    write_trace(reqs, str(ktr))
                    kcols, kext = read_trace(ktr), read_extras(str(ktr))
                else:
                    kcols, kext = {"op": [], "lba": [], "sectors": [], "wait": []}, {}
                step(f"{tag}: simfs")
                scols, ssec = simfs_phase(simg, mnt, phase, ctx, options, work / "s.trace", work / "s.stats.json")
                rows.append({"experiment": name, "config": cfg.name, "phase": phase.name,
                             "kind": "read (copies of one image)" if read else "write (each side allocates)",
                             "disk": d, "cache_mib": cache / 2**20,
                             "kernel": {**figures(kcols), "seconds": kernel_time(kcols, kext, d),
                                        "wall": wall},
                             "simfs": {**figures(scols), "seconds": ssec}})
                if read:
                    kin.unlink()
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    slug = "".join(ch if ch.isalnum() else "-" for ch in f"{cfg.name}-{phase.name}")
                    if reqs:
                        shutil.copy(ktr, keep / f"{slug}.kernel.trace")
                    shutil.copy(work / "s.trace", keep / f"{slug}.simfs.trace")
    return {"experiment": name, "quick": True, "notes": seed.notes, "rows": rows, "simfs_options": simfs_options,
            "cgroup_headroom_mib": HEADROOM / 2**20, "vm": vm_dirty(), "kernel": os.uname().release}


def vm_dirty() -> dict:
    out = {}
    for k in ("dirty_ratio", "dirty_background_ratio", "dirty_expire_centisecs", "dirty_writeback_centisecs"):
        try:
            out[k] = int(Path(f"/proc/sys/vm/{k}").read_text())
        except OSError:
            out[k] = None
    return out


def differ(k: float, s: float) -> float:
    """simfs / kernel - 1 (nan when the kernel's figure is 0)."""
    return s / k - 1 if k else (0.0 if not s else math.nan)


def render(res: dict) -> str:
    head = ["config", "phase", "kind", "requests k/s", "MiB k/s", "RA share k/s", "sim s k/s", "time diff"]
    body = []
    for r in res["rows"]:
        k, s = r["kernel"], r["simfs"]
        body.append([r["config"], r["phase"], r["kind"].split()[0], f"{k['requests']:,} / {s['requests']:,}",
                     f"{k['mib']:.1f} / {s['mib']:.1f}", f"{k['readahead_share']:.0%} / {s['readahead_share']:.0%}",
                     f"{k['seconds']:.3f} / {s['seconds']:.3f}", f"{differ(k['seconds'], s['seconds']):+.0%}"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(b) + " |" for b in body]
    hist = ["", "| config | phase | sizes KiB <=4,8,16,32,64,128,more k / s | seeks KiB 0,64,1M,16M,256M,more k / s |",
            "|---|---|---|---|"]
    for r in res["rows"]:
        k, s = r["kernel"], r["simfs"]
        hist.append(f"| {r['config']} | {r['phase']} | {k['size_hist']} / {s['size_hist']} | "
                    f"{k['seek_hist']} / {s['seek_hist']} |")
    return (f"{res['experiment']} (quick) on kernel {res['kernel']}, k = the kernel's stream replayed, "
            f"s = simfs mounted\n\n" + "\n".join(lines + hist) + "\n")


__all__ = ["SEEDS", "refusal", "run_seed", "render", "figures", "Failed"]
