"""The extended-attribute handlers of simfs.fuse.operations.Operations (a mixin), with the
virtual attributes simfs shows and POSIX ACLs.

Virtual extended attributes are computed when read, never stored and never listed by
listxattr (so cp -a, tar and rsync do not copy them); setting or removing them is refused
(EPERM):
  user.simfs.extents     where the file's blocks are (JSON, simfs-extents-1; read by
                         `simfs frag`): block size, size, i_blocks, geometry, and pages of
                         runs [lblk, phys, n], indirect blocks [level, phys] and unplaced
                         delayed blocks [lblk, n]; `user.simfs.extents.K` is page K
                         (an xattr value is at most 64 KiB), "pages" says how many.

POSIX ACLs (system.posix_acl_access / _default) go to the volume, which refuses them unless
mounted `-o acl` (then the kernel enforces them: FUSE_POSIX_ACL, Operations.enable_acl). The
kernel leaves to the server the set-group-ID bit an access ACL set by someone outside the
file's group takes away (posix_acl_update_mode; pyfuse3's setxattr carries no
FUSE_SETXATTR_ACL_KILL_SGID), so it is judged here from the request's credentials.
"""

from __future__ import annotations

import errno
import json

import pyfuse3

from simfs.errors import FSError
from simfs.fs.inspection import PAGED_LISTS
from simfs.fs.types import ACL_ACCESS, ACL_DEFAULT, XATTR_ACL_KILL_SGID
from simfs.fuse import control
from simfs.fuse.handler import caller_in_group, handler, vino

VIRTUAL_XATTR_PREFIX = b"user.simfs."
EXTENTS_XATTR = b"user.simfs.extents"
EXTENTS_PER_PAGE = 512


def extents_page(ext: dict, page: int) -> bytes:
    """Page `page` of a Volume.extents() result as the user.simfs.extents value."""
    n = EXTENTS_PER_PAGE
    lists = {k: ext[k] for k in PAGED_LISTS}
    pages = max(1, *(-(-len(v) // n) for v in lists.values()))
    if not 0 <= page < pages:
        raise FSError(pyfuse3.ENOATTR)
    doc = {"format": "simfs-extents-1"}
    doc.update((k, v) for k, v in ext.items() if k not in lists)
    doc.update(page=page, pages=pages)
    doc.update((k, [list(x) for x in v[page * n:(page + 1) * n]]) for k, v in lists.items())
    return json.dumps(doc, separators=(",", ":")).encode()


class XattrHandlers:
    """getxattr, setxattr, listxattr, removexattr (uses the Operations' `vol`)."""

    def _no_acl(self, name: bytes) -> None:
        """Without `-o acl` an ACL name is EOPNOTSUPP at once, as ext2 mounted noacl answers
        it: nothing asked of the volume, so nothing charged or recorded (the kernel sends these
        requests to a server without FUSE_POSIX_ACL; the in-process tools model none)."""
        if not self.enable_acl and name in (ACL_ACCESS, ACL_DEFAULT):
            raise FSError(errno.EOPNOTSUPP)

    def _virtual_xattr(self, vino: int, name: bytes) -> bytes:
        """user.simfs.*: an observation of the volume, charged nothing."""
        if name == EXTENTS_XATTR or name.startswith(EXTENTS_XATTR + b"."):
            extents = getattr(self.vol, "extents", None)
            suffix = name[len(EXTENTS_XATTR) + 1:]
            if extents is None or (suffix and not suffix.isdigit()):
                raise FSError(pyfuse3.ENOATTR)
            return extents_page(extents(vino), int(suffix or 0))
        raise FSError(pyfuse3.ENOATTR)

    @handler
    def setxattr(self, ino, name, value, ctx=None):
        if control.is_control(ino):
            raise FSError(errno.ENOTSUP)
        if name.startswith(VIRTUAL_XATTR_PREFIX):
            raise FSError(errno.EPERM)
        self._no_acl(name)
        flags = 0
        if name == ACL_ACCESS and ctx is not None and \
                not caller_in_group(ctx, self.vol.getattr(vino(ino)).st_gid):
            flags |= XATTR_ACL_KILL_SGID
        self.vol.setxattr(vino(ino), name, value, flags)

    @handler
    def getxattr(self, ino, name, ctx=None):
        if control.is_control(ino):
            raise FSError(pyfuse3.ENOATTR)
        if name.startswith(VIRTUAL_XATTR_PREFIX):
            return self._virtual_xattr(vino(ino), name)
        self._no_acl(name)
        return self.vol.getxattr(vino(ino), name)

    @handler
    def listxattr(self, ino, ctx=None):
        if control.is_control(ino):
            return []
        return self.vol.listxattr(vino(ino))

    @handler
    def removexattr(self, ino, name, ctx=None):
        if control.is_control(ino):
            raise FSError(pyfuse3.ENOATTR)
        if name.startswith(VIRTUAL_XATTR_PREFIX):
            raise FSError(errno.EPERM)
        self._no_acl(name)
        self.vol.removexattr(vino(ino), name)
