"""Where a recorded pull's time goes (issue 55): the next pulls of a --segment recording, run on
a scratch copy of its aged image, once recording an op log and once not, each mount's requests
by kind and the CPU of its daemon and of git (user and system apart) beside the wall time.

    python -m experiments.aging.pullprofile OUT [--pulls N] [--work DIR]

OUT is a --segment run stopped at a segment's end (nothing mounted); its image, plan and
mirror are only read: the pulls go onto copies in DIR (a temporary directory by default,
removed at the end), so the recording itself is untouched. Each variant starts from its own
copy of the same image, so both do the same pulls. Needs root and FUSE, like the recording.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time

from .cli import config, recorded
from .history import AgingError, History
from .mounted import Mount, pull, sparse_copy


def proc_cpu(image: str, mnt: str) -> tuple[float, float] | None:
    """(user, system) CPU seconds of the daemon serving IMAGE at MNT (mounted.daemon_cpu's
    search, the two kept apart)."""
    want = [b"mount", os.fsencode(image), os.fsencode(mnt)]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            if any(args[i:i + 3] == want for i in range(len(args) - 2)):
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
                tick = os.sysconf("SC_CLK_TCK")
                return int(fields[11]) / tick, int(fields[12]) / tick
        except (OSError, ValueError, IndexError):
            continue
    return None


def sample(plan: dict, work: str, pulls: int, oplog: bool) -> dict:
    """The next PULLS pulls of PLAN's recording on a copy of its image in WORK."""
    src = os.path.join(plan["out"], "work")
    image, mnt = os.path.join(work, "aged.img"), os.path.join(work, "mnt")
    sparse_copy(os.path.join(src, f"aged-{plan['mounted']}.img"), image)
    first = recorded(plan) + 1
    last = min(first + pulls - 1, plan["pulls"])
    h = History(plan["repo"], plan["commits"])
    opts = config(plan, plan["mounted"]).spec()
    if oplog:
        opts += f",oplog={os.path.join(work, 'sample.oplog.gz')}"
    kids0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with Mount(image, mnt, opts):
        tree, gitdir = os.path.join(mnt, "tree"), os.path.join(mnt, "git")
        cpu0 = proc_cpu(image, mnt)
        t = time.monotonic()
        for i in range(first, last + 1):
            pull(tree, os.path.join(src, "source.git"), h.commits[i], False, gitdir)
        wall = time.monotonic() - t
        cpu1 = proc_cpu(image, mnt)
        with open(os.path.join(mnt, ".simfs", "stats"), "rb") as f:
            ops = json.load(f).get("ops", {})
    kids1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    n = last - first + 1
    out = {"pulls": [first, last], "oplog": oplog, "wall_s_per_pull": wall / n,
           "git_user_s_per_pull": (kids1.ru_utime - kids0.ru_utime) / n,
           "git_sys_s_per_pull": (kids1.ru_stime - kids0.ru_stime) / n,
           "requests_per_pull": {k: v / n for k, v in sorted(ops.items(), key=lambda kv: -kv[1])}}
    if cpu0 and cpu1:
        out["daemon_user_s_per_pull"] = (cpu1[0] - cpu0[0]) / n
        out["daemon_sys_s_per_pull"] = (cpu1[1] - cpu0[1]) / n
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.aging.pullprofile", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="a --segment aging run stopped at a segment's end")
    p.add_argument("--pulls", type=int, default=10, help="pulls to sample (10)")
    p.add_argument("--work", help="scratch directory (default: a temporary one, removed)")
    a = p.parse_args(argv)
    try:
        try:
            with open(os.path.join(a.out, "run.json")) as f:
                plan = json.load(f)
        except (OSError, ValueError) as e:
            raise AgingError(f"{a.out}: not an aging run ({e})") from None
        if not plan.get("segment") or plan.get("recording"):
            raise AgingError(f"{a.out}: give a --segment run stopped at a segment's end")
        if recorded(plan) >= plan["pulls"]:
            raise AgingError(f"{a.out}: every pull is recorded; nothing left to sample")
        if a.pulls < 1:
            raise AgingError(f"--pulls {a.pulls}: give at least 1")
        if os.geteuid() != 0:
            raise AgingError("the pulls run on a simfs mount: run as root")
        base = a.work or tempfile.mkdtemp(prefix="pullprofile-")
        try:
            for oplog in (True, False):
                work = os.path.join(base, "oplog" if oplog else "plain")
                os.makedirs(work, exist_ok=True)
                print(json.dumps(sample(plan, work, a.pulls, oplog)), flush=True)
        finally:
            if not a.work:
                shutil.rmtree(base, ignore_errors=True)
    except AgingError as e:
        print(f"pullprofile: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
