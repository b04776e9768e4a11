"""Names: lookup, attributes, create/mkdir/mknod/symlink/link, unlink/rmdir, rename, readdir.

Ownership, modes, times and link counts are kept exact (the kernel checks permissions, with
default_permissions); a file's last name going frees it only when nothing holds it.
"""

import errno
import hashlib
import stat
import struct
import time

from policies import NoSpace
from policies.dirorder import BadCookie
from simfs.errors import FSError
from simfs.fs.operation import operation
from simfs.fs.types import RENAME_EXCHANGE, RENAME_NOREPLACE, RENAME_WHITEOUT, Attr, StatFS
from simfs.ondisk.constants import LINK_MAX, MAX_NAME_LEN, ROOT_INO, file_type_of_mode


_GEN = struct.Struct("<II")
_TYPES = (stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK, stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK)


def _check_name(name: bytes) -> None:
    if len(name) > MAX_NAME_LEN:
        raise FSError(errno.ENAMETOOLONG)
    if not name or b"/" in name or b"\0" in name:
        raise FSError(errno.EINVAL)


def _check_ints(*values, bound: int = 1 << 32) -> None:
    """Arguments a kernel would never send (an id past 32 bits, a mode or time that is no
    integer) are refused with EINVAL before anything changes: the volume is also driven
    in-process (verbs, op-log replay), and a value that fails only when the inode is packed
    would stop an operation half-way."""
    for v in values:
        if v is not None and (type(v) is not int or not 0 <= v < bound):
            raise FSError(errno.EINVAL)


class RecentlyFreed:
    """Inode numbers freed within the last few inode allocations and frees (Namespace's
    _choose_inode keeps them out of reach). Its own object, not attributes the Namespace mixin
    assigns: a mixin that assigned attributes would be compiled with slots of its own, and
    Volume cannot have two such bases (simfs/compiled/slots.py)."""

    def __init__(self):
        self.events = 0                 # allocations and frees so far
        self.when: dict[int, int] = {}  # freed inode -> events then, in order of freeing

    def event(self, after: int) -> dict[int, int]:
        """Count one event; forget the numbers freed more than `after` events ago."""
        self.events += 1
        when = self.when
        while when:
            first = next(iter(when))
            if self.events - when[first] <= after:
                break
            del when[first]
        return when

    def freed(self, ino: int, after: int) -> None:
        """Count the free of `ino` and note it (last in the order of freeing)."""
        self.event(after).pop(ino, None)
        self.when[ino] = self.events


