"""Aged images for any job (issue 55 item 1): every configuration and repetition starts from an
image aged by N pulls of a git history, or by a synthetic aging profile, instead of a fresh one.

A job's `[aged]` table (`history = "git"`, `pulls = N`, `repo = PATH`: a repository or a
bundle, the shared xfstests history by default) or `--aged git:N[@REPO]`. Aging works as the
aging experiment does (record once, replay per configuration): the pulls run once by the real
git on a simfs mount recorded with -o oplog= (the repository in MNT/aged.git, its work tree in
MNT/aged, so a job's own MNT/tree is free), with gitenv's settings and canon's stand-ins; then
the op log is replayed in-process onto each configuration's fresh image (made by the runner as
for a fresh run) under that configuration's options. Both are cached by their recipe (the
history's commits, the pull count, the recording's profile and readdir order, the
configuration's mkfs and mount options, and a digest of simfs's code), so every configuration
and every repeat of a job starts from the same bytes and a second job reuses them. The cache
is SIMFS_AGED_CACHE, else ~/.cache/simfs/aged; entries are made under a lock (Dask workers of
one machine share them).

A synthetic profile (`history = "synthetic"`, `profile = NAME`, `full`, `churn`, `seed`, `frag`,
or `--aged synthetic:NAME[,full=PCT][,churn=X][,seed=N][,frag=BLOCKS]`) ages each
configuration's fresh image in-process as Geriatrix does (experiments.aging.synthetic: files
created and deleted to a target fullness from a published profile's size, age and depth
distributions); no mount, no recording; cached by the profile's contents, the settings, the
configuration's options and the code digest, like a git-aged image.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from .history import AgingError, History, need_bytes, select
from .mounted import sparse_copy

GIT_KEYS = ("history", "pulls", "repo")
SYNTHETIC_KEYS = ("history", "profile", "full", "churn", "seed", "frag")
KEYS = tuple(dict.fromkeys(GIT_KEYS + SYNTHETIC_KEYS))
HISTORIES = ("git", "synthetic")
BUNDLE = os.path.join("shared", "third_party", "xfstests-history.bundle")
MIN_SIZE = 64 << 20
ROOT = Path(__file__).resolve().parents[2]          # the checkout


class AgedError(ValueError):
    """Bad [aged] / --aged input, or an image that cannot be aged: one line for the user."""


# what the user gives --------------------------------------------------------------------------
def parse(text: str) -> dict:
    """`git:N[@REPO]` or `synthetic:PROFILE[,key=value...]` as an [aged] table."""
    kind, sep, rest = text.partition(":")
    if kind == "synthetic" and sep:
        from . import synthetic
        try:
            return synthetic.parse(rest)
        except synthetic.SyntheticError as e:
            raise AgedError(f"--aged {text}: {str(e).removeprefix(f'synthetic:{rest}: ')}") from None
    m = re.fullmatch(r"(\d+)(?:@(.+))?", rest)
    if kind != "git" or not sep or not m:
        raise AgedError(f"--aged {text}: give git:N (N pulls of the xfstests history), git:N@REPO, "
                        "or synthetic:PROFILE[,full=PCT][,churn=X][,seed=N][,frag=BLOCKS]")
    table = {"history": "git", "pulls": int(m.group(1))}
    if m.group(2):
        table["repo"] = m.group(2)
    return table


def describe(table: dict) -> str:
    if table.get("history") == "synthetic":
        from .synthetic import describe as synthetic_describe
        return synthetic_describe(table)
    return f"git:{table['pulls']}" + (f"@{table['repo']}" if table.get("repo") else "")


def check_table(table) -> None:
    """Keys and types only (no history is read): what the job file checker calls."""
    if not isinstance(table, dict):
        raise AgedError("[aged] must be a table, e.g. {history = \"git\", pulls = 100}")
    kind = table.get("history", "git")
    if kind not in HISTORIES:
        raise AgedError(f"[aged] history = {kind!r}: choose \"git\" or \"synthetic\"")
    keys = SYNTHETIC_KEYS if kind == "synthetic" else GIT_KEYS
    for k in table:
        if k not in keys:
            raise AgedError(f"[aged] has no key {k!r} with history = \"{kind}\"; keys: {', '.join(keys)}")
    if kind == "synthetic":
        from . import synthetic
        try:
            synthetic.check(table)
        except synthetic.SyntheticError as e:
            raise AgedError(str(e)) from None
        return
    n = table.get("pulls")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise AgedError(f"[aged] pulls = {n!r}: give a whole number of pulls, 1 or more")
    if "repo" in table and (not isinstance(table["repo"], str) or not table["repo"]):
        raise AgedError(f"[aged] repo = {table['repo']!r}: give a repository's or bundle's path")


def check(table) -> None:
    """Everything about an [aged] table that can be checked before a run: its keys and
    values, and the history it names (git: the repository has the pulls; synthetic: the
    profile loads). AgedError otherwise."""
    check_table(table)
    if table.get("history", "git") == "synthetic":
        from . import synthetic
        try:
            synthetic.load(table["profile"])
        except synthetic.SyntheticError as e:
            raise AgedError(f"[aged] {e}") from None
    else:
        history(table)


def default_repo() -> str:
    """../shared's xfstests history beside this checkout (as tests/xfstests finds it)."""
    return str(ROOT.parent / BUNDLE)


