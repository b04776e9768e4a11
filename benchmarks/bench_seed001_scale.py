"""Seed 001 at its own size, in-process: unpack the generated svn tree, then find it cold.

Run: python -m benchmarks.bench_seed001_scale [--files 10000 100000 1000000 2000000]
     python -m benchmarks.bench_seed001_scale --one 100000 [--profile OUT.prof]

N is the number of regular files of the tree (working files and their .svn metadata, as
seed 001 counts them: 1,978,149 files and 844,008 directories); the generator's `files`
(working files) is N / FILES_PER_WORKING_FILE.  Each size runs in a fresh process: mkfs of a
sparse data-less image (about 28 KiB of file system per file: 54 GB at 2M), Volume with
alloc=ext2, dirorder=hash, writeback=async, disk=sas10k, dataless; the tree from
experiments.workload.describe() goes in through simfs.engine.Kernel (the unpack verb if the
tree has one, else a stand-in loop: mkdir, create + write + futimens + close, symlink, link);
then the volume is closed and reopened and simfs.engine.verbs.find runs on it (cold).

Printed per size: files, dirs, real seconds (unpack, find), simulated seconds, real µs per
file (unpack + find), peak RSS.  Targets (issue 14): each configuration's unpack + find
under 30 minutes at 2M files, peak RSS under 4 GiB, µs per file at 1M within 1.3x of 10k.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILES_PER_WORKING_FILE = 3.0744      # svn=True: 7,686 files for files=2500 (seed 1)
SEED = 1
ZEROS = memoryview(bytes(4 << 20))


def image_size(n_files: int) -> int:
    return max(1 << 30, n_files * (28 << 10))


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def stand_in_unpack(k, source, progress: int = 0) -> dict:
    """tar xpf's system calls in their simplest form, paths relative to the root."""
    import stat as _stat
    root = k.root
    c = {"files": 0, "dirs": 0, "symlinks": 0, "hardlinks": 0, "bytes": 0}
    t0 = time.perf_counter()
    for n_e, e in enumerate(source, 1):
        if progress and n_e % progress == 0:
            print(f"  {n_e:>9,} entries  {time.perf_counter() - t0:8.1f} s  files {c['files']:,}  "
                  f"sim {k.vol.clock.now:8.1f} s  RSS {_rss_mib():6.0f} MiB", file=sys.stderr, flush=True)
        if e.kind == "dir":
            k.mkdir(root, e.path, e.mode, e.uid, e.gid)
            c["dirs"] += 1
        elif e.kind == "file":
            f = k.create(root, e.path, e.mode, e.uid, e.gid)
            n = e.size
            off = 0
            while off < n:
                m = min(n - off, len(ZEROS))
                k.write(f, off, e.data[off:off + m] if e.data is not None else ZEROS[:m])
                off += m
            k.setattr(f.ino, mtime_ns=e.mtime_ns, atime_ns=e.mtime_ns)
            k.close(f)
            c["files"] += 1
            c["bytes"] += n
        elif e.kind == "symlink":
            k.symlink(root, e.path, e.target, e.uid, e.gid)
            c["symlinks"] += 1
        elif e.kind == "hardlink":
            k.link(root, e.link, e.path)
            c["hardlinks"] += 1
        else:  # pragma: no cover
            raise ValueError(e.kind)
    del _stat
    return c


def run_one(n_files: int, workdir: Path, profile: str | None, keep: bool) -> dict:
    from experiments.workload.describe import describe
    from simfs.engine.kernel import Kernel
    from simfs.engine.verbs import find
    from simfs.fs.volume import Volume, VolumeOptions
    from simfs.ondisk.mkfs import mkfs
    try:
        from simfs.engine.verbs import unpack as unpack_verb   # another engineer's, when merged
    except ImportError:
        unpack_verb = None

    working = max(1, round(n_files / FILES_PER_WORKING_FILE))
    img = workdir / f"seed001-{n_files}.img"
    size = image_size(n_files)
    t = time.perf_counter()
    mkfs(img, size, block_size=4096, bytes_per_inode=16384, uuid=bytes(16),
         hash_seed=bytes(16), now=1_000_000_000)
    mkfs_s = time.perf_counter() - t
    opts = dict(alloc="ext2", dirorder="hash", writeback="async", disk="sas10k", dataless=True)
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
    src = describe(SEED, working, svn=True)
    t = time.perf_counter()
    if prof:
        prof.enable()
    with Volume.open(img, VolumeOptions(**opts)) as vol:
        k = Kernel(vol)
        if unpack_verb is not None:
            unpack_verb.run(k, [], source=src)
            counts = None
        else:
            counts = stand_in_unpack(k, src, progress=100_000 if n_files >= 500_000 else 0)
        k.forget_all()
        vol.sync()
        sim_unpack = vol.clock.now
        snap_unpack = vol.stats_snapshot()
    unpack_s = time.perf_counter() - t
    rss_unpack = _rss_mib()
    t = time.perf_counter()
    with Volume.open(img, VolumeOptions(**opts)) as vol:
        k = Kernel(vol)
        t_sim = vol.clock.now
        found = find.run(k, [])
        k.forget_all()
        sim_find = vol.clock.now - t_sim
    find_s = time.perf_counter() - t
    if prof:
        prof.disable()
        prof.dump_stats(profile)
    if not keep:
        img.unlink()
    out = {"n": n_files, "working": working, "files": found["files"], "dirs": found["dirs"],
           "other": found["other"], "unpacked": counts, "mkfs_s": mkfs_s, "unpack_s": unpack_s,
           "find_s": find_s, "sim_unpack": sim_unpack, "sim_find": sim_find,
           "us_per_file": 1e6 * (unpack_s + find_s) / max(1, found["files"]),
           "us_per_file_unpack": 1e6 * unpack_s / max(1, found["files"]),
           "rss_unpack_mib": rss_unpack, "rss_mib": _rss_mib(), "image_size": size,
           "stats_unpack": snap_unpack}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 2_000_000])
    ap.add_argument("--one", type=int, help="run one size in this process")
    ap.add_argument("--dir", default=None, help="where the images go (default: a temporary dir)")
    ap.add_argument("--profile", default=None, help="with --one: cProfile output file")
    ap.add_argument("--keep", action="store_true", help="keep the image")
    ap.add_argument("--json", default=None, help="with --one: write the result here")
    a = ap.parse_args(argv)
    if a.one:
        with tempfile.TemporaryDirectory(prefix="simfs-s001-", dir=a.dir) as tmp:
            r = run_one(a.one, Path(a.dir) if a.keep and a.dir else Path(tmp), a.profile, a.keep)
        stats = r.pop("stats_unpack")
        if a.json:
            Path(a.json).write_text(json.dumps(dict(r, stats_unpack=stats), indent=1))
        print(json.dumps(r), flush=True)
        return 0
    rows = []
    for n in a.files:
        cmd = [sys.executable, "-m", "benchmarks.bench_seed001_scale", "--one", str(n)]
        if a.dir:
            cmd += ["--dir", a.dir]
        p = subprocess.run(cmd, check=True, capture_output=True, text=True)
        rows.append(json.loads(p.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"{r['files']:>10,} files {r['dirs']:>9,} dirs  unpack {r['unpack_s']:8.1f} s  "
              f"find {r['find_s']:7.1f} s  sim {r['sim_unpack']:8.1f} + {r['sim_find']:7.1f} s  "
              f"{r['us_per_file']:6.0f} µs/file  peak RSS {r['rss_mib']:6.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
