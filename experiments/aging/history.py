"""Which commits a run pulls: any git repository's first-parent history, or a generated one.

`select` checks everything before anything is made (AgingError: one line for the user). The
quick history is written with `git fast-import` from a seeded RNG with fixed author and
committer dates, so the same seed gives the same commits, hashes included.
"""

from __future__ import annotations

import os
import random
import subprocess
from dataclasses import dataclass


class AgingError(Exception):
    """Bad input or a run that cannot go on (one line for the user)."""


def git(repo: str, *args: str, input: bytes | None = None) -> str:
    r = subprocess.run(["git", "-C", repo, *args], input=input, capture_output=True)
    if r.returncode != 0:
        raise AgingError(f"git {args[0]} in {repo}: " + (r.stderr.decode(errors="replace").strip()
                                                          .splitlines() or ["failed"])[-1])
    return r.stdout.decode(errors="surrogateescape")


@dataclass
class History:
    repo: str
    commits: list[str]          # the first commit (cloned), then one per pull

    @property
    def pulls(self) -> int:
        return len(self.commits) - 1


def first_parent(repo: str, rev: str = "HEAD") -> list[str]:
    """The first-parent commits up to REV, oldest first."""
    if not os.path.isdir(repo):
        raise AgingError(f"{repo}: no such directory")
    r = subprocess.run(["git", "-C", repo, "rev-parse", "--git-dir"], capture_output=True)
    if r.returncode != 0:
        raise AgingError(f"{repo}: not a git repository")
    return git(repo, "rev-list", "--first-parent", "--reverse", rev).split()


def select(repo: str, commits: str | None = None, pulls: int | None = None) -> History:
    """`commits` "A..B" (A is cloned, every first-parent commit after it up to B pulled) or
    None (the whole history up to HEAD); `pulls` keeps the first N pulls."""
    if commits:
        a, sep, b = commits.partition("..")
        if not sep or not a or not b:
            raise AgingError(f"--commits {commits!r}: give a range A..B")
        full = first_parent(repo, _resolve(repo, b))
        start = _resolve(repo, a)
        if start not in full:
            raise AgingError(f"--commits {commits!r}: {a} is not a first-parent ancestor of {b}")
        chosen = full[full.index(start):]
    else:
        chosen = first_parent(repo)
    if len(chosen) < 2:
        raise AgingError(f"{repo}: the history has {len(chosen)} commit(s); aging needs at least one pull")
    if pulls is not None:
        if pulls < 1:
            raise AgingError(f"--pulls {pulls}: give at least 1")
        if pulls > len(chosen) - 1:
            raise AgingError(f"--pulls {pulls} is past the end of the history "
                             f"({len(chosen) - 1} pulls after {chosen[0][:12]})")
        chosen = chosen[:pulls + 1]
    return History(os.path.abspath(repo), chosen)


def _resolve(repo: str, rev: str) -> str:
    r = subprocess.run(["git", "-C", repo, "rev-parse", "--verify", "-q", rev + "^{commit}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AgingError(f"{repo}: no commit {rev!r}")
    return r.stdout.strip()


PULL_BYTES = 32 << 10       # a pull's loose objects (commit, trees, blobs), each at least a block


def need_bytes(h: History) -> int:
    """A lower bound of what the aged file system must hold: the repository's objects (loose
    and packed, as `git count-objects` counts them; the pulls unpack them again on the mount),
    the last commit's tree (from `git ls-tree -rl`), each file rounded to 4 KiB, and PULL_BYTES
    per pull (a fetch of fewer than 100 objects stores them loose, one file each)."""
    objs = 0
    for line in git(h.repo, "count-objects", "-v").splitlines():
        k, _, v = line.partition(":")
        if k in ("size", "size-pack"):
            objs += int(v) * 1024
    tree = sum(-(-int(size) // 4096) * 4096
               for size in (ln.split()[3] for ln in git(h.repo, "ls-tree", "-rl", h.commits[-1]).splitlines())
               if size.isdigit())
    return objs + tree + h.pulls * PULL_BYTES


# the quick history ------------------------------------------------------------------------------
DIRS = ("src", "src/fs", "include", "tests", "doc", "tools")
DATE0 = 1_500_000_000


def make_quick(path: str, commits: int = 240, seed: int = 42) -> History:
    """A repository of `commits` first-parent commits at PATH: each creates, grows, rewrites,
    renames or deletes a few small files in a few directories (deterministic)."""
    rng = random.Random(seed)
    os.makedirs(path, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    files: dict[str, bytes] = {}
    out = []
    mark = 0
    for i in range(commits):
        changes = []
        for _ in range(rng.randint(1, 6)):
            what = rng.random()
            if not files or what < 0.3:
                name = f"{rng.choice(DIRS)}/f{rng.randrange(10**6):06d}.c"
                files[name] = _text(rng, rng.randint(200, 24_000))
                changes.append(("M", name))
            elif what < 0.75:
                name = rng.choice(sorted(files))
                files[name] = files[name] + _text(rng, rng.randint(100, 6000))
                changes.append(("M", name))
            elif what < 0.85:
                name = rng.choice(sorted(files))
                files[name] = _text(rng, rng.randint(200, 24_000))
                changes.append(("M", name))
            elif what < 0.93:
                old = rng.choice(sorted(files))
                new = f"{rng.choice(DIRS)}/r{rng.randrange(10**6):06d}.c"
                files[new] = files.pop(old)
                changes += [("D", old), ("M", new)]
            else:
                name = rng.choice(sorted(files))
                del files[name]
                changes.append(("D", name))
        date = DATE0 + i * 3600
        msg = f"commit {i}\n".encode()
        out.append(f"commit refs/heads/main\nmark :{mark + 1}\n"
                   f"author A <a@example.org> {date} +0000\ncommitter A <a@example.org> {date} +0000\n"
                   f"data {len(msg)}\n".encode() + msg)
        mark += 1
        for kind, name in changes:
            if kind == "D":
                out.append(f"D {name}\n".encode())
            elif name in files:
                data = files[name]
                out.append(f"M 100644 inline {name}\ndata {len(data)}\n".encode() + data + b"\n")
        out.append(b"\n")
    git(path, "fast-import", "--quiet", input=b"".join(out))
    git(path, "reset", "-q", "--hard", "main")
    return select(path)


WORDS = ("int", "return", "struct", "inode", "block", "if", "else", "for", "while", "static",
         "void", "char", "size_t", "buf", "len", "off", "err", "goto", "out", "unlock")


def _text(rng: random.Random, n: int) -> bytes:
    """About n bytes of source-like lines."""
    lines, size = [], 0
    while size < n:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))) + ";\n"
        lines.append(line)
        size += len(line)
    return "".join(lines).encode()
