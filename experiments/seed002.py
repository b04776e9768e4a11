"""Seed 002: async mounts write src/ ~2x faster than sync metadata; soft updates slower still.

Bruce Evans, freebsd-current, 2006-06-22 ("Re: Journaling UFS with gjournal"): benchmark of
Jan 29 2004 on a WD 1200JB, "contrib crypto lib sys" of /usr/src, FFS 16384/2048, two runs
each (ffs1, ffs2):

    mount      tarcp /f srcs       tar cf /dev/zero srcs
    default    43.23  41.26        15.58  15.80
    async      22.17  21.67        15.52  15.65
    softdep    60.35  61.82        17.32  17.56

"soft updates being about 2 seconds or 10% slower for read-back ... about 3 times as slow as
async mounts and about 1.5 times as slow as the default", which he blamed on "soft updates
interacting badly with bufdaemon" (softdep models the dependencies, rollback writes and bufdaemon's
preference for buffers without dependencies: docs/reference/soft-updates.md); the read-back
slowdown he suspected (never confirmed) comes from where the first indirect block lands
(`cg-2010`: the section-start rule, `cg-2013`: inline after the 12th data block,
r242520/r248623, suggested by Bruce); simfs does not tie placement to the write-back mode.
"""

from __future__ import annotations

from . import phases, sizing
from .spec import Compare, Config, Experiment, Panel

NAME = "writeback"
SEED = "002"
TITLE = "write-back: sync metadata vs async vs soft updates (seed 002)"

MODES = ("sync", "async", "softdep")
ALLOCS = ("cg-2010", "cg-2013")
TARCP = {"sync": (43.23 + 41.26) / 2, "async": (22.17 + 21.67) / 2, "softdep": (60.35 + 61.82) / 2}
TAR = {"sync": (15.58 + 15.80) / 2, "async": (15.52 + 15.65) / 2, "softdep": (17.32 + 17.56) / 2}
SRC = "seed 002 (Bruce Evans, 2006-06-22; runs of 2004-01-29, mean of ffs1/ffs2)"


EXPLAIN = {
    "sync/async": "Synchronous inode and directory writes on every create (FFS's default mount), timed "
                  "without the final write-back as the seed timed it; cg-2013 keeps directory blocks in "
                  "the metadata area, so its sync writes seek further",
    "softdep": "Direction reproduced, size not (a documented miss): softdep now carries soft updates' "
               "ordering rules (bitmap before inode before entry; a new block before the pointer to it), so "
               "blocks bufdaemon or the syncer write before what they wait for is on disk go out rolled back "
               "and are written again (counter softdep_rollbacks), and bufdaemon prefers buffers without "
               "dependencies; that costs extra writes and seeks but stays well short of the seed's 2.79x and "
               "below sync. Not modelled: per-field rollback, deferred remove work, background bitmap writes, "
               "and whatever else in FreeBSD 5's bufdaemon made it worse (docs/reference/soft-updates.md)",
    "tar softdep": "Not reproduced (a documented miss): the write-back mode does not change where simfs puts "
                   "blocks (allocation happens at write time in every mode); Bruce suspected the delayed "
                   "allocation under soft updates strands the first indirect block, which he never confirmed "
                   "and which simfs's layering (allocators above the cache) does not model",
    "tar async": "Same: the layout does not depend on the write-back policy, as in the seed",
    "cg": "The first indirect block: cg-2010 puts it at the start of the group, cg-2013 inline after "
          "block 11; ~7 % on read-back in every mode, the size of the effect Bruce ascribed to it",
}


HEADLINE = (
    "tarcp: sync / async, cg-2010",
    "tarcp: sync / async, cg-2013",
    "tarcp: softdep / async, cg-2010",
    "tar: softdep / sync, cg-2010",
    "tar: cg-2010 / cg-2013, softdep",
)


def workload(quick: bool) -> dict:
    return {"kind": "tree", "seed": 2, "files": 500 if quick else 5000}


def cname(alloc: str, mode: str) -> str:
    return f"{alloc} {mode}"


def build(quick: bool, wl) -> Experiment:
    cache = sizing.cache_for(wl.bytes)
    size = sizing.image_for(wl.bytes, 16, lo=512 << 20)
    allocs = ("cg-2010",) if quick else ALLOCS
    configs = [Config(cname(a, m), mount={"alloc": a, "writeback": m, "cache": cache, "disk": "wd1200jb"},
                      mkfs={"size_bytes": size, "block_size": 4096, "inode_size": 256},
                      params={"alloc": a, "writeback": m})
               for a in allocs for m in MODES]
    compares = []
    for a in allocs:
        compares += [
            Compare(f"tarcp: sync / async, {a}", "tarcp", cname(a, "sync"), cname(a, "async"),
                    TARCP["sync"] / TARCP["async"], f"{SRC}: {TARCP['sync']:.2f} / {TARCP['async']:.2f} s",
                    explain=EXPLAIN["sync/async"]),
            Compare(f"tarcp: softdep / async, {a}", "tarcp", cname(a, "softdep"), cname(a, "async"),
                    TARCP["softdep"] / TARCP["async"], f"{SRC}: {TARCP['softdep']:.2f} / {TARCP['async']:.2f} s",
                    explain=EXPLAIN["softdep"]),
            Compare(f"tarcp: softdep / sync, {a}", "tarcp", cname(a, "softdep"), cname(a, "sync"),
                    TARCP["softdep"] / TARCP["sync"], f"{SRC}: {TARCP['softdep']:.2f} / {TARCP['sync']:.2f} s",
                    check=False, explain=EXPLAIN["softdep"]),
            Compare(f"tar: softdep / sync, {a}", "tar", cname(a, "softdep"), cname(a, "sync"),
                    TAR["softdep"] / TAR["sync"], f"{SRC}: {TAR['softdep']:.2f} / {TAR['sync']:.2f} s",
                    check=False, explain=EXPLAIN["tar softdep"]),
            Compare(f"tar: async / sync, {a}", "tar", cname(a, "async"), cname(a, "sync"),
                    TAR["async"] / TAR["sync"], f"{SRC}: {TAR['async']:.2f} / {TAR['sync']:.2f} s",
                    expect="", check=False, explain=EXPLAIN["tar async"]),
        ]
    if not quick:
        for m in MODES:
            compares.append(Compare(f"tar: cg-2010 / cg-2013, {m}", "tar", cname("cg-2010", m),
                                    cname("cg-2013", m), None,
                                    "seed 002: first indirect block placement 'reduces the disadvantage'",
                                    expect="", check=False, explain=EXPLAIN["cg"]))
    for c in compares:
        c.headline = c.label in HEADLINE
    return Experiment(
        name=NAME, seed=SEED, title=TITLE,
        description=("tarcp onto a fresh image, unmount, remount, tar cf /dev/zero; write-back sync "
                     "(FFS default: synchronous metadata), async, softdep; cg-2010 vs cg-2013; WD1200JB"),
        configs=configs,
        phases=[phases.tarcp(), phases.tar_readback()],
        compares=compares, workload=workload(quick),
        panels=[Panel("tar cf /dev/zero after sync / async / softdep tarcp (cg-2010)", "tar",
                      [cname("cg-2010", m) for m in MODES])],
        blockmap=[cname(a, "softdep") for a in allocs],
        notes=[f"buffer cache {cache >> 20} MiB (a quarter of the data, within 4 to 128 MiB), "
               f"image {size >> 20} MiB; tarcp "
               "is timed without the final write-back, as the seed timed it"],
        quick=quick)
