"""How often inode order differs from creation order on the ext4 profile: subdirectories Orlov
put outside their parent's group, and directories whose subdirectories' slot order is not their
inode order, on the seed-001 tree of FILES working files (default 2,000; section.md).
Run from the repository: PYTHONPATH=. python results/summary/readdir-order-ext4/subdir_groups.py [FILES]"""
import shutil
import sys
import tempfile
from pathlib import Path
from experiments import seed001_full as s
from experiments.workload.describe import describe
from simfs.fs.volume import Volume, VolumeOptions
from simfs.inprocess import verbs
files = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
w = Path(tempfile.mkdtemp(dir="/var/tmp"))
img = w / "base.img"
s.make_image(img, 2 * 400 * 25900 * files // 2000, "ext4")      # as split_readahead.py
verbs.run(str(img), s.options("hash"), "unpack", "tree",
          source=describe(seed=1, files=files, svn=True, fanout=(2, 9)), mkdir=True)
with Volume.open(str(img), VolumeOptions(read_only=True, disk="ideal")) as vol:
    ipg = vol.geo.inodes_per_group
    dirs = subdirs = elsewhere = reordered = 0
    stack = [vol.root_ino]
    while stack:
        ino = stack.pop()
        dirs += 1
        kids = [e for _, name, e, ftype in vol.dirs.entries(vol.inodes.peek(ino))
                if ftype == 2 and name not in (b".", b"..")]
        subdirs += len(kids)
        elsewhere += sum((k - 1) // ipg != (ino - 1) // ipg for k in kids)
        reordered += kids != sorted(kids)
        stack.extend(kids)
print(f"{files} working files: {elsewhere} of {subdirs} subdirectories outside their parent's group; "
      f"{reordered} of {dirs} directories list their subdirectories in another order by inode number")
shutil.rmtree(w)
