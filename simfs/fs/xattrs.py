"""Extended attributes in one ext_attr block per inode (shared blocks are copied on write),
and POSIX ACLs, which are two of them (with the `acl` option, as ext2 mounted `acl`): taken
and given in the VFS's xattr format, stored in ext2's (simfs.ondisk.acl), the access ACL kept
in step with the mode (ext4_set_acl, posix_acl_chmod), a directory's default ACL inherited by
what is made in it (posix_acl_create). Without `acl` they are refused (EOPNOTSUPP), as ext2
mounted noacl refuses them, and not listed."""

import errno
import stat

from simfs.errors import FSError
from simfs.fs.operation import operation
from simfs.fs.types import ACL_ACCESS, ACL_DEFAULT, ENOATTR, XATTR_ACL_KILL_SGID, XATTR_CREATE, XATTR_REPLACE
from simfs.ondisk import acl as acl_fmt
from simfs.ondisk import xattr as xattr_fmt

ACL_NAMES = (ACL_ACCESS, ACL_DEFAULT)


class Xattrs:
    """Extended-attribute operations of `simfs.fs.volume.Volume` (a mixin)."""

    def _xattrs(self, inode) -> dict[bytes, bytes]:
        if not inode.file_acl:
            return {}
        if self.checks.bad_block(inode.file_acl):
            raise self.checks.block_error(inode.ino, inode.file_acl, "xattr_get")
        try:
            return xattr_fmt.decode(self.cache.bread(inode.file_acl, "xattr", inode.ino))
        except ValueError as e:
            self.fs_error(f"inode {inode.ino}: bad extended-attribute block: {e}")
            raise FSError(errno.EIO, f"inode {inode.ino}: {e}") from None

    def _acl_mounted(self) -> None:
        if not self.options.acl:
            raise FSError(errno.EOPNOTSUPP)

    @staticmethod
    def _acl_entries(raw: bytes) -> list:
        try:
            return acl_fmt.from_disk(raw)
        except ValueError:                  # ext4_acl_from_disk: EINVAL
            raise FSError(errno.EINVAL) from None

    @operation
    def getxattr(self, ino: int, name: bytes) -> bytes:
        inode = self._inode(ino)
        if name in ACL_NAMES:
            self._acl_mounted()
        attrs = self._xattrs(inode)
        if name not in attrs:
            raise FSError(ENOATTR)
        if name in ACL_NAMES:
            return acl_fmt.to_xattr(self._acl_entries(attrs[name]))
        return attrs[name]

    @operation
    def listxattr(self, ino: int) -> list[bytes]:
        names = list(self._xattrs(self._inode(ino)))
        return names if self.options.acl else [n for n in names if n not in ACL_NAMES]

    @operation
    def setxattr(self, ino: int, name: bytes, value: bytes, flags: int = 0) -> None:
        self._writable()
        inode = self._inode(ino)
        if name in ACL_NAMES:
            return self._set_acl(inode, name, value, flags)
        if xattr_fmt.split_name(name) is None:
            raise FSError(errno.EOPNOTSUPP)
        if len(name) > 255:
            raise FSError(errno.ERANGE)
        attrs = self._xattrs(inode)
        if flags & XATTR_CREATE and name in attrs:
            raise FSError(errno.EEXIST)
        if flags & XATTR_REPLACE and name not in attrs:
            raise FSError(ENOATTR)
        attrs[name] = bytes(value)
        self._store_xattrs(inode, attrs)

    def _set_acl(self, inode, name: bytes, value: bytes, flags: int) -> None:
        """ext4_set_acl: an access ACL the mode says all of is not stored, the mode takes the
        ACL's bits (and loses set-group-ID for a caller the FUSE layer found outside the
        group); an empty ACL removes it; a default ACL only on a directory."""
        self._acl_mounted()
        try:
            entries = acl_fmt.from_xattr(bytes(value))
        except ValueError:
            raise FSError(errno.EINVAL) from None
        if entries and not acl_fmt.valid(entries):
            raise FSError(errno.EINVAL)
        if name == ACL_DEFAULT and not inode.is_dir:
            if entries:
                raise FSError(errno.EACCES)
            return
        mode = None
        if name == ACL_ACCESS and entries:
            bits, equivalent = acl_fmt.equiv_mode(entries)
            mode = (inode.mode & ~0o777) | bits
            if flags & XATTR_ACL_KILL_SGID:
                mode &= ~stat.S_ISGID
            if equivalent:
                entries = []
        attrs = self._xattrs(inode)
        if entries:
            attrs[name] = acl_fmt.to_disk(entries)
        else:
            attrs.pop(name, None)
        self._store_xattrs(inode, attrs, mode)   # the mode only once the ACL is stored (ENOSPC)

    def _chmod_acl(self, inode) -> None:
        """posix_acl_chmod: a new mode rewrites the access ACL's owner, group-class and other
        entries."""
        if not self.options.acl or not inode.file_acl:
            return
        attrs = self._xattrs(inode)
        if ACL_ACCESS in attrs:
            attrs[ACL_ACCESS] = acl_fmt.to_disk(acl_fmt.chmod(self._acl_entries(attrs[ACL_ACCESS]), inode.mode))
            self._store_xattrs(inode, attrs)

    def _inherit_acl(self, d, inode) -> None:
        """posix_acl_create: a new inode (not a symbolic link) in a directory with a default
        ACL gets its access ACL from it, limited by the mode asked for, which it limits in
        turn; a new directory gets the default ACL too."""
        if not self.options.acl or not d.file_acl or stat.S_ISLNK(inode.mode):
            return
        raw = self._xattrs(d).get(ACL_DEFAULT)
        if raw is None:
            return
        access, inode.mode = acl_fmt.create_masq(self._acl_entries(raw), inode.mode)
        attrs = {ACL_DEFAULT: raw} if inode.is_dir else {}
        if not acl_fmt.equiv_mode(access)[1]:
            attrs[ACL_ACCESS] = acl_fmt.to_disk(access)
        if attrs:
            self._store_xattrs(inode, attrs)

    @operation
    def removexattr(self, ino: int, name: bytes) -> None:
        self._writable()
        inode = self._inode(ino)
        if name in ACL_NAMES:
            self._acl_mounted()
        attrs = self._xattrs(inode)
        if name not in attrs:
            raise FSError(ENOATTR)
        del attrs[name]
        self._store_xattrs(inode, attrs)

    def _store_xattrs(self, inode, attrs: dict[bytes, bytes], mode: int | None = None) -> None:
        """Write the inode's attributes; then, as __ext4_set_acl does after the xattr is
        written, take `mode` (an access ACL's): a refused write (ENOSPC) leaves the mode."""
        if xattr_fmt.space_needed(attrs) > self.block_size:
            raise FSError(errno.ENOSPC)
        if inode.file_acl:
            refcount = int.from_bytes(self.cache.bread(inode.file_acl, "xattr", inode.ino)[4:8], "little")
            if refcount > 1 or not attrs:        # shared (copy on write) or no longer needed
                self._release_xattr_block(inode)
        if attrs:
            if not inode.file_acl:
                inode.file_acl = self.filemap.allocate_extra(inode, "xattr")
            self.cache.write(inode.file_acl, xattr_fmt.encode(attrs, self.block_size), "xattr", inode.ino)
        if mode is not None:
            inode.mode = mode
        inode.ctime_ns = self._now()
        self.inodes.put(inode)

    def _release_xattr_block(self, inode) -> None:
        blk = inode.file_acl
        if self.checks.bad_block(blk):           # not followed, not freed (reported)
            self.checks.report(f"inode {inode.ino}: xattr block number {blk} out of range",
                               inode.ino, blk, "xattr_release")
            inode.file_acl = 0
            return
        buf = self.cache.bread(blk, "xattr", inode.ino)
        refcount = int.from_bytes(buf[4:8], "little")
        if refcount > 1:
            buf[4:8] = (refcount - 1).to_bytes(4, "little")
            self.cache.mark_dirty(blk, buf, "xattr")
            inode.blocks -= self.block_size // 512
        else:
            self.filemap.free_extra(inode, blk)
        inode.file_acl = 0

