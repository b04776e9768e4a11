"""`tar -xpf ARCHIVE -C DIR` as root (GNU tar 1.34), from any tree description.

The system calls, read off `strace -f` of tar on a local copy and on a mount (member names
are relative to DIR's descriptor, "./a/b" as `tar -C SRC .` writes them, or "a/b" without the
"." walk and without the "./" member when the archive was made so):

- openat(DIR, O_DIRECTORY); the archive's "./" member: mkdirat(".") fails with EEXIST, then
  two fstatat(".") and "." joins the delayed directories with its current mode, marked to be
  set after the links (so at the very end, after one more fstatat);
- before each member, the delayed directories that are not its ancestors get their metadata
  (newest first): utimensat(path, [OMIT, mtime], AT_SYMLINK_NOFOLLOW), fchownat(path,
  AT_SYMLINK_NOFOLLOW), and, unless the mode is already right, gnulib's fchmodat(NOFOLLOW):
  openat(path, O_PATH|O_NOFOLLOW), fstat, chmod("/proc/self/fd/N"), close;
- a directory: mkdirat(path, mode & 0700), delayed;
- a file: openat(path, O_WRONLY|O_CREAT|O_EXCL, mode & 0700); write()s cut at tar's 10240-byte
  records (the first one the rest of the record the data starts in); futimens (mtime only),
  fchown, fchmod (unless the creation mode was already right), close; a sparse member (tar -S):
  each data region at its offset in 512-byte writes, then ftruncate to the size (the map's
  last entry), the holes never written;
- a symbolic link: symlinkat, utimensat, fchownat, the fchmodat emulation (open O_PATH, fstat,
  close: symbolic links have no mode). A link whose target is absolute or has a ".." component
  becomes a placeholder (openat(O_CREAT|O_EXCL, 0), fstat, close); the delayed directories
  above it are fstatat'ed and held back to the end, where the placeholder is fstatat'ed,
  unlinked and replaced by the link, and every directory still delayed is fstatat'ed before
  its metadata is set;
- a FIFO or a device: mknodat(path, mode & 0700, rdev), utimensat and fchownat (NOFOLLOW),
  and the fchmodat emulation unless the mode is already right;
- a hard link: linkat(old, new, 0); while placeholders are pending, fstatat(old) before it
  (find_delayed_link_source) and after it (is the source a delayed link?);
- a name that is there already (a second unpack onto the tree; tar's default old-files
  policy): a directory member's mkdirat fails with EEXIST, an fstatat finds a directory and
  keeps it (its current mode, all bits, decides the chmod at the end); any other member, or a
  non-directory in a directory's way, is removed (unlinkat; rmdir if it is an empty
  directory) and made again; a failed linkat first fstatat's both names (one file: done). A
  directory with entries in a file's way stops the unpack with EEXIST (tar reports it and
  goes on with the next member).

Write sizes follow where each member's data lie in the archive (`Entry.offset`); for a
directory or a generated tree, where GNU tar's `--sort=name -cf - -C SRC .` puts them (GNU
format: "./" names, 512-byte headers, ././@LongLink for names over 100 bytes). The archive
itself is read from outside the mount and costs nothing here.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat

from simfs.errors import FSError


RECORD = 10240         # tar's default record (blocking factor 20)
NEW_DIR_MODE = 0o755   # a directory tar makes for a member (0777 less the umask, 022)
NODES = {"fifo": stat.S_IFIFO, "chr": stat.S_IFCHR, "blk": stat.S_IFBLK}
BLOCK = 512
NAME_FIELD = 100

_FILLER = memoryview(b"simfs-unpack-filler\n" * (RECORD // 20 + 1))   # sliced without a copy


def _blocks(n: int) -> int:
    return (n + BLOCK - 1) // BLOCK * BLOCK


def _long(name: bytes) -> int:
    """Bytes of a GNU long-name (or long-link) record for `name`, 0 if it fits."""
    return BLOCK + _blocks(len(name) + 1) if len(name) > NAME_FIELD else 0


class _Delayed:
    __slots__ = ("path", "walk", "mode", "cur", "mtime", "uid", "gid", "after_links", "dot", "found")

    def __init__(self, path, walk, mode, cur, mtime, uid, gid, dot=False, found=False):
        self.path, self.walk, self.mode, self.cur, self.mtime = path, walk, mode, cur, mtime
        self.uid, self.gid, self.dot = uid, gid, dot
        # a directory tar found there ("." always): its current mode is what tar stat'ed, all
        # of its bits compared (current_mode_mask = ALL_MODE_BITS)
        self.found = found or dot
        # delay_set_stat marks "." at once (must_be_dot_or_slash -> mark_after_links): it is
        # set after the delayed links, with an fstatat first
        self.after_links = dot


def _walk(path: list[bytes], dotted: bool) -> list[bytes]:
    """The path tar hands the kernel: "./a/b" walks "." first (a permission GETATTR)."""
    return [b"."] + path if dotted else path


def _ancestor(d: list[bytes], path: list[bytes]) -> bool:
    return len(d) < len(path) and path[:len(d)] == d


def _unsafe(target: bytes) -> bool:
    return target.startswith(b"/") or b".." in target.split(b"/")


# module functions, not closures of run: compiled, a closure that another closure calls is kept
# in the scope they share, and the cycle would keep the run's kernel and volume alive until a
# full garbage collection
def _fchmodat(k, c: int, p: list[bytes], mode: int) -> None:
    """gnulib's fchmodat(AT_SYMLINK_NOFOLLOW): open O_PATH, fstat, chmod /proc/self/fd/N."""
    f = k.open_path(c, p)
    k.fstat(f)
    k.fchmod(f, mode)
    k.close(f)


