"""pyfuse3 Operations: a thin translation of FUSE requests onto a `Volume`.

(pyfuse3 wants one Operations class with a handler per request type, about forty of them;
the extended-attribute handlers are a mixin of their own, simfs.fuse.xattrops, and the wrapper
every handler goes through is simfs.fuse.handler.)

Fidelity contract (docs/design.md): entry and attribute timeouts are 0, files are opened
with keep_cache off and without direct_io (so shared writable mmap works), and the kernel
write-back cache is off, so every access reaches simfs. The volume is synchronous and is
called directly from the trio handlers: requests are served one at a time, in order.

Lookup counts: every reply that creates a kernel reference (lookup, create, mknod, mkdir,
symlink, link and each readdirplus entry other than . and ..) takes a `vol.hold`; `forget`
gives them back with `vol.drop`; an open file is `vol.open_file` / `vol.release_file`. An
unlinked file stays readable while it is open; one nobody has open is freed at the unlink, as
the kernel evicts it there (Volume's docstring: why not at the FORGET).

With `-o acl` the kernel enforces POSIX ACLs (`enable_acl`, FUSE_POSIX_ACL) and the volume
keeps them (simfs.fs.xattrs); without it they are refused, as on ext2 mounted noacl, so cp -a,
tar and rsync fall back to chmod.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from collections import Counter

import pyfuse3

from simfs import __version__
from simfs.errors import FSError
from simfs.fs.types import RENAME_WHITEOUT
from simfs.fuse import control
from simfs.fuse.handler import FUSE_ROOT, InjectedFault  # noqa: F401  (re-exported)
from simfs.fuse.handler import caller_in_group, handler as _handler, vino as _vino
from simfs.fuse.xattrops import XattrHandlers, extents_page  # noqa: F401  (extents_page: re-exported)

log = logging.getLogger("simfs.fuse")

NAME_MAX = 255
# A file handle is the inode number, with WRITER set when the file was opened for writing:
# its release drops the allocator's reservation (ext2_release_file). Below control.BASE.
WRITER = 1 << 40
INO_MASK = WRITER - 1
#: a handle opened O_DIRECT: its reads and writes go to the drive (Volume.read_direct/write_direct)
DIRECT = 1 << 41


class Operations(XattrHandlers, pyfuse3.Operations):
    """FUSE requests -> Volume calls. `info` is shown in /.simfs/info."""

    enable_writeback_cache = False
    supports_dot_lookup = True

    def __init__(self, vol, *, info: dict | None = None, debug_faults: bool = False):
        super().__init__()
        self.vol = vol
        self.enable_acl = bool(getattr(getattr(vol, "options", None), "acl", False))   # read by pyfuse3.init
        self.root = vol.root_ino
        self.info = dict(info or {})
        self.ops: Counter = Counter()
        self.ctl_ops: Counter = Counter()
        self.errors: Counter = Counter()
        self.unexpected = 0
        self.faults: dict[str, int] = {}
        #: extra sections of /.simfs/stats: name -> callable returning a JSON-able dict
        self.stats_sections: dict = {}
        if hasattr(vol, "stats_snapshot"):
            self.stats_sections["time"] = vol.stats_snapshot
        self.dir_handles: dict[int, tuple[int, object]] = {}   # fh -> (inode, readdir state)
        self._next_dir_fh = 1
        self.ctl = control.ControlDir(FUSE_ROOT, uid=os.getuid(), gid=os.getgid())
        self.ctl.add("stats", read=self._render_stats, help="counters as JSON")
        self.ctl.add("info", read=self._render_info, help="daemon pid, image, options (JSON)")
        self.ctl.add("sync", write=lambda data: self.vol.sync(), perm=0o200,
                     help="write anything: write every dirty block back to the image")
        if hasattr(vol, "drop_caches"):
            self.ctl.add("drop_caches", write=lambda data: self.vol.drop_caches(), perm=0o200,
                         help="write anything: write back, then empty simfs's caches (cold cache)")
        if hasattr(vol, "reset_stats"):
            self.ctl.add("reset", write=self._reset, perm=0o200,
                         help="write anything: zero the counters and simulated-time statistics")
        if hasattr(vol, "mark"):
            self.ctl.add("mark", write=self._mark, perm=0o200,
                         help="write a phase name: later statistics are kept under it")
        if debug_faults:
            self.ctl.add("fault", write=self._arm_fault, perm=0o200,
                         help="TESTS: write 'OP [N]' to make the next N OP handlers raise")

    # helpers --------------------------------------------------------------------------------
    def _fuse_ino(self, ino: int) -> int:
        return FUSE_ROOT if ino == self.root else ino

    def _entry(self, a) -> pyfuse3.EntryAttributes:
        e = pyfuse3.EntryAttributes()
        e.st_ino = self._fuse_ino(a.st_ino)
        e.generation = getattr(a, "generation", 0)
        e.entry_timeout = 0
        e.attr_timeout = 0
        e.st_mode = a.st_mode
        e.st_nlink = a.st_nlink
        e.st_uid = a.st_uid
        e.st_gid = a.st_gid
        e.st_rdev = a.st_rdev
        e.st_size = a.st_size
        e.st_blksize = a.st_blksize
        e.st_blocks = a.st_blocks
        e.st_atime_ns = a.st_atime_ns
        e.st_mtime_ns = a.st_mtime_ns
        e.st_ctime_ns = a.st_ctime_ns
        return e

    def _held(self, a) -> pyfuse3.EntryAttributes:
        """An entry reply that gives the kernel a reference (lookup count +1)."""
        self.vol.hold(a.st_ino)
        return self._entry(a)

    def _peek_attr(self, ino: int):
        """Attributes for a readdirplus entry; uncharged if the volume offers `peek_attr`."""
        peek = getattr(self.vol, "peek_attr", None)
        return peek(ino) if peek is not None else self.vol.getattr(ino)

    @staticmethod
    def _check_name(name: bytes) -> None:
        if len(name) > NAME_MAX:
            raise FSError(errno.ENAMETOOLONG)

    def _no_ctl_name(self, parent: int, name: bytes, err: int) -> None:
        if control.is_control(parent) or (parent == FUSE_ROOT and name == control.NAME):
            raise FSError(err)

    def _owner(self, parent: int, mode: int, ctx) -> tuple[int, int, int]:
        """(mode, uid, gid) for a new inode. The volume applies a set-group-ID parent's group;
        here, like the kernel's inode_init_owner, a non-member creating a group-executable
        set-group-ID file loses the set-group-ID bit."""
        uid, gid = ctx.uid, ctx.gid
        if (ctx.uid != 0 and not stat.S_ISDIR(mode) and
                (mode & (stat.S_ISGID | stat.S_IXGRP)) == (stat.S_ISGID | stat.S_IXGRP)):
            pattr = self.vol.getattr(_vino(parent))
            owner_gid = pattr.st_gid if pattr.st_mode & stat.S_ISGID else gid
            if not caller_in_group(ctx, owner_gid):
                mode &= ~stat.S_ISGID
        return mode, uid, gid

    # control-directory content ---------------------------------------------------------------
    def stats(self) -> dict:
        """The /.simfs/stats document."""
        doc = {
            "simfs": __version__,
            "image": self.info.get("image"),
            "policies": (self.info.get("options") or {}).get("policies"),
            "ops": dict(sorted(self.ops.items())),
            "ops_total": sum(self.ops.values()),
            "errors": dict(sorted(self.errors.items())),
            "unexpected_exceptions": self.unexpected,
            "counters": dict(getattr(self.vol, "counters", {}) or {}),
        }
        for name, fn in self.stats_sections.items():
            doc[name] = fn()
        return doc

    def _render_stats(self) -> bytes:
        return (json.dumps(self.stats(), indent=1, sort_keys=False) + "\n").encode()

    def _render_info(self) -> bytes:
        doc = dict(self.info)
        unwritable = getattr(self.vol, "unwritable", None)
        if unwritable is not None:      # `simfs umount` will not unmount meanwhile
            doc["unwritable"] = str(unwritable.strerror)
        doc.update(pid=os.getpid(), simfs=__version__,
                   control_files={f.name.decode(): f.help for f in self.ctl.files.values()})
        return (json.dumps(doc, indent=1) + "\n").encode()

    def _reset(self, data: bytes) -> None:
        self.vol.reset_stats()
        self.ops.clear()
        self.errors.clear()

    def _mark(self, data: bytes) -> None:
        self.vol.mark(data.decode(errors="replace").strip())    # the volume checks the name
        trace = getattr(self.vol, "trace", None)
        if trace is not None and not trace.error:
            try:                    # a phase's rows are readable once the next phase starts
                trace.f.flush()     # (simfs fio reads its jobs' rows from a live mount)
            except OSError:
                pass                # the writer meets the error again and reports it

    def _arm_fault(self, data: bytes) -> None:
        for line in data.decode(errors="replace").splitlines():
            words = line.split()
            if not words:
                continue
            if words[0] == "clear":
                self.faults.clear()
                continue
            op = words[0]
            fn = getattr(type(self), op, None)
            if getattr(fn, "simfs_op", None) != op or op == "forget":
                raise FSError(errno.EINVAL, f"no handler {op!r}")
            try:
                n = int(words[1]) if len(words) > 1 else 1
            except ValueError:
                raise FSError(errno.EINVAL) from None
            self.faults[op] = n
            log.warning("fault armed: the next %d %s request(s) will raise", n, op)

    # pyfuse3 lifecycle -------------------------------------------------------------------------
    def init(self):
        log.info("FUSE session initialised")

    # namespace ----------------------------------------------------------------------------------
    @_handler
    def lookup(self, parent, name, ctx=None):
        if parent == FUSE_ROOT and name == control.NAME:
            return self._entry(self.ctl.getattr(control.DIR_INO))
        if control.is_control(parent):
            a = self.ctl.lookup(parent, name)
            return self._held(self.vol.getattr(self.root)) if a is None else self._entry(a)
        if name == b".":
            return self._held(self._by_handle(_vino(parent)))
        self._check_name(name)
        return self._held(self.vol.lookup(_vino(parent), name))

    def _by_handle(self, vino: int):
        """LOOKUP(node, "."): how the kernel finds a node from a file handle
        (open_by_handle_at, NFS export; FUSE_EXPORT_SUPPORT) once the inode has left its cache
        (the VFS never sends "." otherwise). Any file, not only a directory, as ext2's
        ext2_nfs_get_inode; a node no name reaches any more is stale, as there."""
        a = self.vol.getattr(vino)
        if a.st_nlink == 0:
            raise FSError(errno.ESTALE)
        return a

    @_handler
    def forget(self, inode_list):
        for ino, n in inode_list:
            if not control.is_control(ino):
                self.vol.drop(_vino(ino), n)

    @_handler
    def getattr(self, ino, ctx=None):
        if control.is_control(ino):
            return self._entry(self.ctl.getattr(ino))
        return self._entry(self.vol.getattr(_vino(ino)))

    @_handler
    def setattr(self, ino, attr, fields, fh, ctx):
        if control.is_control(ino):
            if fields.update_mode or fields.update_uid or fields.update_gid:
                raise FSError(errno.EPERM)
            return self._entry(self.ctl.getattr(ino))
        vino = _vino(ino)
        kw = {}
        if fields.update_mode:
            kw["mode"] = stat.S_IMODE(attr.st_mode)
        if fields.update_uid:
            kw["uid"] = attr.st_uid
        if fields.update_gid:
            kw["gid"] = attr.st_gid
        if fields.update_size:
            kw["size"] = attr.st_size
        if fields.update_atime:
            kw["atime_ns"] = attr.st_atime_ns
        if fields.update_mtime:
            kw["mtime_ns"] = attr.st_mtime_ns
        if (fields.update_uid or fields.update_gid) and not fields.update_mode:
            # chown clears set-user-ID, and set-group-ID on group-executables (not on dirs);
            # with FUSE_HANDLE_KILLPRIV the kernel leaves that to us.
            cur = self.vol.getattr(vino).st_mode
            if not stat.S_ISDIR(cur):
                kill = stat.S_ISUID | (stat.S_ISGID if cur & stat.S_IXGRP else 0)
                if cur & kill:
                    kw["mode"] = stat.S_IMODE(cur) & ~kill
        return self._entry(self.vol.setattr(vino, **kw))

    @_handler
    def readlink(self, ino, ctx=None):
        if control.is_control(ino):
            raise FSError(errno.EINVAL)
        return self.vol.readlink(_vino(ino))

    @_handler
    def mknod(self, parent, name, mode, rdev, ctx):
        self._no_ctl_name(parent, name, errno.EEXIST if not control.is_control(parent) else errno.EPERM)
        self._check_name(name)
        mode, uid, gid = self._owner(parent, mode, ctx)
        return self._held(self.vol.mknod(_vino(parent), name, mode, rdev, uid, gid))

    @_handler
    def mkdir(self, parent, name, mode, ctx):
        self._no_ctl_name(parent, name, errno.EEXIST if not control.is_control(parent) else errno.EPERM)
        self._check_name(name)
        mode, uid, gid = self._owner(parent, stat.S_IFDIR | stat.S_IMODE(mode), ctx)
        return self._held(self.vol.mkdir(_vino(parent), name, mode, uid, gid))

    @_handler
    def unlink(self, parent, name, ctx=None):
        self._no_ctl_name(parent, name, errno.EPERM)
        self.vol.unlink(_vino(parent), name)

    @_handler
    def rmdir(self, parent, name, ctx=None):
        self._no_ctl_name(parent, name, errno.EPERM)
        self.vol.rmdir(_vino(parent), name)

    @_handler
    def symlink(self, parent, name, target, ctx):
        self._no_ctl_name(parent, name, errno.EEXIST if not control.is_control(parent) else errno.EPERM)
        self._check_name(name)
        _, uid, gid = self._owner(parent, stat.S_IFLNK | 0o777, ctx)
        return self._held(self.vol.symlink(_vino(parent), name, target, uid, gid))

    @_handler
    def rename(self, parent_old, name_old, parent_new, name_new, flags, ctx=None):
        self._no_ctl_name(parent_old, name_old, errno.EPERM)
        self._no_ctl_name(parent_new, name_new, errno.EPERM)
        self._check_name(name_new)
        # RENAME_WHITEOUT (the kernel checked CAP_MKNOD): the whiteout is the caller's, as a mknod
        owner = {"uid": ctx.uid, "gid": ctx.gid} if flags & RENAME_WHITEOUT and ctx is not None else {}
        self.vol.rename(_vino(parent_old), name_old, _vino(parent_new), name_new, flags, **owner)

    @_handler
    def link(self, ino, new_parent, new_name, ctx=None):
        if control.is_control(ino):
            raise FSError(errno.EPERM)
        self._no_ctl_name(new_parent, new_name, errno.EEXIST if not control.is_control(new_parent)
                          else errno.EPERM)
        self._check_name(new_name)
        return self._held(self.vol.link(_vino(ino), _vino(new_parent), new_name))

    # files --------------------------------------------------------------------------------------
    @_handler
    def open(self, ino, flags, ctx=None):
        if control.is_control(ino):
            return pyfuse3.FileInfo(fh=self.ctl.open(ino, flags, uid=ctx.uid if ctx else None),
                                    direct_io=True, keep_cache=False)
        vino = _vino(ino)
        self.vol.open_file(vino)
        if flags & os.O_TRUNC:
            # FUSE_ATOMIC_O_TRUNC: the kernel leaves truncation on open to us (and, like
            # Linux, O_RDONLY|O_TRUNC truncates too; the kernel checked write permission).
            try:
                self.vol.setattr(vino, size=0)
            except BaseException:
                self.vol.release_file(vino, False)
                raise
        writer = WRITER if flags & os.O_ACCMODE != os.O_RDONLY else 0
        direct = self._direct(flags)
        return pyfuse3.FileInfo(fh=vino | writer | direct, direct_io=bool(direct), keep_cache=False)

    def _direct(self, flags) -> int:
        """DIRECT for an O_DIRECT open the volume serves around its cache (the kernel's direct
        I/O: FUSE direct_io, no page cache either); 0 otherwise - also on a volume whose class
        has no direct path (an op-logged mount: its log records buffered I/O only)."""
        return DIRECT if flags & os.O_DIRECT and hasattr(type(self.vol), "write_direct") else 0

    @_handler
    def create(self, parent, name, mode, flags, ctx):
        self._no_ctl_name(parent, name, errno.EEXIST if not control.is_control(parent) else errno.EPERM)
        self._check_name(name)
        mode, uid, gid = self._owner(parent, stat.S_IFREG | stat.S_IMODE(mode), ctx)
        a = self.vol.create(_vino(parent), name, mode, uid, gid)
        entry = self._held(a)           # the lookup reference
        self.vol.open_file(a.st_ino)    # and the open handle
        direct = self._direct(flags)
        return pyfuse3.FileInfo(fh=a.st_ino | WRITER | direct, direct_io=bool(direct), keep_cache=False), entry

    @_handler
    def read(self, fh, off, size):
        if control.is_control(fh):
            return self.ctl.read(fh, off, size)
        if fh & DIRECT:
            return self.vol.read_direct(fh & INO_MASK, off, size)
        return self.vol.read(fh & INO_MASK, off, size)

    @_handler
    def write(self, fh, off, buf):
        if control.is_control(fh):
            return self.ctl.write(fh, off, buf)
        if fh & DIRECT:
            return self.vol.write_direct(fh & INO_MASK, off, buf)
        return self.vol.write(fh & INO_MASK, off, buf)

    # No FLUSH handler: pyfuse3 answers ENOSYS and the kernel stops asking (fc->no_flush), as
    # for any server without one (pyfuse3's passthrough example among them): one round trip
    # less per close(). simfs has nothing to do there (no server-side locks; every WRITE is
    # already in the volume), so nothing the volume sees changes; the in-process kernel model
    # (simfs.inprocess.kernel) sends no FLUSH either.

    @_handler
    def release(self, fh):
        if control.is_control(fh):
            self.ctl.release(fh)
        else:
            self.vol.release_file(fh & INO_MASK, bool(fh & WRITER))

    @_handler
    def fsync(self, fh, datasync):
        if not control.is_control(fh):
            self.vol.fsync(fh & INO_MASK, bool(datasync))

    # directories --------------------------------------------------------------------------------
    @_handler
    def opendir(self, ino, ctx=None):
        if control.is_control(ino):
            return ino
        vino = _vino(ino)
        new_state = getattr(self.vol, "opendir_state", None)
        fh = self._next_dir_fh
        self._next_dir_fh += 1
        self.dir_handles[fh] = (vino, new_state() if new_state else None)
        return fh

    @_handler
    def readdir(self, fh, start_id, token):
        if control.is_control(fh):
            return self._readdir_ctl(start_id, token)
        dino, state = self.dir_handles[fh]
        listing = (self.vol.readdir(dino, start_id, state=state) if state is not None
                   else self.vol.readdir(dino, start_id))
        for name, ino, next_id in listing:
            if dino == self.root and name == control.NAME:
                continue
            if name == b"." or name == b"..":
                e = pyfuse3.EntryAttributes()       # kernel takes no reference for these
                e.st_ino = self._fuse_ino(ino)
                e.st_mode = stat.S_IFDIR
                e.entry_timeout = e.attr_timeout = 0
                if not pyfuse3.readdir_reply(token, name, e, next_id):
                    return
                continue
            if not pyfuse3.readdir_reply(token, name, self._entry(self._peek_attr(ino)), next_id):
                return
            self.vol.hold(ino)

    def _readdir_ctl(self, start_id, token):
        names = [(b".", control.DIR_INO), (b"..", FUSE_ROOT)] + self.ctl.entries()
        for i in range(start_id, len(names)):
            name, ino = names[i]
            if ino == FUSE_ROOT:
                e = pyfuse3.EntryAttributes()
                e.st_ino, e.st_mode = FUSE_ROOT, stat.S_IFDIR
                e.entry_timeout = e.attr_timeout = 0
            else:
                e = self._entry(self.ctl.getattr(ino))
            if not pyfuse3.readdir_reply(token, name, e, i + 1):
                return

    @_handler
    def releasedir(self, fh):
        handle = self.dir_handles.pop(fh, None)
        if handle is not None and handle[1] is not None:
            self.vol.release_state(handle[1])

    @_handler
    def fsyncdir(self, fh, datasync):
        if not control.is_control(fh):
            self.vol.fsync(self.dir_handles[fh][0], bool(datasync))

    @_handler
    def statfs(self, ctx=None):
        s = self.vol.statfs()
        out = pyfuse3.StatvfsData()
        for k in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files",
                  "f_ffree", "f_favail"):
            setattr(out, k, getattr(s, k))
        out.f_namemax = NAME_MAX
        return out

    @_handler
    def access(self, ino, mode, ctx=None):
        return True   # default_permissions: the kernel checks
