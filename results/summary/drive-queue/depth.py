"""Which seed figures move at the drive's real queue depth, and with the era's host queue?

    .venv/bin/python results/summary/drive-queue/depth.py > results/summary/drive-queue/depth-table.md

Every built-in experiment's quick configurations (experiments/jobs/*.toml, the [quick] sizes),
in-process (simfs.inprocess.verbs: the tools' system calls through the kernel model; the
mounted experiments' `tar | tar` copy is the unpack verb, `tar cf /dev/zero` tar-read), each
phase a cold volume as the runner's remount makes it, under these drive/host settings:

  preset     the experiment's own disk preset: its queue_depth and scheduler (`simfs disks show`)
  depth 1    the same drive with queue_depth=1,scheduler=fcfs (no command queue)
  era        the preset with the seed's kernel's host queue (Linux seeds 001 and 004:
             iosched=cfq,max_sectors_kb=512, 2.6.x; docs/host-queue.md). FreeBSD seeds
             000, 002, 003: no merging block layer - the defaults are the era's, not rerun.
  era, flusher   (Linux seeds) the era's queue with the buffer cache's own write-back batches
             in Linux's flusher order (writeback_order=linux) instead of sorted by the cache
  disksort   (FreeBSD seeds) the preset with FreeBSD's driver sort (iosched=disksort)
  disksort, flusher   and the write-back batches in FreeBSD's syncer order
             (writeback_order=freebsd): the order the FreeBSD system itself would give

Per phase: simulated seconds (the tool's, sim_cmd, and with the unmount's write-back), drive
requests, and from the trace the requests the host waited for that were issued while another
request was still at the drive ("sync behind"), with the time they waited for it ("waited ms"):
the only place a drive queue could reorder anything while one process sends one request at a
time (background write-back and read-ahead outstanding with a synchronous request).
"""

from __future__ import annotations

import csv
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

NOW = 1_000_000_000
MiB = 1 << 20

# seed, experiment, configurations [(name, mount options, block size)], files, image MiB,
# phases [(name, verb, path, params, drain)]
TREE_PHASES = {
    "ext2fs-2010": [("tarcp", "unpack", "srcs", False), ("tar", "tar-read", "srcs", True)],
    "writeback": [("tarcp", "unpack", "srcs", False), ("tar", "tar-read", "srcs", True)],
    "alignment": [("restore", "unpack", "restore", False), ("tar", "tar-read", "restore", True)],
    "readdir-order": [("unpack", "unpack", "tree", True), ("find-d", "find", "tree", True),
                      ("find-f", "find", "tree", True), ("cp-a", "cp-a", "tree", True),
                      ("rm-rf", "rm-rf", "tree", True)],
}
TREES = {  # experiment: (seed, workload seed, files, svn tree, image MiB, [(name, options, block size)])
    "ext2fs-2010": ("000", 1, 600, False, 512,
                    [(f"{a} {b}K sync", f"alloc={a},writeback=sync,disk=wd1200jb", b * 1024)
                     for a in ("ext2fs-2010", "ext2fs-2010-fixed", "sequential", "cg") for b in (1, 4)]),
    "readdir-order": ("001", 1, 120, True, 512,
                      [(f"dirorder={o}", f"alloc=ext2,writeback=async,dirorder={o},disk=sas10k", 4096)
                       for o in ("hash", "linear", "inode")]),
    "writeback": ("002", 2, 500, False, 512,
                  [(f"cg-2010 {w}", f"alloc=cg-2010,writeback={w},disk=wd1200jb", 4096)
                   for w in ("sync", "async", "softdep")]),
    "alignment": ("003", 3, 400, False, 512,
                  [(f"offset {o}{'' if wc else ', no write cache'}",
                    f"alloc=cg-2010,writeback=sync,disk=wd-ears,partition_offset={o}{'' if wc else ',write_cache=no'}", 4096)
                   for o, wc in ((34, 1), (39, 1), (40, 1), (41, 1), (40, 0), (41, 0))]),
}
#: the images' identity fixed (experiments.verbcheck's): the directory hash order repeats run to run
FIXED = {}
ERA = {"001": "iosched=cfq,max_sectors_kb=512", "004": "iosched=cfq,max_sectors_kb=512"}
#: the flusher's order (simfs.blockio.cache WRITEBACK_ORDERS) of each seed's system, and the
#: queue that orders it: Linux 2.6's flusher under the era's cfq; FreeBSD's syncer under its
#: driver's bioq_disksort (the FreeBSD seeds: no merging; `disksort` alone shows the sort's
#: part, the cache still sorting)
FLUSHER = {"000": "freebsd", "002": "freebsd", "003": "freebsd", "001": "linux", "004": "linux"}


def _variants(seed: str, opts: str) -> list[tuple[str, str, str]]:
    """(name, mount options, the cache's write-back order)."""
    head, _, disk = opts.partition("disk=")
    out = [("preset", opts, "block"), ("depth 1", f"{head}disk={disk},queue_depth=1,scheduler=fcfs", "block")]
    if seed in ERA:
        out.append(("era", f"{opts},{ERA[seed]}", "block"))
        out.append(("era, flusher", f"{opts},{ERA[seed]}", FLUSHER[seed]))
    else:
        out.append(("disksort", f"{opts},iosched=disksort", "block"))
        out.append(("disksort, flusher", f"{opts},iosched=disksort", FLUSHER[seed]))
    return out


