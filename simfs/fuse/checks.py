"""Checks before mounting, and what is mounted where: bad input becomes a one-line UsageError.

The mount point, the image and every output file (log, trace, statistics) are checked before
the daemon forks, so `simfs mount` itself reports what is wrong (exit 2, nothing mounted).
"""

from __future__ import annotations

import errno
import os
import stat

import simfs.outfile as outfile
from simfs.ondisk.constants import EXT2_MAGIC, SUPERBLOCK_OFFSET

class UsageError(Exception):
    """Bad input from the user: printed as one line, exit status 2."""


class UnsafeOutput(UsageError):
    """An output file simfs must not write: a link, another user's file, a file with other
    names (simfs.outfile); refused even where an unwritable default is only a warning."""


# checks ------------------------------------------------------------------------------------
PATH_MAX = 4096     # Linux: longest path a system call takes, NUL included
NAME_MAX = 255      # longest name in a directory (ext4, tmpfs, xfs, btrfs)


def path_problem(path: str) -> str | None:
    """Why a path is too long to look up, or None (os.path.exists() just says False)."""
    try:
        os.lstat(path)
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            n = len(os.fsencode(path))
            if n >= PATH_MAX:
                return f"the path is {n} bytes long, more than PATH_MAX ({PATH_MAX - 1} bytes)"
            return f"a name in it is longer than {NAME_MAX} bytes"
    return None


def shown(path: str) -> str:
    """A path for a one-line message: one longer than PATH_MAX is cut short."""
    return path if len(path) < PATH_MAX else path[:40] + "..."


def check_path(path: str, what: str) -> None:
    problem = path_problem(path)
    if problem:
        raise UsageError(f"{what} {shown(path)}: {problem}")


def check_mountpoint(mnt: str) -> None:
    check_path(mnt, "mount point")
    if is_mounted(mnt):
        raise UsageError(f"mount point {mnt} is already a mount point")
    try:
        os.lstat(mnt)
    except FileNotFoundError:
        raise UsageError(f"mount point {mnt} does not exist") from None
    except OSError as e:
        raise UsageError(f"mount point {mnt}: {e.strerror}") from None
    if not os.path.isdir(mnt):
        raise UsageError(f"mount point {mnt} is not a directory")
    if os.path.ismount(mnt):
        raise UsageError(f"mount point {mnt} is already a mount point")
    try:
        if os.listdir(mnt):
            raise UsageError(f"mount point {mnt} is not empty")
    except PermissionError:
        raise UsageError(f"mount point {mnt} is not readable") from None


def check_image(image: str) -> None:
    check_path(image, "image")
    try:
        st = os.stat(image)
    except FileNotFoundError:
        raise UsageError(f"image {image} does not exist") from None
    except OSError as e:       # a symlink loop, a file used as a directory, no permission
        raise UsageError(f"image {image}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UsageError(f"image {image} is not a regular file")


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True                     # (a dangling link: the open below says why)


def _is_ext2_image(path: str) -> bool:
    """A regular file with the ext2 magic where the superblock keeps it."""
    try:                      # (O_NONBLOCK: a FIFO put there meanwhile never blocks the open)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return int.from_bytes(os.pread(fd, 2, SUPERBLOCK_OFFSET + 56), "little") == EXT2_MAGIC  # s_magic
    except OSError:
        return False
    finally:
        os.close(fd)


def check_output(path: str, what: str, keep: bool = False, hint: str = "") -> None:
    """A file the daemon will write (log, trace, stats) must be creatable now, and one simfs
    may write (simfs.outfile: no link, no other user's file): otherwise the daemon fails
    after forking, or, for stats, only at unmount. A probe file it made is removed unless
    `keep`; an existing file is not changed."""
    def fail(reason: str, cls=UsageError):
        raise cls(f"cannot write the {what} file {shown(path)}: {reason}{hint}")
    problem = path_problem(path)
    if problem:
        fail(problem)
    d = os.path.dirname(path)
    if not os.path.lexists(d):
        fail(f"directory {d} does not exist")
    existed = os.path.lexists(path)
    if existed and _is_ext2_image(path):
        fail("it is an ext2 image (another one, mounted or not), which it would be written over; "
             "give another file")
    if existed and what == "log" and not _regular(path):
        fail("not a regular file (simfs umount reads the daemon's last words back from it)")
    try:
        outfile.probe(path, keep=keep, devices=what != "log")
    except outfile.Refused as e:
        fail(e.strerror, UnsafeOutput)
    except OSError as e:
        fail(e.strerror)


def _path_options(vopts) -> dict:
    import dataclasses
    return {f.name: getattr(vopts, f.name) for f in dataclasses.fields(vopts)
            if f.metadata.get("path") and getattr(vopts, f.name)}


def _check_outside(mnt: str, **paths) -> None:
    """The daemon must not write into its own mount (it would wait on itself)."""
    root = os.path.realpath(mnt).rstrip("/") + "/"
    for what, p in paths.items():
        real = os.path.realpath(os.path.abspath(p))
        if real.startswith(root) or real == root.rstrip("/"):
            raise UsageError(f"the {what} file {p} must not be inside the mount point {mnt}")


def check_distinct(image: str, **paths) -> None:
    """Image, its journal, log, trace and stats (and an op log) must be different files: the
    trace and the statistics are written over whatever is there (`-o stats=IMAGE` destroyed
    the image; `--stats IMAGE.journal` would be replayed over it after a crash)."""
    seen: dict = {}
    paths = {"image": image, "journal": image + ".journal", **paths}
    for what, p in paths.items():
        try:
            st = os.stat(p)
            if not stat.S_ISREG(st.st_mode):
                continue                        # /dev/null may take both
            key = (st.st_dev, st.st_ino)
        except OSError:
            key = os.path.realpath(p)
        if key in seen:
            raise UsageError(f"the {what} file {p} is also the {seen[key]}; give each its own file")
        seen[key] = {"image": "image", "journal": "image's journal"}.get(what, f"{what} file")


def _unescape_mountinfo(s: str) -> str:
    return (s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
            .replace("\\134", "\\"))


def mounts() -> list[tuple[str, str, str]]:
    """(mount point, fstype, source) of every mount, from /proc/self/mountinfo."""
    out = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, rfields = left.split(), right.split()
                if len(fields) >= 5 and len(rfields) >= 2:
                    out.append((_unescape_mountinfo(fields[4]), rfields[0], _unescape_mountinfo(rfields[1])))
    except OSError:
        pass
    return out


def mounted_read_only(mnt: str) -> bool:
    """Whether the mount on `mnt` is read-only now (`mount -o remount,ro`), from
    /proc/self/mountinfo: the daemon learns it there, FUSE does not say (and statvfs on its
    own mount would wait on itself; so would realpath(mnt), which stats `mnt` itself)."""
    real = os.path.join(os.path.realpath(os.path.dirname(mnt)), os.path.basename(mnt))
    ro = False                                  # (the last mount on `mnt` is the one seen)
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, rfields = left.split(), right.split()
                if len(fields) >= 6 and _unescape_mountinfo(fields[4]) == real:
                    ro = "ro" in fields[5].split(",") or (
                        len(rfields) >= 3 and "ro" in rfields[2].split(","))
    except OSError:
        pass
    return ro


def is_mounted(mnt: str, fstype_prefix: str = "") -> bool:
    real = os.path.realpath(mnt)
    return any(p == real and t.startswith(fstype_prefix) for p, t, _ in mounts())


def default_log_path(image: str) -> str:
    return image + ".log"
