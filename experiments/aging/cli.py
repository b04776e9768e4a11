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

from .canon import Evictions, canonicalize
from .history import AgingError, History, first_parent, make_quick, need_bytes, select
from .mounted import Config, age
from .replayed import replay, steps
from .results import Sink, load, write

QUICK_COMMITS = 61          # 60 pulls
QUICK_EVERY = 20
MIN_SIZE = 64 << 20
RUN = "run.json"
SLICED = 75             # EX_TEMPFAIL: the recording stopped at a segment's end (--slice); --resume goes on


class Sliced(Exception):
    """The recording stopped at a segment's end to end a --slice (not an error)."""


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
    p.add_argument("--segment", type=int, metavar="N",
                   help="remount every N pulls, each mount with its own op log, so that the recording "
                        "can stop at a segment's end and go on later (--slice, --resume, and --resume OUT "
                        "--pulls M to extend it); default: one mount for all the pulls")
    p.add_argument("--slice", type=float, metavar="SECONDS",
                   help="with --segment: stop recording at the first segment end from which the next "
                        "segment (timed as the last one) would end past SECONDS, exit status 75; "
                        "--resume OUT goes on (for holding a mount lock in slices)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--record-only", action="store_true",
                   help="stop once the recording is made (the replays need no mount: --resume OUT later)")
    g.add_argument("--replay-only", action="store_true",
                   help="replay what is recorded so far, mount nothing (a --segment recording under way)")
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
        run(plan, a.workers, a.scheduler, slice_s=a.slice, record_only=a.record_only,
            replay_only=a.replay_only)
    except Sliced as e:
        print(f"aging: {e}; --resume {plan['out']} goes on", file=sys.stderr)
        return SLICED
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
    if a.slice is not None and not a.slice >= 0:
        raise AgingError(f"--slice {a.slice:g}: give seconds, 0 or more")
    if a.resume:
        path = os.path.join(a.resume, RUN)
        if not os.path.exists(path):
            raise AgingError(f"--resume {a.resume}: no {RUN} there (not an aging run's output)")
        with open(path) as f:
            plan = json.load(f)
        if a.slice is not None and not plan.get("segment"):
            raise AgingError(f"--slice: the run in {a.resume} records in one mount (no --segment)")
        if a.pulls is not None and a.pulls != plan["pulls"]:
            extend(plan, a.pulls)
        return plan
    if a.slice is not None and not a.segment:
        raise AgingError("--slice stops at a segment's end: give --segment N too")
    if a.segment is not None and a.segment < 1:
        raise AgingError(f"--segment {a.segment}: give at least 1")
    if a.replay_only:
        raise AgingError("--replay-only replays a run's recording: give --resume OUT")
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
    if a.segment:
        plan["segment"] = a.segment
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


def extend(plan: dict, pulls: int) -> None:
    """--resume OUT --pulls M: the run's plan taken to M pulls of the same first-parent history
    (its repository read again), the pulls recorded so far kept. A recording made with --segment
    whose pulls are a multiple of it goes on as one run of M pulls would have recorded it (the
    same mounts, so the same op logs); the replays go on from the last log they replayed."""
    if not plan.get("segment"):
        raise AgingError("--pulls with --resume extends a recording made with --segment; this run "
                         "recorded in one mount")
    if pulls < recorded(plan):
        raise AgingError(f"--pulls {pulls}: {recorded(plan)} pulls are recorded already")
    full = first_parent(plan["repo"])
    start = plan["commits"][0]
    chosen = full[full.index(start):] if start in full else []
    if chosen[:len(plan["commits"])] != plan["commits"]:
        raise AgingError(f"{plan['repo']}: its history no longer continues the run's commits")
    if pulls > len(chosen) - 1:
        raise AgingError(f"--pulls {pulls} is past the end of the history ({len(chosen) - 1} pulls "
                         f"after {start[:12]})")
    plan["commits"], plan["pulls"] = chosen[:pulls + 1], pulls
    for k in [k for k in plan["wall"] if k == "mounted" or k.startswith("replay ")]:
        del plan["wall"][k]
    save(plan)


def segments(plan: dict) -> list[dict]:
    """The mounts recorded so far, each {"first", "last" (commit indices), "wall", "load",
    "canon"}; a plan from before --segment that recorded has one."""
    if "segments" not in plan:
        plan["segments"] = ([{"first": 0, "last": plan["pulls"], "wall": plan["wall"]["mounted"],
                              "canon": True}] if "mounted" in plan["wall"] else [])
    return plan["segments"]


