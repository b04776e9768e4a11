"""Run an experiment: every configuration on a fresh image, every phase cold, timed in simulated time.

For each repetition and configuration:

1. `timed_mkfs` makes the image (fixed UUID, hash seed and times, so directory hashes and
   every later decision are the same on every run) and charges mkfs's writes to the disk:
   that is the "mkfs" time (seed 003's newfs).
2. Each phase runs cold. A mount phase: `simfs mount IMAGE MNT -o OPTIONS`, the untimed
   `prepare` command, then `echo PHASE > MNT/.simfs/mark`, the command (subprocess), a read
   of MNT/.simfs/stats (`sim_cmd`: how far the mount's clock moved during the command), a
   write to MNT/.simfs/sync and another read (`sim_drain`: writing back what the command left
   dirty, until the drive has it on the media), then `simfs umount` (`-o stats=` gives the
   final clock: `sim_umount`). The headline `sim` is `sim_cmd`, plus `sim_drain` for phases
   declared `drain=True`. A volume phase calls its function on the unmounted image.
3. After the last phase, the layout of the files is read from the image (fragmentation,
   block maps).

Wall-clock seconds are recorded beside, for information only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from simfs.inprocess.timed_mkfs import timed_mkfs
from simfs.units import format_mib

from .phases import PhaseContext
from .records import COUNTERS, ExperimentError, latency_of
from .spec import Config, Experiment, Phase

# Fixed identity of every image: the same directory hashes and placements on every run.
MKFS_UUID = "5eed0000-0000-4000-8000-000000000001"
MKFS_HASH_SEED = "5eed0000-0000-4000-8000-00000000a54d"
MKFS_NOW = 1262304000            # 2010-01-01T00:00:00Z

def simfs_argv() -> list[str]:
    exe = Path(sys.executable).with_name("simfs")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "simfs.cli"]


def _run(argv, what: str, timeout: float | None = None, shell: bool = False) -> subprocess.CompletedProcess:
    if shell:
        argv = ["bash", "-o", "pipefail", "-c", argv]
    r = subprocess.run([str(a) for a in argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        cmd = argv[-1] if shell else " ".join(map(str, argv))
        raise ExperimentError(f"{what}: `{cmd}` exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    return r


def _command(phase: Phase, fn, ctx: PhaseContext):
    cmd = fn(ctx)
    return (cmd, True) if isinstance(cmd, str) else ([str(c) for c in cmd], False)


@dataclass
class Workload:
    """The tree a run copies (generated or the user's), its tarball, and what it holds."""
    kind: str                     # "tree" or "none"
    path: Path | None = None
    tarball: Path | None = None
    bytes: int = 0
    files: int = 0
    dirs: int = 0
    summary: dict = field(default_factory=dict)

    def describe(self) -> str:
        if self.kind != "tree":
            return self.summary.get("describe", "")
        src = self.summary.get("source", "generated")
        return (f"{src}: {self.files:,} files, {self.dirs:,} directories, "
                f"{format_mib(self.bytes)}")


def tree_fingerprint(root: Path) -> dict:
    """What a workload holds, to tell two runs' workloads apart (simfs compare refuses to
    compare runs whose fingerprints differ): files (symbolic links included), directories,
    bytes of regular files, and the SHA-256 of the sorted listing `path<TAB>type<TAB>size`
    (type f, d, l or o; a link's size is its target's length). Names and sizes, not contents:
    what the model charges for."""
    lines, nbytes, nfiles, ndirs = [], 0, 0, 0
    for dirpath, dirnames, filenames in os.walk(root):
        ndirs += len(dirnames)
        rel = os.path.relpath(dirpath, root)
        for n in dirnames:
            lines.append(f"{os.path.normpath(os.path.join(rel, n))}\td\t0")
        for n in filenames:
            st = os.lstat(os.path.join(dirpath, n))
            kind = "l" if stat.S_ISLNK(st.st_mode) else "f" if stat.S_ISREG(st.st_mode) else "o"
            if kind != "l":
                nbytes += st.st_size
            nfiles += 1
            lines.append(f"{os.path.normpath(os.path.join(rel, n))}\t{kind}\t{st.st_size}")
    digest = hashlib.sha256("\n".join(sorted(lines)).encode(errors="surrogateescape")).hexdigest()
    return {"files": nfiles, "directories": ndirs, "bytes": nbytes, "listing_sha256": digest}


def prepare_workload(spec: dict, work: Path, source: Path | None = None) -> Workload:
    if spec.get("kind") != "tree":
        return Workload(kind="none", summary=dict(spec))
    if source is not None:
        root = Path(source).resolve()
        if not root.is_dir():
            raise ExperimentError(f"--source {source}: not a directory")
        summary = {"source": str(root)}
    elif "tarball" in spec:
        root = work / "src"
        root.mkdir()
        _run(["tar", "-xf", Path(spec["tarball"]).expanduser(), "-C", root, "--no-same-owner"],
             f"unpacking the workload {spec['tarball']}")
        summary = {"source": f"tarball {spec['tarball']}"}
    else:
        from .workload import generate_tree
        root = work / "src"
        kw = {k: v for k, v in spec.items() if k != "kind"}
        s = generate_tree(root, **kw)
        summary = {"source": f"generated (seed {s.seed}{', svn' if kw.get('svn') else ''})", **s.to_dict()}
    fp = tree_fingerprint(root)
    tarball = work / "src.tar"
    _run(["tar", "--sort=name", "-cf", tarball, "-C", root, "."], "making the workload tarball")
    summary.update(bytes=fp["bytes"], entries=fp["files"], directories=fp["directories"], fingerprint=fp)
    return Workload("tree", root, tarball, fp["bytes"], fp["files"], fp["directories"], summary)


class Mount:
    """One `simfs mount` of an image; `close()` always unmounts (lazily if it must)."""

    def __init__(self, image: Path, mnt: Path, options: str, log: Path):
        self.image, self.mnt = image, mnt
        mnt.mkdir(exist_ok=True)
        _run(simfs_argv() + ["mount", image, mnt, "-o", f"{options},log={log}"], f"mounting {image.name}",
             timeout=300)
        self.mounted = True

    def ctl(self, name: str) -> Path:
        return self.mnt / ".simfs" / name

    def stats(self) -> dict:
        return json.loads(self.ctl("stats").read_bytes())

    def write(self, name: str, text: str) -> None:
        with open(self.ctl(name), "w") as f:
            f.write(text)

    def close(self) -> None:
        if not self.mounted:
            return
        r = subprocess.run(simfs_argv() + ["umount", str(self.mnt)], capture_output=True, text=True,
                           timeout=3600)
        if r.returncode != 0:
            subprocess.run(simfs_argv() + ["umount", "--lazy", "--timeout", "600", str(self.mnt)],
                           capture_output=True, text=True)
            self.mounted = False
            raise ExperimentError(f"unmounting {self.mnt}: {r.stderr.strip()}")
        self.mounted = False


def _phase_entry(stats: dict, name: str) -> dict:
    """The phase `name`, with the phases its command marked after it (a fio = phase marks one
    per fio job) added in: their counters summed; latencies kept only when it is one phase
    (percentiles do not add)."""
    ph = stats["time"]["phases"]
    for i in range(len(ph) - 1, -1, -1):
        if ph[i]["name"] == name:
            if i == len(ph) - 1:
                return ph[i]
            counters: dict = {}
            for p in ph[i:]:
                for k, v in p.get("counters", {}).items():
                    counters[k] = counters.get(k, 0) + v
            ops: dict = {}
            for p in ph[i:]:
                for k, o in p.get("operations", {}).items():
                    e = ops.setdefault(k, {"count": 0, "time": 0.0})
                    e["count"] += o["count"]
                    e["time"] += o["time"]
            return {"name": name, "start": ph[i]["start"], "counters": counters, "operations": ops}
    raise ExperimentError(f"phase {name!r} missing from /.simfs/stats")


def _counters(entry: dict) -> dict:
    c = entry.get("counters", {})
    return {k: c.get(k, 0) for k in COUNTERS}


def run_mount_phase(phase: Phase, ctx: PhaseContext, cdir: Path, mount: "Mount | None" = None,
                    keep: bool = False) -> tuple[dict, "Mount | None"]:
    """One mount phase. `mount`: the previous phase's mount, still open (this phase is warm,
    `cold=False`); `keep`: leave the mount open for the next (warm) phase. Returns the record
    and the open mount (None once unmounted)."""
    if mount is None:
        extra = {"stats": cdir / f"{phase.name}.stats.json"}
        if phase.trace:
            extra["trace"] = cdir / f"{phase.name}.trace.csv"
        options = ctx.config.mount_string(extra)
        mount = Mount(ctx.image, ctx.mnt, options, cdir / f"{phase.name}.log")
        mount.stats_file, mount.trace_file = extra["stats"], extra.get("trace")
    m = mount
    try:
        if phase.prepare:
            cmd, shell = _command(phase, phase.prepare, ctx)
            _run(cmd, f"{phase.name} (prepare)", shell=shell)
        m.write("mark", phase.name)
        cmd, shell = _command(phase, phase.command, ctx)
        t0 = time.monotonic()
        _run(cmd, phase.name, shell=shell)
        wall = time.monotonic() - t0
        s1 = m.stats()
        e1 = _phase_entry(s1, phase.name)
        sim_cmd = s1["time"]["now"] - e1["start"]
        m.write("sync", "1")
        s2 = m.stats()
        sim_drain = s2["time"]["now"] - s1["time"]["now"]
        e2 = _phase_entry(s2, phase.name)
    except BaseException:
        m.close()
        raise
    umount = 0.0
    if not keep:
        m.close()
        final = json.loads(Path(m.stats_file).read_text())
        umount = final.get("time", final)["now"] - s2["time"]["now"]
    rec = {"sim_cmd": sim_cmd, "sim_drain": sim_drain, "sim_umount": umount,
           "sim": sim_cmd + (sim_drain if phase.drain else 0.0), "wall": wall,
           "counters": _counters(e2), "counters_cmd": _counters(e1),
           "ops": sum(o["count"] for o in e1.get("operations", {}).values()),
           "latency": latency_of(e2), "extra": {}}
    if phase.trace and m.trace_file:
        rec["trace"] = str(m.trace_file)
    return rec, (m if keep else None)


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in name)


