"""`cp -a SRC DST` within the mount, as root (GNU coreutils 9.1), DST not existing.

Read off `strace -f` of cp on a mount (paths are walked from the mount's root every time,
as cp names everything "SRC/..." from its working directory): lstat SRC, lstat DST (ENOENT),
then for a directory: mkdirat(DST, mode & 0700), lstat DST, openat(SRC, O_DIRECTORY), fstat,
getdents64 to the end, close; the entries in inode order (gnulib savedir,
SAVEDIR_SORT_FASTREAD), each lstat'ed and copied; then utimensat(DST, [atime, mtime]),
fchownat(DST, NOFOLLOW), llistxattr(SRC) twice, getxattr(SRC, system.posix_acl_access) and
setxattr(DST, ...) (both EOPNOTSUPP from the kernel after the walk: no request), chmod(DST).

A file: openat(SRC, O_RDONLY|O_NOFOLLOW), fstat, openat(DST, O_WRONLY|O_CREAT|O_EXCL,
mode & 0700), ioctl(FICLONE) (EOPNOTSUPP, no request), fstat, copy_file_range until it returns
0 (the kernel splices: see Kernel.copy_file_range) - or, for a file with holes (fewer blocks
than its size needs), lseek_copy's read and write of its data blocks (_sparse) -
futimens([atime, mtime]), fchown only if the
new file's owner differs, flistxattr(SRC) twice, the ACL get/set (no request), fchmod, close
both. A symbolic link: readlink(SRC), symlinkat, fchownat, utimensat, llistxattr(SRC) twice.
The second name of a file with several links: linkat(first copy, DST). A FIFO or a device:
mknodat(DST, mode & 0700, rdev), then as a directory's end (utimensat, fchownat, llistxattr
twice, the ACL attempts, chmod).

Refused before anything is asked (VerbRefused): a DST that is SRC or lies inside it by its
names, "." and ".." resolved lexically (GNU cp says "cannot copy a directory, 'SRC', into
itself, 'DST'" only once it meets the copy it is making inside SRC; here nothing is made). A
DST that lies inside SRC through a symbolic link is found as GNU cp finds it: the copy meets
a directory it made itself (cp remembers each one's inode and name), compares the two names
(gnulib same_nameat: with equal last names, an lstat of each one's directory; twice, the
second time the new name's own directory), says "will not create hard link 'DST/...' to
directory 'DST'" (or, for two names in one directory, "cannot copy a directory into itself")
and skips it; the rest is copied, and the verb then stops with that message (VerbRefused; cp
exits 1).
"""

from __future__ import annotations

import errno
import os
import stat

from simfs.errors import FSError, VerbRefused

from .operands import quote, text


IO_BUFSIZE = 128 << 10      # coreutils 9.1's ioblksize.h


def _sparse(k, fi, fo, size: int, hole: int) -> None:
    """copy_reg for a source with fewer blocks than its size (ST_NBLOCKS < st_size / 512):
    infer_scantype's lseek(SEEK_DATA), then lseek_copy. Without FUSE LSEEK the kernel answers
    from the size, so the whole file is one extent, which sparse_copy reads IO_BUFSIZE bytes at
    a time (the size + 1 for a smaller file), writing the runs of `hole`-byte chunks that
    hold a non-zero byte and seeking over the others (the FALLOCATE that would punch them is
    refused without a request); then lseek(SEEK_DATA) past the end (ENXIO) and, when the
    copy ended in a hole, an ftruncate to the size."""
    k.lseek(fi, 0, os.SEEK_DATA)
    k.lseek(fi, 0, os.SEEK_HOLE)
    buf = min(IO_BUFSIZE, size + 1)
    src = dst = psize = 0
    make_hole = False
    while src < size:                            # sparse_copy, as coreutils writes it
        data = k.read(fi, src, min(size - src, buf), data=True)
        n_read = len(data)
        if not n_read:
            break
        src += n_read
        csize, c, p = hole, 0, 0
        while n_read:
            prev_hole = make_hole
            csize = min(csize, n_read)
            if csize:
                make_hole = data.count(0, c, c + csize) == csize
            transition = make_hole != prev_hole and psize
            last_chunk = (n_read == csize and not make_hole) or not csize
            if transition or last_chunk:
                if not transition:
                    psize += csize
                if not prev_hole:
                    k.write(fo, dst, data[p:p + psize])
                else:
                    _create_hole(k, fo)
                dst += psize                     # written, or create_hole's lseek(SEEK_CUR)
                p, psize = c, csize
                if last_chunk:
                    if not csize:
                        n_read = 0
                    if transition:
                        csize = 0
                    else:
                        psize = 0
            else:
                psize += csize
            n_read -= csize
            c += csize
    if make_hole:
        _create_hole(k, fo)                      # the trailing one
        dst += psize
    try:
        k.lseek(fi, src, os.SEEK_DATA)
    except FSError as e:
        if e.errno != errno.ENXIO:
            raise
    if src < size or make_hole:
        k.ftruncate(fo, size)


