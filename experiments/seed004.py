"""Seed 004: random writes into an ftruncate'd MAP_SHARED file: 50,435 extents where 9 would do.

Andy Isaacson, LKML 2009-04-14 ("[ext3 performance regression] internal fragmentation on
ftruncate+MAP_SHARED allocations"): alloctest.c fills a 1 GiB file through a shared mapping,
page (i + 23) * 1000000007 % npages for i = 0..npages-1, then msync. On ext3 (2.6.29, "amd64
quad-core 6GB"): "50435 extents found, perfection would be 9 extents"; `dd bs=1M` of the file:
18.4 MB/s "on a 7200rpm disk that can do 70MB/s sequential"; ext4 (delayed allocation)
"around 30-40 extents". With vm.dirty_ratio=90 (write-back only at msync): 483 extents.

Here, in-process (the verbs, simfs.inprocess.verbs): `mmap-fill --writes mmap` dirties the pages
in that order in the modelled system's page cache (simfs.inprocess.pagecache, Linux 2.6.29's
write-back with the seed machine's RAM), which decides when each page reaches the file
system; `ext2` allocates a block when its page is written back (ext3's goal rules),
`delayed` places the pages written back together (ext4 delalloc with mballoc's preallocation
windows). The host's page cache never sees the pages, so the figures are the same on any
host. pwrite rows: `mmap-fill --writes pwrite` (exact against the mounted tool, see
docs/verbs-validation.md). Then a cold `dd bs=1M` (the `dd` verb), read as Linux reads
(`read_batch`: a read's window submitted at once, in sector order). Extents are counted on the
image as filefrag -B counts an ext2 file, and as data extents (an extent-mapped file's count).
The quick run scales the RAM with the file (the seed's 6 GB per 1 GiB), so the file/RAM ratio
and with it the write-back pattern stay the seed's. Mounts are `writeback=async`: Linux writes no
metadata synchronously here (ext3 journals it; the journal is not modelled). The model's flusher
shares the dirtier's clock, so a synchronous wait inside write-back (FFS's `sync` mode writes
new indirect blocks at once) would stall the fill itself: another reason not to use it here.
"""

from __future__ import annotations

from . import phases
from .spec import Compare, Config, Experiment, Panel, Phase

NAME = "mmap-fragmentation"
SEED = "004"
TITLE = "ftruncate + MAP_SHARED random writes: immediate vs delayed allocation (seed 004)"

MiB, GiB = 1 << 20, 1 << 30
SRC = "seed 004 (Andy Isaacson, LKML 2009-04-14), ext3 1 GiB file"
SEED_EXTENTS, SEED_PERFECT, SEED_MB_S, DISK_MB_S = 50435, 9, 18.4, 70.0
SEED_EXTENTS_RATIO90 = 483        # the same run with vm.dirty_ratio=90
SEED_RAM = 6 * GiB                # "amd64 quad-core 6GB"
BIG = phases.BIG

HEADLINE = (
    "data extents: immediate / delayed, mmap",
    "dd time: immediate / delayed, mmap",
)


def workload(quick: bool) -> dict:
    return {"kind": "none", "describe": "one file filled page by page in alloctest's order"}


def default_size(quick: bool) -> int:
    return 64 * MiB if quick else 1 * GiB


def cname(alloc: str, how: str) -> str:
    return f"{alloc} {how}"


RATIO90 = "ext2 mmap, dirty_ratio=90"