def run_config(exp: Experiment, cfg: Config, rep: int, wl: Workload, work: Path, progress=None,
               keep_images: bool = False) -> tuple[list[dict], object]:
    """All phases of one configuration on a fresh image; (records, layout or None)."""
    idx = exp.configs.index(cfg)
    cdir = work / f"{idx:02d}-{_slug(cfg.name)}-r{rep}"
    cdir.mkdir(parents=True, exist_ok=True)
    image, mnt = cdir / "disk.img", cdir / "mnt"
    ctx = PhaseContext(mnt=mnt, image=image, work=cdir, config=cfg, source=wl.path, tarball=wl.tarball,
                       params=exp.params)
    records = []
    base = {"config": cfg.name, "rep": rep}

    def tick(label: str):
        if progress:
            progress(f"{cfg.name} [{label}]" + (f" rep {rep + 1}" if exp.repetitions > 1 else ""))

    mkw = dict(cfg.mkfs)
    size = mkw.pop("size_bytes")
    tick("mkfs")
    t0 = time.monotonic()
    _, sim, st = timed_mkfs(image, size, cfg.mount.get("disk", "sata7200"),
                            maxio=cfg.mount.get("maxio", 128 << 10), uuid=MKFS_UUID,
                            hash_seed=MKFS_HASH_SEED, now=MKFS_NOW, uid=0, gid=0, **mkw)
    records.append({**base, "phase": "mkfs", "sim": sim, "sim_cmd": sim, "sim_drain": 0.0, "sim_umount": 0.0,
                    "wall": time.monotonic() - t0,
                    "counters": {k: st.totals().get(k, 0) for k in COUNTERS}, "extra": {}})
    aged = getattr(exp, "aged", None)
    if aged:                                    # [aged]: this fresh image aged (cached by recipe)
        from .aging.aged import AgedError, age_image
        tick("aged")
        try:
            age_image(aged, cfg, image)
        except AgedError as e:
            raise ExperimentError(str(e)) from None
    if progress:
        progress(None)
    todo = [p for p in exp.phases if p.kind != "mkfs"]
    mount = None
    for i, phase in enumerate(todo):
        tick(phase.name)
        if phase.kind == "mount":
            warm_next = i + 1 < len(todo) and todo[i + 1].kind == "mount" and not todo[i + 1].cold
            rec, mount = run_mount_phase(phase, ctx, cdir, mount if not phase.cold else None, keep=warm_next)
        else:
            t0 = time.monotonic()
            rec = phase.command(ctx)
            rec["wall"] = time.monotonic() - t0
            rec.setdefault("sim_umount", 0.0)
        if phase.after:
            rec["extra"].update(phase.after(ctx, rec))
        records.append({**base, "phase": phase.name, **rec})
        if progress:
            progress(None)
    lay = None
    if rep == 0 and (cfg.name in exp.blockmap or exp.blockmap_files != "all"):
        from .fsscan import layout
        lay = layout(image, cfg, only=None if exp.blockmap_files == "all" else exp.blockmap_files)
        records.append({**base, "phase": "layout", "sim": 0.0, "wall": 0.0, "counters": {},
                        "extra": lay.summary()})
    if not keep_images:
        image.unlink(missing_ok=True)
    return records, lay