def _create_hole(k, fo) -> None:
    """create_hole: lseek(SEEK_CUR) past the zeros, then punch_hole's fallocate
    (EOPNOTSUPP is no error to cp)."""
    try:
        k.fallocate(fo)
    except FSError as e:
        if e.errno not in (errno.EOPNOTSUPP, errno.ENOSYS):
            raise


def _resolved(names: list) -> list:
    out: list = []
    for n in names:
        if n in ("", ".", b"", b"."):
            continue
        if n in ("..", b".."):
            if out:
                out.pop()                           # the root's ".." is the root
            continue
        out.append(n)
    return out


def _refused(src: str, dst: str, src_names: list, dst_names: list) -> None:
    if not dst:
        raise VerbRefused("cp: cannot create directory '': No such file or directory")
    s, d = _resolved(src_names), _resolved(dst_names)
    if d == s:
        raise VerbRefused(f"cp: {quote(src)} and {quote(dst)} are the same file")
    if d[:len(s)] == s:
        raise VerbRefused(f"cp: cannot copy a directory, {quote(src)}, into itself, {quote(dst)}")


def refuse(path: str, dst: str | bytes | list = "copy", **_) -> None:
    """Raise VerbRefused if `cp -a SRC DST` (PATH as given, from the mount's root) would copy
    a directory into itself."""
    if isinstance(dst, list):
        dst = b"/".join(dst)
    if isinstance(dst, bytes):
        dst = dst.decode(errors="surrogateescape")
    _refused(path, dst, path.split("/"), dst.split("/"))


def run(k, where: list[bytes], dst: list[bytes] | str = b"copy", **_) -> dict:
    if isinstance(dst, (str, bytes)):
        from . import split
        dst = split(dst if isinstance(dst, str) else dst.decode())
    _refused(text(where), text(dst), list(where), list(dst))
    counts = {"dirs": 0, "files": 0, "symlinks": 0, "hardlinks": 0, "nodes": 0, "bytes": 0}
    _absent(k, dst)                                 # target_directory_operand: stat(DST)
    a = k.stat(k.root, where)
    if not stat.S_ISREG(a.st_mode):                 # copy_internal lstat's DST again, but for a file
        _absent(k, dst)
    made = _Made(where, dst)
    if not stat.S_ISDIR(a.st_mode):                 # a file, link or node: copied as in a tree
        _copy(k, list(where), list(dst), {}, counts, made, a)
        return counts
    _dir(k, list(where), list(dst), a, {}, counts, made)
    if made.error:                                  # met the directory it made: exit 1
        raise VerbRefused(made.error)
    return counts


class _Made:
    """The top directory cp made (`ino`, `name`) - cp remembers every one, but the copy can only
    meet its top: the rest lies inside it - and cp's error once the copy met it. `where`,
    `dst`: the operands, as the error names them."""

    def __init__(self, where: list, dst: list):
        self.where, self.dst = where, dst
        self.ino, self.name, self.error = None, None, ""

    def met(self, k, src: list, dst: list) -> None:
        """copy_internal meeting the directory it made as SRC's entry `src` (to be `dst`):
        the names compared (gnulib same_nameat), the error noted once, the entry skipped."""
        if _same_name(k, src, self.name):
            error = (f"cp: cannot copy a directory, {quote(text(self.where))}, into itself, "
                     f"{quote(text(self.dst))}")
        elif _same_name(k, dst, self.name):         # "source directory specified more than once"
            return
        else:
            error = (f"cp: will not create hard link {quote(text(dst))} to directory "
                     f"{quote(text(self.name))}")
        self.error = self.error or error


def _same_name(k, a: list, b: list) -> bool:
    """gnulib same_nameat: the same last name in the same directory (each lstat'ed)."""
    return a[-1:] == b[-1:] and k.stat(k.root, a[:-1]).st_ino == k.stat(k.root, b[:-1]).st_ino