EXPLAIN = {
    "extents mmap": "Data extents (what filefrag counts on ext3 with -B and on ext4's extent-mapped "
                    "files). The modelled write-back (Linux 2.6.29, 6 GB): past the background threshold "
                    "and the dirtier's limit, pages leave in ascending chunks of 1024-1536 from a cyclic "
                    "index while the fill goes on, so every chunk is a sparse sweep; ext2/ext3 give each "
                    "page its block as its chunk is written, and later sweeps fill the gaps elsewhere "
                    "(blocks per extent: simfs 5.5, the seed 5.2). Delayed allocation keeps each 8 MiB "
                    "window of the file in order (mballoc's preallocation): the minimum, one extent per "
                    "block group crossed (ext4 had 30-40), so the ratio is larger than the seed's",
    "dd mmap": "dd reads the sweeps' areas in turn; Linux submits each read-ahead window at once and "
               "its elevator sorts it by sector (`read_batch`), so the areas are visited in order within "
               "a window (without it simfs gave 6.4x). Seed: 18.4 MB/s on a 70 MB/s disk; simfs 19.4 MB/s "
               "against 75.8 MB/s for the contiguous file",
    "extents pwrite": "pwrite reaches simfs in the program's random order (nothing batches it), so "
                      "immediate allocation scatters every block; no seed figure",
    "dd pwrite": "Every block a random seek; no seed figure for pwrite",
    "write": "Immediate allocation writes each page's block as its chunk goes out; delayed the same "
             "pages, placed in order; not measured by the seed",
    "ratio90": "The seed's workaround run (vm.dirty_ratio=90: the dirtier is never throttled, only "
               "background write-back runs before msync) had 483 extents; the model's background "
               "write-back still writes sparse chunks at the disk's rate from the 5 % threshold on, so "
               "it fragments far more - a documented miss (the flusher's own cost per page and its "
               "start-up are not modelled)",
}


#: the seed's system reads as Linux does: a read's whole window at once, sorted by the elevator
LINUX_READ = {"read_batch": "yes"}


