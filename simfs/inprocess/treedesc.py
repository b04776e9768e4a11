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
import struct
import tarfile
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal


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
    offset: int | None = None      # where a member's data start in the archive (tar cuts its
                                   # writes at the archive's records); None: not from an archive
                                   # (placed as GNU tar --sort=name would write it)
    sparse: list[tuple[int, int]] | None = None   # a sparse member's map as GNU tar extracts
                                   # it: (offset, bytes) of each data region, then (size, 0)


def fuse_rdev(major: int, minor: int) -> int:
    """A device number as the kernel sends it in a FUSE MKNOD (new_encode_dev)."""
    return (minor & 0xFF) | (major << 8) | ((minor & ~0xFF) << 12)


def _split(name) -> list[bytes]:
    """A member's name (str or bytes) as tar extracts it: leading "/" and everything up to the
    last ".." component dropped (safer_name_suffix: "Removing leading `a/../' from member
    names")."""
    parts = [p for p in os.fsencode(name).split(b"/") if p and p != b"."]
    while b".." in parts:
        parts = parts[parts.index(b"..") + 1:]
    return parts


#: tar's type flags as Entry kinds. _members gives each member as (name, kind, mode, uid, gid,
#: mtime, size, link name, device major, minor, data), names in bytes, whichever reader read it
_KINDS = {tarfile.DIRTYPE: "dir", tarfile.SYMTYPE: "symlink", tarfile.LNKTYPE: "hardlink",
          tarfile.REGTYPE: "file", tarfile.AREGTYPE: "file", tarfile.CONTTYPE: "file",
          tarfile.GNUTYPE_SPARSE: "file", tarfile.FIFOTYPE: "fifo", tarfile.CHRTYPE: "chr",
          tarfile.BLKTYPE: "blk"}


def from_tarball(path: str, *, with_data: bool = False):
    """The members of a tar archive, in archive order. A regular file is opened for seeking,
    so that the data the entries do not carry is skipped, not read; nothing is kept per
    member. A large read buffer keeps most seeks to the next header inside it (no system call)."""
    first = True
    with open(path, "rb", buffering=1 << 20) as f:
        for name, kind, mode, uid, gid, mtime_ns, size, link, major, minor, data, offset, sparse \
                in _members(f, path, with_data):
            parts = _split(name)
            common = dict(mode=mode & 0o7777, mtime_ns=mtime_ns, uid=uid, gid=gid,
                          dotted=name.startswith(b"./"))
            if not parts:
                if kind == "dir" and first:
                    yield Entry([], "dir", **common)
                first = False
                continue
            first = False
            if kind == "symlink":
                yield Entry(parts, kind, target=link, **common)
            elif kind == "hardlink":
                yield Entry(parts, kind, link=_split(link), **common)
            elif kind == "file":
                yield Entry(parts, kind, size=size, data=data, offset=offset, sparse=sparse, **common)
            elif kind in ("chr", "blk"):
                yield Entry(parts, kind, rdev=fuse_rdev(major, minor), **common)
            elif kind is not None:
                yield Entry(parts, kind, **common)


def _members(f, path: str, with_data: bool):
    """The archive's members: read by _ustar when the archive is a plain (uncompressed) ustar
    or GNU one on a regular file, else by tarfile (compressed, a pipe, pax headers, sparse
    files, base-256 numbers: _ustar hands over where it meets one, and tarfile goes on after
    the members already given). Each as (name, kind, mode, uid, gid, mtime in ns, size, link
    name, device major, minor, data, offset of the data in the archive, sparse map or None)."""
    done = 0
    if os.path.isfile(path):
        try:
            for m in _ustar(f, with_data):
                yield m
                done += 1
            return
        except _Unsupported:
            f.seek(0)
    with tarfile.open(fileobj=f, mode="r:*" if os.path.isfile(path) else "r|*") as tf:
        i = 0
        while (m := tf.next()) is not None:
            tf.members.clear()             # tarfile would keep every TarInfo otherwise
            i += 1
            if i <= done:
                continue
            data = tf.extractfile(m).read() if with_data and m.isreg() else None
            yield (os.fsencode(m.name), _KINDS.get(m.type), m.mode, m.uid, m.gid, _mtime_ns(m), m.size,
                   os.fsencode(m.linkname), m.devmajor, m.devminor, data, m.offset_data, _sparse_map(m))


