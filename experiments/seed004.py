"""Seed 004: random writes into an ftruncate'd MAP_SHARED file: 50,435 extents where 9 would do.

Andy Isaacson, LKML 2009-04-14 ("[ext3 performance regression] internal fragmentation on
ftruncate+MAP_SHARED allocations"): alloctest.c fills a 1 GiB file through a shared mapping,
page (i + 23) * 1000000007 % npages for i = 0..npages-1, then msync. On ext3 (2.6.29):
"50435 extents found, perfection would be 9 extents"; `dd bs=1M` of the file: 18.4 MB/s
"on a 7200rpm disk that can do 70MB/s sequential"; ext4 (delayed allocation) "around 30-40
extents".

Here: tests/tools/mmap_writer.py (the same page order) writes the file through a shared
mapping or with pwrite; the kernel's FUSE write-back decides which dirty pages reach simfs
when (that is where run-to-run variation comes from, hence repetitions). `ext2` allocates
each block when its write arrives (ext3's rules: goal = the block after the previous logical
block's), `delayed` when the cache writes back (ext4 delalloc). Extents are counted from the
image as filefrag(8) counts them; the read rate is the file size over dd's simulated time.
"""

from __future__ import annotations

from . import phases
from .spec import Compare, Config, Experiment, Panel

NAME = "mmap-fragmentation"
SEED = "004"
TITLE = "ftruncate + MAP_SHARED random writes: immediate vs delayed allocation (seed 004)"

MiB = 1 << 20
SRC = "seed 004 (Andy Isaacson, LKML 2009-04-14), ext3 1 GiB file"
SEED_EXTENTS, SEED_PERFECT, SEED_MB_S, DISK_MB_S = 50435, 9, 18.4, 70.0


HEADLINE = (
    "extents: immediate / delayed, mmap",
    "dd time: immediate / delayed, mmap",
    "extents: delayed small cache / delayed, mmap",
    "dd time: immediate / delayed small cache, mmap",
)


def workload(quick: bool) -> dict:
    return {"kind": "none", "describe": "one file filled page by page in alloctest's order"}


def default_size(quick: bool) -> int:
    return 64 * MiB if quick else 256 * MiB


def cname(alloc: str, how: str) -> str:
    return f"{alloc} {how}"


SMALL = "delayed mmap, small cache"

EXPLAIN = {
    "extents mmap": "Same mechanism: the kernel's FUSE write-back sends the dirtied pages in batches, "
                    "each in ascending order, and `ext2` allocates each block as its write arrives, so "
                    "every batch is a sweep over the whole file. The FUSE dirty limit keeps batches small, "
                    "and alloctest's order is a fixed stride, so logically adjacent pages never share a "
                    "batch: every block is an extent (ext3 on a 6 GB machine: 5.2 blocks per extent; a "
                    "64 MiB file here: ~8.5). Delayed: 67, as filefrag counts each indirect block, which "
                    "simfs keeps apart from the data (ext4's extents have none; it got 30-40)",
    "dd mmap": "Close: the immediate layout's blocks lie in ~8 interleaved sweeps, so most of dd's reads "
               "are short forward jumps the drive's read-ahead serves (22.7 MB/s; the seed 18.4 MB/s); "
               "delayed reads at the model's full rate (76 MB/s; the seed's disk 70 MB/s)",
    "extents pwrite": "pwrite reaches simfs in the program's random order (nothing batches it), so "
                      "immediate allocation scatters every block; no seed figure",
    "dd pwrite": "Every block a random seek over 256 MiB (0.7 MB/s); no seed figure for pwrite",
    "write": "Immediate allocation writes each block as it arrives; delayed writes the whole file once, "
             "sequentially, at msync/fsync; not measured by the seed",
    "small extents": "With a 128 MiB cache, background write-back starts at 10 % of it and writes the "
                     "oldest dirty pages, a random subset, so delayed allocation places the file piecemeal; "
                     "runs whose goal (the nearest extent's offset) is taken go elsewhere and later runs "
                     "follow them (the second line in the block map). ext4 kept 30-40 extents with RAM 6x "
                     "the file; how simfs's `delayed` fares with ext4's own preallocation rules is not modelled",
    "small dd": "Piecemeal placement costs about as much as immediate allocation here (20.4 vs 22.7 MB/s): "
                "the delayed allocator's advantage depends on the file staying dirty until msync",
}


