"""Seed 001 at its own size: the readdir-order experiment on a 2-million-file svn tree, in-process.

    python -m experiments.seed001_full [--files N] [--fanout LO,HI] [--total-size BYTES]
                                       [--orders hash,linear,inode]
                                       [--phases unpack,find-d,find-f,cp-a,rm-rf] [--out DIR]
                                       [--profile ext2|ext4]

The seed's Jenkins workspace held 1,978,149 files in 844,008 directories (54 GB). By default the
generated svn tree (experiments.workload.describe) has the seed's shape: 621,300 working files,
directories of 2 to 9 entries and 25,570 MiB of working data give 1,976,820 files, 814,518
directories and 54 GB with the .svn metadata (the experiment's own 7.7k-file tree, --files 2500
--fanout 5,30, has 3.5 files per directory where the seed had 2.3). It is unpacked once with the
unpack verb (tar xpf) on a data-less image (file data charged, not stored): the unpack never
lists a directory, so its layout and time are the same in every order. Then, on a copy per order
and each on a cold volume: find -type d, find -type f, cp -a within the file system and rm -rf of
the original, in hash, linear and inode order (simfs.inprocess.verbs), with the readdir-order
experiment's options (ext2 allocator and Orlov placement, async, SAS 10K, 4 KiB blocks, 256-byte
inodes, an image 8 times the tree up to the whole drive). Phases are timed as the mounted runner
times them: from the start to the tool's end, without the unmount's write-back. Writes
results.json and table.md to --out (each phase's simulated, real and CPU time and peak memory) and
the hash/inode ratios beside the seed's ext4/btrfs ones. `--profile ext4` makes the image as
`simfs mkfs --profile ext4` does (flex_bg, extents, htree directories, inode-table read-ahead);
the mount options stay the same.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from . import argtypes, catalog, runner, sizing

SEED_FILES = 1_978_149          # files (not directories) of the seed's tree
SEED_DIRS = 844_008
WORKING_FILES = 621_300         # working files giving the seed's file count with .svn metadata
FANOUT = "2,9"                  # entries per directory: with it files/directories is the seed's
                                # 2.34 within 4% (the generator's default 5,30 gives 3.5)
PHASES = ("unpack", "find-d", "find-f", "cp-a", "rm-rf")
MOUNT = {"alloc": "ext2", "writeback": "async", "disk": "sas10k"}
SEED_TOTAL = "25570M"           # working bytes making the whole tree the seed's 54 GB
BYTES_PER_FILE = 25_900         # the generated svn tree: 64.6 MB for 2,500 working files


def options(order: str):
    from simfs.fs.volume import VolumeOptions
    return VolumeOptions(dirorder=order, dataless=True, **MOUNT)


def make_image(path: Path, tree_bytes: int, profile: str = "ext2") -> None:
    """The readdir-order experiment's file system: 8 times the tree (sizing.image_for: the
    seeds' file systems were mostly empty), at most the whole drive; mke2fs's inode ratio;
    the runner's UUID, hash seed (it decides the hash order) and time."""
    import disk_models
    from simfs.ondisk.mkfs import mkfs
    capacity = disk_models.make_disk(MOUNT["disk"]).sectors * 512 // (1 << 20) * (1 << 20)
    size = min(sizing.image_for(tree_bytes, 8, lo=512 << 20, hi=capacity), capacity)
    mkfs(path, size, block_size=4096, inode_size=256, uuid=runner.MKFS_UUID,
         hash_seed=runner.MKFS_HASH_SEED, now=runner.MKFS_NOW, uid=0, gid=0, profile=profile)


