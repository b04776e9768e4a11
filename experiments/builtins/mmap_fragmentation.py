"""The mmap-fragmentation experiment's hooks (experiments/jobs/mmap-fragmentation.toml): seed
004's alloctest fill and dd, in-process through the modelled page cache (the verbs on the
unmounted image), and `size_overlay`, what `simfs experiment run mmap-fragmentation --size`
changes in the job (the file's size, the modelled RAM scaled with it, the image, the pwrite
rows' cache), merged over the job as [quick] is.
"""

from __future__ import annotations

from .. import phases
from ..spec import Phase

MiB, GiB = 1 << 20, 1 << 30
BIG = phases.BIG
SEED_RAM = 6 * GiB                # "amd64 quad-core 6GB"


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
        from ..fsscan import open_ro
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


def ram_for(size: int) -> int:
    """The seed's RAM for its 1 GiB file, scaled with the file (whole MiB)."""
    return max(16 * MiB, SEED_RAM * size // GiB // MiB * MiB)


def size_overlay(size: int, quick: bool) -> dict:
    """The job's tables for a file of `size` bytes (what experiments/jobs/mmap-fragmentation.toml
    says for 1G, and its [quick] for 64M): the RAM scaled with the file (the seed's 6 GB per
    1 GiB, so the file/RAM ratio and with it the write-back pattern stay the seed's), an image
    4 times the file (at least 512M), and the pwrite rows' buffer cache 12 times the file (it
    keeps delayed pwrite pages dirty until fsync: the seed's ext4 had RAM 6x the file)."""
    ram = ram_for(size)
    pagecache = f"linux-2.6.29,ram={ram // MiB}M"
    add = [] if quick else [{"name": "ext2 mmap, dirty_ratio=90", "alloc": "ext2",
                             "writes": {"label": "mmap", "columns": {"pagecache": pagecache + ",dirty_ratio=90"}}}]
    return {
        "job": {"description": (
            f"a {size // MiB} MiB file: ftruncate, every page dirtied in alloctest's order through "
            f"MAP_SHARED, written back by the modelled page cache (Linux 2.6.29, "
            f"{ram // MiB} MiB of RAM), msync (or pwrite + fsync), unmount; cold dd bs=1M; "
            "ext2 (allocation at write-back, ext3's goal rules) vs delayed; async; SATA 7200; in-process")},
        "params": {"size": size, "ram": ram},
        "mkfs": {"size": max(512 * MiB, 4 * size)},
        "matrix": {"writes": [{"label": "mmap", "columns": {"pagecache": pagecache}},
                              {"label": "pwrite", "cache": 12 * size, "columns": {"cache": f"{12 * size // MiB}M"}}],
                   "add": add},
    }
