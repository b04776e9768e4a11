"""Writing a planned tree: directories in pre-order, each with its files, symlinks, hard links
and (with svn) its `.svn/`, then directory times children first; counts what it wrote."""

from __future__ import annotations

import os

from .plan import Dir, Plan
from .rng import M64, subseed
from .source import corpora, source_text
from .svn import write_svn


class Writer:
    def __init__(self, root: str, seed: int, plan: Plan, svn: bool):
        self.root = root
        self.seed = seed
        self.plan = plan
        self.svn = svn
        self.corp = corpora(seed)
        self.cbase = subseed(seed, "content")
        # summary counters
        self.files = 0
        self.dirs = 0
        self.symlinks = 0
        self.hardlinks = 0
        self.total = 0
        self.largest = -1
        self.largest_path = ""
        self.empty_files = 0
        self.empty_dirs = 0
        self.src_files = 0
        self.src_bytes = 0
        self.svn_dirs = 0
        self.max_depth = 0
        self.longest = 0
        self.svn_dir_list: list[tuple[str, int]] = []

    def _p(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else self.root

    def rel_path(self, d: Dir, name: str) -> str:
        return d.rel(name)

    def _note_path(self, rel: str) -> None:
        if len(rel) > self.longest:
            self.longest = len(rel)

    def content(self, fid: int, rel: str) -> bytes:
        """File `fid`'s text; `rel` is its first name's path (the text mentions it)."""
        F = self.plan.files
        cseed = self.cbase ^ ((fid + 1) * 0x9E3779B97F4A7C15 & M64)
        return source_text(self.corp, cseed, F.kind_mode(fid)[0], rel, F.size[fid])

    def write_file(self, rel: str, data: bytes, mode: int, mtime: int, source: bool) -> None:
        fd = os.open(self._p(rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fchmod(fd, mode)
            os.utime(fd, (mtime, mtime))
        finally:
            os.close(fd)
        n = len(data)
        self.files += 1
        self.total += n
        if n == 0:
            self.empty_files += 1
        if n > self.largest:
            self.largest, self.largest_path = n, rel
        if source:
            self.src_files += 1
            self.src_bytes += n
        self._note_path(rel)

    def mkdir(self, rel: str, mtime: int | None = None) -> None:
        """Make a directory; with ``mtime`` its time is set in the final pass."""
        p = self._p(rel)
        os.mkdir(p, 0o700)
        os.chmod(p, 0o755)
        self.dirs += 1
        self._note_path(rel)
        if mtime is not None:
            self.svn_dir_list.append((rel, mtime))

    def run(self) -> None:
        pl = self.plan
        F = pl.files
        for d in pl.pre:
            if d.parent is not None:
                self.mkdir(d.path)
                self.max_depth = max(self.max_depth, d.depth)
            else:
                os.chmod(self.root, 0o755)
            entries_meta: list[tuple[str, str, int, bytes | None, int]] = []
            for name, fid in d.files():
                rel = d.rel(name)
                data = self.content(fid, rel)
                self.write_file(rel, data, F.kind_mode(fid)[1], F.mtime[fid], True)
                if self.svn:
                    entries_meta.append((name, "file", fid, data, F.mtime[fid]))
            for name, target, mt in d.symlinks or ():
                rel = self.rel_path(d, name)
                p = self._p(rel)
                os.symlink(target, p)
                os.utime(p, (mt, mt), follow_symlinks=False)
                self.symlinks += 1
                self._note_path(rel)
                if self.svn:
                    entries_meta.append((name, "link", -1, f"link {target}".encode(), mt))
            for name, fid in d.hardlinks or ():
                rel = self.rel_path(d, name)
                first = F.path(fid)
                os.link(self._p(first), self._p(rel), follow_symlinks=False)
                self.hardlinks += 1
                self._note_path(rel)
                if self.svn:
                    entries_meta.append((name, "file", fid, self.content(fid, first), F.mtime[fid]))
            if not self.svn and d.parent is not None and not (
                    d.fids or d.symlinks or d.hardlinks or d.subdirs):
                self.empty_dirs += 1
            if self.svn:
                write_svn(self, d, entries_meta)
        # directory times last, children before parents
        for rel, mt in reversed(self.svn_dir_list):
            os.utime(self._p(rel), (mt, mt))
        for d in reversed(pl.pre):
            os.utime(self._p(d.path), (d.mtime, d.mtime))
