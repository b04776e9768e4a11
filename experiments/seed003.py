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
from .spec import Compare, Config, Experiment, Panel, Phase

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
PHASES = ("newfs", "restore", "fsck", "tar")
#: the seed's newfs figures also stand beside simfs's own ext2 mkfs (a secondary row)
PUBLISHED_AS = {"mkfs": "newfs"}
SRC = "seed 003 (Pieter de Goeje, freebsd-current 2010-01-01), mean of 2 runs"


def published(offset: int, phase: str) -> float:
    i = PHASES.index(PUBLISHED_AS.get(phase, phase))
    return sum(r[i] for r in RUNS[offset]) / len(RUNS[offset])


#: the seed's partition: newfs's request pattern is computed for it, unscaled (31 requests; it
#: does not need the experiment's image)
NEWFS_SIZE = 10 << 30

EXPLAIN = {
    "newfs": "newfs (UFS2, -f 4096 -b 32768, the seed's 10 GB) writes 14 cylinder groups with one "
             "128 KiB pwrite each, synchronously; misaligned, the drive caches each and reads the two "
             "partial end sectors while destaging (a seek and a rotation each). The seed's 0.8 s extra "
             "(~55 ms per group) is more than those pre-reads cost: the firmware time is not modelled",
    "mkfs": "simfs's own ext2 mkfs (secondary row): large sequential inode-table writes, so only each "
            "request's ends need a pre-read",
    "restore": "Documented miss: the model's drive caches misaligned writes and pre-reads their partial "
               "end sectors while destaging, in elevator order, and merges adjacent writes so only a "
               "stream's ends are partial - calibrated on published EARS figures (OSNews ~3x random "
               "sync, des.no ~2.8x strided, Dell: sequential writes coalesce). The seed's collapse "
               "(queue over 600, over 30 s per write, 14x) is firmware behaviour under a deep queue "
               "that no published description explains; making every cached command wait for its "
               "pre-read (Dell's wording) gave only 1.4x here and 35x on des.no's test (see "
               "disk_models/advanced_format.py)",
    "fsck": "Reads fetch whole physical sectors; a misaligned read starts one physical sector early, "
            "a few microseconds per request: no visible effect, as in the seed",
    "tar": "Documented miss: misaligned reads start a few sectors early (whole physical sectors); "
           "read-ahead hides the rest. No documented read mechanism gives the seed's ~20 %",
    "nowc": "Supplementary (no published counterpart): the same drive with its write cache off; every "
            "misaligned write pays a pre-read and a revolution on the media",
}


HEADLINE = (
    "newfs: offset 41 / 40",
    "restore: offset 41 / 40",
    "fsck: offset 41 / 40",
    "tar: offset 41 / 40",
)


def newfs_phase():
    """newfs's request pattern (simfs.inprocess.timed_newfs) on this configuration's disk."""
    from simfs.inprocess.timed_newfs import timed_newfs
    return Phase("newfs", "FreeBSD newfs -f 4096 -b 32768 of the seed's 10 GB partition: its request "
                          "pattern, issued synchronously to the disk model", kind="volume",
                 command=lambda c: timed_newfs(c.config.mount["disk"], NEWFS_SIZE))


def workload(quick: bool) -> dict:
    return {"kind": "tree", "seed": 3, "files": 400 if quick else 5000}


def cname(offset: int) -> str:
    return f"offset {offset}"


#: directions the quick run checks (tests/mount/test_experiments.py asserts every checked one)
CHECKED = ("newfs", "mkfs")


def build(quick: bool, wl) -> Experiment:
    cache = sizing.cache_for(wl.bytes)
    size = sizing.image_for(wl.bytes, 16, lo=(512 << 20) if quick else (2 << 30))
    offsets = (34, 39, 40, 41) if quick else tuple(range(34, 42))
    configs = [Config(cname(o), mount={"alloc": "cg-2010", "writeback": "sync", "cache": cache,
                                       "disk": f"wd-ears,partition_offset={o}"},
                      mkfs={"size_bytes": size, "block_size": 4096, "inode_size": 256},
                      params={"offset": o, "aligned": "yes" if o % 8 == 0 else "no", "write cache": "on"})
               for o in offsets]
    # supplementary: the same drive with its write cache off (no published counterpart)
    configs += [Config(f"offset {o}, no write cache",
                       mount={"alloc": "cg-2010", "writeback": "sync", "cache": cache,
                              "disk": f"wd-ears,partition_offset={o},write_cache=no"},
                       mkfs={"size_bytes": size, "block_size": 4096, "inode_size": 256},
                       params={"offset": o, "aligned": "yes" if o % 8 == 0 else "no", "write cache": "off"})
                for o in (40, 41)]
    compares = []
    for o in offsets:
        if o == 40:
            continue
        for ph in PHASES + ("mkfs",):
            pub = published(o, ph) / published(40, ph)
            compares.append(Compare(
                f"{ph}: offset {o} / 40", ph, cname(o), cname(40), pub,
                f"{SRC}: {published(o, ph):.2f} / {published(40, ph):.2f} s"
                + (" (the seed's newfs, beside ext2 mkfs)" if ph == "mkfs" else ""),
                expect={"fsck": ""}.get(ph, ">"), check=ph in CHECKED, explain=EXPLAIN[ph]))
    compares.append(Compare("restore: offset 41 / 40, no write cache (supplementary)", "restore",
                            "offset 41, no write cache", "offset 40, no write cache", None,
                            "no published figure: the seed's drive had its write cache on",
                            check=False, explain=EXPLAIN["nowc"]))
    for c in compares:
        c.headline = c.label in HEADLINE
    return Experiment(
        name=NAME, seed=SEED, title=TITLE,
        description=("per partition offset: newfs (its request pattern, timed on the model), ext2 mkfs, "
                     "restore-like unpack (tar xpf), fsck-like metadata scan, tar cf /dev/zero; "
                     "WD10EARS (4K physical sectors)"),
        configs=configs,
        phases=[phases.mkfs_phase(), newfs_phase(), phases.unpack("restore", trace=True),
                phases.metadata_scan("fsck"), phases.tar_readback("tar", what="restore")],
        compares=compares, workload=workload(quick),
        panels=[Panel("restore (tar xpf): offset 40 vs 41", "restore", [cname(40), cname(41)]),
                Panel("tar cf /dev/zero: offset 40 vs 41", "tar", [cname(40), cname(41)])],
        notes=[f"buffer cache {cache >> 20} MiB (a quarter of the data, within 4 to 128 MiB), "
               f"image {size >> 20} MiB; restore is "
               "timed without the final write-back, as the seed's `time restore` (umount not timed)",
               "newfs is FreeBSD's UFS2 request pattern for the seed's 10 GB partition (unscaled), "
               "simfs.inprocess.timed_newfs; mkfs is simfs's ext2 mkfs of the image (secondary)"],
        quick=quick)
