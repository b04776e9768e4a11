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
        from simfs.fs.inspect import frag_counts
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
