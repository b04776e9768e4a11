"""Seed 003: a 4K-sector drive with the partition at 512-byte offsets 34..41: only 40 is fast.

Pieter de Goeje, freebsd-current, 2010-01-01 ("Re: File system blocks alignment"): a WD
Caviar Green EARS (4 KiB physical sectors, 512-byte logical), GPT partition of 10 GB at
sector offset 34..41, two runs each: newfs -f 4096 -b 32768, restore -rf of a ~550 MB dump,
umount, fsck_ffs, mount, tar -cf /dev/null /mnt (bsdtar: it does read the data).

    offset   newfs   restore   fsck_ffs   tar      (mean of the two runs, seconds)
    34        0.98   133.72      1.79     9.70
    35        1.08   144.95      1.87     9.66
    36        0.97   152.54      1.84     9.94
    37        0.98   138.18      1.80     9.76
    38        0.95   137.88      1.87     9.58
    39        0.94   142.77      1.90     9.72
    40        0.20     9.94      1.82     7.86
    41        1.02   142.04      1.86     9.34

Here: the wd-ears model with `partition_offset` 34..41, ext2 with 4 KiB blocks and the
FreeBSD FFS allocator of the time (`cg-2010`), default (sync-metadata) mounts. "restore" is
`tar xpf` of the tree's tarball (restore(8) also writes files one after another); "fsck" is
the in-process metadata scan (experiments/fsscan.py); "tar" is `tar cf /dev/zero`.
"""

from __future__ import annotations

from . import phases, sizing
from .spec import Compare, Config, Experiment, Panel

NAME = "alignment"
SEED = "003"
TITLE = "4K-sector drive: partition offsets 34..41 (seed 003)"

RUNS = {  # offset -> [(newfs, restore, fsck, tar), run 2]
    34: [(0.98, 117.76, 1.83, 9.83), (0.98, 149.68, 1.75, 9.56)],
    35: [(0.95, 135.31, 1.82, 9.74), (1.21, 154.59, 1.91, 9.58)],
    36: [(0.98, 151.36, 1.77, 9.86), (0.95, 153.71, 1.90, 10.02)],
    37: [(0.98, 128.90, 1.76, 9.76), (0.98, 147.45, 1.83, 9.75)],
    38: [(0.95, 150.35, 2.04, 9.42), (0.94, 125.40, 1.69, 9.74)],
    39: [(0.95, 135.23, 1.93, 9.82), (0.93, 150.30, 1.86, 9.61)],
    40: [(0.22, 11.05, 1.97, 7.86), (0.17, 8.83, 1.67, 7.86)],
    41: [(0.95, 133.37, 1.71, 9.43), (1.09, 150.71, 2.01, 9.25)],
}
PHASES = ("mkfs", "restore", "fsck", "tar")
SRC = "seed 003 (Pieter de Goeje, freebsd-current 2010-01-01), mean of 2 runs"


def published(offset: int, phase: str) -> float:
    i = PHASES.index(phase)
    return sum(r[i] for r in RUNS[offset]) / len(RUNS[offset])


EXPLAIN = {
    "mkfs": "ext2's mkfs writes whole inode tables in large sequential requests, so a misaligned "
            "partition pays a pre-read only at each request's ends; newfs's many small cylinder-group "
            "writes suffer more",
    "restore": "Not reproduced: the model's drive caches writes and destages them merged, and a physical "
               "sector it has just written or holds dirty neighbours for needs no pre-read; tar's "
               "synchronous metadata writes hit the same inode-table and directory blocks again and "
               "again, and data goes out in long runs. The seed's drive collapsed (queue of 600, 30 s per "
               "write): firmware behaviour the model does not have (see the no-write-cache rows)",
    "fsck": "Reads cost what they cost on a 512-byte drive (whole physical sectors are read anyway); "
            "the seed agrees",
    "tar": "The model charges misaligned reads nothing (whole physical sectors are read anyway); the "
           "seed's ~20 % is not modelled",
    "nowc": "With the write cache off every write reaches the media: misaligned pre-reads cost a "
            "revolution each, small beside the seeks of synchronous writes",
    "nowc vs 40": "Unlike drives: the misaligned, uncached restore takes 147 s (the seed's misaligned "
                  "runs: 118-155 s) against the aligned cached 9.7 s (seed 9.9 s) - consistent with the "
                  "EARS not caching writes it must read-modify-write; a hypothesis, not a reproduction",
}


