"""`python -m experiments.aging [REPO] [--quick] ...`: age a file system with a repository's
git history, once mounted, then replayed for every allocator. Bad input is one line on stderr
and exit status 2, before anything is made."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from .history import AgingError, History, make_quick, need_bytes, select
from .mounted import Config, age
from .replayed import replay
from .results import Sink, load, write

QUICK_COMMITS = 61          # 60 pulls
QUICK_EVERY = 20
MIN_SIZE = 64 << 20
RUN = "run.json"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m experiments.aging", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Aging with git pulls (Conway et al., FAST'17): REPO's first-parent commits are "
                    "pulled one by one onto a simfs mount by the real git (as root), recorded with "
                    "-o oplog=; every N pulls a cold grep -r of the aged tree and of a clean copy "
                    "(cp -a onto a fresh image). Every allocator then replays the op log in-process "
                    "on its own image. Measurements are written as they are made; --resume OUT "
                    "continues a run that stopped.",
        epilog="examples:\n  python -m experiments.aging --quick --out /tmp/aging\n"
               "  python -m experiments.aging ~/src/linux --commits v6.1..v6.2 --every 50 --out aging-linux\n"
               "  python -m experiments.aging --resume aging-linux")
    p.add_argument("repo", nargs="?", metavar="REPO", help="a git repository (any)")
    p.add_argument("--quick", action="store_true",
                   help=f"a generated history of {QUICK_COMMITS - 1} pulls, measured every {QUICK_EVERY}")
    p.add_argument("--commits", metavar="A..B", help="clone A, pull each first-parent commit up to B")
    p.add_argument("--pulls", type=int, metavar="N", help="only the first N pulls")
    p.add_argument("--every", type=int, metavar="N", help="measure every N pulls (100; --quick 20)")
    p.add_argument("--alloc", default="ext2", help="the mounted configuration's allocator (ext2)")
    p.add_argument("--replay", metavar="A,B,...",
                   help="allocators to replay the op log under (default: every allocator)")
    p.add_argument("--disk", default="sata7200", help="disk model preset (sata7200)")
    p.add_argument("--size", metavar="BYTES", help="image size, e.g. 256M (default: 4x the estimate, at least 64M)")
    p.add_argument("--dataless", action="store_true", help="replays on data-less images (the mount keeps data: git reads it)")
    p.add_argument("--out", default="results/aging", help="output directory (results/aging)")
    p.add_argument("--resume", metavar="OUT", help="continue the run in OUT where it stopped")
    p.add_argument("--no-pictures", action="store_true", help="no PNGs")
    return p


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    import signal
    old = signal.signal(signal.SIGTERM, _interrupt)       # kill: unmount and keep the measurements
    try:
        return _main(a)
    finally:
        signal.signal(signal.SIGTERM, old)                  # called in-process (tests): as it was


def _main(a) -> int:
    try:
        plan = prepare(a)
    except AgingError as e:
        print(f"aging: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("aging: interrupted before the run started", file=sys.stderr)
        return 130
    try:
        run(plan)
    except AgingError as e:
        print(f"aging: {e}; the measurements so far are in {plan['out']} (--resume {plan['out']})",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"aging: interrupted; the measurements so far are in {plan['out']} (--resume {plan['out']})",
              file=sys.stderr)
        return 130
    return 0


def _size(text: str) -> int:
    from simfs.units import parse_size
    try:
        return parse_size(text)
    except ValueError as e:
        raise AgingError(f"--size {text}: {e}") from None


def prepare(a) -> dict:
    """Every check before anything is made; the run's plan (saved in OUT/run.json)."""
    if a.resume:
        path = os.path.join(a.resume, RUN)
        if not os.path.exists(path):
            raise AgingError(f"--resume {a.resume}: no {RUN} there (not an aging run's output)")
        with open(path) as f:
            return json.load(f)
    import policies
    if os.geteuid() != 0:
        raise AgingError("the pulls run on a simfs mount: run as root")
    if bool(a.repo) == a.quick:
        raise AgingError("give a git repository, or --quick for a generated history")
    for name in [a.alloc] + (a.replay.split(",") if a.replay else []):
        if name not in policies.ALLOCATORS:
            raise AgingError(f"unknown allocator {name!r} (simfs policies lists them)")
    every = a.every or (QUICK_EVERY if a.quick else 100)
    if every < 1:
        raise AgingError(f"--every {every}: give at least 1")
    out = os.path.abspath(a.out)
    if os.path.isdir(out) and os.listdir(out):
        raise AgingError(f"--out {a.out}: not empty (--resume {a.out} continues a run there)")
    if a.quick:
        os.makedirs(os.path.join(out, "work"), exist_ok=True)
        h = make_quick(os.path.join(out, "work", "quick-history"), QUICK_COMMITS)
        if a.pulls:
            h.commits = h.commits[:a.pulls + 1]
    else:
        h = select(a.repo, a.commits, a.pulls)
    need = need_bytes(h)
    size = _size(a.size) if a.size else max(MIN_SIZE, -(-4 * need // (1 << 20)) << 20)
    if size < 2 * need:
        raise AgingError(f"--size {a.size}: too small for this history (its objects and last tree "
                         f"take {need >> 20} MiB; give at least {-(-2 * need // (1 << 20))}M)")
    os.makedirs(os.path.join(out, "work"), exist_ok=True)
    plan = {"out": out, "history": "generated (--quick)" if a.quick else h.repo, "repo": h.repo,
            "commits": h.commits, "pulls": h.pulls, "every": every, "mounted": a.alloc,
            "replay": a.replay.split(",") if a.replay else list(policies.ALLOCATORS),
            "disk": a.disk, "size": size, "block_size": 4096, "dataless": a.dataless,
            "pictures": not a.no_pictures, "wall": {}}
    save(plan)
    return plan


def save(plan: dict) -> None:
    with open(os.path.join(plan["out"], RUN), "w") as f:
        json.dump(plan, f, indent=1)


def config(plan: dict, alloc: str, replayed: bool = False) -> Config:
    return Config(alloc, disk=plan["disk"], size=plan["size"], block_size=plan["block_size"],
                  extra="dataless=yes" if replayed and plan["dataless"] else "")


def run(plan: dict) -> None:
    out, work = plan["out"], os.path.join(plan["out"], "work")
    sink = Sink(out)
    h = History(plan["repo"], plan["commits"])
    log = os.path.join(work, "aged.oplog.gz")
    last = plan["pulls"] - plan["pulls"] % plan["every"]
    if "mounted" not in plan["wall"]:
        print(f"aging: {h.pulls} pulls, mounted with alloc={plan['mounted']}", flush=True)
        t = time.monotonic()
        age(h, config(plan, plan["mounted"]), work, plan["every"], sink, log=log,
            done=sink.done(plan["mounted"], "mounted"))
        plan["wall"]["mounted"] = round(time.monotonic() - t, 1)
        save(plan)
    for alloc in plan["replay"]:
        if f"replay {alloc}" in plan["wall"]:
            continue
        print(f"aging: replaying under alloc={alloc}", flush=True)
        t = time.monotonic()
        replay(log, os.path.join(work, "pristine.img"), config(plan, alloc, True), work, sink,
               commits=h.commits, done=sink.done(alloc, "replayed"), last=last)
        plan["wall"][f"replay {alloc}"] = round(time.monotonic() - t, 1)
        save(plan)
    write(out, plan, load(out))
    if plan["pictures"]:
        draw(plan, load(out), work)


def draw(plan: dict, rows: list[dict], work: str) -> None:
    from .pictures import blockmaps, layout_plot, ratio_plot
    out = plan["out"]
    title = f"{plan['pulls']} pulls, {plan['disk']}"
    ratio_plot(rows, os.path.join(out, "ratio.png"), title)
    layout_plot(rows, os.path.join(out, "layout.png"), title)
    aged = os.path.join(work, f"aged-{plan['mounted']}.img")
    clean = os.path.join(work, f"clean-mounted-{plan['mounted']}.img")
    if os.path.exists(aged) and os.path.exists(clean):
        blockmaps(aged, clean, os.path.join(out, "blockmap.png"), f"alloc={plan['mounted']}, {title}")
