"""simfs.ondisk.acl: the xattr and ext2 on-disk formats of a POSIX ACL round-trip for any valid
ACL; sizes are ext4_acl_size's (short entries for the four base tags); posix_acl_valid's
refusals. (The kernel's ext2 reading simfs's bytes is tests/volume/test_acl.py.)"""

import pytest
from hypothesis import given, strategies as st

from simfs.ondisk import acl

X = acl.UNDEFINED_ID
ids = st.lists(st.integers(0, 2**32 - 2), max_size=5, unique=True).map(sorted)
perm = st.integers(0, 7)


@st.composite
def acls(draw):
    users, groups = draw(ids), draw(ids)
    out = [(acl.USER_OBJ, draw(perm), X)] + [(acl.USER, draw(perm), u) for u in users]
    out += [(acl.GROUP_OBJ, draw(perm), X)] + [(acl.GROUP, draw(perm), g) for g in groups]
    if users or groups or draw(st.booleans()):
        out.append((acl.MASK, draw(perm), X))
    return out + [(acl.OTHER, draw(perm), X)]


@given(acls())
def test_both_formats_round_trip(a):
    assert acl.valid(a)
    assert acl.from_xattr(acl.to_xattr(a)) == a
    disk = acl.to_disk(a)
    named = sum(t in (acl.USER, acl.GROUP) for t, _, _ in a)
    assert len(disk) == 4 + 8 * named + 4 * (len(a) - named)
    assert acl.from_disk(disk) == a


@given(acls(), st.integers(0, 0o7777))
def test_chmod_then_equiv_mode_gives_the_mode_back(a, mode):
    bits, _ = acl.equiv_mode(acl.chmod(a, mode))
    assert bits == mode & 0o777


@pytest.mark.parametrize("bad", [
    [(acl.USER_OBJ, 7, X), (acl.GROUP_OBJ, 7, X)],                                     # no OTHER
    [(acl.USER_OBJ, 7, X), (acl.USER, 7, 5), (acl.GROUP_OBJ, 7, X), (acl.OTHER, 7, X)],  # no MASK
    [(acl.GROUP_OBJ, 7, X), (acl.USER_OBJ, 7, X), (acl.OTHER, 7, X)],                  # order
    [(acl.USER_OBJ, 8, X), (acl.GROUP_OBJ, 7, X), (acl.OTHER, 7, X)],                  # perm
    [(acl.USER_OBJ, 7, X), (acl.USER, 7, 5), (acl.USER, 7, 5), (acl.GROUP_OBJ, 7, X),
     (acl.MASK, 7, X), (acl.OTHER, 7, X)],                                              # id twice
])
def test_invalid_acls(bad):
    assert not acl.valid(bad)


def test_bad_bytes_are_refused():
    for raw in (b"", b"\x02\0\0\0\x01\0", b"\x01\0\0\0"):
        with pytest.raises(ValueError):
            acl.from_xattr(raw)
    for raw in (b"", b"\x02\0\0\0", b"\x01\0\0\0\x02\0\x07\0", b"\x01\0\0\0\x40\0\x07\0"):
        with pytest.raises(ValueError):
            acl.from_disk(raw)
