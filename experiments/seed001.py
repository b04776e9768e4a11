"""Seed 001: readdir in hash order makes find and cp -a seek-bound (ext4 vs btrfs, 2012).

Jacek Luczak, linux-ext4, 2012-02-29 ("getdents - ext4 vs btrfs performance"): a Jenkins
workspace of svn checkouts (1,978,149 files, 844,008 directories) on a RAID-1 of 10K SAS
drives. Kernel 3.2.7:

    test          ext4 (hash order)   btrfs (inode order)
    find -type d      11m 20s             2m 21s
    find -type f      11m 22s             2m 23s
    cp -a             1h 27m             39m 35s
    rm -rf             3m 38s             10m 43s

Here the same ext2 image (Linux ext2 allocator and Orlov inode placement, as ext3/4) is
read back with readdir in htree hash order (`hash`, ext4), in on-disk slot order
(`linear`, ext2 without dir_index) and in inode order (`inode`: btrfs, or spd_readdir).
Only the directory order differs, so the ratios isolate the seed's mechanism; btrfs's
other differences (its own allocator, a B-tree for everything) are not modelled.
"""

from __future__ import annotations

from . import phases, sizing
from .spec import Compare, Config, Experiment, Panel

NAME = "readdir-order"
SEED = "001"
TITLE = "readdir order: hash vs linear vs inode (seed 001)"

ORDERS = ("hash", "linear", "inode")
# kernel 3.2.7 (and 2.6.39.4-3), seconds: ext4 / btrfs
PUBLISHED = {"find-d": (680, 141, 1060, 142), "find-f": (682, 143, 1056, 146),
             "cp-a": (5220, 2375, 5280, 2182), "rm-rf": (218, 643, 223, 471)}
SRC = "seed 001 (Jacek Luczak, linux-ext4 2012-02-29), kernel 3.2.7"


EXPLAIN = {
    "find-d": "Same direction, smaller, and not larger at the seed's own size (1.20x in-process, "
              "below): both orders pay about a seek per directory; what made inode order cheap on "
              "the seed's ext4 - 32 inode-table blocks read per miss (inode_readahead_blks) and "
              "flex_bg's packed tables - is not in the modelled ext2. find needs no stat of files "
              "(d_type), so -type f costs what -type d does, as in the seed",
    "cp-a": "No effect: cp -a is dominated by writing the copy (async, the same bytes in every order) "
            "and by reading file data, which sits near its directory in every order; the seed's copy "
            "compared ext4 with btrfs, whose write paths also differ",
    "rm-rf": "Opposite: in simfs only the order differs, and hash order makes unlink's inode and bitmap "
             "updates random; the seed compared two file systems, and btrfs's slow removal is its own "
             "B-tree work, not readdir order",
    "linear": "No seed figure: ext2 without dir_index returns creation order, about inode order here",
}


HEADLINE = (
    "find-d: hash / inode",
    "find-f: hash / inode",
    "cp-a: hash / inode",
    "rm-rf: hash / inode",
)


def workload(quick: bool) -> dict:
    return {"kind": "tree", "seed": 1, "files": 120 if quick else 2500, "svn": True}


def build(quick: bool, wl) -> Experiment:
    size = sizing.image_for(wl.bytes, 8, lo=512 << 20)
    configs = [Config(f"dirorder={o}",
                      mount={"alloc": "ext2", "dirorder": o, "writeback": "async", "disk": "sas10k"},
                      mkfs={"size_bytes": size, "block_size": 4096, "inode_size": 256},
                      params={"dirorder": o}) for o in ORDERS]
    compares = []
    for ph, (e4, bt, e4o, bto) in PUBLISHED.items():
        expect = "<" if ph == "rm-rf" else ">"
        compares.append(Compare(f"{ph}: hash / inode", ph, "dirorder=hash", "dirorder=inode", e4 / bt,
                                f"{SRC}: ext4 {e4} s / btrfs {bt} s (2.6.39: {e4o}/{bto})",
                                expect=expect, check=ph in ("find-d", "find-f"),
                                explain=EXPLAIN["find-d" if ph.startswith("find") else ph]))
        compares.append(Compare(f"{ph}: linear / inode", ph, "dirorder=linear", "dirorder=inode", None,
                                "no figure: ext2 without dir_index returns creation order", expect="",
                                check=False, explain=EXPLAIN["linear"]))
    for c in compares:
        c.headline = c.label in HEADLINE
    return Experiment(
        name=NAME, seed=SEED, title=TITLE,
        description=("unpack an svn working copy (tar xf), then, each cold: find -type d, find -type f, "
                     "cp -a (within the file system), rm -rf of the original; SAS 10K"),
        configs=configs,
        phases=[phases.unpack("unpack", dest="tree", setup=True),
                phases.find_type("d", trace=True), phases.find_type("f"),
                phases.cp_a(), phases.rm_rf()],
        compares=compares, workload=workload(quick),
        panels=[Panel("find -type d: hash vs linear vs inode order", "find-d", [c.name for c in configs])],
        blockmap=[],
        notes=["mounts are async (ext4 data=writeback journals metadata; its commits are not "
               "modelled); cp -a and rm -rf are timed without the final write-back"],
        quick=quick)
