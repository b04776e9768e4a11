"""policies.freebsd_ext2fs.Ext2fsLinuxIalloc: FreeBSD 5.x's GPL ext2_new_inode (seed 000's ~5.2).

Driven on a stand-in SpaceView with given per-group free inode and block counts, against the
rules of sys/gnu/ext2fs/ext2_linux_ialloc.c v1.18: a directory to the group with the most free
blocks among those with at least the average free inodes (first on ties), whatever its parent;
a file to its parent's group, else groups parent+1, +2, +4, ... (cumulative), else linearly.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.base import NoSpace
from policies.freebsd_ext2fs import Ext2fsLinuxIalloc

IPG = 16


class Space:
    def __init__(self, ifree, bfree):
        self.ifree, self.bfree = list(ifree), list(bfree)
        self.geometry = SimpleNamespace(groups=len(ifree), inodes_per_group=IPG,
                                        group_of_inode=lambda ino: (ino - 1) // IPG)

    def group_free_inodes(self, g):
        return self.ifree[g]

    def group_free_blocks(self, g):
        return self.bfree[g]

    def first_free_inode(self, g):
        return g * IPG + (IPG - self.ifree[g]) + 1 if self.ifree[g] else -1


groups = st.integers(1, 12).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, IPG), min_size=n, max_size=n),
    st.lists(st.integers(0, 1000), min_size=n, max_size=n)))


@given(groups, st.data())
def test_a_directory_goes_to_the_emptiest_group_with_average_free_inodes(counts, data):
    ifree, bfree = counts
    sp = Space(ifree, bfree)
    parent = data.draw(st.integers(1, len(ifree) * IPG))
    avg = sum(ifree) // len(ifree)
    ok = [g for g in range(len(ifree)) if ifree[g] and ifree[g] >= avg]
    if not ok:
        with pytest.raises(NoSpace):
            Ext2fsLinuxIalloc().choose(sp, parent, True)
        return
    want = min(ok, key=lambda g: (-bfree[g], g))
    ino = Ext2fsLinuxIalloc().choose(sp, parent, True)
    assert (ino - 1) // IPG == want
    assert ino == sp.first_free_inode(want)


def _hash_order(i, n):
    out, j = [], 1
    while j < n:
        i = (i + j) % n
        out.append(i)
        j <<= 1
    return out


@given(groups, st.data())
def test_a_file_goes_to_its_parents_group_else_the_quadratic_hash_else_linear(counts, data):
    ifree, bfree = counts
    n = len(ifree)
    sp = Space(ifree, bfree)
    pg = data.draw(st.integers(0, n - 1))
    parent = pg * IPG + 1
    order = [pg] + _hash_order(pg, n) + [(pg + k) % n for k in range(1, n + 1)]
    want = next((g for g in order if ifree[g]), None)
    if want is None:
        with pytest.raises(NoSpace):
            Ext2fsLinuxIalloc().choose(sp, parent, False)
        return
    assert (Ext2fsLinuxIalloc().choose(sp, parent, False) - 1) // IPG == want


def test_quadratic_hash_steps_are_cumulative():
    # parent group 0 of 8, full; groups 1 (0+1) full, 3 (1+2) free: the hash takes 3, not 2
    sp = Space([0, 0, 5, 5, 5, 5, 5, 5], [9] * 8)
    assert (Ext2fsLinuxIalloc().choose(sp, 1, False) - 1) // IPG == 3
