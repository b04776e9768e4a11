"""The workloads `benchmarks.compare` times on two commits: each run in a fresh process with the
commit's tree first on sys.path, printing one JSON line {"real": s, "cpu": s, "sim": ...}.

    python benchmarks/probes.py NAME WORKDIR      (run by benchmarks/compare.py, cwd = the tree)

Kept apart from the benchmarks they sample, and written against the API every compared commit
has (Volume, the in-process verbs, make_disk, mkfs, the workload generator), as asv keeps its
benchmarks outside the code it checks out: the same probe code times both sides. `sim` is the
simulated figure the probe produced: equal on both sides unless the compared change moves a
result, which compare.py then says.
"""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path


def _timed(fn):
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    sim = fn()
    return {"real": time.perf_counter() - t0, "cpu": time.process_time() - c0, "sim": sim}


def _options(spec: str):
    from simfs.fuse import mountopts
    return mountopts.parse([spec]).volume


def seed000(work: Path) -> dict:
    """Seed 000's tarcp + tar in-process on a generated tree (ext2fs-2010, 4K, sync, wd1200jb),
    as benchmarks.bench_verbs --seed000 runs it, on 2,000 files."""
    from experiments.workload import generate_tree
    from simfs.fs.volume import Volume
    from simfs.inprocess import verbs
    from simfs.inprocess.treedesc import from_directory
    from simfs.ondisk.mkfs import mkfs
    src, img = work / "src", work / "seed000.img"
    generate_tree(src, seed=1, files=2000)
    mkfs(img, 1 << 30, block_size=4096, inode_size=128, bytes_per_inode=8192)
    opts = _options("alloc=ext2fs-2010,writeback=sync,disk=wd1200jb")
    vol = Volume.open(img, opts)
    vol.mkdir(vol.root_ino, b"srcs", 0o40755, 0, 0)
    vol.close()
    source = from_directory(str(src))

    def work_():
        sim = verbs.run(str(img), opts, "unpack", "srcs", source=source)["time"]["now"]
        return sim + verbs.run(str(img), opts, "tar-read", "srcs")["time"]["now"]
    return _timed(work_)


def ext4_cycle(work: Path) -> dict:
    """Unpack, cold tar read-back, cold find and rm -rf of a generated 3,000-file tree in-process
    on an ext4-profile image with its default options (mballoc-delalloc, hash order)."""
    from experiments.workload import generate_tree
    from simfs.inprocess import verbs
    from simfs.inprocess.treedesc import from_directory
    from simfs.ondisk.mkfs import mkfs
    src, img = work / "src", work / "ext4.img"
    generate_tree(src, seed=2, files=3000)
    mkfs(img, 1 << 30, profile="ext4")
    opts = _options("disk=sata7200")
    source = from_directory(str(src))

    def work_():
        sim = verbs.run(str(img), opts, "unpack", "tree", mkdir=True, source=source)["time"]["now"]
        for verb, params in (("tar-read", {}), ("find", {"type": "f"}), ("rm-rf", {})):
            sim += verbs.run(str(img), opts, verb, "tree", **params)["time"]["now"]
        return sim
    return _timed(work_)


def disk_models(work: Path) -> dict:
    """Requests the rotating model serves: 20,000 random 4 KiB reads and 20,000 sequential ones on
    sata7200 and wd1200jb, closed loop (benchmarks.bench_disk_models' streams)."""
    from disk_models import make_disk
    rng = random.Random(1)

    def work_():
        sim = 0.0
        for spec in ("sata7200", "wd1200jb"):
            disk = make_disk(spec)
            span = min(disk.sectors, 1 << 31) // 8 - 1
            reqs = [("R", rng.randrange(span) * 8, 8, False) for _ in range(20000)]
            reqs += [("R", i * 8, 8, False) for i in range(20000)]
            t = 0.0
            for op, lba, n, sync in reqs:
                t = disk.submit(op, lba, n, t, sync).finish
            sim += disk.flush(t)
        return sim
    return _timed(work_)


def htree(work: Path) -> dict:
    """20,000 creates, then as many lookups (shuffled) and misses in one ext4-profile directory."""
    from simfs.errors import FSError
    from simfs.fs.volume import Volume
    from simfs.ondisk.mkfs import mkfs
    img = work / "htree.img"
    mkfs(img, 1 << 30, profile="ext4")
    names = [b"file-%06d" % i for i in range(20000)]
    shuffled = random.Random(3).sample(names, len(names))

    def work_():
        with Volume.open(img) as vol:
            d = vol.mkdir(vol.root_ino, b"big", 0o40755, 0, 0).st_ino
            for name in names:
                vol.create(d, name, 0o100644, 0, 0)
            for name in shuffled:
                vol.lookup(d, name)
            for name in shuffled[:5000]:
                try:
                    vol.lookup(d, name + b".x")
                except FSError:
                    pass
            return vol.clock.now
    return _timed(work_)


def mounted_cycle(work: Path) -> dict:
    """The mounted untar / cold tar / rm -rf of a generated 2,000-file tree with the real tools,
    -o disk=wd1200jb, one mount per phase (the commit's own `simfs` command)."""
    from experiments.workload import generate_tree
    src, tarball, img, mnt = work / "src", work / "tree.tar", work / "m.img", work / "mnt"
    generate_tree(src, seed=4, files=2000)
    subprocess.run(["tar", "-cf", str(tarball), "-C", str(src), "."], check=True)
    mnt.mkdir()
    simfs = [sys.executable, "-m", "simfs.cli"]
    subprocess.run(simfs + ["mkfs", str(img), "1G"], check=True, stdout=subprocess.DEVNULL)
    phases = (["mkdir", "-p", f"{mnt}/t"], ["tar", "-xf", str(tarball), "-C", f"{mnt}/t"]), \
        (["tar", "-cf", "/dev/null", "-C", str(mnt), "t"],), (["rm", "-rf", f"{mnt}/t"],)

    def work_():
        sim = 0.0
        for commands in phases:
            stats = work / "stats.json"
            subprocess.run(simfs + ["mount", str(img), str(mnt), "-o", f"disk=wd1200jb,stats={stats}"],
                           check=True)
            try:
                for c in commands:
                    subprocess.run(c, check=True)
            finally:
                subprocess.run(simfs + ["umount", str(mnt)], check=True)
            sim += json.loads(stats.read_text())["time"]["now"]
        return sim
    return _timed(work_)


PROBES = {"seed000": seed000, "ext4-cycle": ext4_cycle, "disk-models": disk_models,
          "htree": htree, "mounted-cycle": mounted_cycle}


def main(argv: list[str]) -> int:
    name, work = argv
    os.makedirs(work, exist_ok=True)
    import simfs
    out = PROBES[name](Path(work))
    out["tree"] = str(Path(simfs.__file__).resolve().parents[1])
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
