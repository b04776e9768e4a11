"""The mounted aging run: real git on a simfs mount (as root), recorded with -o oplog=.

The tree is a work tree MNT/tree whose repository is MNT/git (as `git init --separate-git-dir`
makes them), so `grep -r MNT/tree` reads the tree and not the objects, while both share the file
system as in a clone. Each pull fetches the next first-parent commit from a local mirror and
fast-forwards (`git fetch SRC SHA && git merge --ff-only SHA`), git's automatic gc and
maintenance off, as Conway et al. ran theirs, and every git command with the settings that make
a recording a function of the history (experiments.aging.gitenv). Every N pulls
a measurement (each cold): sync (then the free-space map is read from the image), drop caches,
phase `aged-N`: `grep -r` of the tree; phase `copy-N`: `cp -a` of the tree onto a freshly made
image of the same configuration, cold `grep -r` there; phase `pulls-N` goes on. The phases,
caches drops and syncs are in the op log, so a replay stops where the mount measured.

A recording may take several mounts (experiments.aging.cli's --segment): each segment of pulls
mounts the image the previous one left, with its own op log, so a recording can stop at a
segment's end and go on in another process (a mount lock held in slices, a run extended). An
unmount ends the mount's caches and preallocations as a reboot would, so the segment length is
part of the workload: the logs are a function of the history and of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

from . import fill
from .gitenv import env as git_env, settle_index
from .history import AgingError, History
from .measure import GREP_ARGV, image_used, phase, row, space, used_pct

SIMFS = [sys.executable, "-m", "simfs.cli"]


@dataclass
class Config:
    """One configuration: the volume options every image of it is mounted (or replayed) with."""
    alloc: str
    disk: str = "sata7200"
    size: int = 256 << 20
    block_size: int = 4096
    extra: str = ""                 # more volume options, "key=val,..."
    profile: str = "ext2"           # simfs mkfs --profile
    fill: float = 0                 # --fill: percent of the blocks in use before the first pull

    def spec(self) -> str:
        return ",".join(x for x in (f"alloc={self.alloc}", f"disk={self.disk}", self.extra) if x)

    def mkfs(self, image: str) -> None:
        """A fresh image; fixed UUID and hash seed, so every image of a run is alike."""
        simfs("mkfs", "-q", "--force", image, "--size", str(self.size), "-b", str(self.block_size),
              "--profile", self.profile, "--uuid", UUID, "--hash-seed", UUID)


UUID = "5a6e6f00-0042-4242-8042-000000000042"


def simfs(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(SIMFS + list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AgingError(f"simfs {args[0]}: " + (r.stderr.strip().splitlines() or ["failed"])[-1])
    return r


def run(argv: list[str], *, cwd: str | None = None, ok=(0,)) -> None:
    r = subprocess.run(argv, cwd=cwd, env=git_env(), capture_output=True)
    if r.returncode not in ok:
        raise AgingError(f"{' '.join(argv[:3])}: exit {r.returncode}: "
                         + (r.stderr.decode(errors="replace").strip().splitlines() or [""])[-1])


def mirror(h: History, where: str) -> str:
    """A bare local copy of the repository that serves any commit by its hash."""
    if not os.path.isdir(where):
        run(["git", "clone", "-q", "--bare", "--no-local", h.repo, where])
    return where


class Mount:
    """An image mounted through the `simfs` CLI; unmounted on exit whatever happened."""

    def __init__(self, image: str, mnt: str, options: str):
        self.image, self.mnt, self.options = image, mnt, options

    def __enter__(self):
        os.makedirs(self.mnt, exist_ok=True)
        try:
            simfs("mount", self.image, self.mnt, "-o", self.options)
        except BaseException:                   # interrupted while mounting: mounted or not
            if os.path.ismount(self.mnt):
                simfs("umount", self.mnt, check=False)
            raise
        return self

    def __exit__(self, *exc):
        self.cpu = daemon_cpu(self.image, self.mnt)
        simfs("umount", self.mnt, check=exc[0] is None)

    def ctl(self, action: str, name: str = "1") -> None:
        """Write to the control file (what `simfs ctl MNT ACTION` does, without its start-up)."""
        with open(os.path.join(self.mnt, ".simfs", action), "w") as f:
            f.write(name)

    def stats(self) -> dict:
        with open(os.path.join(self.mnt, ".simfs", "stats"), "rb") as f:
            return json.load(f)["time"]


def daemon_cpu(image: str, mnt: str) -> float | None:
    """The CPU seconds (user and system) the simfs daemon serving IMAGE at MNT has used, from
    /proc (found by its command line; the mount itself is not asked: that would be in the op
    log). None when it cannot be found."""
    want = [b"mount", os.fsencode(image), os.fsencode(mnt)]
    try:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
                if not any(args[i:i + 3] == want for i in range(len(args) - 2)):
                    continue
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
                return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, ValueError, IndexError):
                continue
    except OSError:
        pass
    return None


def init(tree: str, gitdir: str) -> None:
    """An empty repository GITDIR with its work tree TREE beside it, as `git init
    --separate-git-dir` makes one, but with the work tree's .git naming the repository by a
    relative path (`--separate-git-dir` writes its absolute path, whose length differs from
    one run's directory to another's)."""
    run(["git", "init", "-q", "--bare", gitdir])
    for k, v in (("core.bare", "false"), ("core.logallrefupdates", "true"), ("gc.auto", "0"),
                 ("maintenance.auto", "false"), ("core.fsmonitor", "false")):
        run(["git", "--git-dir", gitdir, "config", k, v])
    os.mkdir(tree)
    with open(os.path.join(tree, ".git"), "w") as f:
        f.write(f"gitdir: ../{os.path.basename(gitdir)}\n")


def pull(tree: str, src: str, sha: str, first: bool, gitdir: str) -> None:
    """Fetch SHA from the mirror and fast-forward to it (experiments.aging.gitenv: the settings
    that make it repeat), then date the index at the epoch (gitenv.settle_index)."""
    run(["git", "-C", tree, "fetch", "-q", "--no-write-fetch-head", src, sha])
    if first:
        run(["git", "-C", tree, "checkout", "-q", "-b", "aging", sha])
    else:
        run(["git", "-C", tree, "merge", "-q", "--ff-only", sha])
    settle_index(gitdir)


def cold_grep(m: Mount, name: str, tree: str, end: str) -> dict:
    """drop caches, mark NAME, grep -r the tree (no match: exit 1), mark END: NAME's
    statistics (complete: read once END started)."""
    m.ctl("drop_caches")
    m.ctl("mark", name)
    run(GREP_ARGV + [tree], ok=(1,))
    m.ctl("mark", end)
    return phase(m.stats(), name)


def clean_copy(cfg: Config, tree: str, work: str, keep: str | None = None) -> dict:
    """cp -a of TREE onto a fresh image of CFG, then a cold grep -r there: its phase."""
    image = os.path.join(work, "clean.img")
    mnt = os.path.join(work, "clean.mnt")
    cfg.mkfs(image)
    with Mount(image, mnt, cfg.spec() + ",nostats") as m:
        run(["cp", "-a", tree, os.path.join(mnt, "tree")])
        got = cold_grep(m, "clean", os.path.join(mnt, "tree"), "clean-end")
    if keep:
        os.replace(image, keep)
    else:
        os.unlink(image)
    return got


def age(h: History, cfg: Config, work: str, every: int, sink, *, log: str, done: set[int] = frozenset(),
        progress=None, first: int = 0, last: int | None = None, filled: float | None = None,
        times: dict | None = None) -> float | None:
    """Age an image of CFG with H's pulls FIRST..LAST (commit indices; 0 is the clone) in one
    mount, recording LOG; each measurement goes to sink(row) as it is made. Returns the percent
    of blocks in use once the filler was laid (--fill; FILLED, what an earlier segment laid, on a
    later one). FIRST 0 makes a fresh image (and keeps a pristine copy, `pristine.img`, for the
    replays); a later FIRST mounts the image the previous segment left (experiments.aging.cli's
    --segment: one mount per segment, each with its own op log). `work` holds the images and
    mounts. `progress`: progress(label) says what runs, progress(None) counts a pull done
    (simfs.cli.progress.Bar). `times`, if given, gets "daemon_cpu": the CPU seconds of the
    mount's daemon (daemon_cpu; None if not found)."""
    progress = progress or (lambda label=None: None)
    last = h.pulls if last is None else last
    image = os.path.join(work, f"aged-{cfg.alloc}.img")
    mnt = os.path.join(work, "aged.mnt")
    if first == 0:
        cfg.mkfs(image)
        sparse_copy(image, os.path.join(work, "pristine.img"))
    elif not os.path.exists(image):
        raise AgingError(f"{image}: missing (the recording so far is lost; start again)")
    src = mirror(h, os.path.join(work, "source.git"))
    with Mount(image, mnt, f"{cfg.spec()},oplog={log},stats={log}.stats.json") as m:
        tree, gitdir = os.path.join(mnt, "tree"), os.path.join(mnt, "git")
        if first == 0:
            filled = fill_up(m, image, cfg) if cfg.fill else None
            init(tree, gitdir)
        for i in range(first, last + 1):
            sha = h.commits[i]
            progress("clone" if i == 0 else f"pull {i}")
            pull(tree, src, sha, i == 0, gitdir)
            progress(None)
            if i and i % every == 0:
                progress(f"measuring after {i} pulls")
                m.ctl("sync")
                free = space(image_used(image))
                aged = cold_grep(m, f"aged-{i}", tree, f"copy-{i}")
                keep = os.path.join(work, f"clean-mounted-{cfg.alloc}.img") if i + every > h.pulls else None
                clean = clean_copy(cfg, tree, work, keep)
                m.ctl("mark", f"pulls-{i}")
                if i not in done:
                    sink(row(cfg.alloc, "mounted", i, sha, aged, clean, free, filled))
    if times is not None:
        times["daemon_cpu"] = m.cpu
    return filled


def fill_up(m: Mount, image: str, cfg: Config) -> float:
    """Lay the filler (experiments.aging.fill) in MNT/filler: the planned files, a sync, then
    the last file sized from the image's bitmaps, a sync, and the mark `filled`. Returns the
    percent of the blocks then in use."""
    root = os.path.join(m.mnt, "filler")
    extents = cfg.profile == "ext4"
    used = image_used(image)
    target = fill.target_blocks(len(used), cfg.fill)
    m.ctl("mark", "fill")
    os.mkdir(root)
    fill.lay(root, fill.plan(target - int(used.sum()), cfg.block_size, extents))
    m.ctl("sync")
    fill.last_file(root, target - int(image_used(image).sum()), cfg.block_size, extents)
    m.ctl("sync")
    used = image_used(image)
    m.ctl("mark", "filled")
    return used_pct(used)


def sparse_copy(src: str, dst: str) -> None:
    run(["cp", "--sparse=always", src, dst])
