"""A tree to unpack, described entry by entry in archive order, without materialising it.

`Entry.path` is relative to the unpack directory (a list of names); directories come before
what they contain, as in a tar archive. An entry with an empty path, first if at all, is the
unpack directory itself (the archive's "./" member, whose metadata tar gives the directory). Sources: a tarball (`from_tarball`), a directory of
this machine (`from_directory`, in the order GNU tar would archive it with --sort=name), or a
generator (experiments.workload's `describe`). A source is an iterable that can be read once;
nothing in it needs the whole tree in memory.
"""

from __future__ import annotations

import os
import stat
import tarfile
from dataclasses import dataclass


@dataclass(slots=True)
class Entry:
    path: list[bytes]              # names from the unpack directory down
    kind: str                      # "dir" | "file" | "symlink" | "hardlink" | "fifo" | "chr" | "blk"
    mode: int = 0o644              # permission bits
    size: int = 0                  # bytes of a file
    mtime_ns: int = 0
    uid: int = 0
    gid: int = 0
    target: bytes = b""            # a symlink's target
    link: list[bytes] | None = None     # a hard link's existing path, same form as `path`
    data: bytes | None = None      # a file's bytes, when the source has them (None: filler)
    rdev: int = 0                  # a device's number, as FUSE's MKNOD carries it (fuse_rdev)
    dotted: bool | None = None     # an archive member named "./a/b" (True) or "a/b" (False);
                                   # None: not from an archive, named as `tar -C SRC .` does


def fuse_rdev(major: int, minor: int) -> int:
    """A device number as the kernel sends it in a FUSE MKNOD (new_encode_dev)."""
    return (minor & 0xFF) | (major << 8) | ((minor & ~0xFF) << 12)


def _split(name: str) -> list[bytes]:
    """A member's name as tar extracts it: leading "/" and everything up to the last ".."
    component dropped (safer_name_suffix: "Removing leading `a/../' from member names")."""
    parts = [os.fsencode(p) for p in name.split("/") if p and p != "."]
    while b".." in parts:
        parts = parts[parts.index(b"..") + 1:]
    return parts


def from_tarball(path: str, *, with_data: bool = False):
    """The members of a tar archive, in archive order. A regular file is opened for seeking,
    so that the data the entries do not carry is skipped, not read; each member is dropped
    from tarfile's list once read (it would otherwise keep one per member). A large read
    buffer keeps most seeks to the next header inside it (no system call)."""
    first = True
    with open(path, "rb", buffering=1 << 20) as f, \
            tarfile.open(fileobj=f, mode="r:*" if os.path.isfile(path) else "r|*") as tf:
        while (m := tf.next()) is not None:
            tf.members.clear()
            parts = _split(m.name)
            common = dict(mode=m.mode & 0o7777, mtime_ns=int(m.mtime) * 1_000_000_000,
                          uid=m.uid, gid=m.gid, dotted=m.name.startswith("./"))
            if not parts:
                if m.isdir() and first:
                    yield Entry([], "dir", **common)
                first = False
                continue
            first = False
            if m.isdir():
                yield Entry(parts, "dir", **common)
            elif m.issym():
                yield Entry(parts, "symlink", target=os.fsencode(m.linkname), **common)
            elif m.islnk():
                yield Entry(parts, "hardlink", link=_split(m.linkname), **common)
            elif m.isreg():
                data = tf.extractfile(m).read() if with_data else None
                yield Entry(parts, "file", size=m.size, data=data, **common)
            elif m.isfifo():
                yield Entry(parts, "fifo", **common)
            elif m.ischr() or m.isblk():
                yield Entry(parts, "chr" if m.ischr() else "blk", rdev=fuse_rdev(m.devmajor, m.devminor),
                            **common)


def from_directory(root: str, *, with_data: bool = False):
    """A directory of this machine as `tar --sort=name -cf - -C ROOT .` would archive it:
    names sorted bytewise, a directory before its contents, the second name of a file with
    several links as a hard link to the first; the directory itself first, as "./"."""
    seen: dict[tuple[int, int], list[bytes]] = {}

    def walk(dirpath: bytes, rel: list[bytes]):
        try:
            names = sorted(os.listdir(dirpath))
        except OSError:
            return
        for name in names:
            full = os.path.join(dirpath, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            path = rel + [name]
            common = dict(mode=st.st_mode & 0o7777, mtime_ns=st.st_mtime_ns, uid=st.st_uid,
                          gid=st.st_gid)
            if stat.S_ISDIR(st.st_mode):
                yield Entry(path, "dir", **common)
                yield from walk(full, path)
            elif stat.S_ISLNK(st.st_mode):
                yield Entry(path, "symlink", target=os.readlink(full), **common)
            elif stat.S_ISREG(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if st.st_nlink > 1 and key in seen:
                    yield Entry(path, "hardlink", link=seen[key], **common)
                    continue
                if st.st_nlink > 1:
                    seen[key] = path
                data = None
                if with_data:
                    with open(full, "rb") as f:
                        data = f.read()
                yield Entry(path, "file", size=st.st_size, data=data, **common)
            elif stat.S_ISFIFO(st.st_mode):
                yield Entry(path, "fifo", **common)
            elif stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):   # (tar skips sockets)
                yield Entry(path, "chr" if stat.S_ISCHR(st.st_mode) else "blk",
                            rdev=fuse_rdev(os.major(st.st_rdev), os.minor(st.st_rdev)), **common)

    top = os.stat(root)
    yield Entry([], "dir", mode=top.st_mode & 0o7777, mtime_ns=top.st_mtime_ns, uid=top.st_uid,
                gid=top.st_gid)
    yield from walk(os.fsencode(root), [])
