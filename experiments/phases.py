"""The phases of the seed experiments: real commands against the mount, or in-process scans.

Each function returns a `spec.Phase`. Commands are argv lists or bash strings (run with
`set -o pipefail`); they get a `PhaseContext` with the mount point, the source tree and its
tarball, and the configuration. Read-back phases write their archive to /dev/zero: GNU tar
notices an archive on /dev/null and then reads no file data at all.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .records import COUNTERS, ExperimentError, latency_of
from .spec import Config, Phase

REPO = Path(__file__).resolve().parents[1]
MMAP_WRITER = REPO / "tests" / "tools" / "mmap_writer.py"
BIG = "big"                       # the file name of the mmap experiment


@dataclass
class PhaseContext:
    mnt: Path
    image: Path
    work: Path                    # this configuration's scratch directory (outside the mount)
    config: Config
    source: Path | None = None    # the tree the workload copies (local disk, not charged)
    tarball: Path | None = None   # tar of `source`, in name order
    params: dict = field(default_factory=dict)   # experiment parameters, e.g. {"size": bytes}


def q(p) -> str:
    return shlex.quote(str(p))


# writing a tree ----------------------------------------------------------------------------------
def tarcp(name: str = "tarcp", dest: str = "srcs", drain: bool = False) -> Phase:
    """Seed 000/002's untar: two tars in a pipe from the (cached, uncharged) source."""
    return Phase(
        name, f"tar cf - -C SRC . | tar xpf - -C MNT/{dest} (two tars in a pipe)",
        prepare=lambda c: ["mkdir", str(c.mnt / dest)],
        command=lambda c: (f"tar --sort=name -cf - -C {q(c.source)} . | "
                           f"tar -xpf - -C {q(c.mnt / dest)}"),
        drain=drain, writes=True)


def unpack(name: str = "restore", dest: str = "restore", drain: bool = False, setup: bool = False,
           trace: bool = False) -> Phase:
    """A restore-like unpack: `tar xpf` of the source's tarball, files one after another."""
    return Phase(
        name, f"tar xpf SRC.tar -C MNT/{dest} (restore-like: files written one after another)",
        prepare=lambda c: ["mkdir", str(c.mnt / dest)],
        command=lambda c: ["tar", "-xpf", str(c.tarball), "-C", str(c.mnt / dest)],
        drain=drain, setup=setup, trace=trace, writes=True)


# reading a tree ----------------------------------------------------------------------------------
def tar_readback(name: str = "tar", what: str = "srcs", trace: bool = True) -> Phase:
    return Phase(
        name, f"tar cf /dev/zero -C MNT {what} (reads every file; /dev/null would read no data)",
        command=lambda c: ["tar", "-cf", "/dev/zero", "-C", str(c.mnt), what],
        trace=trace)


def find_type(kind: str, what: str = "tree", trace: bool = False) -> Phase:
    label = {"d": "find -type d", "f": "find -type f"}[kind]
    return Phase(
        f"find-{kind}", f"{label} over MNT/{what} (output to /dev/null)",
        command=lambda c: f"find {q(c.mnt / what)} -type {kind} > /dev/null",
        trace=trace)


def cp_a(what: str = "tree", dest: str = "copy", drain: bool = False) -> Phase:
    return Phase(
        "cp-a", f"cp -a MNT/{what} MNT/{dest} (a copy within the file system)",
        command=lambda c: ["cp", "-a", str(c.mnt / what), str(c.mnt / dest)],
        drain=drain, writes=True)


def rm_rf(what: str = "tree", drain: bool = False) -> Phase:
    return Phase(
        "rm-rf", f"rm -rf MNT/{what} (the original tree)",
        command=lambda c: ["rm", "-rf", str(c.mnt / what)],
        drain=drain, writes=True)


# one big file (seed 004) -------------------------------------------------------------------------
def mmap_write(drain: bool = True) -> Phase:
    """alloctest: a shared mapping (msync) or, for configurations with params writes=pwrite,
    pwrite (fsync). Afterwards the file's extents are counted on the image, as filefrag does."""

    def command(c: PhaseContext):
        argv = [sys.executable, str(MMAP_WRITER), str(c.mnt / BIG), str(c.params["size"]), "--quiet"]
        return argv + (["--pwrite"] if c.config.params.get("writes") == "pwrite" else [])

    def after(c: PhaseContext, rec: dict) -> dict:
        from .fsscan import layout
        lay = layout(c.image, c.config, only=BIG)
        return {"extents": lay.extents, "perfect": getattr(lay, "perfect", 1)}

    return Phase(
        "write", "ftruncate, then every 4 KiB page in alloctest's order through a shared mapping "
                 "(msync) or with pwrite (fsync)",
        command=command, drain=drain, after=after, metrics=("extents", "perfect"), writes=True)


def dd_read(trace: bool = True) -> Phase:
    return Phase(
        "dd", "dd if=MNT/big of=/dev/null bs=1M (sequential read of the whole file)",
        command=lambda c: ["dd", f"if={c.mnt / BIG}", "of=/dev/null", "bs=1M", "status=none"],
        trace=trace, metrics=("mb_s",),
        after=lambda c, rec: {"mb_s": c.params["size"] / 1e6 / rec["sim"] if rec["sim"] > 0 else 0.0})


# in-process ---------------------------------------------------------------------------------------
def run_verb(ctx: PhaseContext, verb: str, path: str, *, drain: bool, mark: str = "",
             options: dict | None = None, **params) -> dict:
    """An in-process phase's record: simfs.inprocess.verbs.run on the unmounted image (one cold
    mount with the configuration's options, plus `options`). sim_cmd is the tool's time,
    sim_drain what the close added (the write-back it left, as `-o stats=` includes it),
    sim_umount the final clock; the headline adds the drain when `drain`. The verb's numeric
    results go to `extra`. A file-system error (a full disk) is one ExperimentError line."""
    import os

    from simfs.inprocess import verbs
    from simfs.errors import FSError
    from simfs.fuse import mountopts

    opts = mountopts.parse([ctx.config.mount_string(options)]).volume
    try:
        out = verbs.run(str(ctx.image), opts, verb, path, mark=mark, **params)
    except FSError as e:
        raise ExperimentError(f"{verb} {path}: {os.strerror(e.errno)}") from None
    now, cmd = out["time"]["now"], out["sim_cmd"]
    res = out["result"] if isinstance(out["result"], dict) else {}
    return {"sim_cmd": cmd, "sim_drain": now - cmd, "sim_umount": now, "sim": now if drain else cmd,
            "counters": {k: out["counters"].get(k, 0) for k in COUNTERS},
            "latency": latency_of(out["time"].get("total")),
            "extra": {k: v for k, v in res.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}}


def mkfs_phase() -> Phase:
    """The runner always makes each image with `timed_mkfs`; listing this phase shows its time."""
    return Phase("mkfs", "mkfs on the modelled disk (every block mkfs writes, charged; newfs)",
                 kind="mkfs")


def metadata_scan(name: str = "fsck") -> Phase:
    from .fsscan import metadata_scan as scan
    return Phase(
        name, "fsck-like scan in-process (simfs.fs.volume.Volume, same disk): bitmaps, every inode-"
              "table block, indirect blocks, every directory block in block order",
        kind="volume", command=lambda c: scan(c.image, c.config))