def _write_sparse(k, f, regions: list[tuple[int, int]], data) -> None:
    """GNU tar's sparse_extract_file: each data region written at its offset in 512-byte
    writes (one per archive block); a region of no bytes (the map's last, at the file's
    size) is an ftruncate there. The holes get no block."""
    for at, n in regions:
        if not n:
            k.ftruncate(f, at)
            continue
        for off in range(at, at + n, BLOCK):
            m = min(BLOCK, at + n - off)
            k.write(f, off, data[off:off + m] if data is not None else _FILLER[:m])


def _made(k, c: int, e, dotted: bool, make, there=None):
    """maybe_recoverable around one member's creation: tar tries again after making the
    member's missing directories (an archive need not list them: mkdirat of each component
    from the top, EEXIST ignored, mode 0755 (umask 022)), or after removing what is in its
    way (EEXIST, the default old-files policy). `there(err)`, asked first on each failure,
    looks at what is there and returns it to keep it (a directory for a directory member,
    the same file for a hard link), None to go on. Returns make()'s result or what was kept."""
    dirs_made = False
    while True:
        try:
            return make()
        except FSError as err:
            kept = there(err) if there is not None else None
            if kept is not None:
                return kept
            if err.errno == errno.EEXIST:
                _remove(k, c, _walk(e.path, dotted))
                continue
            if err.errno != errno.ENOENT or len(e.path) < 2 or dirs_made:
                raise
        dirs_made = True
        for i in range(1, len(e.path)):
            try:
                k.mkdir(c, _walk(e.path[:i], dotted), NEW_DIR_MODE, 0, 0)
            except FSError as err:
                if err.errno != errno.EEXIST:
                    raise


def _remove(k, c: int, p: list[bytes]) -> None:
    """remove_any_file: unlinkat, and rmdir where a directory is in the way; one with entries
    stays, and the member fails with EEXIST (tar: "Cannot open: File exists")."""
    try:
        k.unlink(c, p)
        return
    except FSError as err:
        if err.errno not in (errno.EISDIR, errno.EPERM):
            raise FSError(errno.EEXIST) from None
    try:
        k.rmdir(c, p)
    except FSError:
        raise FSError(errno.EEXIST) from None


def _directory_there(k, c: int, p: list[bytes]):
    """extract_dir after mkdirat failed with EEXIST: an fstatat; a directory is kept as it is."""
    def there(err):
        if err.errno != errno.EEXIST:
            return None
        a = k.stat(c, p)
        return a if stat.S_ISDIR(a.st_mode) else None
    return there


def _link_there(k, c: int, old: list[bytes], p: list[bytes]):
    """extract_link after linkat failed: an fstatat of each name; the link is there already
    if they are one file."""
    def there(err):
        try:
            a = k.stat(c, old)
            b = k.stat(c, p)
        except FSError:
            return None
        return a if a.st_ino == b.st_ino else None
    return there


def _mkdir(k, c: int, p: list[bytes], mode: int) -> None:
    """mkdirat (None: _made's caller tells a new directory from one found there)."""
    k.mkdir(c, p, mode, 0, 0)


def _link(k, c: int, old: list[bytes], p: list[bytes]) -> None:
    """linkat (None: _made's caller tells a new link from one found there)."""
    k.link(c, old, p)


