"""Extended attributes in one ext_attr block per inode (shared blocks are copied on write)."""

import errno

from simfs.errors import FSError
from simfs.fs.operation import operation
from simfs.fs.types import ENOATTR, XATTR_CREATE, XATTR_REPLACE
from simfs.ondisk import xattr as xattr_fmt


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

    @operation
    def getxattr(self, ino: int, name: bytes) -> bytes:
        attrs = self._xattrs(self._inode(ino))
        if name not in attrs:
            raise FSError(ENOATTR)
        return attrs[name]

    @operation
    def listxattr(self, ino: int) -> list[bytes]:
        return list(self._xattrs(self._inode(ino)))

    @operation
    def setxattr(self, ino: int, name: bytes, value: bytes, flags: int = 0) -> None:
        self._writable()
        inode = self._inode(ino)
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

    @operation
    def removexattr(self, ino: int, name: bytes) -> None:
        self._writable()
        inode = self._inode(ino)
        attrs = self._xattrs(inode)
        if name not in attrs:
            raise FSError(ENOATTR)
        del attrs[name]
        self._store_xattrs(inode, attrs)

    def _store_xattrs(self, inode, attrs: dict[bytes, bytes]) -> None:
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