HEADLINE = (
    "mkfs: offset 41 / 40",
    "restore: offset 41 / 40",
    "fsck: offset 41 / 40",
    "tar: offset 41 / 40",
    "restore: offset 41 no write cache / offset 40",
)


def workload(quick: bool) -> dict:
    return {"kind": "tree", "seed": 3, "files": 400 if quick else 5000}


def cname(offset: int) -> str:
    return f"offset {offset}"


def build(quick: bool, wl) -> Experiment:
    cache = sizing.cache_for(wl.bytes)
    size = sizing.image_for(wl.bytes, 16, lo=(512 << 20) if quick else (2 << 30))
    offsets = (34, 39, 40, 41) if quick else tuple(range(34, 42))
    configs = [Config(cname(o), mount={"alloc": "cg-2010", "writeback": "sync", "cache": cache,
                                       "disk": f"wd-ears,partition_offset={o}"},
                      mkfs={"size_bytes": size, "block_size": 4096, "inode_size": 256},
                      params={"offset": o, "aligned": "yes" if o % 8 == 0 else "no"})
               for o in offsets]
    # the same drive with its write cache off: RMW no longer hidden by destaging
    configs += [Config(f"offset {o}, no write cache",
                       mount={"alloc": "cg-2010", "writeback": "sync", "cache": cache,
                              "disk": f"wd-ears,partition_offset={o},write_cache=no"},
                       mkfs={"size_bytes": size, "block_size": 4096, "inode_size": 256},
                       params={"offset": o, "aligned": "yes" if o % 8 == 0 else "no", "write cache": "off"})
                for o in (40, 41)]
    for c in configs[:len(offsets)]:
        c.params["write cache"] = "on"
    compares = []
    for o in offsets:
        if o == 40:
            continue
        for ph in PHASES:
            compares.append(Compare(
                f"{ph}: offset {o} / 40", ph, cname(o), cname(40), published(o, ph) / published(40, ph),
                f"{SRC}: {published(o, ph):.2f} / {published(40, ph):.2f} s",
                expect={"fsck": ""}.get(ph, ">"), check=ph == "mkfs", explain=EXPLAIN[ph]))
    compares += [
        Compare(f"{ph}: offset 41 / 40, no write cache", ph, "offset 41, no write cache",
                "offset 40, no write cache", published(41, ph) / published(40, ph),
                f"{SRC}: {published(41, ph):.2f} / {published(40, ph):.2f} s", check=ph == "restore",
                expect={"fsck": ""}.get(ph, ">"), explain=EXPLAIN["nowc" if ph == "restore" else "tar"])
        for ph in ("restore", "tar")]
    compares.append(Compare("restore: offset 41 no write cache / offset 40", "restore",
                            "offset 41, no write cache", cname(40), published(41, "restore")
                            / published(40, "restore"), f"{SRC}", check=False,
                            explain=EXPLAIN["nowc vs 40"]))
    for c in compares:
        c.headline = c.label in HEADLINE
    return Experiment(
        name=NAME, seed=SEED, title=TITLE,
        description=("per partition offset: mkfs (timed on the model), restore-like unpack (tar xpf), "
                     "fsck-like metadata scan, tar cf /dev/zero; WD10EARS (4K physical sectors)"),
        configs=configs,
        phases=[phases.mkfs_phase(), phases.unpack("restore", trace=True), phases.metadata_scan("fsck"),
                phases.tar_readback("tar", what="restore")],
        compares=compares, workload=workload(quick),
        panels=[Panel("restore (tar xpf): offset 40 vs 41", "restore", [cname(40), cname(41)]),
                Panel("tar cf /dev/zero: offset 40 vs 41", "tar", [cname(40), cname(41)])],
        notes=[f"buffer cache {cache >> 20} MiB (a quarter of the data), image {size >> 20} MiB; restore is "
               "timed without the final write-back, as the seed's `time restore` (umount not timed)"],
        quick=quick)