def _ram(size: int) -> int:
    """The seed's RAM for its 1 GiB file, scaled with the file (whole MiB)."""
    return max(16 * MiB, SEED_RAM * size // GiB // MiB * MiB)


def build(quick: bool, wl, size: int | None = None) -> Experiment:
    size = size or default_size(quick)
    image = max(512 * MiB, 4 * size)
    ram = _ram(size)
    pagecache = f"linux-2.6.29,ram={ram // MiB}M"
    # pwrite rows: simfs's buffer cache stands in for the page cache; 12x the file keeps
    # delayed pwrite pages dirty until fsync (the seed's ext4 had RAM 6x the file)
    mkfs = {"size_bytes": image, "block_size": 4096, "inode_size": 256}
    configs = []
    for how in ("mmap", "pwrite"):
        for alloc in ("ext2", "delayed"):
            params = {"alloc": alloc, "writes": how}
            mount = {"alloc": alloc, "writeback": "async", "disk": "sata7200", "dataless": "yes", **LINUX_READ}
            if how == "mmap":
                params["pagecache"] = pagecache
            else:
                mount["cache"] = 12 * size
                params["cache"] = f"{12 * size // MiB}M"
            configs.append(Config(cname(alloc, how), mount=mount, mkfs=mkfs, params=params))
    if not quick:
        configs.append(Config(RATIO90, mount={"alloc": "ext2", "writeback": "async", "disk": "sata7200",
                                              "dataless": "yes", **LINUX_READ},
                              mkfs=mkfs, params={"alloc": "ext2", "writes": "mmap",
                                                 "pagecache": pagecache + ",dirty_ratio=90"}))
    compares = []
    for how in ("mmap", "pwrite"):
        imm, dl = cname("ext2", how), cname("delayed", how)
        mm = how == "mmap"
        compares += [
            Compare(f"data extents: immediate / delayed, {how}", "write", imm, dl, SEED_EXTENTS / 35 if mm else None,
                    f"{SRC}: 50,435 extents vs ext4 'around 30-40'" if mm else
                    "the seed measured the shared mapping only", metric="data_extents", check=mm,
                    explain=EXPLAIN[f"extents {how}"]),
            Compare(f"dd time: immediate / delayed, {how}", "dd", imm, dl, DISK_MB_S / SEED_MB_S if mm else None,
                    f"{SRC}: 18.4 MB/s vs the disk's 70 MB/s" if mm else
                    "the seed measured the shared mapping only", check=mm, explain=EXPLAIN[f"dd {how}"]),
            Compare(f"write: immediate / delayed, {how}", "write", imm, dl, None,
                    "seed 004 gives no ext4 write time", expect="", check=False, explain=EXPLAIN["write"]),
        ]
    if not quick:
        compares.append(Compare("data extents: dirty_ratio=90 / delayed, mmap", "write", RATIO90,
                                cname("delayed", "mmap"), SEED_EXTENTS_RATIO90 / 35,
                                f"{SRC}: 483 extents with vm.dirty_ratio=90", metric="data_extents", expect="",
                                check=False, explain=EXPLAIN["ratio90"]))
    for c in compares:
        c.headline = c.label in HEADLINE
    exp = Experiment(
        name=NAME, seed=SEED, title=TITLE,
        description=(f"a {size // MiB} MiB file: ftruncate, every page dirtied in alloctest's order through "
                     f"MAP_SHARED, written back by the modelled page cache (Linux 2.6.29, "
                     f"{ram // MiB} MiB of RAM), msync (or pwrite + fsync), unmount; cold dd bs=1M; "
                     "ext2 (allocation at write-back, ext3's goal rules) vs delayed; async; SATA 7200; in-process"),
        configs=configs,
        phases=[fill_phase(), dd_phase()],
        compares=compares, workload=workload(quick),
        repetitions=1,
        panels=[Panel("dd of the file: immediate vs delayed allocation (mmap)", "dd",
                      [cname("ext2", "mmap"), cname("delayed", "mmap")])],
        blockmap=[c.name for c in configs], blockmap_files=BIG,
        notes=["in-process and deterministic (one repetition): the page cache is the modelled "
               "system's, not the host's; the write phase includes msync/fsync and the final "
               "write-back (alloctest's total included msync)"],
        params={"size": size, "ram": ram}, quick=quick)
    return exp


# phases: the verbs on the unmounted image -----------------------------------------------------------
def fill_phase():
    """alloctest: stores through a shared mapping (the modelled page cache) + msync, or pwrite +
    fsync; then the file's extents counted on the image."""

    def command(c) -> dict:
        p = c.config.params
        kw = {"pagecache": p["pagecache"]} if p["writes"] == "mmap" else {}
        return phases.run_verb(c, "mmap-fill", BIG, drain=True, mark="write", size=c.params["size"],
                               writes=p["writes"], **kw)

    def after(c, rec: dict) -> dict:
        from simfs.fs.inspection import frag_counts
        from .fsscan import open_ro
        with open_ro(c.image, c.config, disk="ideal") as vol:
            n = frag_counts(vol.extents(vol.lookup(vol.root_ino, BIG.encode()).st_ino))
        return {"extents": n["extents_bmap"], "data_extents": n["data_extents"],
                "blocks_per_extent": round(n["data_blocks"] / max(n["extents_bmap"], 1), 2)}

    return Phase(
        "write", "ftruncate, then every 4 KiB page in alloctest's order through a shared mapping "
                 "written back by the modelled page cache (msync), or with pwrite (fsync)",
        kind="volume", command=command, drain=True, after=after, writes=True,
        metrics=("extents", "data_extents", "blocks_per_extent", "touch_s", "msync_s"))


def dd_phase():
    def command(c) -> dict:
        trace = c.work / "dd.trace.csv"
        return {**phases.run_verb(c, "dd", BIG, drain=False, mark="dd", options={"trace": trace}, bs=1 << 20),
                "trace": str(trace)}

    return Phase(
        "dd", "dd if=MNT/big of=/dev/null bs=1M, cold (sequential read of the whole file)",
        kind="volume", command=command, trace=True, metrics=("mb_s",),
        after=lambda c, rec: {"mb_s": c.params["size"] / 1e6 / rec["sim"] if rec["sim"] > 0 else 0.0})
