"""`python -m experiments.aging [REPO] [--quick] ...`: age a file system with a repository's
git history, once mounted, then replayed for every allocator. Bad input is one line on stderr
and exit status 2, before anything is made."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from simfs.cli.progress import Bar
from simfs.fuse import mountopts

from .canon import canonicalize
from .history import AgingError, History, make_quick, need_bytes, select
from .mounted import Config, age
from .replayed import replay, steps
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
               "  python -m experiments.aging --quick --fill 90 --profile ext4 --out /tmp/aging-full\n"
               "  python -m experiments.aging ~/src/linux --commits v6.1..v6.2 --every 50 --out aging-linux\n"
               "  python -m experiments.aging --resume aging-linux")
    p.add_argument("repo", nargs="?", metavar="REPO", help="a git repository (any)")
    p.add_argument("--quick", action="store_true",
                   help=f"a generated history of {QUICK_COMMITS - 1} pulls, measured every {QUICK_EVERY}")
    p.add_argument("--commits", metavar="A..B", help="clone A, pull each first-parent commit up to B")
    p.add_argument("--pulls", type=int, metavar="N", help="only the first N pulls")
    p.add_argument("--every", type=int, metavar="N", help="measure every N pulls (100; --quick 20)")
    p.add_argument("--alloc", help="the mounted configuration's allocator (ext2; mballoc with --profile ext4)")
    p.add_argument("--replay", metavar="A,B,...",
                   help="allocators to replay the op log under (default: every allocator the profile takes)")
    p.add_argument("--profile", default="ext2", metavar="ext2|ext4",
                   help="the images' mkfs profile (simfs mkfs --profile; ext2)")
    p.add_argument("--dirorder", metavar="NAME",
                   help="readdir order of every mount and replay (-o dirorder=; default: the profile's "
                        "kernel order, linear on ext2, hash on ext4, whose dir_index returns hash order)")
    p.add_argument("--fill", type=float, default=0, metavar="PCT",
                   help="the nearly-full variant: before the first pull, fill the image to PCT%% of its "
                        "blocks with static filler files that stay (Conway et al., HotStorage'19)")
    p.add_argument("--disk", default="sata7200", help="disk model preset (sata7200)")
    p.add_argument("--size", metavar="BYTES", help="image size, e.g. 256M (default: 4x the estimate, at least 64M)")
    p.add_argument("--dataless", action="store_true", help="replays on data-less images (the mount keeps data: git reads it)")
    p.add_argument("--out", default="results/aging", help="output directory (results/aging)")
    p.add_argument("--resume", metavar="OUT", help="continue the run in OUT where it stopped")
    p.add_argument("--no-pictures", action="store_true", help="no PNGs")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", "-j", type=int, metavar="N",
                   help="replay N allocators at once, as Dask tasks on N local worker processes")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="replay as Dask tasks on an existing cluster (OUT must be readable there under the same path)")
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
        run(plan, a.workers, a.scheduler)
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
    if a.workers is not None and a.workers < 1:
        raise AgingError(f"--workers {a.workers}: give 1 or more")
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
    if a.profile not in PROFILES:
        raise AgingError(f"--profile {a.profile}: choose {' or '.join(PROFILES)}")
    takes = allocators(a.profile)
    a.alloc = a.alloc or DEFAULT_ALLOC[a.profile]
    a.dirorder = a.dirorder or DEFAULT_DIRORDER[a.profile]
    try:
        mountopts.parse([f"dirorder={a.dirorder}"])
    except mountopts.OptionError as e:
        raise AgingError(f"--dirorder {a.dirorder}: {e}") from None
    for name in [a.alloc] + (a.replay.split(",") if a.replay else []):
        if name not in policies.ALLOCATORS:
            raise AgingError(f"unknown allocator {name!r} (simfs policies lists them)")
    if not 0 <= a.fill < 100:
        raise AgingError(f"--fill {a.fill:g}: give a percentage from 0 to below 100")
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
    if a.fill:
        fill_room(size, a.profile, a.fill, need)
    os.makedirs(os.path.join(out, "work"), exist_ok=True)
    plan = {"out": out, "history": "generated (--quick)" if a.quick else h.repo, "repo": h.repo,
            "commits": h.commits, "pulls": h.pulls, "every": every, "mounted": a.alloc,
            "replay": a.replay.split(",") if a.replay else takes,
            "disk": a.disk, "size": size, "block_size": 4096, "dataless": a.dataless,
            "profile": a.profile, "dirorder": a.dirorder, "fill": a.fill, "pictures": not a.no_pictures, "wall": {}, "stopped": {}}
    save(plan)
    return plan


PROFILES = ("ext2", "ext4")
DEFAULT_ALLOC = {"ext2": "ext2", "ext4": "mballoc"}
DEFAULT_DIRORDER = {"ext2": "linear", "ext4": "hash"}


def allocators(profile: str) -> list[str]:
    """Every allocator that takes PROFILE's images. Today all do: an allocator picks blocks
    from the free-space map and the volume maps them (block map or extents, flex_bg groups in
    the geometry); tests/mount/test_fsx_ext4.py runs fsx under each on the ext4 profile."""
    import policies
    return list(policies.ALLOCATORS)


def fill_room(size: int, profile: str, pct: float, need: int) -> None:
    """Refuse a --fill that leaves the history less room than it needs (AgingError), or that
    is below what the fresh image already uses. The fresh image is made in a temporary file
    (mkfs is in-process and fast); nothing of the run is made yet."""
    import tempfile
    from simfs.ondisk.mkfs import ImageError, mkfs
    from . import fill
    from .measure import image_used
    with tempfile.TemporaryDirectory(prefix="aging-fill-") as tmp:
        image = os.path.join(tmp, "probe.img")
        try:
            mkfs(image, size, block_size=4096, profile=profile)
        except ImageError as e:
            raise AgingError(f"--size {size >> 10}K: {e}") from None
        used = image_used(image)
    target = fill.target_blocks(len(used), pct)
    room = (len(used) - target) * 4096
    if target <= used.sum():
        raise AgingError(f"--fill {pct:g}: a fresh {profile} image of {size >> 20} MiB already has "
                         f"{100 * used.sum() / len(used):.1f}% of its blocks in use; give more")
    if room < need:
        raise AgingError(f"--fill {pct:g} leaves {room >> 20} MiB of the {size >> 20} MiB image for the "
                         f"history, which needs at least {-(-need // (1 << 20))} MiB (give a lower --fill "
                         f"or a larger --size)")


def save(plan: dict) -> None:
    with open(os.path.join(plan["out"], RUN), "w") as f:
        json.dump(plan, f, indent=1)


def config(plan: dict, alloc: str, replayed: bool = False) -> Config:
    """The mounted configuration lays the filler (--fill); replays lay it from the op log. A plan
    from before --dirorder ran with simfs's default order, linear."""
    extra = [f"dirorder={plan.get('dirorder', 'linear')}"]
    if replayed and plan["dataless"]:
        extra.append("dataless=yes")
    return Config(alloc, disk=plan["disk"], size=plan["size"], block_size=plan["block_size"],
                  extra=",".join(extra),
                  profile=plan.get("profile", "ext2"), fill=0 if replayed else plan.get("fill", 0))