def _mtime_ns(m: tarfile.TarInfo) -> int:
    """The member's mtime in ns: a pax header's exact decimal (tarfile's float would round
    it; GNU tar restores it to the nanosecond), else whole seconds."""
    exact = m.pax_headers.get("mtime")
    if exact is not None:
        try:
            return int((Decimal(exact) * 1_000_000_000).to_integral_value(ROUND_FLOOR))
        except ArithmeticError:
            pass
    return int(m.mtime) * 1_000_000_000


def _sparse_map(m: tarfile.TarInfo) -> list[tuple[int, int]] | None:
    """A sparse member's map as GNU tar 1.34 extracts it: its data regions, then (size, 0),
    the entry GNU tar always ends a map with and extracts as an ftruncate to the size.
    (tarfile's list keeps a header's unused slots as (0, 0) and drops the ones in extension
    headers that are (size, 0).)"""
    if not m.issparse():
        return None
    return [(o, n) for o, n in m.sparse if n] + [(m.size, 0)]


class _Unsupported(Exception):
    """Something _ustar leaves to tarfile."""


_HEADER = struct.Struct("100s8s8s8s12s12s8sc100s8x32s32s8s8s155s12x")
_BLOCK = tarfile.BLOCKSIZE


def _ustar(f, with_data: bool):
    """tarfile's reading of a plain archive, header by header, without its per-member work
    (a TarInfo, its checksums computed twice, a seek and a tell): a large tree's archive is
    otherwise a twentieth of an in-process unpack. What tarfile does is kept: GNU long names
    and link names, ustar prefixes, a directory's trailing "/" dropped, an end-of-archive
    block, a cut or invalid header after the first ends the archive, cut data is an error."""
    long_name = long_link = None
    first = True
    end, offset = os.fstat(f.fileno()).st_size, 0
    while True:
        if offset > end:                  # the last member's data is cut
            raise tarfile.ReadError("unexpected end of data")
        buf = f.read(_BLOCK)
        offset += _BLOCK
        if len(buf) < _BLOCK or buf.count(0) == _BLOCK:
            if first:
                raise _Unsupported        # tarfile's error for an empty or cut archive
            return
        (name, mode, uid, gid, size, mtime, chksum, typ, link, _, _, major, minor,
         prefix) = _HEADER.unpack(buf)
        try:
            if _number(chksum) != sum(buf) - sum(buf[148:156]) + 256:
                raise ValueError
            mode, uid, gid, size, mtime = map(_number, (mode, uid, gid, size, mtime))
            major, minor = _number(major), _number(minor)
        except ValueError:
            if first:
                raise _Unsupported from None
            return
        first = False
        name, link, prefix = _nts(name), _nts(link), _nts(prefix)
        if typ in (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
            value = _nts(f.read(_blocks(size)))
            offset += _blocks(size)
            if typ == tarfile.GNUTYPE_LONGNAME:
                long_name = value
            else:
                long_link = value
            continue
        kind = _KINDS.get(typ)
        if kind is None or typ == tarfile.GNUTYPE_SPARSE:
            raise _Unsupported            # pax headers, sparse files, volume labels ...
        if typ == tarfile.AREGTYPE and name.endswith(b"/"):
            kind = "dir"
        if kind == "dir":
            name = name.rstrip(b"/")
        if prefix:
            name = prefix + b"/" + name
        if long_name is not None:
            name = long_name.removesuffix(b"/") if kind == "dir" else long_name
        if long_link is not None:
            link = long_link
        long_name = long_link = None
        data, start = None, offset
        if kind == "file":
            offset += _blocks(size)
            if with_data:
                data = f.read(size)
                if len(data) < size:
                    raise tarfile.ReadError("unexpected end of data")
                f.seek(_blocks(size) - size, 1)
            else:
                f.seek(_blocks(size), 1)
        yield name, kind, mode, uid, gid, mtime * 1_000_000_000, size, link, major, minor, data, start, None


def _nts(field: bytes) -> bytes:
    return field.split(b"\0", 1)[0]


def _number(field: bytes) -> int:
    """tarfile's nti for octal fields; a base-256 one is left to tarfile."""
    if field[0] & 0x80:
        raise _Unsupported
    return int(_nts(field).strip() or b"0", 8)


def _blocks(n: int) -> int:
    return -(-n // _BLOCK) * _BLOCK


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
