"""Seed 001 at its own size: the readdir-order experiment on a 2-million-file svn tree, in-process.

    python -m experiments.seed001_full [--files N] [--orders hash,linear,inode]
                                       [--phases unpack,find-d,find-f,cp-a,rm-rf] [--out DIR]

The seed's Jenkins workspace held 1,978,149 files in 844,008 directories (54 GB). The generated
svn tree (experiments.workload.describe) of --files working files (default: the seed's size)
is unpacked with the unpack verb (tar xpf) on a data-less image (file data charged, not stored),
then, each on a cold volume: find -type d, find -type f, cp -a within the file system and
rm -rf of the original, in hash, linear and inode order (simfs.engine.verbs; the same mount
options as the readdir-order experiment: ext2 allocator and Orlov placement, async, SAS 10K,
4 KiB blocks, 256-byte inodes). Writes results.json and table.md to --out with each phase's
simulated and real time and peak memory, and the hash/inode ratios beside the seed's.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from . import seed001

SEED_FILES = 1_978_149          # files (not directories) of the seed's tree
SEED_DIRS = 844_008
WORKING_FILES = 650_000         # --files giving about the seed's count with .svn metadata
PHASES = ("unpack", "find-d", "find-f", "cp-a", "rm-rf")
MOUNT = {"alloc": "ext2", "writeback": "async", "disk": "sas10k"}


def options(order: str):
    from simfs.fs.volume import VolumeOptions
    return VolumeOptions(dirorder=order, dataless=True, **MOUNT)


def make_image(path: Path, tree_bytes: int, inodes: int) -> None:
    """Room for the tree and its copy (cp -a), and inodes for both."""
    from simfs.ondisk.mkfs import mkfs
    size = max(1 << 30, int(2.6 * tree_bytes))
    per_inode = max(4096, min(1 << 16, (size // max(1, 2 * inodes + inodes // 4)) // 4096 * 4096))
    mkfs(path, size, block_size=4096, inode_size=256, bytes_per_inode=per_inode,
         uuid=bytes.fromhex("5eed0001" * 4), hash_seed=bytes.fromhex("001ba5e5" * 4))


def run_phase(image: Path, order: str, phase: str, source=None) -> dict:
    from simfs.engine import verbs
    t0 = time.perf_counter()
    if phase == "unpack":
        out = verbs.run(str(image), options(order), "unpack", "tree", source=source)
    elif phase in ("find-d", "find-f"):
        out = verbs.run(str(image), options(order), "find", "tree", type=phase[-1])
    elif phase == "cp-a":
        out = verbs.run(str(image), options(order), "cp-a", "tree", dst="copy")
    else:
        out = verbs.run(str(image), options(order), "rm-rf", "tree")
    return {"phase": phase, "order": order, "sim": out["sim_cmd"], "sim_umount": out["time"]["now"],
            "real": time.perf_counter() - t0, "result": out["result"],
            "counters": out["time"]["total"]["counters"],
            "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def counted(entries, tally: dict, every: int, report):
    """Pass the source through, counting files and directories (and reporting progress)."""
    for e in entries:
        tally[e.kind] = tally.get(e.kind, 0) + 1
        tally["bytes"] = tally.get("bytes", 0) + e.size
        n = tally["entries"] = tally.get("entries", 0) + 1
        if n % every == 0:
            report(n)
        yield e


def table(rows: list[dict], tree: dict) -> str:
    by = {(r["order"], r["phase"]): r for r in rows}
    out = [f"Seed 001 at full size: {tree.get('file', 0) + tree.get('hardlink', 0):,} files, "
           f"{tree.get('dir', 0) + 1:,} directories, {tree.get('bytes', 0) / 1e9:.1f} GB "
           f"(data-less), in-process", "",
           "| phase | order | simulated s | real s | peak RSS MiB |", "|:--|:--|--:|--:|--:|"]
    for r in rows:
        out.append(f"| {r['phase']} | {r['order']} | {r['sim']:.1f} | {r['real']:.0f} | {r['rss_mib']:.0f} |")
    out += ["", "| phase | hash / inode | seed: ext4 / btrfs | linear / inode |", "|:--|--:|--:|--:|"]
    for ph, (e4, bt, _, _) in seed001.PUBLISHED.items():
        h, i, lin = by.get(("hash", ph)), by.get(("inode", ph)), by.get(("linear", ph))
        hi = f"{h['sim'] / i['sim']:.2f}" if h and i and i["sim"] else "-"
        li = f"{lin['sim'] / i['sim']:.2f}" if lin and i and i["sim"] else "-"
        out.append(f"| {ph} | {hi} | {e4 / bt:.2f} | {li} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    from rich.console import Console
    from experiments.workload.describe import describe
    from simfs.units import parse_size
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=WORKING_FILES,
                    help="working files of the generated tree (.svn metadata comes on top)")
    ap.add_argument("--orders", default="hash,linear,inode")
    ap.add_argument("--phases", default=",".join(PHASES))
    ap.add_argument("--out", default="results/seed001-full")
    ap.add_argument("--total-size", type=parse_size, default=None,
                    help="bytes of the working files (svn's text-base copies double it); "
                         "default: the generator's own sizes")
    ap.add_argument("--work", default="/var/tmp", help="where the (sparse) images go")
    a = ap.parse_args(argv)
    phases = a.phases.split(",")
    unknown = [p for p in phases if p not in PHASES]
    if unknown or "unpack" not in phases:
        ap.error(f"phases are {', '.join(PHASES)}, unpack first")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    orders = a.orders.split(",")
    console = Console(stderr=True)
    rows, tree = [], {}

    def record(row: dict) -> None:
        rows.append(row)
        console.log(f"{row['order']} {row['phase']}: {row['sim']:.1f} simulated s, "
                    f"{row['real']:.0f} real s, RSS {row['rss_mib']:.0f} MiB")
        (out / "results.json").write_text(json.dumps({"files_arg": a.files, "tree": tree,
                                                      "rows": rows}, indent=1))

    base = Path(a.work) / "seed001-full-base.img"
    with console.status("planning the tree") as status:
        source = counted(describe(seed=1, files=a.files, svn=True, total_size=a.total_size),
                         tree, 20_000, lambda n: status.update(f"unpack: {n:,} entries"))
        make_image(base, int(a.files * 28_000) if a.total_size is None else 2 * a.total_size,
                   int(a.files * 4.4))
        from simfs.engine import verbs
        verbs.make_dirs(str(base), options(orders[0]), "tree")
        status.update("unpack")
        # the unpack never lists a directory: its layout and time are the same in every
        # order (checked in tests/volume/test_seed001_full.py), so it runs once
        record(dict(run_phase(base, orders[0], "unpack", source), order="all"))
        for order in orders:
            image = Path(a.work) / f"seed001-full-{order}.img"
            status.update(f"{order}: copying the unpacked image")
            subprocess.run(["cp", "--sparse=always", str(base), str(image)], check=True)
            for ph in phases[1:]:
                status.update(f"{order}: {ph}")
                record(run_phase(image, order, ph))
            image.unlink()
    base.unlink()
    (out / "table.md").write_text(table(rows, tree))
    sys.stdout.write(table(rows, tree))
    return 0


if __name__ == "__main__":
    sys.exit(main())
