"""POSIX ACLs in-process (-o acl): stored in ext2's on-disk format, given back in the VFS's
xattr format, the mode kept in step (setfacl, chmod), a directory's default ACL inherited;
without `acl` they are refused as on ext2 mounted noacl. Oracles: the kernel's ext2 driver on a
read-only loop mount reads the same ACLs (its system.posix_acl_* values byte for byte), and
e2fsck -fn is clean."""

import errno
import os
import stat
import struct

import pytest

from simfs.errors import FSError
from simfs.fs.types import ACL_ACCESS, ACL_DEFAULT, XATTR_ACL_KILL_SGID
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk import acl
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, kernel_mount, needs_e2fsprogs

pytestmark = needs_e2fsprogs
ON = VolumeOptions(disk="ideal", acl=True)
U, G, M, O = acl.USER_OBJ, acl.GROUP_OBJ, acl.MASK, acl.OTHER
X = acl.UNDEFINED_ID


def xattr(*entries) -> bytes:
    return acl.to_xattr(entries)


@pytest.mark.serial
def test_an_acl_is_stored_in_ext2_format_and_read_back(tmp_path):
    img = tmp_path / "a.img"
    mkfs(img, 8 << 20, block_size=1024)
    named = xattr((U, 6, X), (acl.USER, 7, 1000), (G, 4, X), (acl.GROUP, 5, 50), (M, 7, X), (O, 0, X))
    default = xattr((U, 7, X), (acl.USER, 5, 1001), (G, 5, X), (M, 5, X), (O, 1, X))
    with Volume.open(img, ON) as vol:
        r = vol.root_ino
        f = vol.create(r, b"f", 0o600, 0, 0).st_ino
        vol.setxattr(f, ACL_ACCESS, named)
        assert stat.S_IMODE(vol.getattr(f).st_mode) == 0o670       # owner, mask, other
        assert vol.getxattr(f, ACL_ACCESS) == named
        raw = vol._xattrs(vol.inodes.get(f))[ACL_ACCESS]
        assert raw[:4] == struct.pack("<I", 1) and len(raw) == 4 + 4 * 4 + 2 * 8  # short/full entries
        d = vol.mkdir(r, b"d", 0o755, 0, 0).st_ino
        vol.setxattr(d, ACL_DEFAULT, default)
        sub = vol.mkdir(d, b"sub", 0o777, 0, 0)
        g = vol.create(d, b"g", 0o666, 0, 0)
        # posix_acl_create_masq: mode and ACL limit each other; a directory keeps the default
        assert stat.S_IMODE(g.st_mode) == 0o640 and stat.S_IMODE(sub.st_mode) == 0o751
        assert acl.from_xattr(vol.getxattr(g.st_ino, ACL_ACCESS)) == [
            (U, 6, X), (acl.USER, 5, 1001), (G, 5, X), (M, 4, X), (O, 0, X)]
        assert vol.getxattr(sub.st_ino, ACL_DEFAULT) == default
        with pytest.raises(FSError) as e:
            vol.getxattr(g.st_ino, ACL_DEFAULT)
        assert e.value.errno == errno.ENODATA
        vol.setattr(f, mode=0o640)                                   # chmod rewrites the ACL
        assert acl.from_xattr(vol.getxattr(f, ACL_ACCESS))[4] == (M, 4, X)
        vol.setattr(f, mode=0o2750)
        vol.setxattr(f, ACL_ACCESS, named, XATTR_ACL_KILL_SGID)     # a non-member's setfacl
        assert vol.getattr(f).st_mode & 0o7777 == 0o670
        e_ = vol.create(r, b"e", 0o600, 0, 0).st_ino                # an equivalent ACL: mode only
        vol.setxattr(e_, ACL_ACCESS, xattr((U, 7, X), (G, 5, X), (O, 4, X)))
        assert stat.S_IMODE(vol.getattr(e_).st_mode) == 0o754 and ACL_ACCESS not in vol.listxattr(e_)
        for value, err in ((b"junk", errno.EINVAL), (xattr((U, 7, X), (acl.USER, 7, 5), (G, 7, X), (O, 7, X)),
                                                     errno.EINVAL)):
            with pytest.raises(FSError) as e:
                vol.setxattr(e_, ACL_ACCESS, value)
            assert e.value.errno == err
        with pytest.raises(FSError) as e:
            vol.setxattr(e_, ACL_DEFAULT, default)                   # a default ACL on a file
        assert e.value.errno == errno.EACCES
        want = {n: vol.getxattr(i, a) for n, i, a in ((b"f", f, ACL_ACCESS), (b"d/g", g.st_ino, ACL_ACCESS),
                                                       (b"d", d, ACL_DEFAULT), (b"d/sub", sub.st_ino, ACL_DEFAULT))}
    assert_fsck_clean(img)
    with kernel_mount(img, tmp_path / "k") as k:
        for name, value in want.items():
            attr = "system.posix_acl_default" if name in (b"d", b"d/sub") else "system.posix_acl_access"
            assert os.getxattr(k / name.decode(), attr) == value, name


def test_without_acl_they_are_refused_and_not_listed(tmp_path):
    img = tmp_path / "a.img"
    mkfs(img, 8 << 20, block_size=1024)
    with Volume.open(img, ON) as vol:
        f = vol.create(vol.root_ino, b"f", 0o600, 0, 0).st_ino
        vol.setxattr(f, ACL_ACCESS, xattr((U, 6, X), (acl.USER, 7, 1000), (G, 4, X), (M, 7, X), (O, 0, X)))
    with Volume.open(img, VolumeOptions(disk="ideal")) as vol:
        f = vol.lookup(vol.root_ino, b"f").st_ino
        assert vol.listxattr(f) == []
        for call in (lambda: vol.getxattr(f, ACL_ACCESS), lambda: vol.removexattr(f, ACL_ACCESS),
                     lambda: vol.setxattr(f, ACL_ACCESS, xattr((U, 7, X), (G, 7, X), (O, 7, X)))):
            with pytest.raises(FSError) as e:
                call()
            assert e.value.errno == errno.EOPNOTSUPP
        vol.setattr(f, mode=0o600)          # noacl: chmod leaves the stored ACL alone
    with Volume.open(img, ON) as vol:
        f = vol.lookup(vol.root_ino, b"f").st_ino
        assert acl.from_xattr(vol.getxattr(f, ACL_ACCESS))[3] == (M, 7, X)
        vol.removexattr(f, ACL_ACCESS)
        assert vol.listxattr(f) == [] and stat.S_IMODE(vol.getattr(f).st_mode) == 0o600
    assert_fsck_clean(img)


def test_an_acl_refused_for_space_leaves_the_mode(tmp_path):
    """xfstests generic/449: setfacl refused with ENOSPC must not change the mode; the kernel's
    __ext4_set_acl sets i_mode only after the xattr is written."""
    img = tmp_path / "a.img"
    mkfs(img, 8 << 20, block_size=1024)
    big = xattr((U, 6, X), *((acl.USER, 5, 1000 + i) for i in range(200)), (G, 4, X), (M, 7, X), (O, 0, X))
    with Volume.open(img, ON) as vol:
        f = vol.create(vol.root_ino, b"f", 0o600, 0, 0).st_ino
        with pytest.raises(FSError) as e:
            vol.setxattr(f, ACL_ACCESS, big)
        assert e.value.errno == errno.ENOSPC
        assert stat.S_IMODE(vol.getattr(f).st_mode) == 0o600
    with Volume.open(img, ON) as vol:
        assert stat.S_IMODE(vol.getattr(vol.lookup(vol.root_ino, b"f").st_ino).st_mode) == 0o600
