"""Kernel-driven rows of the built-in seeds' phases (issue 50, item 3): each phase's real command
run by the kernel's ext4 driver on a loop device and by simfs (mounted, or in-process where the
experiment runs the phase so), both request streams timed on the seed's drive. Every phase of
every built-in experiment has a row; where the kernel cannot run the phase (FreeBSD's newfs,
simfs's own mkfs) the row has simfs's figure and a note saying why.

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
is of request streams; CPU per operation is issue 50's item 4), the preparation, its caches and
the drive's buffer dropped (.simfs/drop_caches: as cold as the kernel side, which drops its
caches after mounting), the command after a mark, then,
for a write phase, a write to .simfs/sync: its time is the command's plus that drain, its
requests the phase's up to the drain's end (the unmount's superblock writes are left out, as the
kernel's are; a read phase is not synced: the kernel's read-only mount writes nothing). An
experiment's in-process phase (seed 004's fill and dd, seed 003's fsck-like scan) runs as the
experiment runs it, with cpu_op_us=0 and a trace; the kernel runs the real program instead
(tests/tools/mmap_writer.py, dd, e2fsck -fn on the device).
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from benchmarks import kernel_oracle_aging as aging
from benchmarks.kernel_layout import Failed, sh
from benchmarks.kernel_oracle_sides import (CGROUP, BDI, MemCgroup, kernel_phase, kernel_stream, kernel_time,
                                            simfs_phase, simfs_volume)
from benchmarks.kernel_oracle_table import differ, figures, misses, render, verdicts

#: memory the cgroup allows beyond the modelled buffer cache (the commands' own pages, slab)
HEADROOM = 8 << 20
#: simfs's buffer cache when the configuration sets none (`simfs mount --help`: cache=128M)
DEFAULT_CACHE = 128 << 20
REPO = Path(__file__).resolve().parents[1]
SPD = REPO / "third_party" / "spd_readdir" / "spd_readdir.c"
MMAP_WRITER = REPO / "tests" / "tools" / "mmap_writer.py"

FREEBSD = ("simfs runs FreeBSD's {alloc} allocator, the kernel its ext4 driver's (Orlov, goal "
           "blocks): the write phases compare allocators as much as streams")


@dataclass
class KernelSide:
    """What the kernel runs for an experiment's in-process phase: a shell command (`{mnt}`,
    `{size}`, `{dev}`, `{python}`, `{writer}` filled in), on the mounted file system or on the
    device alone (`mount` False)."""
    command: str
    mount: bool = True


@dataclass
class Seed:
    """Which configurations of an experiment get kernel rows, and what each side needs."""
    configs: tuple
    features: str | None = None        # mke2fs -O edits of the configuration's image
    over: dict = field(default_factory=dict)           # tables merged over the quick job (more configurations)
    job: Path | None = None            # a job file outside experiments/jobs/ (the ext4-profile rows)
    kernel_options: Callable = lambda cfg: ""          # the kernel's mount options for a configuration
    volume: dict = field(default_factory=dict)         # in-process phase name -> KernelSide
    note: Callable = lambda cfg, phase: ""             # why a row's kernel side is not the seed's mechanism
    notes: list = field(default_factory=list)
    runner: Callable | None = None     # an experiment without a job file runs its own rows (run_seed's signature)
    phases: tuple = ()                 # its phases (a job file's experiment: read from the job)
    sized: bool = True                 # whether it takes --files
    tools: tuple = ()                  # programs its phases need beyond the harness's


def _writeback_options(cfg) -> str:
    return "dirsync" if cfg.mount.get("writeback") == "sync" else ""


def _writeback_note(cfg, phase) -> str:
    wb, out = cfg.mount.get("writeback"), []
    if phase.writes:
        out.append(FREEBSD.format(alloc=cfg.mount.get("alloc", "")))
        if wb == "softdep":
            out.append("Linux has no soft updates: the kernel's row is its ordinary asynchronous write-back")
        elif wb == "sync":
            out.append("the kernel mounted dirsync stands for FFS's synchronous metadata: it writes directory "
                       "blocks at once, not the inodes and bitmaps FFS's sync mount also writes")
    return "; ".join(out)


def _alignment_note(cfg, phase) -> str:
    if phase.name == "newfs":
        return ("FreeBSD's UFS2 newfs request pattern, issued by simfs on the drive model: Linux has no "
                "newfs; no kernel side")
    if phase.name == "mkfs":
        return "simfs's own ext2 mkfs of the image (the runner's timed mkfs); no kernel side"
    if phase.name == "fsck":
        return ("the kernel side is e2fsck -fn on the loop device (Linux's fsck for this image); simfs's is the "
                "experiment's fsck-like scan, standing for fsck_ffs")
    out = ["the 512e drive's read-modify-write is simfs's drive model on both sides (the kernel's stream "
           "replayed on the same wd-ears, partition offset included): the row compares the requests' sizes "
           "and 4 KiB alignment"]
    if phase.writes:
        out.append(FREEBSD.format(alloc=cfg.mount.get("alloc", "")))
        out.append("the kernel mounted dirsync for FFS's synchronous metadata (directory blocks only)")
    return "; ".join(out)


def _mmap_options(cfg) -> str:
    return "nodelalloc" if cfg.mount.get("alloc") == "ext2" else ""


def _mmap_note(cfg, phase) -> str:
    if phase.name != "write":
        return "read back on copies of simfs's image (its layout); the kernel reads with its own read-ahead"
    if cfg.mount.get("alloc") == "ext2" and cfg.params.get("writes") == "pwrite":
        return ("the kernel's ext4 driver mounted nodelalloc allocates each block at write(2), in the "
                "writer's order, as simfs's ext2 does")
    if cfg.mount.get("alloc") == "ext2":
        return ("the kernel's ext4 driver mounted nodelalloc allocates each block at the page fault "
                "(ext4_page_mkwrite), in the writer's random order; ext3 2.6.29 allocated at write-back: "
                "the kernel cannot stand for the seed's immediate allocation")
    if cfg.params.get("writes") == "mmap":
        return ("the kernel's delayed allocation (ext4 driver, mballoc) beside simfs's `delayed`; its page "
                "cache is the host's, its dirty limit the loop device's own (strict_limit, max_bytes: "
                "the modelled machine's dirty_ratio of its RAM), not 2.6.29's write-back")
    return "the kernel's delayed allocation (ext4 driver, mballoc) beside simfs's `delayed`"


def _readdir_note(cfg, phase) -> str:
    return "placement by each side's allocator (the kernel's Orlov and goal blocks, simfs's alloc=ext2)" \
        if phase.writes else ""


def _ext4_note(cfg, phase) -> str:
    return ("the kernel allocates with delayed allocation and mballoc, simfs with the job's alloc=ext2 "
            "(--simfs-options alloc=mballoc-delalloc: simfs's model of the kernel's)") if phase.writes else ""


SEEDS = {
    "readdir-order": Seed(("dirorder=hash", "dirorder=inode"), features="dir_index", note=_readdir_note,
                          notes=["images get dir_index: the kernel's readdir is then htree hash order, "
                                 "as the seed's ext4's"]),
    "ext2fs-2010": Seed(tuple(f"{a} {b} {m}" for m in ("sync", "async") for b in ("4K", "1K")
                              for a in ("ext2fs-2010", "ext2fs-2010-fixed")),
                        over={"matrix": {"mount": [{"label": "sync", "writeback": "sync"},
                                                   {"label": "async", "writeback": "async"}]}},
                        kernel_options=_writeback_options, note=_writeback_note,
                        notes=["the images are simfs's mkfs of the configuration: ext2 (no journal, "
                               "128-byte inodes, ext_attr,filetype,sparse_super,large_file) with 4 KiB or "
                               "1 KiB blocks, what mkfs.ext4 -b 1024 -I 128 -O none,ext_attr,filetype,"
                               "sparse_super,large_file makes; the kernel "
                               "mounts them with its ext4 driver, which stands for ext2 here "
                               "(CONFIG_EXT4_USE_FOR_EXT2; this kernel has no ext2 driver of its own)",
                               "simfs keeps each configuration's write-back (the seed's sync mount: "
                               "synchronous metadata); the kernel's async configurations are its default "
                               "mount, its sync ones dirsync (directory blocks written at once; FreeBSD's "
                               "sync mount also writes inodes and bitmaps, which no Linux mount option does)"]),
    "writeback": Seed(("cg-2010 sync", "cg-2010 async", "cg-2010 softdep"), kernel_options=_writeback_options,
                      note=_writeback_note,
                      notes=["simfs keeps each configuration's write-back; the kernel's is asynchronous, "
                             "with dirsync for the sync configuration"]),
    "alignment": Seed(("offset 34", "offset 40", "offset 41"), kernel_options=_writeback_options,
                      volume={"fsck": KernelSide("e2fsck -fn {dev}", mount=False)}, note=_alignment_note,
                      notes=["the loop device has 512-byte sectors and no partition: the offset is the drive "
                             "model's, the same on both sides"]),
    "mmap-fragmentation": Seed(("ext2 mmap", "delayed mmap", "ext2 pwrite", "delayed pwrite"),
                               kernel_options=_mmap_options, note=_mmap_note,
                               volume={"write": KernelSide("{python} {writer} {mnt}/big {size} --quiet{pwrite}"),
                                       "dd": KernelSide("dd if={mnt}/big of=/dev/null bs=1M status=none")},
                               notes=["simfs's phases run in-process as the experiment runs them (the modelled "
                                      "2.6.29 page cache for mmap); the kernel runs the same writer program "
                                      "(tests/tools/mmap_writer.py) and dd"]),
    "readdir-order-ext4": Seed(("dirorder=hash", "dirorder=inode"), job=REPO / "examples" / "jobs" /
                               "readdir-order-ext4.toml", note=_ext4_note,
                               notes=["the ext4 profile's image (flex_bg, extents, htree, 256-byte inodes) "
                                      "as simfs's mkfs makes it, on both sides; inode-table read-ahead 32 on both"]),
    "git-aging": Seed(aging.CONFIGS, runner=aging.run_aging, phases=aging.PHASES, sized=False,
                       tools=("git", "grep", "cp")),
}


def refusal(name: str | None, config: str | None = None, files: int | None = None,
            phases: str | None = None) -> str | None:
    """Why --experiment NAME [--config PATTERN] [--files N] [--phases LIST] cannot run (one
    line), or None; cheap: no mount, no root needed."""
    if name is None:
        given = [o for o, v in (("--config", config), ("--files", files), ("--phases", phases)) if v is not None]
        return f"{given[0]} needs --experiment" if given else None
    if files is not None and files < 1:
        return f"--files {files}: give a number of files of at least 1"
    if name not in SEEDS:
        from experiments import catalog
        known = [n for n in catalog.names() if n not in SEEDS]
        return (f"--experiment {name}: kernel rows exist for {', '.join(sorted(SEEDS))}"
                + (f" ({', '.join(known)} not yet)" if name in known else " (not an experiment)"))
    seed = SEEDS[name]
    if files is not None and not seed.sized:
        return f"--files {files}: {name}'s workload is its generated history (no --files)"
    if phases is not None:
        from experiments import catalog
        known = list(seed.phases) or _job_phases(seed.job or catalog.path(name))
        bad = [p for p in phases.split(",") if p not in known]
        if bad or not phases:
            return f"--phases {phases}: {name}'s phases are {', '.join(known)}"
    if config and not fnmatch.filter(seed.configs, config):
        return (f"--config {config}: no kernel-row configuration of {name} matches "
                f"(they are: {', '.join(seed.configs)})")
    if missing := [t for t in seed.tools if shutil.which(t) is None]:
        return f"{missing[0]} is not installed ({name}'s phases run it)"
    if not (CGROUP / "memory.limit_in_bytes").exists():
        return f"no cgroup v1 memory controller at {CGROUP} (the kernel's page cache cannot be limited)"
    if "dirorder=inode" in seed.configs:
        if shutil.which("gcc") is None:
            return "gcc is not installed (spd_readdir.so, inode order on the kernel, is built from source)"
        if spd_source() is None:
            return f"spd_readdir.c not found ({SPD})"
    if "fsck" in seed.volume and shutil.which("e2fsck") is None:
        return "e2fsck is not installed (the kernel side of the fsck phase)"
    if "write" in seed.volume and not BDI.is_dir():
        return f"no {BDI} (the loop device's own dirty limit cannot be set)"
    return None


def _job_phases(job: Path) -> list[str]:
    import tomllib
    return [p["name"] for p in tomllib.loads(job.read_text()).get("phase", [])]


def spd_source() -> Path | None:
    return SPD if SPD.exists() else None


def build_spd(work: Path) -> Path:
    so = work / "spd_readdir.so"
    sh(["gcc", "-o", so, "-shared", "-fpic", spd_source(), "-ldl"])
    return so


def kernel_setup(seed: Seed, cfg, phase) -> str:
    """How the kernel runs a configuration's phase beyond the command: its mount options and,
    for inode order, spd_readdir; two configurations with the same set-up are one kernel run."""
    pre = ["spd_readdir"] if cfg.mount.get("dirorder") == "inode" else []
    opts = [seed.kernel_options(cfg)] if seed.kernel_options(cfg) else []
    return ",".join(opts + pre)


def command_text(phase, ctx) -> str:
    cmd = phase.command(ctx)
    return cmd if isinstance(cmd, str) else " ".join(map(str, cmd))


def dirty_limit(cfg) -> int | None:
    """The modelled machine's dirty limit in bytes (its page-cache model's dirty_ratio of its
    RAM), for the mmap configurations; None for the others."""
    spec = cfg.params.get("pagecache")
    if not spec:
        return None
    from simfs.inprocess.pagecache import WritebackParams
    p = WritebackParams.parse(spec)
    return p.ram * max(p.dirty_ratio, 5) // 100


def quick_job(name: str, files: int | None = None):
    """The seed's job at its quick size, with the seed's `over` (`files`: the workload's files
    instead of the quick size's)."""
    from experiments import catalog, jobfile
    seed = SEEDS[name]
    job = jobfile.load(seed.job, quick=True) if seed.job else catalog.load(name, quick=True)
    over = dict(seed.over, **({"workload": {"files": files}} if files else {}))
    return jobfile.overlay(job, over, "kernel oracle") if over else job


def load_experiment(name: str, work: Path, files: int | None = None):
    """The seed's experiment (quick_job) and its prepared workload."""
    from experiments import jobfile
    from experiments.runner import prepare_workload
    job = quick_job(name, files)
    wl = prepare_workload(job.workload_spec(), work)
    return jobfile.compile_job(job, wl), wl


def run_seed(name: str, work: Path, disk: str | None, step=print, keep: Path | None = None,
             config: str | None = None, simfs_options: str = "", files: int | None = None,
             phases: list[str] | None = None) -> dict:
    """Every phase of the seed's chosen configurations, kernel beside simfs; `keep`: a directory
    that receives each phase's two traces (CONFIG-PHASE.kernel.trace, .simfs.trace); `files`:
    the workload's size instead of the quick one; `phases`: only these (a read phase needs the
    write phase before it)."""
    from experiments.phases import PhaseContext
    from experiments.runner import MKFS_HASH_SEED, MKFS_NOW, MKFS_UUID
    from simfs.inprocess.timed_mkfs import timed_mkfs
    seed = SEEDS[name]
    if seed.runner is not None:
        return seed.runner(name, work, disk, step, keep, config, simfs_options, files, phases)
    exp, wl = load_experiment(name, work, files)
    configs = [c for c in exp.configs if c.name in seed.configs and fnmatch.fnmatch(c.name, config or "*")]
    preload = build_spd(work) if any(c.mount.get("dirorder") == "inode" for c in configs) else None
    mnt = work / "mnt"
    mnt.mkdir(exist_ok=True)
    rows = []
    for cfg in configs:
        mount = dict(cfg.mount, cpu_op_us=0)
        d = disk or mount.get("disk", "sata7200")
        mount["disk"] = d
        options = ",".join(f"{k}={v}" for k, v in mount.items() if k != "disk" and v is not True) \
            + "".join(f",{k}" for k, v in mount.items() if v is True)
        if simfs_options:                 # e.g. inode_readahead_blks=32: what the ext4 driver does
            options = f"{options},{simfs_options}"
        options += f",disk={d}"
        cache = int(mount.get("cache", DEFAULT_CACHE))
        empty, simg, kimg = work / "empty.img", work / "simfs.img", work / "kernel.img"
        mk = dict(cfg.mkfs)
        size = mk.pop("size_bytes")
        if seed.features:
            mk["features"] = seed.features
        step(f"{cfg.name}: mkfs")
        _, mkfs_sim, _ = timed_mkfs(empty, size, d, uuid=MKFS_UUID, hash_seed=MKFS_HASH_SEED, now=MKFS_NOW,
                                    uid=0, gid=0, **mk)
        shutil.copyfile(empty, simg)
        shutil.copyfile(empty, kimg)
        scfg = _with_mount(cfg, mount, simfs_options)
        ctx = PhaseContext(mnt=mnt, image=simg, work=work, config=scfg, source=wl.path, tarball=wl.tarball,
                           params=exp.params)
        inode = mount.get("dirorder") == "inode"
        with MemCgroup(cache + HEADROOM) as cg:
            for phase in exp.phases:
                if phases and phase.name not in phases:
                    continue
                tag = f"{cfg.name} {phase.name}"
                row = {"experiment": name, "config": cfg.name, "phase": phase.name, "disk": d,
                       "cache_mib": cache / 2**20, "note": seed.note(cfg, phase),
                       "kernel_setup": kernel_setup(seed, cfg, phase),
                       "kind": "read (copies of one image)" if not phase.writes else "write (each side allocates)"}
                if phase.kind == "mount":
                    kcmd, kside = command_text(phase, ctx), KernelSide("")
                elif phase.name in seed.volume:
                    kside = seed.volume[phase.name]
                    kcmd = kside.command.format(mnt=mnt, size=exp.params.get("size", 0), dev="{dev}",
                                                python=sys.executable, writer=MMAP_WRITER,
                                                pwrite=" --pwrite" if cfg.params.get("writes") == "pwrite" else "")
                else:                     # no kernel side: simfs's figure and the note
                    step(f"{tag}: simfs only")
                    sec = mkfs_sim if phase.kind == "mkfs" else phase.command(ctx)["sim"]
                    rows.append({**row, "kind": "simfs only", "kernel": None, "simfs": {"seconds": sec}})
                    continue
                read = not phase.writes
                kin = work / "read-copy.img" if read else kimg
                if read:
                    shutil.copyfile(simg, kin)
                step(f"{tag}: kernel")
                cap, ktr = work / "k.tracefs", work / "k.trace"
                prep = (phase.prepare(ctx) if phase.prepare else None)
                wall = kernel_phase(kin, mnt, kcmd, ro=read, cg=cg, capture=cap,
                                    prepare=" ".join(map(str, prep)) if isinstance(prep, list) else prep,
                                    preload=preload if inode else None, options=seed.kernel_options(cfg),
                                    mount=kside.mount, dirty=None if read else dirty_limit(cfg))
                kcols, kext = kernel_stream(cap, ktr)
                step(f"{tag}: simfs")
                strace = work / "s.trace"
                if phase.kind == "mount":
                    scols, ssec = simfs_phase(simg, mnt, phase.name, kcmd, phase.writes, options, strace,
                                              work / "s.stats.json",
                                              " ".join(map(str, prep)) if isinstance(prep, list) else prep)
                else:
                    scols, ssec = simfs_volume(phase, ctx, strace)
                rows.append({**row, "kernel": {**figures(kcols), "seconds": kernel_time(kcols, kext, d), "wall": wall},
                             "simfs": {**figures(scols), "seconds": ssec}})
                rows[-1]["misses"] = misses(rows[-1])
                if read:
                    kin.unlink()
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    slug = "".join(ch if ch.isalnum() else "-" for ch in f"{cfg.name}-{phase.name}")
                    if kcols["op"]:
                        shutil.copy(ktr, keep / f"{slug}.kernel.trace")
                    src = strace if strace.exists() else None
                    if phase.kind != "mount" and phase.name == "dd":
                        src = work / "dd.trace.csv"
                    if src is not None and src.exists():
                        shutil.copy(src, keep / f"{slug}.simfs.trace")
    return {"experiment": name, "quick": not files, "files": files, "notes": seed.notes, "rows": rows, "simfs_options": simfs_options,
            "verdicts": verdicts(rows, exp.compares),
            "cgroup_headroom_mib": HEADROOM / 2**20, "vm": vm_dirty(), "kernel": os.uname().release}


def _with_mount(cfg, mount: dict, simfs_options: str):
    """The configuration as simfs runs it here (cpu_op_us=0, the seed's write-back, the drive,
    --simfs-options), for the in-process phases."""
    import dataclasses
    extra = dict(kv.split("=", 1) if "=" in kv else (kv, True) for kv in simfs_options.split(",") if kv)
    return dataclasses.replace(cfg, mount={**mount, **extra})


def vm_dirty() -> dict:
    out = {}
    for k in ("dirty_ratio", "dirty_background_ratio", "dirty_expire_centisecs", "dirty_writeback_centisecs"):
        try:
            out[k] = int(Path(f"/proc/sys/vm/{k}").read_text())
        except OSError:
            out[k] = None
    return out


__all__ = ["SEEDS", "refusal", "run_seed", "render", "figures", "differ", "Failed"]