def recorded(plan: dict) -> int:
    """The pulls recorded so far (-1: not even the clone)."""
    segs = segments(plan)
    return segs[-1]["last"] if segs else -1


def log_path(plan: dict, j: int) -> str:
    """Mount J's op log: one log `aged.oplog.gz` without --segment, else `aged-J.oplog.gz`."""
    name = f"aged-{j:04d}.oplog.gz" if plan.get("segment") else "aged.oplog.gz"
    return os.path.join(plan["out"], "work", name)


def record(plan: dict, sink, slice_s: float | None = None) -> bool:
    """Record the pulls not yet recorded, a mount per segment (the whole run without
    --segment); True once all are, False when stopped for SLICE_S (at a segment's end)."""
    if plan.get("recording"):
        seg = plan["recording"]
        raise AgingError(f"the recording stopped inside its mount of pulls {seg['first']}..{seg['last']}: "
                         "its image is past the last segment's end, so it cannot go on (start again)")
    h = History(plan["repo"], plan["commits"])
    cfg = config(plan, plan["mounted"])
    work = os.path.join(plan["out"], "work")
    size = plan.get("segment") or plan["pulls"] + 1
    t0, took = time.monotonic(), None
    while recorded(plan) < plan["pulls"]:
        first = recorded(plan) + 1
        last = min(plan["pulls"], (max(first, 1) - 1) // size * size + size)
        if slice_s is not None and took is not None and time.monotonic() - t0 + took > slice_s:
            return False
        j = len(segments(plan))
        plan["recording"] = {"first": first, "last": last}
        save(plan)
        t, load0, kids0, times = time.monotonic(), os.getloadavg()[0], _children_cpu(), {}
        with Bar(f"mounted alloc={plan['mounted']}" + (f" ({first}..{last})" if plan.get("segment") else ""),
                 total=last - first + 1) as bar:
            plan["filled"] = age(h, cfg, work, plan["every"], sink, log=log_path(plan, j),
                                 done=sink.done(plan["mounted"], "mounted"), progress=bar, first=first,
                                 last=last, filled=plan.get("filled"), times=times)
        took = time.monotonic() - t
        del plan["recording"]
        cpu = times.get("daemon_cpu")
        plan["segments"].append({"first": first, "last": last, "wall": round(took, 1),
                                 "load": [round(load0, 2), round(os.getloadavg()[0], 2)], "canon": False,
                                 "daemon_cpu": None if cpu is None else round(cpu, 1),
                                 "tools_cpu": round(_children_cpu() - kids0, 1)})
        save(plan)
    return True


def _children_cpu() -> float:
    """CPU seconds of the processes this one started and waited for (git, cp, grep, the simfs
    commands; not the mounts' daemons, which outlive their command)."""
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def canonicalize_all(plan: dict) -> None:
    """Every recorded log given its stand-ins (canon), once; with --segment, each log's operations
    counted (the replays' progress and the rates' operations per pull)."""
    for j, seg in enumerate(segments(plan)):
        if seg.get("canon") and plan.get("segment") and "ops" not in seg:
            seg["ops"] = log_ops(log_path(plan, j))
            save(plan)
        if seg.get("canon") and "evictions" not in seg and os.path.exists(log_path(plan, j)):
            seg["evictions"] = Evictions.scan(log_path(plan, j))
            save(plan)
        if not seg.get("canon"):
            t, ev = time.monotonic(), Evictions()
            canonicalize(log_path(plan, j), ev)     # git's random names and utime times: stand-ins
            seg["canon"], seg["canon_s"], seg["evictions"] = True, round(time.monotonic() - t, 1), ev.count
            if plan.get("segment"):
                seg["ops"] = log_ops(log_path(plan, j))
            save(plan)
        if seg.get("evictions") and not seg.get("evictions_said"):
            print(f"aging: log {j} (pulls {seg['first']}..{seg['last']}): the host evicted {seg['evictions']} "
                  "of the mount's inodes that git then needed again (its FORGETs and LOOKUPs are the host's "
                  "as well as the history's: experiments.aging.canon.Evictions)", file=sys.stderr)
            seg["evictions_said"] = True
            save(plan)


def run(plan: dict, workers: int | None = None, scheduler: str | None = None, *,
        slice_s: float | None = None, record_only: bool = False, replay_only: bool = False) -> None:
    """The recording (unless done), then every replay not done: one after another, or as
    Dask tasks (`workers` local processes, or the cluster at `scheduler`; aging.tasks).
    Sliced when a --slice ends the recording first; `record_only` stops after the recording,
    `replay_only` replays what is recorded so far and mounts nothing."""
    out, work = plan["out"], os.path.join(plan["out"], "work")
    sink = Sink(out)
    if recorded(plan) < plan["pulls"] and not replay_only:
        print(f"aging: {plan['pulls']} pulls, mounted with alloc={plan['mounted']}"
              + (f", {recorded(plan) + 1} recorded" if recorded(plan) >= 0 else ""), flush=True)
        if not record(plan, sink, slice_s):
            raise Sliced(f"recorded {recorded(plan)} of {plan['pulls']} pulls")
        plan["wall"]["mounted"] = round(sum(seg["wall"] for seg in segments(plan)), 1)
        save(plan)
    if record_only:
        print(f"aging: {recorded(plan)} pulls recorded; --resume {out} replays them", flush=True)
        return
    canonicalize_all(plan)
    upto = recorded(plan)
    complete = upto == plan["pulls"]
    logs = [log_path(plan, j) for j in range(len(segments(plan)))]
    if not logs:
        raise AgingError("nothing is recorded yet")
    h = History(plan["repo"], plan["commits"])
    last = upto - upto % plan["every"]
    resume = bool(plan.get("segment"))
    todo = [a for a in plan["replay"] if f"replay {a}" not in plan["wall"]]
    if todo and (workers is not None or scheduler):
        replay_tasks(plan, todo, logs, h, sink, last, workers, scheduler, complete)
        todo = []
    nsteps = sum((steps(seg["ops"]) if seg.get("ops") else replay_steps(lg)) or 0
                 for seg, lg in zip(segments(plan), logs)) or None if todo else None
    for alloc in todo:
        print(f"aging: replaying under alloc={alloc}", flush=True)
        t = time.monotonic()

        def segment_done(j: int, wall: float, cpu: float | None = None, alloc=alloc) -> None:
            plan.setdefault("replayed", {}).setdefault(alloc, {})[str(j)] = wall
            if cpu is not None:
                plan.setdefault("replayed_cpu", {}).setdefault(alloc, {})[str(j)] = cpu
            save(plan)
        try:
            with Bar(f"replay alloc={alloc}", total=nsteps) as bar:
                replay(logs, os.path.join(work, "pristine.img"), config(plan, alloc, True), work, sink,
                       commits=h.commits, done=sink.done(alloc, "replayed"), last=last, progress=bar,
                       resume=resume, segment_done=segment_done)
        except AgingError as e:                 # e.g. out of space where the recording was not:
            print(f"aging: {e}; its measurements so far are kept", file=sys.stderr)
            plan.setdefault("stopped", {})[alloc] = str(e)       # the others still replay
        if complete:
            plan["wall"][f"replay {alloc}"] = round(time.monotonic() - t, 1)
        save(plan)
    write(out, plan, load(out))
    if plan["pictures"] and complete:
        draw(plan, load(out), work)
    if plan.get("stopped"):
        raise AgingError(f"{len(plan['stopped'])} replay(s) stopped early ({', '.join(plan['stopped'])})")


def replay_tasks(plan: dict, todo: list[str], logs: list[str], h: History, sink, last: int,
                 workers: int | None, scheduler: str | None, complete: bool = True) -> None:
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
        if complete:
            plan["wall"][f"replay {res['alloc']}"] = res["wall"]
        if res.get("where"):
            plan.setdefault("where", {})[f"replay {res['alloc']}"] = res["where"]
        save(plan)

    jobs = [(config(plan, a, True), (logs, os.path.join(work, "pristine.img"), config(plan, a, True), work),
             {"commits": h.commits, "done": sink.done(a, "replayed"), "last": last,
              "resume": bool(plan.get("segment"))}) for a in todo]
    run_on_dask(jobs, workers, scheduler, finished)


def log_ops(log: str) -> int | None:
    """The operations LOG holds (None: it cannot be read)."""
    from simfs.inprocess.oplog import LogError, scan
    from simfs.inprocess.replay import OPS
    try:
        return scan(log, OPS)[0]
    except (LogError, OSError):
        return None


def replay_steps(log: str) -> int | None:
    """The progress steps of replaying LOG (None: unknown, the bar pulses)."""
    n = log_ops(log)
    return None if n is None else steps(n)


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