def run(plan: dict, workers: int | None = None, scheduler: str | None = None) -> None:
    """The mounted run (unless done), then every replay not done: one after another, or as
    Dask tasks (`workers` local processes, or the cluster at `scheduler`; aging.tasks)."""
    out, work = plan["out"], os.path.join(plan["out"], "work")
    sink = Sink(out)
    h = History(plan["repo"], plan["commits"])
    log = os.path.join(work, "aged.oplog.gz")
    last = plan["pulls"] - plan["pulls"] % plan["every"]
    if "mounted" not in plan["wall"]:
        print(f"aging: {h.pulls} pulls, mounted with alloc={plan['mounted']}", flush=True)
        t = time.monotonic()
        with Bar(f"mounted alloc={plan['mounted']}", total=h.pulls + 1) as bar:
            age(h, config(plan, plan["mounted"]), work, plan["every"], sink, log=log,
                done=sink.done(plan["mounted"], "mounted"), progress=bar)
        canonicalize(log)                       # git's random names and utime times: stand-ins
        plan["wall"]["mounted"] = round(time.monotonic() - t, 1)
        save(plan)
    todo = [a for a in plan["replay"] if f"replay {a}" not in plan["wall"]]
    if todo and (workers is not None or scheduler):
        replay_tasks(plan, todo, log, h, sink, last, workers, scheduler)
        todo = []
    nsteps = replay_steps(log) if todo else None
    for alloc in todo:
        print(f"aging: replaying under alloc={alloc}", flush=True)
        t = time.monotonic()
        try:
            with Bar(f"replay alloc={alloc}", total=nsteps) as bar:
                replay(log, os.path.join(work, "pristine.img"), config(plan, alloc, True), work, sink,
                       commits=h.commits, done=sink.done(alloc, "replayed"), last=last, progress=bar)
        except AgingError as e:                 # e.g. out of space where the recording was not:
            print(f"aging: {e}; its measurements so far are kept", file=sys.stderr)
            plan.setdefault("stopped", {})[alloc] = str(e)       # the others still replay
        plan["wall"][f"replay {alloc}"] = round(time.monotonic() - t, 1)
        save(plan)
    write(out, plan, load(out))
    if plan["pictures"]:
        draw(plan, load(out), work)
    if plan.get("stopped"):
        raise AgingError(f"{len(plan['stopped'])} replay(s) stopped early ({', '.join(plan['stopped'])})")


