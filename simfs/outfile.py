"""Opening the files simfs writes or reads beside an image (log, statistics, trace, op log,
journal) without ever writing through another user's link or reading what another user planted.

The daemon runs as root, and an image often sits in a directory an ordinary user can write
to: a symbolic link planted there as IMAGE.stats.json or IMAGE.log (before or during a
mount) must not make root replace or append to the file it points at. So every such file is
opened relative to its directory's descriptor with O_NOFOLLOW, a new one with
O_CREAT|O_EXCL, and the opened file is checked (fstat) before a byte goes into it: a regular
file owned by the writer with one link (a hard link to another file would have two), or a
character device such as /dev/null named in a directory only root and the writer can write
to. Anything else is refused with `Refused` (an OSError whose strerror is one line). A
statistics file is written whole into a new temporary file and renamed into place, so a
reader never sees half of it and an existing name (a link included) is replaced, never
written through.

Reading is as careful (`open_read`, `read_private`: the journal a crash left, which is
replayed over the image, and the final statistics `simfs umount` summarises): opened with O_NOFOLLOW|O_NONBLOCK (a FIFO never blocks, a link is never followed, so
/dev/zero is never read), then fstat: a regular file with one link, owned by the reader or by
root (another user's journal would let them write blocks of root's image), no larger than the
caller's bound, read only up to that bound.
"""

from __future__ import annotations

import errno
import os
import stat

_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK


class Refused(OSError):
    """The file is not one simfs may write (strerror says why, in words)."""

    def __init__(self, why: str):
        super().__init__(errno.EPERM, why)