def run_phase(image: Path, order: str, phase: str, source=None) -> dict:
    from simfs.inprocess import verbs
    t0, c0 = time.perf_counter(), time.process_time()
    if phase == "unpack":
        out = verbs.run(str(image), options(order), "unpack", "tree", source=source, mkdir=True, mark=phase)
    elif phase in ("find-d", "find-f"):
        out = verbs.run(str(image), options(order), "find", "tree", type=phase[-1], mark=phase)
    elif phase == "cp-a":
        out = verbs.run(str(image), options(order), "cp-a", "tree", dst="copy", mark=phase)
    else:
        out = verbs.run(str(image), options(order), "rm-rf", "tree", mark=phase)
    return {"phase": phase, "order": order, "sim": out["sim_cmd"], "sim_umount": out["time"]["now"],
            "real": time.perf_counter() - t0, "cpu": time.process_time() - c0, "result": out["result"],
            "counters": out["time"]["total"]["counters"],
            "operations": sum(o["count"] for o in out["time"]["total"]["operations"].values()),
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
    out = [f"Seed 001 in-process: {tree.get('file', 0) + tree.get('hardlink', 0):,} files, "
           f"{tree.get('dir', 0) + 1:,} directories, {tree.get('bytes', 0) / 1e9:.1f} GB "
           f"(data-less)", "",
           "| phase | order | simulated s | real s | peak RSS MiB |", "|:--|:--|--:|--:|--:|"]
    for r in rows:
        out.append(f"| {r['phase']} | {r['order']} | {r['sim']:.1f} | {r['real']:.0f} | {r['rss_mib']:.0f} |")
    out += ["", "| phase | hash / inode | seed: ext4 / btrfs | linear / inode |", "|:--|--:|--:|--:|"]
    for ph, published in seed_ratios().items():
        h, i, lin = by.get(("hash", ph)), by.get(("inode", ph)), by.get(("linear", ph))
        hi = f"{h['sim'] / i['sim']:.2f}" if h and i and i["sim"] else "-"
        li = f"{lin['sim'] / i['sim']:.2f}" if lin and i and i["sim"] else "-"
        out.append(f"| {ph} | {hi} | {published:.2f} | {li} |")
    return "\n".join(out) + "\n"


def seed_ratios() -> dict[str, float]:
    """phase -> the seed's ext4 / btrfs ratio, as the readdir-order job file publishes it beside
    its hash / inode ratio."""
    job = catalog.load("readdir-order")
    return {r["phase"]: r["published"] for r in job.doc["ratio"]
            if (r["num"], r["den"]) == ("dirorder=hash", "dirorder=inode") and "published" in r}


def _fanout(text: str) -> tuple[int, int]:
    """An argparse type: LO,HI entries per directory, 1 <= LO <= HI."""
    lo, _, hi = text.partition(",")
    if not (lo.isdigit() and hi.isdigit() and 1 <= int(lo) <= int(hi)):
        raise argparse.ArgumentTypeError(f"not LO,HI with 1 <= LO <= HI: {text!r}")
    return int(lo), int(hi)


def main(argv=None) -> int:
    """The command: bad arguments, an image that cannot be made or written, a full disk are
    one line and exit status 2, and the run's images are removed; a signal stops it between
    two volume operations, the phases that ended kept in results.json."""
    from rich.console import Console
    from policies.dirorder import DIR_ORDERS
    from simfs.cli.common import size_type
    from simfs.errors import ImageError
    from simfs.fs.operation import Interrupted, deferred_signals, recorded_error
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=argtypes.positive, default=WORKING_FILES,
                    help="working files of the generated tree (.svn metadata comes on top)")
    ap.add_argument("--fanout", type=_fanout, default=FANOUT, help="entries per directory LO,HI "
                    "(default: the seed's files per directory; 5,30 is the readdir-order "
                    "experiment's tree)")
    ap.add_argument("--orders", type=argtypes.listed(DIR_ORDERS.resolve), default="hash,linear,inode",
                    help="directory orders, comma-separated (default hash,linear,inode)")
    ap.add_argument("--phases", default=",".join(PHASES),
                    help=f"comma-separated, unpack first (default {','.join(PHASES)})")
    ap.add_argument("--out", default="results/seed001-full")
    ap.add_argument("--total-size", type=size_type, default=None,
                    help="bytes of the working files (svn's text-base copies double it); "
                         f"default: {SEED_TOTAL} (54 GB in all) with the default --files, "
                         "else the generator's own sizes")
    ap.add_argument("--profile", choices=("ext2", "ext4"), default="ext2",
                    help="the image's profile (simfs mkfs --profile; default ext2)")
    ap.add_argument("--work", default="/var/tmp", help="where the (sparse) images go")
    ap.add_argument("--keep", action="store_true",
                    help="keep the unpacked image (WORK/seed001-full-base.img) for --base")
    ap.add_argument("--base", type=Path, default=None,
                    help="start from this unpacked image (a --keep run's, whose results are in "
                         "--out): the unpack is not run again, the new rows are added")
    a = ap.parse_args(argv)
    try:
        with deferred_signals():
            return _run(ap, a, Console(stderr=True))
    except Interrupted as e:
        print(f"seed001_full: {e}: stopped between two operations (the phases that ended are in "
              f"{Path(a.out) / 'results.json'})", file=sys.stderr)
        return 128 + e.signum
    except OSError as e:                # FSError too: a full image, say
        print(f"seed001_full: {e.filename + ': ' if e.filename else ''}{e.strerror or e}",
              file=sys.stderr)
        return 2
    except (ImageError, ValueError, subprocess.CalledProcessError) as e:
        note = recorded_error(e)        # an operation stopped half-way: the image says so
        print(f"seed001_full: {e}" + (f"; {note}" if note else ""), file=sys.stderr)
        return 2