def replay_tasks(plan: dict, todo: list[str], log: str, h: History, sink, last: int,
                 workers: int | None, scheduler: str | None) -> None:
    """The replays of TODO as Dask tasks; each one's rows, wall time and stop saved as it ends."""
    from .tasks import run_on_dask
    work = os.path.join(plan["out"], "work")
    print(f"aging: replaying under {', '.join(todo)} as Dask tasks "
          f"({f'{workers} workers' if workers else scheduler})", flush=True)

    def finished(res: dict) -> None:
        for r in res["rows"]:
            sink(r)
        if res["error"]:
            print(f"aging: {res['error']}; its measurements so far are kept", file=sys.stderr)
            plan.setdefault("stopped", {})[res["alloc"]] = res["error"]
        plan["wall"][f"replay {res['alloc']}"] = res["wall"]
        if res.get("where"):
            plan.setdefault("where", {})[f"replay {res['alloc']}"] = res["where"]
        save(plan)

    jobs = [(config(plan, a, True), (log, os.path.join(work, "pristine.img"), config(plan, a, True), work),
             {"commits": h.commits, "done": sink.done(a, "replayed"), "last": last}) for a in todo]
    run_on_dask(jobs, workers, scheduler, finished)


def replay_steps(log: str) -> int | None:
    """The progress steps of replaying LOG (None: unknown, the bar pulses)."""
    from simfs.inprocess.oplog import LogError, scan
    from simfs.inprocess.replay import OPS
    try:
        return steps(scan(log, OPS)[0])
    except (LogError, OSError):
        return None


def draw(plan: dict, rows: list[dict], work: str) -> None:
    from .pictures import blockmaps, layout_plot, ratio_plot
    out = plan["out"]
    title = (f"{plan['pulls']} pulls, {plan['disk']}, {plan.get('profile', 'ext2')}, "
             f"dirorder={plan.get('dirorder', 'linear')}"
             + (f", filled to {plan['fill']:g}%" if plan.get("fill") else ""))
    ratio_plot(rows, os.path.join(out, "ratio.png"), title)
    layout_plot(rows, os.path.join(out, "layout.png"), title)
    aged = os.path.join(work, f"aged-{plan['mounted']}.img")
    clean = os.path.join(work, f"clean-mounted-{plan['mounted']}.img")
    if os.path.exists(aged) and os.path.exists(clean):
        blockmaps(aged, clean, os.path.join(out, "blockmap.png"), f"alloc={plan['mounted']}, {title}")
