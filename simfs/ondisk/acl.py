"""POSIX ACLs: the two byte formats and the rules that tie an ACL to a file's mode.

The VFS hands ACLs over (getxattr/setxattr of system.posix_acl_access / _default) in the
xattr format of <linux/posix_acl_xattr.h>: a header of version 2, then (tag, perm, id)
entries of 8 bytes. ext2/ext4 store them on disk in their own format (fs/ext4/acl.h,
ext4_acl_to_disk / ext4_acl_from_disk): a header of version 1, then 4-byte short entries
(tag, perm) for USER_OBJ, GROUP_OBJ, MASK and OTHER and 8-byte entries with the id for USER
and GROUP. The rules are fs/posix_acl.c's: posix_acl_valid, posix_acl_equiv_mode,
__posix_acl_chmod, posix_acl_create_masq. An ACL here is a list of (tag, perm, id) tuples in
the order stored (sorted by tag, then id, as posix_acl_valid requires).
"""

from __future__ import annotations

import struct

USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
UNDEFINED_ID = 0xFFFFFFFF
XATTR_VERSION = 2
DISK_VERSION = 1
_ENTRY = struct.Struct("<HHI")      # xattr format entry, and ext4's full disk entry
_SHORT = struct.Struct("<HH")       # ext4's short disk entry
_VERSION = struct.Struct("<I")
_HAS_ID = (USER, GROUP)
_TAGS = (USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER)


def from_xattr(value: bytes) -> list[tuple[int, int, int]]:
    """The xattr format (posix_acl_from_xattr); ValueError if it is not one."""
    if len(value) < 4 or (len(value) - 4) % _ENTRY.size:
        raise ValueError("not a POSIX ACL (size)")
    if _VERSION.unpack_from(value)[0] != XATTR_VERSION:
        raise ValueError("not a POSIX ACL (version)")
    out = []
    for tag, perm, eid in _ENTRY.iter_unpack(value[4:]):
        out.append((tag, perm, eid if tag in _HAS_ID else UNDEFINED_ID))
    return out


def to_xattr(acl) -> bytes:
    return _VERSION.pack(XATTR_VERSION) + b"".join(_ENTRY.pack(t, p, i) for t, p, i in acl)


def to_disk(acl) -> bytes:
    """ext4_acl_to_disk."""
    out = [_VERSION.pack(DISK_VERSION)]
    for tag, perm, eid in acl:
        out.append(_ENTRY.pack(tag, perm, eid) if tag in _HAS_ID else _SHORT.pack(tag, perm))
    return b"".join(out)


def from_disk(value: bytes) -> list[tuple[int, int, int]]:
    """ext4_acl_from_disk; ValueError for what it refuses (EINVAL there)."""
    if len(value) < 4 or _VERSION.unpack_from(value)[0] != DISK_VERSION:
        raise ValueError("not an ext2 ACL (version)")
    out, off = [], 4
    while off < len(value):
        if off + _SHORT.size > len(value):
            raise ValueError("ext2 ACL entry cut short")
        tag, perm = _SHORT.unpack_from(value, off)
        if tag in _HAS_ID:
            if off + _ENTRY.size > len(value):
                raise ValueError("ext2 ACL entry cut short")
            out.append(_ENTRY.unpack_from(value, off))
            off += _ENTRY.size
        elif tag in _TAGS:
            out.append((tag, perm, UNDEFINED_ID))
            off += _SHORT.size
        else:
            raise ValueError(f"ext2 ACL entry with tag {tag:#x}")
    return out


def valid(acl) -> bool:
    """posix_acl_valid: each base entry once, in tag order, USER/GROUP ids ascending and
    unique, perms within rwx, and a MASK wherever there are named entries."""
    state, seen, named, last = 0, set(), 0, {USER: -1, GROUP: -1}
    for tag, perm, eid in acl:
        if perm & ~7 or tag not in _TAGS or tag < state:
            return False
        state = tag
        if tag in _HAS_ID:
            if eid <= last[tag] or eid == UNDEFINED_ID:
                return False
            last[tag] = eid
            named += 1
        elif tag in seen:
            return False
        seen.add(tag)
    if not {USER_OBJ, GROUP_OBJ, OTHER} <= seen:
        return False
    return MASK in seen or not named


def _perm(acl, tag):
    return next((p for t, p, _ in acl if t == tag), None)


def equiv_mode(acl) -> tuple[int, bool]:
    """posix_acl_equiv_mode: the permission bits the ACL gives (group: the MASK's when there
    is one) and whether the mode says all of it (only the three base entries)."""
    mask = _perm(acl, MASK)
    group = mask if mask is not None else _perm(acl, GROUP_OBJ)
    bits = (_perm(acl, USER_OBJ) << 6) | (group << 3) | _perm(acl, OTHER)
    return bits, all(t in (USER_OBJ, GROUP_OBJ, OTHER) for t, _, _ in acl)


def chmod(acl, mode: int) -> list[tuple[int, int, int]]:
    """__posix_acl_chmod: the owner, group-class (MASK, else GROUP_OBJ) and other entries
    take the new mode's bits."""
    has_mask = any(t == MASK for t, _, _ in acl)
    out = []
    for tag, perm, eid in acl:
        if tag == USER_OBJ:
            perm = (mode >> 6) & 7
        elif tag == MASK or (tag == GROUP_OBJ and not has_mask):
            perm = (mode >> 3) & 7
        elif tag == OTHER:
            perm = mode & 7
        out.append((tag, perm, eid))
    return out


def create_masq(acl, mode: int) -> tuple[list[tuple[int, int, int]], int]:
    """posix_acl_create_masq: a new file's access ACL from its directory's default ACL and
    the mode asked for; returns (acl, mode), each limited by the other."""
    has_mask = any(t == MASK for t, _, _ in acl)
    perms = {USER_OBJ: (mode >> 6) & 7, OTHER: mode & 7}
    group_class = (mode >> 3) & 7
    out, new = [], {}
    for tag, perm, eid in acl:
        if tag in perms:
            perm &= perms[tag]
            new[tag] = perm
        elif tag == MASK or (tag == GROUP_OBJ and not has_mask):
            perm &= group_class
            new["group"] = perm
        out.append((tag, perm, eid))
    bits = (new.get(USER_OBJ, 0) << 6) | (new.get("group", 0) << 3) | new.get(OTHER, 0)
    return out, (mode & ~0o777) | bits
