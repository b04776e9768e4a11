"""The host kernel's side of a simfs mount, modelled: system calls in, Volume calls out.

The in-process verbs (simfs.inprocess.verbs) run a tool's system calls against this model instead
of a FUSE mount. It issues the Volume calls that simfs's FUSE layer (simfs.fuse.operations)
makes for the requests the Linux FUSE client sends when the mount has zero entry and attribute
timeouts, `default_permissions`, readdirplus, and no write-back cache (docs/design.md, the
fidelity contract). The rules below were read off op logs of real tools on a real mount
(`-o oplog=`, Linux 6.18) and are checked against mounted runs by
tests/mount/test_verbs_validate.py:

- path walk: for each component, a permission check on the directory (GETATTR: attributes
  are never fresh) and a LOOKUP (a cached dentry is revalidated by LOOKUP, too), each
  successful one a kernel reference (`hold`);
- stat/fstat: GETATTR; open: GETATTR of the target (may_open), then OPEN (a hold) or OPENDIR;
  close: RELEASE (a drop); getdents: READDIRPLUS with the caller's buffer (32 KiB from glibc),
  one request per call, each entry but . and .. a reference;
- create: two permission checks on the parent, a negative LOOKUP, CREATE (two references:
  the entry and the open file), GETATTR; mkdir: negative LOOKUP, permission, MKDIR;
  unlink/rmdir: LOOKUP of the victim, permission, UNLINK/RMDIR, then FORGET of every
  reference to the victim (its inode is evicted at once);
- write: a security.capability GETXATTR (file_remove_privs) and the WRITE, split at max_write;
  read: GETATTR (auto_inval_data), then READs for the pages not in the page cache, with the
  kernel's on-demand read-ahead (see readahead.ReadAhead), each read-ahead window one READ of at most
  max_read (1 MiB: libfuse 3 answers INIT with max_pages 256; windows are 32 pages, 64 after
  POSIX_FADV_SEQUENTIAL - cat's 256 KiB READs on the mount - so the cap does not bind).

References are forgotten (FORGET) when the model's dentry cache lets the inode go: it keeps
`dcache` inodes that are not in use (LRU). The host's own dcache keeps them until memory
pressure, so a mounted run and a verb differ only when an inode unused for that long is
visited again; the bound keeps a two-million-file run's memory flat.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import OrderedDict

from simfs.errors import FSError
from simfs.inprocess.readahead import PAGE, ReadAhead

XATTR_CAPS = b"security.capability"
DIRENTPLUS_BASE = 152          # sizeof(fuse_entry_out) + offsetof(fuse_dirent, name)
GETDENTS_BUF = 32768           # glibc's readdir buffer for st_blksize <= 32 KiB
MAXSYMLINKS = 40               # links one path walk follows before ELOOP (Linux)


def direntplus_size(name: bytes) -> int:
    return (DIRENTPLUS_BASE + len(name) + 7) & ~7


class File:
    """An open file description: the inode, whether it is a directory or open for writing,
    and its position."""
    __slots__ = ("ino", "is_dir", "state", "cookie", "eof", "pos", "ra", "writer", "pages")

    def __init__(self, ino: int, is_dir: bool, state=None, writer: bool = False):
        self.ino, self.is_dir, self.state, self.writer = ino, is_dir, state, writer
        self.cookie, self.eof, self.pos = 0, False, 0
        self.pages = None           # read's page contents not yet handed out (read(data=True))
        self.ra = None


class Kernel:
    """System calls on a Volume as the FUSE client and simfs's Operations turn them into Volume
    calls. Paths are lists of names (bytes) relative to a directory inode; `root` is the mount."""

    def __init__(self, vol, *, getdents_buf: int = GETDENTS_BUF, max_write: int = 128 << 10,
                 max_read: int = 1 << 20, ra_pages: int = 32, dcache: int = 1 << 16):
        self.vol = vol
        self.root = vol.root_ino
        self.getdents_buf = getdents_buf
        self.max_write = max_write
        self.max_read = max_read
        self.ra_pages = ra_pages
        self.dcache = dcache
        self.refs: dict[int, int] = {}                  # inode -> lookups the kernel holds
        self.unused: OrderedDict[int, None] = OrderedDict()
        self.busy: dict[int, int] = {}                  # inode -> open files and walks in progress
        self.parents: dict[int, int] = {}               # directory -> its parent, while referenced
        self.no_copy_file_range = False                 # fc->no_copy_file_range
        self.no_fallocate = False                       # fc->no_fallocate

    # references -----------------------------------------------------------------------------
    def _ref(self, ino: int) -> None:
        self.vol.hold(ino)
        self.refs[ino] = self.refs.get(ino, 0) + 1
        if ino not in self.busy:
            self.unused[ino] = None
            self.unused.move_to_end(ino)
            if len(self.unused) > self.dcache:
                self._forget(next(iter(self.unused)))

    def _forget(self, ino: int) -> None:
        self.unused.pop(ino, None)
        n = self.refs.pop(ino, 0)
        self.parents.pop(ino, None)
        if n:
            self.vol.drop(ino, n)

    def _use(self, ino: int) -> None:
        self.busy[ino] = self.busy.get(ino, 0) + 1
        self.unused.pop(ino, None)

    def _unuse(self, ino: int) -> None:
        left = self.busy[ino] - 1
        if left:
            self.busy[ino] = left
            return
        del self.busy[ino]
        if ino in self.refs:
            self.unused[ino] = None
            if len(self.unused) > self.dcache:
                self._forget(next(iter(self.unused)))

    def mount(self) -> None:
        """`simfs mount`: it returns once the session is up, and no request reaches the file
        system meanwhile (with the zero attribute timeout nothing is cached either)."""

    def ctl(self) -> None:
        """A write of MNT/.simfs/NAME, as the experiments' runner marks a phase: the open's walk
        asks one GETATTR of the root (the control file itself never reaches the volume).
        (`simfs ctl MNT ...` asks three: it checks the mount point first.)"""
        self.vol.getattr(self.root)

    def unmount(self) -> None:
        """`simfs umount`: five GETATTRs of the root (its checks of the mount point, then the
        realpath that asks whether libmount keeps the mount's options) around reading
        .simfs/info, which the volume never sees; then every reference goes back (the
        volume's close drops what is still held, unlogged)."""
        for _ in range(5):
            self.vol.getattr(self.root)
        for ino in list(self.refs):
            self._forget(ino)

    # walking ----------------------------------------------------------------------------------
    def _lookup(self, d: int, name: bytes):
        self.vol.getattr(d)                             # may_lookup: MAY_EXEC on d
        a = self.vol.lookup(d, name)
        self._ref(a.st_ino)
        if a.st_mode & 0o170000 == stat.S_IFDIR:
            self.parents[a.st_ino] = d                  # the dentry's d_parent
        return a

    def walk(self, d: int, path: list[bytes], *, follow: bool = False, links: int = 0):
        """The attributes of the inode `path` names under directory `d` (root: [] is `d`).
        A symbolic link before the last name is followed as the kernel's walk follows it:
        READLINK, then its target walked from the link's directory (an absolute target lies
        outside the mount - on this machine, not in the image: EXDEV), at most MAXSYMLINKS
        links in all (ELOOP); the last name only with `follow` (open without O_NOFOLLOW)."""
        a = None
        last = len(path) - 1
        for i, name in enumerate(path):
            if name == b"." or name == b"..":           # the permission check (".." then from the dcache)
                self.vol.getattr(d)
                if name == b"..":
                    d = self._dotdot(d)
                a = None
                continue
            a = self._lookup(d, name)
            if (i < last or follow) and stat.S_ISLNK(a.st_mode):
                if links >= MAXSYMLINKS:
                    raise FSError(errno.ELOOP)
                target = self.vol.readlink(a.st_ino)
                if target.startswith(b"/"):
                    raise FSError(errno.EXDEV,
                                  f"a symbolic link leads outside the image ({os.fsdecode(target)})")
                return self.walk(d, [p for p in target.split(b"/") if p] + path[i + 1:], follow=follow,
                                 links=links + 1)
            d = a.st_ino
        return a if a is not None else self.vol.peek_attr(d)

    def _dotdot(self, d: int) -> int:
        """".." from directory `d`: the kernel takes its dentry's parent, with no LOOKUP (one
        LOOKUP of ".." where this kernel has not walked down to `d`); above the mount's root
        lies this machine, not the image."""
        if d == self.root:
            raise FSError(errno.EXDEV, "a path leads out of the image (.. of its root)")
        parent = self.parents.get(d)
        if parent is None:
            parent = self.vol.lookup(d, b"..").st_ino
            self._ref(parent)
        return parent

    def _parent(self, d: int, path: list[bytes]) -> int:
        """The directory holding the last name of `path` (links on the way followed)."""
        return self.walk(d, path[:-1], follow=True).st_ino if len(path) > 1 else d

    # metadata -----------------------------------------------------------------------------------
    def stat(self, d: int, path: list[bytes]):
        """stat/lstat/fstatat (no symlink following): walk, then GETATTR."""
        ino = self.walk(d, path).st_ino if path else d
        if not path:
            self.vol.getattr(d)                         # the permission check of the last step
        return self.vol.getattr(ino)

    def fstat(self, f: File):
        return self.vol.getattr(f.ino)

    def readlink(self, d: int, path: list[bytes]) -> bytes:
        ino = self.walk(d, path).st_ino
        return self.vol.readlink(ino)

    # opening ------------------------------------------------------------------------------------
    def open(self, d: int, path: list[bytes], *, directory: bool | None = None,
             write: bool = False) -> File:
        """open/openat of an existing file or directory (O_RDONLY, or O_RDWR with `write`);
        a symbolic link at the end of `path` is followed unless `directory` (the verbs' walks
        open directories they found, never through a link)."""
        if path:
            a = self.walk(d, path, follow=not directory)
            ino = a.st_ino
        else:
            ino = d
        a = self.vol.getattr(ino)                       # may_open
        is_dir = stat.S_ISDIR(a.st_mode)
        if directory and not is_dir:
            raise FSError(errno.ENOTDIR)
        self._use(ino)
        if is_dir:
            return File(ino, True, self.vol.opendir_state())
        self.vol.open_file(ino)                         # OPEN
        return File(ino, False, writer=write)

    def open_dotdot(self, d: int, parent: int) -> File:
        """openat(d, "..", O_DIRECTORY): the walk checks d and follows the dcache (no LOOKUP)."""
        self.vol.getattr(d)
        self.vol.getattr(parent)                        # may_open
        self._use(parent)
        return File(parent, True, self.vol.opendir_state())

    def statfs(self):
        return self.vol.statfs()

    def create(self, d: int, path: list[bytes], mode: int, uid: int = 0, gid: int = 0) -> File:
        """open(O_CREAT|O_EXCL|O_WRONLY) of a new file."""
        p = self._parent(d, path)
        self.vol.getattr(p)                             # MAY_EXEC for the last component
        self.vol.getattr(p)                             # may_o_create: MAY_WRITE
        self._negative(p, path[-1])
        a = self.vol.create(p, path[-1], stat.S_IFREG | (mode & 0o7777), uid, gid)
        self._ref(a.st_ino)
        self._use(a.st_ino)
        self.vol.open_file(a.st_ino)
        self.vol.getattr(a.st_ino)
        return File(a.st_ino, False, writer=True)

    def _negative(self, p: int, name: bytes) -> None:
        try:
            a = self.vol.lookup(p, name)
        except FSError as e:
            if e.errno != errno.ENOENT:
                raise
            return
        self._ref(a.st_ino)
        raise FSError(errno.EEXIST)

    def close(self, f: File) -> None:
        if f.is_dir:
            self.vol.release_state(f.state)             # RELEASEDIR
        else:
            self.vol.release_file(f.ino, f.writer)      # RELEASE
        self._unuse(f.ino)

    # directories ------------------------------------------------------------------------------------
    def getdents(self, f: File, buf: int | None = None) -> list[tuple[bytes, int, int]]:
        """One getdents64 call: one READDIRPLUS filling `buf` bytes; [] at the end.
        Entries are (name, inode, file type from the mode)."""
        if f.eof:
            return []
        listing = self.vol.readdir(f.ino, f.cookie, state=f.state)
        if not listing:
            f.eof = True
            return []
        room = buf or self.getdents_buf
        out = []
        for name, ino, nxt in listing:
            size = direntplus_size(name)
            if size > room:
                break
            room -= size
            f.cookie = nxt
            if name == b"." or name == b"..":
                continue
            a = self.vol.peek_attr(ino)
            self._ref(ino)
            out.append((name, ino, stat.S_IFMT(a.st_mode)))
        return out

    def listdir(self, f: File) -> list[tuple[bytes, int, int]]:
        """readdir until the end, as glibc does: getdents until one returns nothing."""
        out = []
        while True:
            got = self.getdents(f)
            if not got and f.eof:
                return out
            out.extend(got)

    def _make(self, d: int, path: list[bytes], make):
        """mkdirat, mknodat, symlinkat: the new name looked up first (ENOENT), MAY_WRITE on the
        parent, then `make(parent, name)`; the kernel keeps a reference to what it made."""
        p = self._parent(d, path)
        self.vol.getattr(p)
        self._negative(p, path[-1])
        self.vol.getattr(p)                             # may_create: MAY_WRITE
        a = make(p, path[-1])
        self._ref(a.st_ino)
        return a

    def mkdir(self, d: int, path: list[bytes], mode: int, uid: int = 0, gid: int = 0):
        return self._make(d, path, lambda p, name: self.vol.mkdir(p, name, stat.S_IFDIR | (mode & 0o7777), uid, gid))

    def mknod(self, d: int, path: list[bytes], mode: int, rdev: int = 0, uid: int = 0, gid: int = 0):
        return self._make(d, path, lambda p, name: self.vol.mknod(p, name, mode, rdev, uid, gid))

    def unlink(self, d: int, path: list[bytes]) -> None:
        self._remove(d, path, directory=False)

    def rmdir(self, d: int, path: list[bytes]) -> None:
        self._remove(d, path, directory=True)

    def _remove(self, d: int, path: list[bytes], *, directory: bool) -> None:
        p = self._parent(d, path)
        a = self._lookup(p, path[-1])
        victim = a.st_ino
        self.vol.getattr(p)                             # may_delete: MAY_WRITE|MAY_EXEC, then
        if stat.S_ISDIR(a.st_mode) != directory:        # the victim's type (no request)
            raise FSError(errno.ENOTDIR if directory else errno.EISDIR)
        (self.vol.rmdir if directory else self.vol.unlink)(p, path[-1])
        if victim not in self.busy and self._nameless(victim):
            self._forget(victim)                        # the dentry dies, the inode is evicted

    def _nameless(self, ino: int) -> bool:
        """No name is left (the volume may have freed the inode already)."""
        try:
            return self.vol.peek_attr(ino).st_nlink == 0
        except FSError:
            return True

    def symlink(self, d: int, path: list[bytes], target: bytes, uid: int = 0, gid: int = 0):
        return self._make(d, path, lambda p, name: self.vol.symlink(p, name, target, uid, gid))

    def link(self, d: int, old: list[bytes], new: list[bytes]):
        ino = self.walk(d, old).st_ino
        p = self._parent(d, new)
        self.vol.getattr(p)
        self._negative(p, new[-1])
        self.vol.getattr(ino)                           # may_linkat: the source's attributes
        self.vol.getattr(p)
        a = self.vol.link(ino, p, new[-1])
        self._ref(a.st_ino)
        return a

    # attributes -----------------------------------------------------------------------------------
    def setattr(self, ino: int, **kw):
        return self.vol.setattr(ino, **kw)

    def fchown(self, f: File, uid: int, gid: int):
        """chown: the kernel checks for file capabilities and reads the attributes twice."""
        self._caps(f.ino)
        self.vol.getattr(f.ino)
        self.vol.getattr(f.ino)
        return self.vol.setattr(f.ino, uid=uid, gid=gid)

    def chown(self, d: int, path: list[bytes], uid: int, gid: int):
        """fchownat(AT_SYMLINK_NOFOLLOW): walk, then as fchown (a directory: no capability
        check and one GETATTR, simfs's own read of the mode before the SETATTR)."""
        ino = self.walk(d, path).st_ino
        if not stat.S_ISDIR(self.vol.peek_attr(ino).st_mode):
            self._caps(ino)
            self.vol.getattr(ino)
        self.vol.getattr(ino)
        return self.vol.setattr(ino, uid=uid, gid=gid)

    def utimens(self, d: int, path: list[bytes], **times):
        """utimensat(AT_SYMLINK_NOFOLLOW) with a path: walk, SETATTR (atime_ns=/mtime_ns=)."""
        ino = self.walk(d, path).st_ino
        return self.vol.setattr(ino, **times)

    def futimens(self, f: File, **times):
        return self.vol.setattr(f.ino, **times)

    def fchmod(self, f: File, mode: int):
        """fchmod, and chmod("/proc/self/fd/N") of an O_PATH descriptor: one SETATTR."""
        return self.vol.setattr(f.ino, mode=mode & 0o7777)

    def chmod(self, d: int, path: list[bytes], mode: int):
        """chmod/fchmodat of a path: walk, SETATTR."""
        ino = self.walk(d, path).st_ino
        return self.vol.setattr(ino, mode=mode & 0o7777)

    def listxattr(self, d: int, path: list[bytes]) -> list[bytes]:
        """llistxattr: walk, LISTXATTR."""
        return self.vol.listxattr(self.walk(d, path).st_ino)

    def flistxattr(self, f: File) -> list[bytes]:
        return self.vol.listxattr(f.ino)

    def open_path(self, d: int, path: list[bytes]) -> File:
        """openat(O_PATH|O_NOFOLLOW): the walk only, no OPEN."""
        a = self.walk(d, path)
        self._use(a.st_ino)
        return File(a.st_ino, True)                     # closes without a RELEASE

    def ftruncate(self, f: File, size: int):
        """ftruncate: do_truncate's remove-privileges check (a capability GETXATTR), SETATTR size."""
        self._caps(f.ino)
        return self.vol.setattr(f.ino, size=size)

    def _caps(self, ino: int) -> None:
        try:
            self.vol.getxattr(ino, XATTR_CAPS)
        except FSError as e:
            if e.errno not in (errno.ENODATA, errno.EOPNOTSUPP):
                raise

    # data ---------------------------------------------------------------------------------------------
    def write(self, f: File, offset: int, data: bytes) -> int:
        """pwrite: file_remove_privs, then WRITEs of at most max_write bytes."""
        self._caps(f.ino)
        done, total = 0, len(data)
        data = memoryview(data)                         # the requests' slices copy nothing
        cached = f.ra.cached if f.ra is not None else ()
        while done < total:
            # fuse_fill_write_pages: a request ends at max_write and after a page this write
            # leaves partly written (not up to date: it is locked and sent as the last)
            pos = offset + done
            end = min(offset + total, pos + self.max_write)
            first_end = (pos // PAGE + 1) * PAGE
            if pos % PAGE and first_end < end and pos // PAGE not in cached:
                end = first_end
            n = self.vol.write(f.ino, pos, data[done:done + end - pos])
            done += n
            if n == 0:
                break
        return done

    def copy_file_range(self, fin: File, fout: File, size: int, pipe: int = 65536) -> int:
        """copy_file_range of `size` bytes from offset 0 between two files of the mount:
        simfs has no COPY_FILE_RANGE, so the kernel splices (do_splice_direct): page-cache
        reads of the source with read-ahead (no GETATTR on this path) and, per pipe-full
        (64 KiB), a write to the destination (file_remove_privs and WRITEs)."""
        if not self.no_copy_file_range:
            # the first call asks the server (file_modified first), which has no
            # COPY_FILE_RANGE: ENOSYS, remembered for the rest of the mount
            self._caps(fout.ino)
            self.no_copy_file_range = True
        if fin.ra is None:
            fin.ra = ReadAhead(self.ra_pages)
        npages = (size + PAGE - 1) // PAGE
        pages: dict[int, bytes] = {}
        pos = 0
        while pos < size:
            n = min(pipe, size - pos)
            self._fill(fin, fin.ra.access(pos // PAGE, (pos + n - 1) // PAGE + 1, npages), pages)
            self.write(fout, pos, _hand_out(pages, pos, pos + n))
            pos += n
        return pos

    def _fill(self, f: File, runs, pages: dict | None) -> None:
        """READs of the page runs read-ahead asks for (at most max_read each); their
        contents kept per page in `pages` unless it is None."""
        for start, count in runs:
            pos, left = start * PAGE, count * PAGE
            while left > 0:
                n = min(left, self.max_read)
                got = self.vol.read(f.ino, pos, n)
                if pages is not None:
                    for i in range(0, len(got), PAGE):
                        pages[(pos + i) // PAGE] = got[i:i + PAGE]
                pos += n
                left -= n

    def fadvise_sequential(self, f: File) -> None:
        """posix_fadvise(POSIX_FADV_SEQUENTIAL) (cat does it): the file's read-ahead window
        doubles (generic_fadvise: f_ra.ra_pages = bdi->ra_pages * 2). Sends nothing."""
        if f.ra is None:
            f.ra = ReadAhead(self.ra_pages)
        f.ra.max = 2 * self.ra_pages

    def read(self, f: File, offset: int, size: int, *, data: bool = False):
        """pread through the page cache with on-demand read-ahead; the bytes read (their
        number; with `data`, the bytes themselves: what read-ahead brought in beyond them is
        kept for the next such read)."""
        a = self.vol.getattr(f.ino)
        if f.ra is None:
            f.ra = ReadAhead(self.ra_pages)
        end = min(offset + size, a.st_size)
        if end <= offset:
            return b"" if data else 0
        if data and f.pages is None:
            f.pages = {}
        self._fill(f, f.ra.access(offset // PAGE, (end - 1) // PAGE + 1, (a.st_size + PAGE - 1) // PAGE,
                                  (offset + size + PAGE - 1) // PAGE), f.pages if data else None)
        f.ra.prev_pos = end                             # filemap_read: ra->prev_pos = last_pos
        return _hand_out(f.pages, offset, end) if data else end - offset

    def fallocate(self, f: File) -> None:
        """fallocate (cp's hole punching): simfs has no FALLOCATE; the first call asks the
        server (file_modified first: the capability GETXATTR) and gets ENOSYS, remembered
        for the rest of the mount; EOPNOTSUPP each time."""
        if not self.no_fallocate:
            self._caps(f.ino)
            self.no_fallocate = True
        raise FSError(errno.EOPNOTSUPP)

    def lseek(self, f: File, offset: int, whence: int) -> int:
        """lseek: SEEK_SET and SEEK_CUR stay in the kernel; SEEK_DATA and SEEK_HOLE ask the
        server once (simfs has no LSEEK: ENOSYS, remembered, no volume operation), then
        answer from the size after a GETATTR (fuse_update_attributes): the whole file is
        data, its end the only hole (ENXIO at or past the end)."""
        if whence not in (os.SEEK_DATA, os.SEEK_HOLE):
            return offset
        size = self.vol.getattr(f.ino).st_size
        if offset >= size:
            raise FSError(errno.ENXIO)
        return offset if whence == os.SEEK_DATA else size


def _hand_out(pages: dict, offset: int, end: int) -> bytes:
    """Bytes [offset, end) from the kept pages (a page never read is zeros); the pages
    handed out whole are not kept."""
    first, last = offset // PAGE, (end - 1) // PAGE
    out = b"".join(pages.get(i, b"").ljust(PAGE, b"\0") for i in range(first, last + 1))
    for i in range(first, last + (end % PAGE == 0)):
        pages.pop(i, None)
    return out[offset - first * PAGE:end - first * PAGE]