def _set_dir(k, c: int, d: _Delayed, check: bool) -> None:
    p = d.walk
    if check:
        k.stat(c, p)                      # check_for_renamed_directories
    k.utimens(c, p, mtime_ns=d.mtime)
    k.chown(c, p, d.uid, d.gid)
    if d.found:
        if (d.mode ^ d.cur) & 0o7777 == 0:
            return
    elif (d.mode ^ d.cur) & 0o777 == 0 and not d.mode & ~0o777:
        return
    _fchmodat(k, c, p, d.mode)


class _Extract:
    """One unpack's state as tar keeps it: the directory it extracts into, the archive offset,
    the delayed directories (the head is the end of the list) and the placeholders of the
    links held back to the end; one method per kind of member."""

    def __init__(self, k, c: int, record: int):
        self.k, self.c, self.record = k, c, record
        self.counts = {"dirs": 0, "files": 0, "symlinks": 0, "hardlinks": 0, "nodes": 0, "bytes": 0}
        self.delayed: list[_Delayed] = []
        self.links: list[tuple] = []          # placeholders: (path, entry)
        self.pos = 0                          # archive offset

    def apply(self, path, after_links: bool = False) -> None:
        """apply_nonancestor_delayed_set_stat: once an entry held back for the links is
        reached, this call fstatat's it and every older one first."""
        delayed = self.delayed
        check = False
        while delayed:
            d = delayed[-1]
            check |= d.after_links
            if d.after_links and not after_links:
                break
            if path and (d.dot or _ancestor(d.path, path)):
                break
            delayed.pop()
            _set_dir(self.k, self.c, d, check)

    def set_link(self, p: list[bytes], e) -> None:
        k, c = self.k, self.c
        k.utimens(c, p, mtime_ns=e.mtime_ns)
        k.chown(c, p, e.uid, e.gid)
        f = k.open_path(c, p)             # gnulib lchmod: a symbolic link is left alone
        k.fstat(f)
        k.close(f)

    def dot(self, mode: int | None, mtime_ns: int, uid: int, gid: int) -> None:
        """The archive's "./" member: mkdirat(".") fails, "." is delayed with its metadata."""
        k, c = self.k, self.c
        self.pos += BLOCK
        k.vol.getattr(c)                  # mkdirat(".") -> EEXIST
        a = k.stat(c, [b"."])
        k.stat(c, [b"."])
        self.delayed.append(_Delayed([], [b"."], a.st_mode & 0o7777 if mode is None else mode,
                                     a.st_mode & 0o7777, mtime_ns, uid, gid, dot=True))

    def member(self, e) -> None:
        """One member: its header(s) in the archive, the delayed directories it is not
        under, then the member itself."""
        dotted = e.dotted is not False
        pre = b"./" if dotted else b""
        name = pre + b"/".join(e.path) + (b"/" if e.kind == "dir" else b"")
        self.pos += _long(name)
        if e.kind == "symlink":
            self.pos += _long(e.target)
        elif e.kind == "hardlink":
            self.pos += _long(pre + b"/".join(e.link))
        self.pos += BLOCK
        p = _walk(e.path, dotted)
        self.apply(e.path)
        if e.kind == "dir":
            self.directory(e, p, dotted)
        elif e.kind == "file":
            self.file(e, p, dotted)
        elif e.kind == "symlink":
            self.symlink(e, p, dotted)
        elif e.kind in NODES:
            self.node(e, p, dotted)
        elif e.kind == "hardlink":
            self.hardlink(e, p, dotted)

    def directory(self, e, p: list[bytes], dotted: bool) -> None:
        k, c = self.k, self.c
        self.counts["dirs"] += 1
        mode = e.mode & 0o7777
        cur = mode & 0o700
        a = _made(k, c, e, dotted, lambda: _mkdir(k, c, p, cur), _directory_there(k, c, p))
        self.delayed.append(_Delayed(e.path, p, mode, cur if a is None else a.st_mode & 0o7777, e.mtime_ns,
                                     e.uid, e.gid, found=a is not None))

    def file(self, e, p: list[bytes], dotted: bool) -> None:
        k, c = self.k, self.c
        self.counts["files"] += 1
        mode = e.mode & 0o7777
        cur = mode & 0o700
        f = _made(k, c, e, dotted, lambda: k.create(c, p, cur))
        size, data = e.size, e.data
        if e.offset is not None:
            self.pos = e.offset                 # the archive's own layout
        if e.sparse is not None:
            _write_sparse(k, f, e.sparse, data)
        else:
            pos, record = self.pos, self.record
            off = 0
            while off < size:
                n = min(size - off, record - (pos + off) % record)
                k.write(f, off, data[off:off + n] if data is not None else _FILLER[:n])
                off += n
            self.pos = pos + _blocks(size)
        self.counts["bytes"] += size
        k.futimens(f, mtime_ns=e.mtime_ns)
        k.fchown(f, e.uid, e.gid)
        if (mode ^ cur) or mode & ~0o777:
            k.fchmod(f, mode)
        k.close(f)

    def symlink(self, e, p: list[bytes], dotted: bool) -> None:
        k, c = self.k, self.c
        self.counts["symlinks"] += 1
        if _unsafe(e.target):
            f = _made(k, c, e, dotted, lambda: k.create(c, p, 0))
            k.fstat(f)
            k.close(f)
            for d in reversed(self.delayed):    # mark_after_links
                if d.dot or d.after_links:
                    break
                d.after_links = True
                k.stat(c, d.walk)
            self.links.append((p, e))
        else:
            _made(k, c, e, dotted, lambda: k.symlink(c, p, e.target, e.uid, e.gid))
            self.set_link(p, e)

    def node(self, e, p: list[bytes], dotted: bool) -> None:
        k, c = self.k, self.c
        self.counts["nodes"] += 1
        mode = e.mode & 0o7777
        cur = mode & 0o700
        _made(k, c, e, dotted, lambda: k.mknod(c, p, NODES[e.kind] | cur, e.rdev))
        k.utimens(c, p, mtime_ns=e.mtime_ns)
        k.chown(c, p, e.uid, e.gid)
        if (mode ^ cur) or mode & ~0o777:
            _fchmodat(k, c, p, mode)

    def hardlink(self, e, p: list[bytes], dotted: bool) -> None:
        k, c = self.k, self.c
        self.counts["hardlinks"] += 1
        old = _walk(e.link, dotted)
        if self.links:
            k.stat(c, old)                    # find_delayed_link_source
        if _made(k, c, e, dotted, lambda: _link(k, c, old, p), _link_there(k, c, old, p)) is None \
                and self.links:
            k.stat(c, old)                    # linked: is the source a delayed link?

    def finish(self) -> None:
        """extract_finish: what no link holds back, the delayed links, then the rest."""
        k, c = self.k, self.c
        self.apply([])
        for p, e in reversed(self.links):     # apply_delayed_links
            k.stat(c, p)
            k.unlink(c, p)
            k.symlink(c, p, e.target, e.uid, e.gid)
            self.set_link(p, e)
        self.apply(None, after_links=True)