def _run(ap, a, console) -> int:
    from experiments.workload.describe import describe
    from simfs.units import parse_size
    phases = a.phases.split(",")
    unknown = [p for p in phases if p not in PHASES]
    if unknown or ("unpack" in phases) == bool(a.base) or (phases[0] != "unpack" and not a.base):
        ap.error(f"phases are {', '.join(PHASES)}, unpack first (or no unpack, with --base)")
    if a.base and not a.base.is_file():
        ap.error(f"--base {a.base}: no such image (a --keep run's WORK/seed001-full-base.img)")
    if a.total_size is None and a.files == WORKING_FILES:
        a.total_size = parse_size(SEED_TOTAL)
    out, work = Path(a.out), Path(a.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    orders = a.orders
    rows, tree = [], {}
    if a.base:
        try:
            before = json.loads((out / "results.json").read_text())
        except (OSError, ValueError):
            ap.error(f"--base needs the unpack's results in {out / 'results.json'}")
        rows, tree = before["rows"], before["tree"]

    def record(row: dict) -> None:
        rows.append(row)
        console.log(f"{row['order']} {row['phase']}: {row['sim']:.1f} simulated s, "
                    f"{row['real']:.0f} real s, RSS {row['rss_mib']:.0f} MiB")
        (out / "results.json").write_text(json.dumps({"files_arg": a.files, "profile": a.profile,
                                                      "tree": tree, "rows": rows}, indent=1))

    base = a.base or work / "seed001-full-base.img"
    made: list[Path] = []       # images of this run, removed however it ends (--keep: the unpack's)
    try:
        with console.status("planning the tree") as status:
            if not a.base:
                source = counted(describe(seed=1, files=a.files, svn=True, total_size=a.total_size,
                                          fanout=a.fanout),
                                 tree, 20_000, lambda n: status.update(f"unpack: {n:,} entries"))
                made.append(base)
                make_image(base, BYTES_PER_FILE * a.files if a.total_size is None
                           else 2 * a.total_size, a.profile)
                status.update("unpack")
                # the unpack never lists a directory: its layout and time are the same in every
                # order (checked in tests/volume/test_seed001_full.py), so it runs once
                record(dict(run_phase(base, orders[0], "unpack", source), order="all"))
                if a.keep:
                    made.remove(base)
            for order in orders:
                image = work / f"seed001-full-{order}.img"
                made.append(image)
                status.update(f"{order}: copying the unpacked image")
                subprocess.run(["cp", "--sparse=always", str(base), str(image)], check=True)
                for ph in (p for p in phases if p != "unpack"):
                    status.update(f"{order}: {ph}")
                    record(run_phase(image, order, ph))
    finally:
        for path in made:
            path.unlink(missing_ok=True)
    (out / "table.md").write_text(table(rows, tree))
    sys.stdout.write(table(rows, tree))
    return 0


if __name__ == "__main__":
    sys.exit(main())