def _order(order: str):
    """The cache's write-back order for the volumes opened meanwhile (no mount option names it
    yet: simfs.fs.volume builds the cache, the order is BufferCache's argument)."""
    import functools

    import simfs.fs.volume as volume
    from simfs.blockio.cache import BufferCache
    volume.BufferCache = functools.partial(BufferCache, writeback_order=order) if order != "block" else BufferCache


def sync_behind(trace: Path, phase: str) -> tuple[int, float]:
    """(waited-for requests issued while an earlier one was still at the drive, ms they waited)."""
    n, waited, busy = 0, 0.0, -1.0
    with open(trace, newline="") as f:
        for row in csv.DictReader(f):
            if row["phase"] != phase:
                continue
            issue, finish = float(row["issue"]), float(row["finish"])
            if row["wait"] == "1" and busy > issue:
                n += 1
                waited += float(row["queue"])
            busy = max(busy, finish)
    return n, waited * 1e3


def _run(img, opts, verb, path, phase, work, **params) -> dict:
    from simfs.fuse import mountopts
    from simfs.inprocess import verbs
    trace = work / f"{phase}.csv"
    o = mountopts.parse([f"{opts},trace={trace}"]).volume
    r = verbs.run(str(img), o, verb, path, mark=phase, **params)
    c = r["time"]["total"]["counters"]
    n, w = sync_behind(trace, phase)
    return {"cmd": r["sim_cmd"], "all": r["time"]["now"] - r["time"]["phases"][-1]["start"],
            "requests": c.get("disk_reads", 0) + c.get("disk_writes", 0), "behind": n, "waited": w}


def tree_runs(name: str, work: Path) -> list[tuple]:
    from experiments.workload import generate_tree
    from simfs.inprocess.treedesc import from_directory
    from simfs.ondisk.mkfs import mkfs
    seed, wseed, files, svn, size, configs = TREES[name]
    src = work / f"src-{name}"
    generate_tree(src, seed=wseed, files=files, svn=svn)
    total = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    cache = max(4 * MiB, min(128 * MiB, total // 4)) // 4096 * 4096
    rows = []
    for cname, opts, bs in configs:
        for vname, vopts, order in _variants(seed, f"cache={cache},{opts}"):
            _order(order)
            img = work / "img"
            mkfs(img, size * MiB, block_size=bs, inode_size=256, now=NOW, uid=0, gid=0, **FIXED)
            for phase, verb, path, _ in TREE_PHASES[name]:
                params = {"unpack": dict(source=from_directory(str(src)), mkdir=True),
                          "find": dict(type="f" if phase == "find-f" else "d"), "cp-a": dict(dst="copy")}
                rows.append((seed, name, cname, vname, phase, _run(img, vopts, verb, path, phase, work,
                                                                    **params.get(verb, {}))))
            img.unlink()
    return rows


def mmap_runs(work: Path) -> list[tuple]:
    """Seed 004 (mmap-fragmentation, quick: a 64 MiB file, 384 MiB of modelled RAM)."""
    from simfs.ondisk.mkfs import mkfs
    rows = []
    for cname, alloc, writes, extra in (("ext2 mmap", "ext2", "mmap", ""), ("delayed mmap", "delayed", "mmap", ""),
                                        ("ext2 pwrite", "ext2", "pwrite", ",cache=768M"),
                                        ("delayed pwrite", "delayed", "pwrite", ",cache=768M")):
        opts = f"alloc={alloc},writeback=async,dataless=true,read_batch=true{extra},disk=sata7200"
        for vname, vopts, order in _variants("004", opts):
            _order(order)
            img = work / "img"
            mkfs(img, 512 * MiB, block_size=4096, inode_size=256, now=NOW, uid=0, gid=0, **FIXED)
            kw = {"pagecache": "linux-2.6.29,ram=384M"} if writes == "mmap" else {}
            rows.append(("004", "mmap-fragmentation", cname, vname, "write",
                         _run(img, vopts, "mmap-fill", "big", "write", work, size=64 * MiB, writes=writes, **kw)))
            rows.append(("004", "mmap-fragmentation", cname, vname, "dd",
                         _run(img, vopts, "dd", "big", "dd", work, bs=MiB)))
            img.unlink()
    return rows


def main() -> int:
    from experiments import verbcheck
    FIXED.update(uuid=verbcheck.UUID, hash_seed=verbcheck.HASH_SEED)
    time.time = lambda: float(NOW)
    from simfs.fs.volume import Volume
    Volume._now = lambda self: NOW * 10**9
    rows = []
    with tempfile.TemporaryDirectory(prefix="drive-queue-depth-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        for name in ("ext2fs-2010", "readdir-order", "writeback", "alignment"):
            rows += tree_runs(name, work)
        rows += mmap_runs(work)
    print("| seed | experiment | configuration | phase | setting | tool s | with write-back s | requests "
          "| sync behind | waited ms | vs preset |")
    print("|---|---|---|---|---|--:|--:|--:|--:|--:|---|")
    base = {}
    for seed, exp, cfg, var, phase, r in rows:
        key = (exp, cfg, phase)
        if var == "preset":
            base[key] = r
        b = base[key]
        same = ("-" if var == "preset" else
                "same" if (r["cmd"], r["all"], r["requests"]) == (b["cmd"], b["all"], b["requests"]) else
                f"{100 * (r['all'] - b['all']) / b['all']:+.2f} %, requests {r['requests'] - b['requests']:+d}")
        print(f"| {seed} | {exp} | {cfg} | {phase} | {var} | {r['cmd']:.4f} | {r['all']:.4f} | {r['requests']} "
              f"| {r['behind']} | {r['waited']:.2f} | {same} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
