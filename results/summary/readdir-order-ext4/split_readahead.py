"""find -type d in hash and inode order, in-process, on the seed-001 tree of 2,000 working files:
the ext2 profile, and the ext4 profile with inode read-ahead 32 and 0 (section.md).
Run from the repository: PYTHONPATH=. python results/summary/readdir-order-ext4/split_readahead.py"""
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from experiments import seed001_full as s
from experiments.workload.describe import describe
from simfs.inprocess import verbs
w = Path(tempfile.mkdtemp(dir="/var/tmp"))
for prof in ("ext4", "ext2"):
    base = w / f"base-{prof}.img"
    s.make_image(base, 2 * 400 * 25900, prof)
    verbs.run(str(base), s.options("hash"), "unpack", "tree", source=describe(seed=1, files=2000, svn=True, fanout=(2, 9)), mkdir=True)
    for ra in ((32, 0) if prof == "ext4" else (None,)):
        res = {}
        for order in ("hash", "inode"):
            img = w / "x.img"
            subprocess.run(["cp", "--sparse=always", str(base), str(img)], check=True)
            o = s.options(order) if ra is None else replace(s.options(order), inode_readahead_blks=ra)
            res[order] = verbs.run(str(img), o, "find", "tree", type="d")["sim_cmd"]
            img.unlink()
        print(prof, "readahead", ra, {k: round(v, 3) for k, v in res.items()}, "hash/inode", round(res["hash"] / res["inode"], 3), flush=True)
    base.unlink()
w.rmdir()
