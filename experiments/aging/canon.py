"""The recorded op log made a function of the history: what git leaves to chance or to the
host's clock, given stand-ins in order of appearance (issue 51, item 3).

git names its temporary files from /dev/urandom (git_mkstemps_mode: `tmp_obj_XXXXXX` for each
loose object, `tmp_pack_`/`tmp_idx_`/`tmp_rev_` for a pack, `tXXXXXX` for `git init`'s probe of
symbolic links in the repository), and an object it writes that is already there it only
"freshens" with utime(NULL), whose time is the host's. No setting fixes either
(experiments.aging.gitenv fixes the rest). Here each such name becomes the prefix and a counter
of the same length (`tmp_obj_000007`: same directory-entry sizes, so the same layout under
linear directories), each such time the fixed date of gitenv, and the header's output paths
their base names. On a hash-ordered directory a temporary name's hash could place a directory
block differently from the recording: the mounted figures keep git's own names.

What no stand-in can undo is the host reclaiming the mount's inodes (`echo 2 >
/proc/sys/vm/drop_caches` by anyone, or memory pressure): the kernel forgets inodes it would
otherwise have kept (extra FORGETs, which release the volume's holds and an allocator's
reservations, as an evicted ext4 inode would) and asks again when it needs one (a LOOKUP, and a
GETATTR of the inode it made anew). Those requests were served and charged on the mount, so the
log keeps them; `Evictions` counts them (an inode asked for again after the kernel forgot it,
which a quiet host never does within one mount), so a recording says whether it is the quiet
host's.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections import deque

from simfs.inprocess.oplog import LogWriter  # noqa: F401  (the format this rewrites)

from .gitenv import DATE

_encode = json.JSONEncoder(separators=(",", ":")).encode
TEMP = re.compile(r"^(tmp_[a-z]+_)[A-Za-z0-9]{6}$")
PROBE = re.compile(r"^t[A-Za-z0-9]{6}$")
HINT = re.compile(rb'"tmp_[a-z]+_|"t[A-Za-z0-9]{6}"|time_ns')
FIXED_NS = int(DATE.split()[0]) * 10**9
GITDIRS = ("git", "aged.git")        # the repository beside the tree: an aging run's, an aged image's


class Canon:
    """The stand-ins of one log."""

    def __init__(self):
        self.names: dict[str, str] = {}
        self.gitdir: int | None = None

    def name(self, s: str, parent) -> str:
        m = TEMP.match(s)
        if m:
            prefix = m.group(1)
        elif parent == self.gitdir and self.gitdir is not None and PROBE.match(s):
            prefix = "t"
        else:
            return s
        got = self.names.get(s)
        if got is None:
            got = self.names[s] = f"{prefix}{len(self.names):06d}"
        return got

    def op(self, rec: list) -> list:
        if rec[0] == "mkdir" and len(rec) > 3 and rec[2] == 0 and rec[3] in GITDIRS:
            self.gitdir = rec[1]
        out = list(rec)
        for p, n in NAMES.get(rec[0], ()):
            if len(out) > n and isinstance(out[n], str):
                out[n] = self.name(out[n], out[p])
        if rec[0] == "setattr" and len(out) > 3 and isinstance(out[3], dict):
            out[3] = {k: (FIXED_NS if k.endswith("time_ns") and v else v) for k, v in out[3].items()}
        return out


#: op -> (index of the parent's handle, index of the name) of each name it carries
NAMES = {**{op: ((2, 3),) for op in ("lookup", "create", "mkdir", "mknod", "symlink", "unlink", "rmdir")},
         "rename": ((2, 3), (4, 5)), "rename_whiteout": ((2, 3), (4, 5)), "link": ((3, 4),)}


def handles(rec: list) -> list[int]:
    """The inode handles a record names (not a drop's: see `canonicalize`)."""
    op = rec[0]
    if op in ("opendir", "releasedir", "mark", "sync", "drop_caches", "reset_stats", "close"):
        return []
    out = [rec[2]] if len(rec) > 2 and isinstance(rec[2], int) else []
    if op == "link" and len(rec) > 3:
        out.append(rec[3])
    elif op in ("rename", "rename_whiteout") and len(rec) > 4:
        out.append(rec[4])
    res = rec[1] if len(rec) > 1 else None
    if isinstance(res, int) and op in ("lookup", "create", "mkdir", "mknod", "symlink", "link",
                                       "rename_whiteout"):
        out.append(res)
    elif op == "readdir" and isinstance(res, list):
        out += [e[1] for e in res if isinstance(e, list) and len(e) > 1]
    return out


FAST = re.compile(rb'^\["([a-z_]+)",(null|-?\d+|"[A-Z]+"),(\d+)[,\]]')
SLOW = {b"readdir", b"link", b"rename", b"rename_whiteout", b"mkdir", b"opendir", b"releasedir",
        b"mark", b"sync", b"drop_caches", b"reset_stats", b"close", b"setattr"}
MADE = {"lookup", "create", "mknod", "symlink"}
MOVED = {"drop", "release"}        # sent by the host after the inode's last use, at no fixed place

#: records a FORGET is looked back over for its inode's last mention (see `canonicalize`)
LOOKBACK = 1 << 16


class Evictions:
    """Inodes the host evicted during the recording and the kernel then asked for again: a
    handle whose holds a FORGET took to zero and that a later LOOKUP returned (canonicalize
    feeds it; `scan` reads a log)."""

    def __init__(self):
        self.held: dict[int, int] = {}
        self.forgotten: set[int] = set()
        self.count = 0

    def hold(self, h: int, n: int) -> None:
        self.held[h] = self.held.get(h, 0) + n

    def drop(self, h: int, n: int) -> None:
        left = self.held.get(h, 0) - n
        if left > 0:
            self.held[h] = left
        else:
            self.held.pop(h, None)
            self.forgotten.add(h)

    def lookup(self, res) -> None:
        if res in self.forgotten:
            self.forgotten.discard(res)
            self.count += 1

    def feed(self, op: str, h: int, res, line: bytes) -> None:
        if op == "hold" or op == "drop":
            n = int(line.rstrip().rstrip(b"]").rpartition(b",")[2])
            (self.hold if op == "hold" else self.drop)(h, n)
        elif op == "lookup" and isinstance(res, int):
            self.lookup(res)

    @classmethod
    def scan(cls, path: str) -> int:
        """The evictions in the gzip op log at PATH (canonical or not)."""
        ev = cls()
        with gzip.open(path, "rb") as src:
            src.readline()
            for line in src:
                m = FAST.match(line)
                if m is not None:
                    res = m.group(2)
                    ev.feed(m.group(1).decode(), int(m.group(3)),
                            int(res) if res[:1] not in (b"n", b'"') else None, line)
        return ev.count


def canonicalize(path: str, evictions: Evictions | None = None) -> int:
    """Rewrite the gzip op log at PATH in place; returns how many names got stand-ins.

    Besides the names and times: the host sends FORGET ("drop") when its forget batching lets
    it, a few requests after it evicted the inode, and RELEASE when the last reference to an open
    file goes (fput, deferred: it can come after the closing process's next request), so where
    a drop or a release falls varies from recording to recording. Each is moved back to right
    after the last record (within LOOKBACK) that names its inode - the kernel can send nothing
    for a closed file or an evicted inode after its last use - those meeting there in handle
    order, one inode's in the order they came (a release before its inode's drop). (The volume's
    choices do not hang on a drop's exact place: simfs.fs.namespace's REUSE_AFTER; a release
    is placed where a synchronous close would be.) One further from its inode's last mention
    (the host evicting under memory pressure) stays where it came. EVICTIONS, if given, is fed
    every hold, drop and lookup (see `Evictions`)."""
    c = Canon()
    tmp = path + ".canon"
    lines: deque[bytes] = deque()        # the window: lines[i] is record base + i
    after: dict[int, list] = {}           # record index -> drops moved behind it
    last: dict[int, int] = {}             # handle -> index of the record that last named it
    base = moved = 0

    def emit(out) -> None:
        """Write the window's first record, and the drops moved behind it."""
        out.write(lines.popleft())
        for *_, line in sorted(after.pop(base, ())):
            out.write(line)

    with gzip.open(path, "rb") as src, open(tmp, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as out:
            head = json.loads(src.readline())
            for k in ("stats", "trace"):
                if head.get("options", {}).get(k):
                    head["options"][k] = os.path.basename(head["options"][k])
            out.write(_encode(head).encode() + b"\n")
            for line in src:
                m = FAST.match(line)            # most records: op, result, one handle
                if m is None or m.group(1) in SLOW or HINT.search(line):
                    rec = c.op(json.loads(line))
                    line = _encode(rec).encode() + b"\n"
                    op, named = rec[0], handles(rec)
                    if evictions is not None and op == "lookup" and len(rec) > 2:
                        evictions.lookup(rec[1])
                else:
                    op, res, h = m.group(1).decode(), m.group(2), int(m.group(3))
                    named = [h, int(res)] if op in MADE and res[:1] not in (b"n", b'"') else [h]
                    if evictions is not None:
                        evictions.feed(op, h, named[1] if len(named) > 1 else None, line)
                if op in MOVED and last.get(named[0], -1) >= base:
                    moved += 1
                    after.setdefault(last[named[0]], []).append((named[0], moved, line))
                    continue
                index = base + len(lines)
                lines.append(line)
                if op not in MOVED:
                    for h in named:
                        last[h] = index
                if len(lines) > LOOKBACK:
                    emit(out)
                    base += 1
            while lines:
                emit(out)
                base += 1
    os.replace(tmp, path)
    return len(c.names)