class Namespace:
    """Namespace operations of `simfs.fs.volume.Volume` (a mixin: it uses the volume's parts)."""

    @operation
    def lookup(self, parent: int, name: bytes) -> Attr:
        _check_name(name)
        d = self._inode(parent)
        if not d.is_dir:
            raise FSError(errno.ENOTDIR)
        hit = self.dirs.lookup(d, name)
        if hit is None:
            raise FSError(errno.ENOENT)
        return self._attr(self._named(d, name, hit[0]))

    def peek_attr(self, ino: int) -> Attr:
        """Attributes without charging an inode read: readdirplus hands these to the kernel,
        and the tool's own later lookup or stat is what pays (the fidelity contract)."""
        if not 1 <= ino <= self.geo.inodes_count:
            raise FSError(errno.ENOENT)
        inode = self.inodes.peek(ino)
        if not inode.links and (inode.dtime or ino in self.orphans):
            return self._attr(inode)    # unlinked (an orphan, or freed): its 0 links, by which
                                        # the kernel's model evicts it
        if inode.bad or not (inode.links and stat.S_IFMT(inode.mode)):
            # a name the directory holds for an inode that cannot be live is listed (ext2's
            # readdir reads no inode): a stand-in; its lookup is what fails (EUCLEAN)
            fmt = stat.S_IFMT(inode.mode)
            return Attr(ino, fmt if fmt in _TYPES else stat.S_IFREG, 1, 0, 0, 0, 0, 0,
                        self.block_size, 0, 0, 0, inode.generation)
        return self._attr(inode)

    @operation
    def getattr(self, ino: int) -> Attr:
        if self.stale and ino in self.stale and not self.space.inode_in_use[ino - 1]:
            return self.stale[ino][1]                   # freed at its unlink, still referenced
        return self._attr(self._inode(ino))

    @operation
    def setattr(self, ino: int, *, mode=None, uid=None, gid=None, size=None, atime_ns=None,
                mtime_ns=None) -> Attr:
        self._writable()
        _check_ints(mode, uid, gid)
        _check_ints(size, bound=1 << 63)
        for t in (atime_ns, mtime_ns):
            if t is not None and type(t) is not int:
                raise FSError(errno.EINVAL)
        inode = self._inode(ino)
        if size is not None:
            if inode.is_dir:
                raise FSError(errno.EISDIR)
            if not inode.is_reg:
                raise FSError(errno.EINVAL)
            self._truncate(inode, size)
            self._touch(inode)
        if mode is not None:
            inode.mode = stat.S_IFMT(inode.mode) | stat.S_IMODE(mode)
            self._chmod_acl(inode)
        if uid is not None:
            inode.uid = uid
        if gid is not None:
            inode.gid = gid
        if atime_ns is not None:
            inode.atime_ns = atime_ns
        if mtime_ns is not None:
            inode.mtime_ns = mtime_ns
        inode.ctime_ns = self._now()
        self.inodes.put(inode)
        return self._attr(inode)

    #: inode allocations and frees a freed number sits out, FORGET or not (`_choose_inode`)
    REUSE_AFTER = 64

    def _choose_inode(self, parent: int, is_dir: bool) -> int:
        """The placer's choice, but not a freed number the kernel still refers to (Volume:
        stale): a node id is handed out again only after its FORGET, so nothing the kernel
        sent for the old inode can reach a new one - unless nothing else is free. Nor one
        freed during the last REUSE_AFTER allocations and frees, FORGET or not: the host sends FORGET
        when it likes (its forget batching defers one by up to 8 requests, by how the queues
        raced), so a number's return at its FORGET would make the model's choice depend on the
        host's timing; sitting out a fixed number of those events (each a request at least),
        longer than that delay, makes it depend on the operation sequence only (issue 51,
        item 2)."""
        used = self.space.inode_used
        recent = self._inode_event()
        hidden = [i - 1 for i in self.stale if not used[i - 1]] if self.stale else None
        if recent:
            hidden = sorted(set(hidden or ()) | {i - 1 for i in recent if not used[i - 1]})
        if not hidden:
            return self.placer.choose(self.space, parent, is_dir)
        used[hidden] = True
        try:
            return self.placer.choose(self.space, parent, is_dir)
        except NoSpace:
            pass
        finally:
            used[hidden] = False
        return self.placer.choose(self.space, parent, is_dir)

    def _inode_event(self) -> dict[int, int]:
        """Count an inode allocation or free; the numbers freed within the last REUSE_AFTER."""
        return self.freed_recently.event(self.REUSE_AFTER)

    def _new_inode(self, parent, name: bytes, mode: int, uid: int, gid: int):
        """Allocate and link a new inode named `name` in directory `parent`."""
        self._writable()
        _check_ints(uid, gid)
        _check_name(name)
        d = self._dir(parent)
        if self.dirs.lookup(d, name) is not None:
            raise FSError(errno.EEXIST)
        is_dir = stat.S_ISDIR(mode)
        if is_dir and d.links >= LINK_MAX:
            raise FSError(errno.EMLINK)
        inode = self._alloc_inode(d, mode, uid, gid)
        try:
            if is_dir:
                self.dirs.init(inode, parent)
            self.inodes.put(inode)
            self.dirs.add(d, name, inode.ino, file_type_of_mode(mode))
        except FSError:
            self._unmake(inode, is_dir)
            raise
        if is_dir:
            d.links += 1
        self._touch(d)
        self.inodes.put(d)
        return inode

    def _alloc_inode(self, d, mode: int, uid: int, gid: int):
        """A new inode in directory `d`'s neighbourhood, owned and stamped, not yet named
        (ext4's __ext4_new_inode with inode_init_owner)."""
        is_dir = stat.S_ISDIR(mode)
        parent = d.ino
        try:
            ino = self._choose_inode(parent, is_dir)
        except NoSpace:
            raise FSError(errno.ENOSPC) from None
        old = self.inodes.peek(ino, checked=False)
        if old.links and stat.S_IFMT(old.mode) and not old.dtime:
            # free in the bitmap, in use on the image: ext4 sets the bit and fails this one
            # ("doubly allocated?", EIO); the next allocation goes past it
            self.space.take_inode(ino, old.is_dir)
            self.checks.report(f"inode {ino} is in use but free in the inode bitmap", ino, 0, "new_inode")
            raise FSError(errno.EIO, f"inode {ino} is in use but was free in the bitmap")
        self.space.take_inode(ino, is_dir)
        inode = self.inodes.new(ino)
        if d.mode & stat.S_ISGID:       # BSD group semantics of a setgid directory
            gid = d.gid
            if is_dir:
                mode |= stat.S_ISGID
        inode.mode, inode.uid, inode.gid = mode, uid, gid
        if is_dir or stat.S_ISREG(mode):
            self.filemap.init(inode)         # extent-mapped on an extent file system
        inode.links = 2 if is_dir else 1
        now = self._now()
        inode.atime_ns = inode.mtime_ns = inode.ctime_ns = inode.crtime_ns = now
        inode.generation = self._next_generation(ino, old.generation)
        try:
            self._inherit_acl(d, inode)
        except FSError:
            self._unmake(inode, is_dir)
            raise
        return inode

    def _next_generation(self, ino: int, previous: int) -> int:
        """i_generation for a new inode: ext4 draws a random one (__ext4_new_inode), so that
        a file handle to a freed inode is stale once its number is used again. Here it is a
        keyed hash of the number and the generation its slot held last (the key: the image's
        UUID and hash seed): deterministic, never the slot's last one, and, being stored in
        the inode, still different after a remount."""
        h = hashlib.blake2b(_GEN.pack(ino, previous), digest_size=4, key=self.generation_key).digest()
        gen = int.from_bytes(h, "little")
        return gen ^ 1 if gen == previous else gen

    def _unmake(self, inode, is_dir: bool) -> None:
        """Give back a new inode whose name could not be made (no room for its directory
        block or its entry), as ext2_mkdir's failure path does: its blocks freed, and the
        inode left as a deleted one (no links, dtime set), which e2fsck passes over - an inode
        with links on the image is in use for e2fsck whatever the bitmap says."""
        self.filemap.truncate(inode, 0)
        if inode.file_acl:
            self._release_xattr_block(inode)
        inode.links = 0
        inode.size = 0
        inode.dtime = int(time.time())
        self.inodes.put(inode)
        self.space.release_inode(inode.ino, is_dir)
        self.inodes.forget(inode.ino)

    @operation
    def create(self, parent: int, name: bytes, mode: int, uid: int, gid: int) -> Attr:
        _check_ints(mode)
        return self._attr(self._new_inode(parent, name, stat.S_IFREG | stat.S_IMODE(mode), uid, gid))

    @operation
    def mkdir(self, parent: int, name: bytes, mode: int, uid: int, gid: int) -> Attr:
        _check_ints(mode)
        return self._attr(self._new_inode(parent, name, stat.S_IFDIR | (mode & 0o7777), uid, gid))

    @operation
    def mknod(self, parent: int, name: bytes, mode: int, rdev: int, uid: int, gid: int) -> Attr:
        _check_ints(mode, rdev)     # rdev as FUSE sends it: the kernel's 32-bit dev_t
        fmt = stat.S_IFMT(mode) or stat.S_IFREG
        if fmt not in (stat.S_IFREG, stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK):
            raise FSError(errno.EINVAL)
        inode = self._new_inode(parent, name, fmt | (mode & 0o7777), uid, gid)
        if fmt in (stat.S_IFCHR, stat.S_IFBLK):
            inode.set_rdev(rdev)
            self.inodes.put(inode)
        return self._attr(inode)

    @operation
    def symlink(self, parent: int, name: bytes, target: bytes, uid: int, gid: int) -> Attr:
        if len(target) >= self.block_size:
            raise FSError(errno.ENAMETOOLONG)
        if not target:
            raise FSError(errno.ENOENT)
        inode = self._new_inode(parent, name, stat.S_IFLNK | 0o777, uid, gid)
        try:
            if len(target) < 60:   # fast symlink: the target lives in i_block
                raw = target.ljust(60, b"\0")
                inode.block = [int.from_bytes(raw[i:i + 4], "little") for i in range(0, 60, 4)]
            else:
                self.filemap.init(inode)     # a slow symlink is extent-mapped, as ext4_symlink makes it
                phys, _ = self.filemap.map_for_write(inode, 0, "symlink")
                self.cache.write(phys, target.ljust(self.block_size, b"\0"), "symlink", inode.ino)
            inode.size = len(target)
            self.inodes.put(inode)
        except FSError:
            self.unlink(parent, name)
            raise
        return self._attr(inode)

    @operation
    def readlink(self, ino: int) -> bytes:
        inode = self._inode(ino)
        if not inode.is_symlink:
            raise FSError(errno.EINVAL)
        if inode.is_fast_symlink(self.block_size):
            return b"".join(b.to_bytes(4, "little") for b in inode.block)[: inode.size]
        phys = self.filemap.bmap(inode, 0)
        return bytes(self.cache.bread(phys, "symlink", ino)[: inode.size])

    @operation
    def link(self, ino: int, new_parent: int, new_name: bytes) -> Attr:
        self._writable()
        _check_name(new_name)
        inode = self._inode(ino)
        if inode.is_dir:
            raise FSError(errno.EPERM)
        if inode.links >= LINK_MAX:
            raise FSError(errno.EMLINK)
        if inode.links == 0:
            raise FSError(errno.ENOENT)
        d = self._dir(new_parent)
        if self.dirs.lookup(d, new_name) is not None:
            raise FSError(errno.EEXIST)
        self.dirs.add(d, new_name, ino, file_type_of_mode(inode.mode))
        inode.links += 1
        self._touch(inode, m=False)
        self.inodes.put(inode)
        self._touch(d)
        self.inodes.put(d)
        return self._attr(inode)

    @operation
    def unlink(self, parent: int, name: bytes) -> None:
        self._writable()
        _check_name(name)
        d = self._dir(parent)
        hit = self.dirs.lookup(d, name)
        if hit is None:
            raise FSError(errno.ENOENT)
        inode = self._named(d, name, hit[0])
        if inode.is_dir:
            raise FSError(errno.EISDIR)
        self.dirs.remove(d, name)
        self._touch(d)
        self.inodes.put(d)
        self._unref(inode)

    @operation
    def rmdir(self, parent: int, name: bytes) -> None:
        self._writable()
        _check_name(name)
        if name == b".":
            raise FSError(errno.EINVAL)
        if name == b"..":
            raise FSError(errno.ENOTEMPTY)
        d = self._dir(parent)
        hit = self.dirs.lookup(d, name)
        if hit is None:
            raise FSError(errno.ENOENT)
        victim = self._named(d, name, hit[0])
        if not victim.is_dir:
            raise FSError(errno.ENOTDIR)
        if not self.dirs.is_empty(victim):
            raise FSError(errno.ENOTEMPTY)
        self.dirs.remove(d, name)
        self._drop_link(d)
        self._touch(d)
        self.inodes.put(d)
        victim.links = 0
        self._touch(victim, m=False)
        self._unref(victim, dropped_dir=True)

    def _unref(self, inode, dropped_dir: bool = False) -> None:
        """One name less: with no name left, free the inode now if nothing holds it, when the
        operation ends if only the kernel's references do (Volume: holds)."""
        if not dropped_dir:
            self._drop_link(inode)
            self._touch(inode, m=False)
        self.inodes.put(inode)
        if inode.links == 0:
            if not self.holds.get(inode.ino):
                self._free_inode(inode)
            else:
                self.orphans.add(inode.ino)     # freed when the last hold goes (Volume.drop)
                if not self.handles.get(inode.ino):
                    self.ops.evict.append(inode.ino)

    def _drop_link(self, inode) -> None:
        """One link less; a count at 0 already is reported and stays 0 (ext4 warns "with no
        links" and does not go below 0)."""
        if inode.links > 0:
            inode.links -= 1
        else:
            self.checks.report(f"inode {inode.ino}: link count already 0", inode.ino, 0, "drop_nlink")

    def _free_inode(self, inode) -> None:
        self.orphans.discard(inode.ino)
        if inode.is_dir:
            self.dirs.forget(inode.ino)
        if inode.has_block_map and not inode.is_fast_symlink(self.block_size):
            if self.placement.delayed:
                self.delalloc.undelay(inode, 0)
            self.filemap.truncate(inode, 0)
        if inode.file_acl:
            self._release_xattr_block(inode)
        inode.dtime = int(time.time())
        inode.size = 0
        self.inodes.put(inode)
        self.space.release_inode(inode.ino, inode.is_dir)
        self.inodes.forget(inode.ino)
        self.freed_recently.freed(inode.ino, self.REUSE_AFTER)

    def _is_ancestor(self, anc: int, ino: int) -> bool:
        """True if directory `anc` is `ino` or one of its ancestors (walking ".."). A walk
        longer than there are directories is a loop of ".." entries: EUCLEAN."""
        for _ in range(self.space.used_dirs + 2):
            if ino == anc:
                return True
            if ino == ROOT_INO:
                return False
            d = self.inodes.get(ino)
            hit = self.dirs.lookup(d, b"..")
            if hit is None or hit[0] == ino:
                return False
            self._named(d, b"..", hit[0])
            ino = hit[0]
        raise self.checks.corrupt(f"directory {ino}: its \"..\" entries make a loop", ino, 0, "rename")

    @operation
    def rename(self, old_parent: int, old_name: bytes, new_parent: int, new_name: bytes, flags: int = 0,
               uid: int = 0, gid: int = 0) -> Attr | None:
        """renameat2. With RENAME_WHITEOUT the old name is left naming a whiteout, a 0:0
        character device owned by `uid`:`gid`, made in the same operation as ext4's
        ext4_whiteout_for_rename makes it (its attributes are returned; else None)."""
        self._writable()
        _check_name(old_name)
        _check_name(new_name)
        _check_ints(uid, gid)
        if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)
                or flags & RENAME_EXCHANGE and flags & (RENAME_NOREPLACE | RENAME_WHITEOUT)):
            raise FSError(errno.EINVAL)
        if old_name in (b".", b"..") or new_name in (b".", b".."):
            raise FSError(errno.EBUSY)
        od, nd = self._dir(old_parent), self._dir(new_parent)
        src = self.dirs.lookup(od, old_name)
        if src is None:
            raise FSError(errno.ENOENT)
        s = self._named(od, old_name, src[0])
        dst = self.dirs.lookup(nd, new_name)
        if flags & RENAME_EXCHANGE:
            if dst is None:
                raise FSError(errno.ENOENT)
            self._exchange(od, old_name, s, nd, new_name, self._named(nd, new_name, dst[0]))
            return None
        if dst is not None and flags & RENAME_NOREPLACE:
            raise FSError(errno.EEXIST)
        if s.is_dir and old_parent != new_parent and self._is_ancestor(s.ino, new_parent):
            raise FSError(errno.EINVAL)
        t = None
        if dst is not None:
            if dst[0] == s.ino:
                return None       # both names are links to one inode: POSIX says do nothing
            t = self._named(nd, new_name, dst[0])
            if s.is_dir and not t.is_dir:
                raise FSError(errno.ENOTDIR)
            if not s.is_dir and t.is_dir:
                raise FSError(errno.EISDIR)
            if t.is_dir and not self.dirs.is_empty(t):
                raise FSError(errno.ENOTEMPTY)
        elif s.is_dir and nd.links >= LINK_MAX and old_parent != new_parent:
            raise FSError(errno.EMLINK)
        wh = self._whiteout(od, uid, gid) if flags & RENAME_WHITEOUT else None
        if t is not None:
            self.dirs.replace(nd, new_name, s.ino, file_type_of_mode(s.mode))
            if t.is_dir:
                t.links = 0
                self._drop_link(nd)  # the victim's ".." goes
                self._unref(t, dropped_dir=True)
            else:
                self._unref(t)
        else:
            try:
                self.dirs.add(nd, new_name, s.ino, file_type_of_mode(s.mode))
            except FSError:
                if wh is not None:
                    self._unmake(wh, False)
                raise
        if wh is None:
            self.dirs.remove(od, old_name)
        else:       # the old entry now names the whiteout (ext4_setent)
            self.dirs.replace(od, old_name, wh.ino, file_type_of_mode(wh.mode))
        if s.is_dir and old_parent != new_parent:
            self.dirs.set_parent(s, new_parent)
            self._drop_link(od)
            nd.links += 1
        self._touch(s, m=False)
        self.inodes.put(s)
        for d in {od.ino: od, nd.ino: nd}.values():
            self._touch(d)
            self.inodes.put(d)
        return None if wh is None else self._attr(wh)

    def _whiteout(self, d, uid: int, gid: int):
        """A new, unnamed whiteout inode for directory `d`: a character device 0:0 with
        mode 0 (the kernel's WHITEOUT_MODE and WHITEOUT_DEV)."""
        wh = self._alloc_inode(d, stat.S_IFCHR, uid, gid)
        wh.set_rdev(0)
        self.inodes.put(wh)
        return wh

    def _exchange(self, od, old_name, s, nd, new_name, t) -> None:
        if od.ino != nd.ino:
            if s.is_dir and self._is_ancestor(s.ino, nd.ino) or t.is_dir and self._is_ancestor(t.ino, od.ino):
                raise FSError(errno.EINVAL)
        self.dirs.replace(od, old_name, t.ino, file_type_of_mode(t.mode))
        self.dirs.replace(nd, new_name, s.ino, file_type_of_mode(s.mode))
        if od.ino != nd.ino:
            if s.is_dir:
                self.dirs.set_parent(s, nd.ino)
                od.links -= 1
                nd.links += 1
            if t.is_dir:
                self.dirs.set_parent(t, od.ino)
                nd.links -= 1
                od.links += 1
        for inode in (s, t):
            self._touch(inode, m=False)
            self.inodes.put(inode)
        for d in {od.ino: od, nd.ino: nd}.values():
            self._touch(d)
            self.inodes.put(d)

    # directories -------------------------------------------------------------------------
    @operation
    def readdir(self, ino: int, cookie: int = 0, state=None) -> list[tuple[bytes, int, int]]:
        """[(name, ino, next_cookie)] after `cookie` (0: from the start), in the mount's
        directory order; next_cookie resumes after that entry, even if the directory changes.
        `state` (from `opendir_state`, one per open handle) keeps a sorted listing between
        calls; the name order needs it to resume."""
        d = self._inode(ino)
        if not d.is_dir:
            raise FSError(errno.ENOTDIR)
        # every name is listed, as ext2 lists it, whatever its inode (a lookup answers for
        # that); one whose number is past the inode count is left out (reported), not the end
        listable, last = self._listable, self.geo.inodes_count
        if self.dirorder.slot_order:
            return [(name, eino, pos + 1) for pos, name, eino, _ in self.dirs.entries(d, cookie)
                    if 1 < eino <= last or listable(d, eino)]
        entries = ((name, eino, ftype, pos) for pos, name, eino, ftype in self.dirs.listing(d)
                   if 1 < eino <= last or listable(d, eino))
        try:
            # every entry change sets the directory's ctime, which no tool can set back
            listing = self.dirorder.iterate(entries, after=cookie, hash_ctx=self.hasher, state=state,
                                            generation=(ino, d.ctime_ns, d.mtime_ns, d.size))
            return [(e[0], e[1], c) for e, c in listing]
        except BadCookie:
            raise FSError(errno.EINVAL) from None

    def opendir_state(self):
        """Per-handle readdir state for the directory-order policy."""
        return self.dirorder.new_state()

    def release_state(self, state) -> None:
        """The handle is closed (releasedir): nothing to do here; an op log records it."""

    @operation
    def statfs(self) -> StatFS:
        geo = self.geo
        overhead = geo.first_data_block + sum(geo.super_and_gdt_blocks(g) + 2 + geo.inode_table_blocks
                                              for g in range(geo.groups))
        free = self.space.free_blocks - self.space.reserved
        return StatFS(f_bsize=geo.block_size, f_frsize=geo.block_size, f_blocks=geo.blocks_count - overhead,
                      f_bfree=free, f_bavail=max(0, free - self.sb.r_blocks_count),
                      f_files=geo.inodes_count, f_ffree=self.space.free_inodes, f_favail=self.space.free_inodes)