def default_work_root() -> Path:
    for d in ("/var/tmp", tempfile.gettempdir()):
        if os.access(d, os.W_OK):
            return Path(d)
    return Path(".")


def run_experiment(exp: Experiment, wl: Workload, work: Path, *, progress=None,
                   keep_images: bool = False) -> dict:
    """Execute the matrix; returns the raw results (see report.assemble for the summary)."""
    started = time.time()
    records, layouts = [], {}
    # SIGTERM becomes KeyboardInterrupt, so mounts are released on the way out
    old = signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        for rep in range(exp.repetitions):
            for cfg in exp.configs:
                recs, lay = run_config(exp, cfg, rep, wl, work, progress, keep_images)
                records += recs
                if lay is not None:
                    layouts[cfg.name] = lay
    finally:
        signal.signal(signal.SIGTERM, old)
        release_mounts(work)
    return {"records": records, "layouts": layouts, "started": started, "wall": time.time() - started}


def release_mounts(work: Path) -> None:
    """Unmount anything still mounted below `work` (after an error or an interrupt)."""
    from simfs.fuse.checks import mounts
    root = str(work.resolve()).rstrip("/") + "/"
    for path, fstype, _ in mounts():
        if path.startswith(root) and fstype.startswith("fuse"):
            subprocess.run(simfs_argv() + ["umount", "--lazy", "--timeout", "600", path],
                           capture_output=True, text=True)


def phase_count(exp: Experiment) -> int:
    """Progress steps: mkfs plus every non-mkfs phase, per configuration and repetition."""
    return exp.repetitions * len(exp.configs) * (1 + sum(1 for p in exp.phases if p.kind != "mkfs"))


def remove_work(work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)
