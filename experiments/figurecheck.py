"""Did a change move a figure? Simulated statistics and image checksums of 112 verb runs.

The figures of 112 in-process verb runs, saved before a change and compared after it:

8 configurations (allocator, directory order, write-back mode, disk, block and inode size) x
2 trees (a generated svn tree of 600 files and a tree of this machine, default
/usr/include/linux) x 7 verbs in turn on one image (unpack, find -type d, tar, du, cp -a,
grep -r, rm -rf). Wall-clock inode times are fixed, so the images' checksums compare too.

    python -m experiments.figurecheck save BEFORE.json      # on the code before the change
    python -m experiments.figurecheck compare BEFORE.json   # after it: which runs moved, how much

compare exits 1 if any run's figures or image differ, and prints how: disk counters, and
simulated time with the largest differences first.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

CONFIGS = [  # alloc, dirorder, writeback, disk, block size, inode size
    ("ext2", "hash", "async", "sas10k", 4096, 256),
    ("ext2", "linear", "sync", "wd1200jb", 1024, 128),
    ("cg", "inode", "async", "sata7200", 4096, 256),
    ("first-free", "hash", "sync", "sas10k", 4096, 128),
    ("ext2fs-2010", "hash", "sync", "wd1200jb", 4096, 128),
    ("delayed", "linear", "async", "sas10k", 4096, 256),
    ("cg-2013", "hash", "softdep", "wd1200jb", 4096, 128),
    ("sequential", "inode", "async", "wd-ears", 4096, 256),
]
STEPS = ("unpack", "find", "tar-read", "du", "cp-a", "grep", "rm-rf")
NOW = 1_000_000_000          # the fixed wall clock (seconds)


def _strip(d):
    """Statistics without what real time decides."""
    if isinstance(d, dict):
        return {k: _strip(v) for k, v in d.items() if k not in ("wall", "wall_s", "real", "started", "host")}
    if isinstance(d, list):
        return [_strip(x) for x in d]
    return d


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        first = bytearray(f.read(4096))
        first[1024:2048] = bytes(1024)      # the superblock: mount and write times are real time
        h.update(first)
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def figures(tree: str) -> dict:
    from experiments import verbcheck
    from experiments.workload import generate_tree
    from simfs.inprocess import verbs
    from simfs.inprocess.treedesc import from_directory
    from simfs.fs.volume import Volume
    from simfs.ondisk.mkfs import mkfs
    time.time = lambda: float(NOW)                      # inode and superblock times
    Volume._now = lambda self: NOW * 10**9
    out = {}
    with tempfile.TemporaryDirectory(prefix="figurecheck-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        gen = work / "src"
        generate_tree(gen, seed=3, files=600)
        for i, (alloc, order, wb, disk, bs, isz) in enumerate(CONFIGS):
            opts = verbcheck.volume_options(f"alloc={alloc},dirorder={order},writeback={wb},disk={disk}")
            for name, src in (("gen", gen), ("real", Path(tree))):
                img = work / f"{i}-{name}.img"
                mkfs(img, 256 << 20, block_size=bs, inode_size=isz, uuid=verbcheck.UUID,
                     hash_seed=verbcheck.HASH_SEED, now=NOW, uid=0, gid=0)
                params = {"unpack": dict(source=from_directory(str(src)), mkdir=True),
                          "find": dict(type="d"), "cp-a": dict(dst="copy")}
                for verb in STEPS:
                    r = verbs.run(str(img), opts, verb, "tree", **params.get(verb, {}))
                    out[f"{i}-{name}-{verb}"] = {"time": _strip(r["time"]), "result": _strip(r["result"]),
                                                 "sha": _sha(img)}
                img.unlink()
    return json.loads(json.dumps(out, sort_keys=True, default=str))


def compare(old: dict, new: dict) -> int:
    moved = [k for k in old if old[k] != new.get(k)]
    counters: dict[str, int] = {}           # counter -> runs in which it differs
    for k in old:
        a, b = old[k]["time"]["total"]["counters"], new[k]["time"]["total"]["counters"]
        for c in set(a) | set(b):
            if a.get(c) != b.get(c):
                counters[c] = counters.get(c, 0) + 1
    times = sorted(((new[k]["time"]["now"] - old[k]["time"]["now"], k) for k in old),
                   key=lambda t: -abs(t[0]))
    print(f"{len(old)} runs: {len(moved)} differ; simulated time differs in "
          f"{sum(1 for d, _ in times if d)} (by more than a microsecond in "
          f"{sum(1 for d, _ in times if abs(d) > 1e-6)})")
    for c, n in sorted(counters.items()):
        print(f"  counter {c} differs in {n} runs")
    for d, k in times[:10]:
        if abs(d) > 1e-6:
            print(f"  {k}: {old[k]['time']['now']:.6f} -> {new[k]['time']['now']:.6f} s ({d * 1000:+.3f} ms)")
    images = [k for k in old if old[k]["sha"] != new[k]["sha"]]
    if images:
        print(f"  images differ after {len(images)} runs (first: {images[0]})")
    return 1 if moved else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=("save", "compare"))
    ap.add_argument("file", help="the figures saved before the change (JSON)")
    ap.add_argument("--tree", default="/usr/include/linux", help="the tree of this machine")
    a = ap.parse_args(argv)
    new = figures(a.tree)
    if a.action == "save":
        Path(a.file).write_text(json.dumps(new, indent=0, sort_keys=True))
        print(f"saved the figures of {len(new)} runs in {a.file}")
        return 0
    return compare(json.loads(Path(a.file).read_text()), new)


if __name__ == "__main__":
    sys.exit(main())