def cache_root() -> Path:
    env = os.environ.get("SIMFS_AGED_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "simfs" / "aged"


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _digest(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def history(table: dict) -> History:
    """The history the table names (a bundle is cloned once into the cache). AgedError for a
    repository that is none, or a pull count past its end."""
    check_table(table)
    repo = os.path.expanduser(table.get("repo") or default_repo())
    if not os.path.exists(repo):
        raise AgedError(f"[aged] repo {repo}: no such repository or bundle"
                        + ("" if table.get("repo") else
                           " (the default, xfstests' history, sits only beside development checkouts: give "
                           "git:N@REPO with a repository or bundle of yours, or age by synthetic:agrawal)"))
    if os.path.isfile(repo):                        # a bundle: a bare clone of it, once
        st = os.stat(repo)
        clone = cache_root() / "repos" / f"{_digest(os.path.abspath(repo), st.st_size, st.st_mtime_ns)}.git"
        with _locked(clone):
            if not clone.exists():
                import subprocess
                tmp = clone.with_suffix(".tmp")
                shutil.rmtree(tmp, ignore_errors=True)
                r = subprocess.run(["git", "clone", "-q", "--bare", repo, str(tmp)], capture_output=True, text=True)
                if r.returncode != 0:
                    raise AgedError(f"[aged] repo {repo}: not a git repository or bundle "
                                    f"({(r.stderr.strip().splitlines() or ['git clone failed'])[-1]})")
                tmp.rename(clone)
        repo = str(clone)
    try:
        return select(repo, pulls=table["pulls"])
    except AgingError as e:
        raise AgedError(f"[aged] {describe(table)}: {e}") from None


def code_version() -> str:
    """A digest of simfs's code and of the aging code: an aged image made by other code is
    made again."""
    h = hashlib.sha256()
    for base in (ROOT / "simfs", Path(__file__).parent):
        for p in sorted(base.rglob("*.py")):
            h.update(str(p.relative_to(ROOT)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


# the recording (once, mounted) ------------------------------------------------------------------
def recording(h: History, profile: str, dirorder: str, version: str) -> Path:
    """The op log of H's pulls on a simfs mount (profile, readdir order), recorded once and
    cached. Needs root and FUSE when not cached yet."""
    from .canon import canonicalize
    from .cli import DEFAULT_ALLOC
    from .mounted import Config, Mount, init, mirror, pull
    key = _digest("recording", h.commits, profile, dirorder, version)
    d = cache_root() / f"rec-{key}"
    log = d / "aged.oplog.gz"
    with _locked(d):
        if log.exists():
            return log
        if os.geteuid() != 0:
            raise AgedError("an aged image's pulls are recorded once on a simfs mount: run as root")
        shutil.rmtree(d, ignore_errors=True)
        work = d / "work"
        work.mkdir(parents=True)
        size = max(MIN_SIZE, -(-4 * need_bytes(h) // (1 << 20)) << 20)
        cfg = Config(DEFAULT_ALLOC.get(profile, "ext2"), size=size, profile=profile, extra=f"dirorder={dirorder}")
        image, mnt = str(work / "aged.img"), str(work / "aged.mnt")
        tmp = str(work / "aged.oplog.gz")
        try:
            cfg.mkfs(image)
            src = mirror(h, str(work / "source.git"))
            with Mount(image, mnt, f"{cfg.spec()},oplog={tmp},nostats"):
                tree, gitdir = os.path.join(mnt, "aged"), os.path.join(mnt, "aged.git")
                init(tree, gitdir)
                for i, sha in enumerate(h.commits):
                    pull(tree, src, sha, i == 0, gitdir)
        except AgingError as e:
            raise AgedError(f"recording {len(h.commits) - 1} pulls of {h.repo}: {e}") from None
        canonicalize(tmp)
        os.replace(tmp, log)
        (d / "recipe.json").write_text(json.dumps({"repo": h.repo, "commits": [h.commits[0], h.commits[-1]],
                                                   "pulls": h.pulls, "profile": profile, "dirorder": dirorder,
                                                   "version": version, "size": size}, indent=1))
        shutil.rmtree(work, ignore_errors=True)
    return log


# an aged image per configuration (in-process) -----------------------------------------------------
def age_image(table: dict, cfg, image: Path) -> Path:
    """Replace IMAGE (the configuration's fresh image, just made) by its aged copy: the
    recording replayed onto it under CFG's mount options, cached by recipe. Returns the cache
    entry. AgedError when the image cannot be aged (too small, refused by the replay)."""
    if table.get("history", "git") == "synthetic":
        return synthetic_image(table, cfg, image)
    from simfs.fuse import mountopts
    from simfs.inprocess import replay as rp
    h = history(table)
    profile = cfg.mkfs.get("profile", "ext2")
    dirorder = cfg.mount.get("dirorder") or "linear"          # simfs mount's default, any profile
    version = code_version()
    log = recording(h, profile, dirorder, version)
    key = _digest("image", h.commits, profile, dirorder, version, cfg.mount_string(),
                  sorted(cfg.mkfs.items()))
    def replay(tmp: Path) -> None:
        opts = mountopts.parse([cfg.mount_string()]).volume
        opts.stats = opts.trace = ""
        rp.replay(str(log), str(tmp), opts, force=True)

    return _cached_aging(cache_root() / f"img-{key}.img", image, table, cfg, replay,
                         (rp.ReplayError, mountopts.OptionError, ValueError))


def _cached_aging(cached: Path, image: Path, table: dict, cfg, age, errors: tuple) -> Path:
    """IMAGE replaced by CACHED, made first (under its lock) by AGE(a copy of IMAGE) if absent;
    an error of ERRORS while aging leaves no cache entry and is one AgedError."""
    with _locked(cached):
        if not cached.exists():
            tmp = cached.with_suffix(".tmp")
            sparse_copy(str(image), str(tmp))
            try:
                age(tmp)
            except errors as e:
                tmp.unlink(missing_ok=True)
                raise AgedError(f"{cfg.name}: cannot be aged by {describe(table)} "
                                f"({image.stat().st_size >> 20} MiB image): {e}") from None
            os.replace(tmp, cached)
    sparse_copy(str(cached), str(image))
    return cached


def synthetic_image(table: dict, cfg, image: Path) -> Path:
    """IMAGE aged in-process by a synthetic profile (experiments.aging.synthetic) under CFG's
    options, cached by recipe; what the aging reached is kept beside it (`.json`)."""
    from simfs.errors import ImageError
    from simfs.fuse import mountopts
    from . import synthetic
    check_table(table)
    try:
        profile = synthetic.load(table["profile"])
    except synthetic.SyntheticError as e:
        raise AgedError(f"[aged] {e}") from None
    key = _digest("synthetic", profile.digest(), synthetic.settings(table), code_version(),
                  cfg.mount_string(), sorted(cfg.mkfs.items()), image.stat().st_size)
    cached = cache_root() / f"syn-{key}.img"

    def age(tmp: Path) -> None:
        got = synthetic.age(str(tmp), mountopts.parse([cfg.mount_string()]).volume, table)
        cached.with_suffix(".json").write_text(json.dumps(
            {"recipe": {"profile": table["profile"], "profile_digest": profile.digest(),
                        **synthetic.settings(table)}, "reached": got}, indent=1))

    return _cached_aging(cached, image, table, cfg, age,
                         (synthetic.SyntheticError, mountopts.OptionError, ValueError, OSError, ImageError))
