"""Before/after of the host's request queue (issue 53.2) on in-process verbs.

    python results/summary/host-queue/table.py [--tree /usr/include/linux] > results/summary/host-queue/table.md

(run from the repository root: the simfs of that tree is used)
For each disk, a fresh 256 MiB ext2 image (4 KiB blocks) is unpacked from the tree, copied
(cp -a), read back (tar) and removed (rm -rf), each verb a cold mount, once per host-queue
setting: the default (iosched=none, max_sectors_kb = maxio = 128K, today's stream) and Linux's
settings. Every figure is simulated; the runs are deterministic (the same command prints the
same table).
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: `simfs` of the tree the script is run from (the repository root)
SIMFS = [sys.executable, "-c", "import sys; from simfs.cli import main; sys.argv[0] = 'simfs'; sys.exit(main())"]
DISKS = ("sata7200", "wd1200jb,write_cache=off")
SETTINGS = ("", "iosched=mq-deadline", "max_sectors_kb=512", "iosched=deadline,max_sectors_kb=512",
            "iosched=mq-deadline,max_sectors_kb=1280")
VERBS = (("unpack", ["src", "--from"]), ("cp-a", ["src", "--to", "copy"]), ("tar-read", ["src"]),
         ("rm-rf", ["copy"]))


def verb(img: Path, name: str, args: list, opts: str, tree: str, trace: Path) -> tuple[float, int, int]:
    """(simulated seconds, requests, largest request in KiB) of one verb on the image."""
    args = args + [tree] if args[-1] == "--from" else args
    o = ",".join(x for x in (f"trace={trace}", opts) if x)
    out = subprocess.run([*SIMFS, "verb", name, str(img), *args, "-o", o, "--json"], check=True,
                         capture_output=True, text=True).stdout
    doc = json.loads(out)
    with open(trace, newline="") as f:
        sizes = [int(r["sectors"]) for r in csv.DictReader(f)]
    return doc["time"]["now"], len(sizes), max(sizes, default=0) // 2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", default="/usr/include/linux")
    a = ap.parse_args(argv)
    print(f"Tree {a.tree}; simulated seconds, requests and the largest request (KiB) per verb.\n")
    print("| disk | -o | " + " | ".join(f"{v} s, requests, max KiB" for v, _ in VERBS) + " |")
    print("|---|---|" + "--:|" * len(VERBS))
    with tempfile.TemporaryDirectory(prefix="hostqueue-", dir="/var/tmp") as tmp:
        tmp = Path(tmp)
        for disk in DISKS:
            clean = tmp / "clean.img"
            subprocess.run([*SIMFS, "mkfs", "--quiet", "--force", str(clean), "256M", "--uuid",
                            "00000000-0000-0000-0000-000000000053", "--hash-seed",
                            "00000000-0000-0000-0000-00000000a53d"], check=True)
            for opts in SETTINGS:
                img = tmp / "run.img"
                shutil.copyfile(clean, img)
                cells = []
                for name, args in VERBS:
                    t, n, big = verb(img, name, args, f"disk={disk}" + (f",{opts}" if opts else ""),
                                     a.tree, tmp / "trace.csv")
                    cells.append(f"{t:.4f}, {n}, {big}")
                print(f"| {disk} | {opts or '(default)'} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
