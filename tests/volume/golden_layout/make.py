"""Make the golden layout: the kernel's ext4 (`-o nodelalloc`) runs workload.OPS on a loop
mount of the workload's image, and debugfs reads where every file's blocks went.

    flock /tmp/simfs-mount.lock python -m tests.volume.golden_layout.make [OUT.json]

Needs root, a kernel with ext4 and e2fsprogs. The writer is one process pinned to CPU 0 (the
locality-group preallocations are per CPU) whose pid % 16 is workload.COLOUR (nodelalloc's goal
for a file's first block adds that colour's sixteenth of a group; simfs is given the same pid).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from simfs.ondisk.mkfs import mkfs
from tests.volume.golden_layout import workload

HERE = Path(__file__).resolve().parent
EXTENT = re.compile(r"\((\d+)(?:-(\d+))?\):(\d+)(?:-(\d+))?")
INDEX = re.compile(r"\(ETB\d+\):(\d+)")


def debugfs_layout(img: str, path: str) -> dict:
    """{"extents": [[lblk, phys, n], ...] (the leaves' extents), "tree": [blocks of the
    index and leaf nodes]} from debugfs's `stat`."""
    out = subprocess.run(["debugfs", "-R", f"stat /{path}", img], capture_output=True, text=True,
                         check=True).stdout
    text = out.split("EXTENTS:", 1)[1] if "EXTENTS:" in out else ""
    tree = [int(m.group(1)) for m in INDEX.finditer(text)]
    extents = []
    for m in EXTENT.finditer(INDEX.sub("", text)):
        l0, l1, p0 = int(m.group(1)), int(m.group(2) or m.group(1)), int(m.group(3))
        extents.append([l0, p0, l1 - l0 + 1])
    return {"extents": extents, "tree": tree}


def write_as_colour(mnt: str) -> None:
    """Fork until a child's pid % 16 is workload.COLOUR; that child, on CPU 0, runs the workload."""
    while True:
        pid = os.fork()
        if pid == 0:
            if os.getpid() % 16 != workload.COLOUR:
                os._exit(3)
            try:
                os.sched_setaffinity(0, {0})
                workload.run_on_directory(mnt)
                os.sync()
            except BaseException:
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code == 3:
            continue
        if code:
            raise SystemExit(f"the workload failed in the writer (exit {code})")
        return


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else HERE / "ext4_nodelalloc.json"
    with tempfile.TemporaryDirectory() as tmp:
        img, mnt = os.path.join(tmp, "img"), os.path.join(tmp, "mnt")
        mkfs(img, workload.SIZE, **workload.MKFS)
        os.mkdir(mnt)
        subprocess.run(["mount", "-t", "ext4", "-o", "loop,nodelalloc", img, mnt], check=True)
        try:
            write_as_colour(mnt)
        finally:
            subprocess.run(["umount", mnt], check=True)
        subprocess.run(["e2fsck", "-fn", img], check=True, capture_output=True)
        kernel = subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip()
        layout = {p: debugfs_layout(img, p) for p in workload.paths()}
    lines = [f'  "{p}": {json.dumps(v)}' for p, v in layout.items()]
    out.write_text('{"made_by": ' + json.dumps(f"python -m tests.volume.golden_layout.make on Linux {kernel}")
                   + ',\n "layout": {\n' + ",\n".join(lines) + "\n }}\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
