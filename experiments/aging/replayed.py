"""Age once, replay for every policy: the mounted run's op log asked again of a fresh image
under another configuration, in-process (simfs.inprocess.replay's Replayer, step by step).

The log holds the pulls and the measurements the mount made: its syncs, cache drops and
phase marks, the real `grep -r` of the aged tree (replayed as recorded: the same requests
the tool made) and the reads of the mounted `cp -a`. The clean copy cannot be replayed from
the log (it went to another mount), so it is made again in-process: while the log's `copy-N`
phase plays, the tree `cp -a` walked is noted as it was looked up (cp lstat's each entry before
copying it, in its own order: directories pre-order, each directory's entries by inode), and
that list is unpacked with the `unpack` verb (tar x's requests: files written in 10 KiB
records, not cp's copy_file_range) onto a fresh image of the configuration, then the `grep`
verb reads it cold. The recording is a function of the history (experiments.aging.gitenv:
no "racy git" re-reads, whose number depended on the recording's wall clock; canon: git's
random names given stand-ins), so a second mounted run under another allocator gives the
replay's measurements (tests/mount/test_aging.py). A configuration that runs out of space
where the recorded one did not stops the replay. A recording of several mounts (--segment) is
replayed log after log, the volume closed and opened again between two as the mounts were, so
the replayed image holds the whole state at each log's end and a replay can go on from there.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

from simfs.fuse import mountopts
from simfs.inprocess import replay as rp
from simfs.inprocess import verbs
from simfs.inprocess.kernel import Kernel
from simfs.inprocess.oplog import dec, iter_ops
from simfs.inprocess.treedesc import Entry
from simfs.fs.volume import Volume
from simfs.ondisk.mkfs import mkfs

from .history import AgingError
from .measure import NEEDLE, phase, row, space, used_pct
from .mounted import UUID, Config, sparse_copy

KINDS = {0o040000: "dir", 0o100000: "file", 0o120000: "symlink"}


class TapReplayer(rp.Replayer):
    """A Replayer that, while `copying`, notes the tree under /tree in the order of its first
    lookups (cp -a's order), with each entry's attributes as the replayed volume answers."""

    def __init__(self, vol):
        super().__init__(vol)
        self.copying = False
        self.rec: list = []
        self.paths: dict[int, list[bytes]] = {0: []}
        self.seen: dict[int, Entry] = {}
        self.entries: list[Entry] = []
        self.entry_inos: list[int] = []    # each entry's inode number on the replayed volume

    def start_copy(self) -> None:
        self.copying, self.paths, self.seen, self.entries, self.entry_inos = True, {0: []}, {}, [], []

    def step(self, lineno: int, rec: list) -> None:
        self.rec = rec
        super().step(lineno, rec)

    def _check(self, op: str, want, got) -> None:
        super()._check(op, want, got)
        if not self.copying:
            return
        if op == "lookup":
            base = self.paths.get(self.rec[2])
            if base is None:
                return
            path = self.paths[want] = base + [dec(self.rec[3])]
            kind = KINDS.get(got.st_mode & 0o170000)
            if len(path) > 1 and path[0] == b"tree" and want not in self.seen and kind:
                e = self.seen[want] = Entry(path[1:], kind, got.st_mode & 0o7777, got.st_size,
                                            got.st_mtime_ns, got.st_uid, got.st_gid)
                self.entries.append(e)
                self.entry_inos.append(got.st_ino)
        elif op == "readlink" and self.rec[2] in self.seen:
            self.seen[self.rec[2]].target = bytes(got)


def cp_order(entries: list[Entry], inos: list[int]) -> list[Entry]:
    """ENTRIES in the order `cp -a` copies them on the replayed volume: directories pre-order,
    each directory's entries by inode number (coreutils reads a directory with savedir's
    SAVEDIR_SORT_FASTREAD), the numbers those the replaying configuration gave (INOS). The log
    holds the recording configuration's order, which another allocator's numbers can change
    (cg numbers a directory's files in another order than ext2). Entries whose directory was
    not noted keep their place at the end."""
    children: dict[tuple, list] = {}
    for i, (e, ino) in enumerate(zip(entries, inos)):
        children.setdefault(tuple(e.path[:-1]), []).append((ino, i, e))
    out: list[Entry] = []
    placed: set[int] = set()
    stack = [iter(sorted(children.get((), ())))]
    while stack:
        nxt = next(stack[-1], None)
        if nxt is None:
            stack.pop()
            continue
        _, i, e = nxt
        out.append(e)
        placed.add(i)
        if e.kind == "dir":
            stack.append(iter(sorted(children.get(tuple(e.path), ()))))
    return out + [e for i, e in enumerate(entries) if i not in placed]


def clean_copy(entries: list[Entry], opts, cfg: Config, work: str, keep: str | None = None) -> dict:
    """ENTRIES unpacked onto a fresh image of CFG, then a cold grep -r of them: its phase."""
    image = os.path.join(work, f"clean-inprocess-{cfg.alloc}.img")     # replays may run at once
    if os.path.exists(image):
        os.unlink(image)
    mkfs(image, cfg.size, block_size=cfg.block_size, uuid=UUID, hash_seed=UUID, profile=cfg.profile)
    vol = Volume.open(image, dataclasses.replace(opts, stats="", trace=""))
    k = Kernel(vol)
    try:
        k.mount()
        k.mkdir(k.root, [b"tree"], 0o755)
        verbs.VERBS["unpack"](k, [b"tree"], entries)
        for action in (vol.drop_caches, lambda: vol.mark("clean")):
            k.ctl()                             # as the mounted run writes MNT/.simfs/...
            action()
        verbs.VERBS["grep"](k, [b"tree"], pattern=NEEDLE)
        k.ctl()
        vol.mark("clean-end")
        got = phase(vol.stats_snapshot(), "clean")
        k.unmount()
    finally:
        vol.close()
    if keep:
        os.replace(image, keep)
    else:
        os.unlink(image)
    return got


#: operations replayed per step of the progress callback
PROGRESS_OPS = 10_000


def steps(total_ops: int) -> int:
    """The progress steps of a replay of TOTAL_OPS operations."""
    return -(-total_ops // PROGRESS_OPS)


def replay(logs: list[str] | str, pristine: str, cfg: Config, work: str, sink, *, commits: list[str] = (),
           done: set[int] = frozenset(), last: int | None = None, progress=None, resume: bool = False,
           segment_done=None) -> dict:
    """Replay LOGS, one op log per mount of the recording in order (a single log: one mount),
    on a copy of PRISTINE (the recorded image before the mount) under CFG; each measurement to
    sink(row) as it is made (those in DONE skipped). Between two logs the volume is closed and
    opened again, as the recording unmounted and mounted, so the image holds the whole state
    at each boundary: with RESUME, a replay continues after the last log it finished
    (`replayed-ALLOC.img.json` says which, and is void while a log is under way).
    `segment_done(j, seconds, cpu_seconds)`: called as log j is finished. Returns the final statistics
    snapshot. `last`: the pulls of the last measurement (its clean image is kept).
    `progress(None)`: called every PROGRESS_OPS operations (steps(total) in all)."""
    logs = [logs] if isinstance(logs, str) else list(logs)
    image = os.path.join(work, f"replayed-{cfg.alloc}.img")
    state_path = image + ".json"
    state = _state(state_path) if resume and os.path.exists(image) else None
    if state is None:
        sparse_copy(pristine, image)
        state = {"logs": 0, "filled": None, "walls": []}
    try:
        opts = mountopts.parse([cfg.spec()]).volume     # as the mounted run was given them
    except (mountopts.OptionError, ValueError) as e:
        raise AgingError(str(e)) from None
    opts.stats = opts.trace = ""
    snap: dict = {}
    for j in range(state["logs"], len(logs)):
        _save_state(state_path, None)                   # void until log j is finished
        t, cpu = time.monotonic(), time.process_time()
        snap, state["filled"] = _replay_one(logs[j], image, opts, cfg, work, sink, commits, done, last,
                                            progress, state["filled"])
        state["logs"] = j + 1
        state["walls"].append(round(time.monotonic() - t, 1))
        _save_state(state_path, state)
        if segment_done is not None:
            segment_done(j, state["walls"][-1], round(time.process_time() - cpu, 1))
    return snap


def _state(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _save_state(path: str, state: dict | None) -> None:
    with open(path + ".tmp", "w") as f:
        json.dump(state, f)
    os.replace(path + ".tmp", path)


def _replay_one(log: str, image: str, opts, cfg: Config, work: str, sink, commits, done, last, progress,
                filled: float | None) -> tuple[dict, float | None]:
    """One mount's op log replayed on IMAGE, the volume opened for it and closed after it:
    (the final statistics snapshot, the filler's percent once laid)."""
    try:
        _, total = rp.check(log, image)
    except (rp.ReplayError, ValueError) as e:
        raise AgingError(str(e)) from None
    vol = Volume.open(image, opts)
    vol.stop_when_unwritable = True
    r = TapReplayer(vol)
    free: dict[int, dict] = {}
    try:
        for lineno, rec in iter_ops(log):
            if progress is not None and lineno % PROGRESS_OPS == 0:
                progress(None)
            if rec[0] in ("opendir", "releasedir"):
                r.index += 1
                if rec[0] == "opendir":
                    r.states[rec[1]] = vol.opendir_state()
                else:
                    r.states.pop(rec[1], None)
                continue
            if rec[0] == "mark":
                kind, _, n = str(rec[2]).partition("-")
                n = int(n) if n.isdigit() else -1
                if kind == "aged":
                    free[n] = space(vol.space.block_used)
                elif kind == "filled":                  # the filler is laid and synced (--fill)
                    filled = used_pct(vol.space.block_used)
                elif kind == "copy":
                    r.step(lineno, rec)             # aged-N ends here
                    aged = phase(vol.stats_snapshot(), f"aged-{n}")
                    r.start_copy()
                    continue
                elif kind == "pulls" and n in free:
                    r.copying = False
                    if n not in done:
                        keep = os.path.join(work, f"clean-replayed-{cfg.alloc}.img") if n == last else None
                        clean = clean_copy(cp_order(r.entries, r.entry_inos), opts, cfg, work, keep)
                        sink(row(cfg.alloc, "replayed", n, commits[n] if n < len(commits) else "",
                                 aged, clean, free[n], filled))
            r.step(lineno, rec)
            if r.index >= total:
                break
    except rp.ReplayError as e:
        vol.close()
        raise AgingError(f"replay under {cfg.alloc}: {e}") from None
    except BaseException:
        vol.close()
        raise
    vol.close()
    return vol.stats_snapshot(), filled
