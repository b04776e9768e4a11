"""The hidden control directory `/.simfs/` of a mounted simfs.

pyfuse3 has no ioctl, so a mount is inspected and steered through a small virtual directory
(the s3ql control-file pattern): `lookup(root, ".simfs")` resolves it, root's readdir never
lists it. Its files are served with direct_io and st_size 0 (procfs style): a readable file's
content is rendered when it is opened; every write() to a writable file runs its action.

Files are registered with `add()`; a writable one is the mounting user's alone (mode 0200
or 0600, owner the daemon's uid: other users get EACCES), so nobody else can change its
measurements; the FUSE layer registers `stats`, `info`, `sync`,
`drop_caches`, `reset`, `mark` (the last three when the volume offers them) and `fault`
under `-o debug_faults`.
Virtual inode and handle numbers start at 2**48, far above any ext2 inode number (32 bits),
so they can never collide with the image's. Nothing here knows about pyfuse3.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

from simfs.errors import FSError

NAME = b".simfs"
BASE = 1 << 48
DIR_INO = BASE
FH_BASE = 1 << 56


def is_control(num: int) -> bool:
    """True for a virtual inode or handle number of the control directory."""
    return num >= BASE


@dataclass
class ControlFile:
    name: bytes
    ino: int
    perm: int
    read: Callable[[], bytes] | None
    write: Callable[[bytes], None] | None
    help: str


class ControlDir:
    """The virtual directory: its files, their attributes, and open handles."""

    def __init__(self, root_ino: int, uid: int = 0, gid: int = 0):
        self.root_ino = root_ino
        self.uid, self.gid = uid, gid
        self.time_ns = time.time_ns()
        self.files: dict[bytes, ControlFile] = {}
        self.by_ino: dict[int, ControlFile] = {}
        self.handles: dict[int, SimpleNamespace] = {}
        self._next_fh = FH_BASE

    def add(self, name: str, *, read: Callable[[], bytes] | None = None,
            write: Callable[[bytes], None] | None = None, perm: int | None = None,
            help: str = "") -> None:
        """Register a file: `read()` renders its content, `write(data)` runs its action."""
        bname = name.encode()
        if perm is None:
            perm = (0o444 if read else 0) | (0o200 if write else 0)
        perm &= ~0o022                  # writing runs an action: the mounting user's alone
        old = self.files.get(bname)
        ino = old.ino if old else DIR_INO + 1 + len(self.files)
        f = ControlFile(bname, ino, perm, read, write, help)
        self.files[bname] = f
        self.by_ino[ino] = f

    # namespace ------------------------------------------------------------------------------
    def lookup(self, parent: int, name: bytes):
        if parent == self.root_ino and name == NAME:
            return self.getattr(DIR_INO)
        if parent != DIR_INO:
            raise FSError(errno.ENOENT)
        if name == b".":
            return self.getattr(DIR_INO)
        if name == b"..":
            return None           # the caller answers with the root's attributes
        f = self.files.get(name)
        if f is None:
            raise FSError(errno.ENOENT)
        return self.getattr(f.ino)

    def getattr(self, ino: int) -> SimpleNamespace:
        if ino == DIR_INO:
            mode, nlink = stat.S_IFDIR | 0o555, 2
        else:
            f = self.by_ino.get(ino)
            if f is None:
                raise FSError(errno.ENOENT)
            mode, nlink = stat.S_IFREG | f.perm, 1
        t = self.time_ns
        return SimpleNamespace(st_ino=ino, generation=0, st_mode=mode, st_nlink=nlink,
                               st_uid=self.uid, st_gid=self.gid, st_rdev=0, st_size=0,
                               st_blocks=0, st_blksize=4096, st_atime_ns=t, st_mtime_ns=t,
                               st_ctime_ns=t)

    def entries(self) -> list[tuple[bytes, int]]:
        """(name, ino) of the files in registration order (without . and ..)."""
        return [(f.name, f.ino) for f in self.files.values()]

    # files ------------------------------------------------------------------------------------
    def open(self, ino: int, flags: int, uid: int | None = None) -> int:
        """A handle; writing (running an action) is for the mounting user and root only,
        whatever the mode says (the kernel checks the mode too)."""
        f = self.by_ino.get(ino)
        if f is None:
            raise FSError(errno.EISDIR if ino == DIR_INO else errno.ENOENT)
        if (flags & 3) != os.O_RDONLY and uid is not None and uid not in (0, self.uid):
            raise FSError(errno.EACCES)
        content = f.read() if (f.read and (flags & 3) != 1) else b""
        fh = self._next_fh
        self._next_fh += 1
        self.handles[fh] = SimpleNamespace(file=f, content=content)
        return fh

    def read(self, fh: int, off: int, size: int) -> bytes:
        h = self._handle(fh)
        if h.file.read is None:
            raise FSError(errno.EBADF)
        return h.content[off:off + size]

    def write(self, fh: int, off: int, data: bytes) -> int:
        h = self._handle(fh)
        if h.file.write is None:
            raise FSError(errno.EBADF)
        h.file.write(bytes(data))
        return len(data)

    def release(self, fh: int) -> None:
        self.handles.pop(fh, None)

    def _handle(self, fh: int) -> SimpleNamespace:
        h = self.handles.get(fh)
        if h is None:
            raise FSError(errno.EBADF)
        return h