def _absent(k, path) -> None:
    try:
        k.stat(k.root, path)
    except FSError as e:
        if e.errno != errno.ENOENT:
            raise
        return
    raise FSError(errno.EEXIST)


def _meta_tail(k, src, dst, a):
    k.listxattr(k.root, src)
    names = k.listxattr(k.root, src)
    for name in names:                              # none on the seeds' trees
        value = k.vol.getxattr(k.walk(k.root, src).st_ino, name)
        k.vol.setxattr(k.walk(k.root, dst).st_ino, name, value, 0)


def _set_meta(k, src, dst, a) -> None:
    """A directory's or a node's end: times, owner, xattrs, the ACL attempts (EOPNOTSUPP from
    the kernel after the walks), then chmod as the fallback."""
    R = k.root
    k.utimens(R, dst, atime_ns=a.st_atime_ns, mtime_ns=a.st_mtime_ns)
    k.chown(R, dst, a.st_uid, a.st_gid)
    _meta_tail(k, src, dst, a)
    k.walk(R, src)                                  # getxattr(system.posix_acl_access)
    k.walk(R, dst)                                  # setxattr(system.posix_acl_access)
    k.chmod(R, dst, a.st_mode)


def _dir(k, src, dst, a, links, counts, made: _Made) -> None:
    R = k.root
    counts["dirs"] += 1
    k.mkdir(R, dst, a.st_mode & 0o700)
    b = k.stat(R, dst)
    if made.ino is None:
        made.ino, made.name = b.st_ino, dst
    f = k.open(R, src, directory=True)
    k.fstat(f)
    entries = k.listdir(f)
    k.close(f)
    entries.sort(key=lambda e: e[1])
    for name, ino, kind in entries:
        _copy(k, src + [name], dst + [name], links, counts, made)
    _set_meta(k, src, dst, a)


def _copy(k, src, dst, links, counts, made, a=None) -> None:
    R = k.root
    a = a if a is not None else k.stat(R, src)
    kind = stat.S_IFMT(a.st_mode)
    if kind == stat.S_IFDIR and a.st_ino == made.ino:   # the copy itself, met inside SRC: skipped
        made.met(k, src, dst)
    elif kind == stat.S_IFDIR:
        _dir(k, src, dst, a, links, counts, made)
    elif kind == stat.S_IFREG:
        if a.st_nlink > 1:
            first = links.get(a.st_ino)
            if first is not None:
                k.link(R, first, dst)
                counts["hardlinks"] += 1
                return
            links[a.st_ino] = dst
        counts["files"] += 1
        fi = k.open(R, src)
        k.fstat(fi)
        k.fadvise_sequential(fi)                # copy.c: posix_fadvise(SEQUENTIAL) on the source
        fo = k.create(R, dst, a.st_mode & 0o700)
        b = k.fstat(fo)
        if a.st_blocks < a.st_size // 512:         # infer_scantype: it has holes
            _sparse(k, fi, fo, a.st_size, b.st_blksize)
        elif a.st_size:
            k.copy_file_range(fi, fo, a.st_size)
        else:
            k.read(fi, 0, 128 << 10)                # an empty file is read() (EOF at once)
        counts["bytes"] += a.st_size
        k.futimens(fo, atime_ns=a.st_atime_ns, mtime_ns=a.st_mtime_ns)
        if (a.st_uid, a.st_gid) != (b.st_uid, b.st_gid):
            k.fchown(fo, a.st_uid, a.st_gid)
        k.flistxattr(fi)
        for name in k.flistxattr(fi):
            k.vol.setxattr(fo.ino, name, k.vol.getxattr(fi.ino, name), 0)
        k.fchmod(fo, a.st_mode)
        k.close(fo)
        k.close(fi)
    elif kind in (stat.S_IFIFO, stat.S_IFCHR, stat.S_IFBLK):
        counts["nodes"] += 1
        k.mknod(R, dst, kind | (a.st_mode & 0o700), a.st_rdev)
        _set_meta(k, src, dst, a)
    elif kind == stat.S_IFLNK:
        counts["symlinks"] += 1
        target = k.readlink(R, src)
        k.symlink(R, dst, target)
        k.chown(R, dst, a.st_uid, a.st_gid)
        k.utimens(R, dst, atime_ns=a.st_atime_ns, mtime_ns=a.st_mtime_ns)
        _meta_tail(k, src, dst, a)