def run(k, where: list[bytes], source=(), *, record: int = RECORD, dot: bool = True,
        dot_mode: int | None = None, dot_mtime_ns: int = 0, dot_uid: int = 0, dot_gid: int = 0,
        **_) -> dict:
    """Unpack `source` (an iterable of treedesc.Entry) into the existing directory `where`.
    `dot`: the archive starts with a "./" member (what `tar -C SRC .` writes); its metadata
    are `dot_*` (the mode defaults to DIR's). A first entry with an empty path is that "./"
    member (from_tarball and from_directory yield it): its metadata are the `dot_*` not
    given; a first entry from an archive (`Entry.dotted` set) that is not says there is none.
    Each member is walked as its name is written: "./a/b" through "." (`Entry.dotted`; as
    `tar -C SRC .` writes names unless the entry says otherwise), "a/b" without."""
    source = iter(source)
    first = next(source, None)
    if first is not None and not first.path:
        dot_mode = first.mode if dot_mode is None else dot_mode
        dot_mtime_ns = dot_mtime_ns or first.mtime_ns
        dot_uid, dot_gid = dot_uid or first.uid, dot_gid or first.gid
    elif first is not None:
        if first.dotted is not None:      # an archive whose first member is not "./"
            dot = False
        source = itertools.chain([first], source)
    cwd = k.open(k.root, where, directory=True)
    x = _Extract(k, cwd.ino, record)
    if dot:
        x.dot(dot_mode, dot_mtime_ns, dot_uid, dot_gid)
    e = None
    try:
        for e in source:
            x.member(e)
    except FSError as err:                       # name the member, as tar's message does
        raise FSError(err.errno, os.fsdecode(b"/".join(e.path)) if e else "") from None
    x.finish()
    k.close(cwd)
    return x.counts