def _trusted(dst: os.stat_result) -> bool:
    """Only root and the writer can add names to this directory."""
    return dst.st_uid in (0, os.geteuid()) and not dst.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _open_dir(path: str) -> tuple[int, str]:
    d, name = os.path.split(os.path.abspath(path))
    if not name:
        raise Refused("it is a directory")
    return os.open(d or "/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), name


def _verify(fd: int, dfd: int, devices: bool) -> os.stat_result:
    """The opened file may be written by this process (see the module docstring)."""
    st = os.fstat(fd)
    if stat.S_ISCHR(st.st_mode) and devices and _trusted(os.fstat(dfd)):
        return st
    if not stat.S_ISREG(st.st_mode):
        raise Refused("not a regular file")
    if st.st_uid != os.geteuid():
        raise Refused(f"it belongs to user {st.st_uid}, not to user {os.geteuid()}, who would "
                      "write it; remove it or give another file")
    if st.st_nlink != 1:
        raise Refused(f"it has {st.st_nlink} hard links (simfs writes only a file of its own)")
    return st


def _existing(dfd: int, name: str, flags: int, devices: bool) -> int | None:
    """The existing file `name` opened with `flags` and checked, or None if there is none."""
    try:
        lst = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(lst.st_mode):
        raise Refused("it is a symbolic link (simfs never writes through one); remove it or "
                      "give another file")
    if stat.S_ISDIR(lst.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
    if not (stat.S_ISREG(lst.st_mode) or (devices and stat.S_ISCHR(lst.st_mode))):
        raise Refused("not a regular file")         # (never opened: a FIFO would block)
    try:
        fd = os.open(name, flags | _OPEN, dir_fd=dfd)
    except FileNotFoundError:
        return None                                  # removed meanwhile: create it
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Refused("it is a symbolic link (simfs never writes through one)") from None
        raise
    try:
        st = _verify(fd, dfd, devices)
        if (st.st_dev, st.st_ino) != (lst.st_dev, lst.st_ino):
            raise Refused("it was replaced while being opened")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open(path: str, flags: int, mode: int, devices: bool, created: list | None = None) -> int:
    try:
        return _open_checked(path, flags, mode, devices, created)
    except Refused as e:
        e.filename = path
        raise


def _open_checked(path: str, flags: int, mode: int, devices: bool, created: list | None) -> int:
    dfd, name = _open_dir(path)
    try:
        for _ in range(8):      # a name that comes and goes between the two opens: try again
            fd = _existing(dfd, name, flags, devices)
            if fd is not None:
                return fd
            try:
                fd = os.open(name, flags | _OPEN | os.O_CREAT | os.O_EXCL, mode, dir_fd=dfd)
            except FileExistsError:
                continue
            if created is not None:
                created.append(True)
            return fd
        raise Refused("its name keeps changing")
    finally:
        os.close(dfd)


def open_append(path: str, mode: int = 0o644) -> int:
    """A log: appended to if it is the writer's own regular file, else created."""
    return _open(path, os.O_WRONLY | os.O_APPEND, mode, devices=False)


def open_stream(path: str, mode: int = 0o644) -> int:
    """A trace or an op log written from its start: the writer's own file emptied, a new one
    created, or a character device in a directory only root and the writer can change."""
    fd = _open(path, os.O_WRONLY, mode, devices=True)
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private(path: str, mode: int = 0o600) -> int:
    """A journal: read and written, the writer's own regular file or a new one."""
    fd = _open(path, os.O_RDWR, mode, devices=False)
    os.set_blocking(fd, True)
    return fd


def _readable(fd: int, limit: int) -> os.stat_result:
    """The opened file may be read (see the module docstring)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise Refused("not a regular file (simfs reads only a file of its own)")
    if st.st_uid not in (0, os.geteuid()):
        raise Refused(f"it belongs to user {st.st_uid}, not to user {os.geteuid()} or root; "
                      "remove it, or let its owner use the image")
    if st.st_nlink != 1:
        raise Refused(f"it has {st.st_nlink} hard links (simfs reads only a file of its own)")
    if st.st_size > limit:
        raise Refused(f"it is {st.st_size} bytes long, more than the {limit} it can hold")
    return st


def open_read(path: str, limit: int) -> int | None:
    """A file simfs wrote beside an image (the journal, the final statistics) opened for
    reading and checked, blocking again; None if there is none. Refused (nothing read) for a
    link, a FIFO, a device, a directory, a second name, another user's file or one larger
    than `limit` bytes."""
    try:
        fd = _open_read(path)
        if fd is None:
            return None
        try:
            _readable(fd, limit)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd
    except Refused as e:
        e.filename = path
        raise


def read_private(path: str, limit: int) -> bytes | None:
    """The whole of such a file (open_read), never more than `limit` bytes even if it grows
    while being read; None if there is none."""
    fd = open_read(path, limit)
    if fd is None:
        return None
    try:
        chunks, left = [], limit + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 24))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
    finally:
        os.close(fd)
    if left <= 0:
        raise Refused(f"it grew past the {limit} bytes it can hold while being read")
    return b"".join(chunks)


def _open_read(path: str) -> int | None:
    dfd, name = _open_dir(path)
    try:
        try:
            fd = os.open(name, os.O_RDONLY | _OPEN, dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise Refused("it is a symbolic link (simfs never reads through one); remove "
                              "it") from None
            if e.errno == errno.ENXIO:         # (a socket)
                raise Refused("not a regular file (simfs reads only a file of its own)") from None
            raise
    finally:
        os.close(dfd)
    return fd


def probe(path: str, *, keep: bool = False, devices: bool = True) -> None:
    """Whether `path` could be written now (raises Refused or OSError otherwise); a file this
    made is removed unless `keep`. Nothing existing is changed."""
    created: list = []
    os.close(_open(path, os.O_WRONLY | os.O_APPEND, 0o644, devices, created))
    if created and not keep:
        dfd, name = _open_dir(path)
        try:
            os.unlink(name, dir_fd=dfd)
        finally:
            os.close(dfd)


def write_whole(path: str, data: bytes, mode: int = 0o644) -> None:
    """Statistics: written into a new file beside `path`, then renamed over it (a link at
    `path` is replaced, not followed); a device (/dev/null) is written directly."""
    dfd, name = _open_dir(path)
    try:
        fd = _existing(dfd, name, os.O_WRONLY, devices=True)    # refuses another's file or a link
        if fd is not None and not stat.S_ISREG(os.fstat(fd).st_mode):
            try:
                os.set_blocking(fd, True)
                _write_all(fd, data)
            finally:
                os.close(fd)
            return
        tmp = f".{name}.{os.getpid()}.tmp"
        try:
            new = os.open(tmp, os.O_WRONLY | _OPEN | os.O_CREAT | os.O_EXCL, mode, dir_fd=dfd)
        except PermissionError:
            if fd is None:
                raise
            try:                      # a directory we may not add to: the checked file in place
                os.set_blocking(fd, True)
                os.ftruncate(fd, 0)
                _write_all(fd, data)
            finally:
                os.close(fd)
            return
        except BaseException:
            if fd is not None:
                os.close(fd)
            raise
        if fd is not None:
            os.close(fd)
        fd = new
        try:
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
    finally:
        os.close(dfd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