def build(quick: bool, wl, size: int | None = None) -> Experiment:
    size = size or default_size(quick)
    image = max(512 * MiB, 4 * size)
    # The seed's machine had 6 GB for a 1 GB file. simfs starts background write-back at 10 % of
    # its cache, so the file stays dirty until msync (where delayed allocation sees it whole)
    # only with a cache of more than 10x the file.
    cache = 12 * size
    mkfs = {"size_bytes": image, "block_size": 4096, "inode_size": 256}
    configs = []
    for how in ("mmap", "pwrite"):
        for alloc in ("ext2", "delayed"):
            configs.append(Config(cname(alloc, how),
                                  mount={"alloc": alloc, "writeback": "sync", "cache": cache, "disk": "sata7200"},
                                  mkfs=mkfs, params={"alloc": alloc, "writes": how, "cache": f"{cache // MiB}M"}))
    if not quick:
        configs.append(Config(SMALL, mount={"alloc": "delayed", "writeback": "sync", "cache": size // 2,
                                            "disk": "sata7200"},
                              mkfs=mkfs, params={"alloc": "delayed", "writes": "mmap",
                                                 "cache": f"{size // 2 // MiB}M"}))
    compares = []
    for how in ("mmap", "pwrite"):
        imm, dl = cname("ext2", how), cname("delayed", how)
        mm = how == "mmap"
        compares += [
            Compare(f"extents: immediate / delayed, {how}", "write", imm, dl, SEED_EXTENTS / 35 if mm else None,
                    f"{SRC}: 50,435 extents vs ext4 'around 30-40'" if mm else
                    "the seed measured the shared mapping only", metric="extents", check=mm,
                    explain=EXPLAIN[f"extents {how}"]),
            Compare(f"dd time: immediate / delayed, {how}", "dd", imm, dl, DISK_MB_S / SEED_MB_S if mm else None,
                    f"{SRC}: 18.4 MB/s vs the disk's 70 MB/s" if mm else
                    "the seed measured the shared mapping only", check=mm, explain=EXPLAIN[f"dd {how}"]),
            Compare(f"write: immediate / delayed, {how}", "write", imm, dl, None,
                    "seed 004 gives no ext4 write time", expect="", check=False, explain=EXPLAIN["write"]),
        ]
    if not quick:
        compares += [
            Compare("extents: delayed small cache / delayed, mmap", "write", SMALL, cname("delayed", "mmap"),
                    None, "no figure: the seed's ext4 ran with RAM 6x the file", metric="extents", expect="",
                    check=False, explain=EXPLAIN["small extents"]),
            Compare("dd time: immediate / delayed small cache, mmap", "dd", cname("ext2", "mmap"), SMALL,
                    DISK_MB_S / SEED_MB_S, f"{SRC}: 18.4 MB/s vs the disk's 70 MB/s", check=False,
                    explain=EXPLAIN["small dd"]),
        ]
    for c in compares:
        c.headline = c.label in HEADLINE
    exp = Experiment(
        name=NAME, seed=SEED, title=TITLE,
        description=(f"a {size // MiB} MiB file: ftruncate, every page written in alloctest's order through "
                     "MAP_SHARED + msync (or pwrite + fsync), unmount; remount, dd bs=1M to /dev/null; "
                     "ext2 (immediate allocation, ext3's goal rules) vs delayed; SATA 7200"),
        configs=configs,
        phases=[phases.mmap_write(), phases.dd_read()],
        compares=compares, workload=workload(quick),
        repetitions=2 if quick else 3,
        panels=[Panel("dd of the file: immediate vs delayed allocation (mmap)", "dd",
                      [cname("ext2", "mmap"), cname("delayed", "mmap")])],
        blockmap=[c.name for c in configs], blockmap_files=phases.BIG,
        notes=["the write phase includes msync/fsync and the final write-back (alloctest's total "
               "included msync); the kernel's FUSE write-back timing varies from run to run, "
               f"so each configuration runs {2 if quick else 3} times (mean, min-max)"],
        params={"size": size}, quick=quick)
    return exp
