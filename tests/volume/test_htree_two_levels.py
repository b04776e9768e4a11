"""A two-level htree in-process (simfs.fs.htree), checked by e2fsprogs, without a mount.

Names of 240 bytes fill a 1 KiB leaf with four: past the root's 124 leaves the root moves into
an index node (ext4_dx_add_entry's first branch), past a node's 127 leaves the node splits
(the second); lookups walk both levels, a miss at a leaf boundary continues into the next
leaf (ext4_htree_next_block), removals and re-insertions keep every count and hash in order.
e2fsck -fn checks every index block (hash order, counts, limits), debugfs reads every name
back and says the tree has one indirect level.
"""

from __future__ import annotations

import random

from tests.helpers import assert_fsck_clean, needs_e2fsprogs
from tests.volume.test_htree import debugfs_names, levels, make_dir, opts

from simfs.errors import FSError
from simfs.fs.volume import Volume

pytestmark = needs_e2fsprogs


def _listed(img) -> set[bytes]:
    return debugfs_names(img, "/d") - {b"", b".", b".."}


def _name(i: int) -> bytes:
    return (b"%05d-" % i) + b"x" * 234


def test_root_to_node_then_node_split_then_removals(tmp_path):
    img = tmp_path / "img"
    names = [_name(i) for i in range(1200)]
    random.Random(54).shuffle(names)
    inos = make_dir(img, names, size="16M", inodes=4096)
    assert_fsck_clean(img)
    assert levels(img, "/d") == 1
    assert _listed(img) == set(names)
    gone = set(names[::3])
    with Volume.open(img, opts()) as vol:
        d = vol.lookup(vol.root_ino, b"d").st_ino
        for n in names:                                   # every name found, at both levels
            assert vol.lookup(d, n).st_ino == inos[n]
        for n in gone:
            vol.unlink(d, n)
        for n in sorted(gone)[:50]:
            try:
                vol.lookup(d, n)
            except FSError:
                continue
            raise AssertionError(f"{n[:8]!r} still found after its unlink")
        extra = [b"%05d-" % i + b"y" * 234 for i in range(2000, 2300)]
        for n in extra:                                   # refill the emptied leaves, split more
            vol.create(d, n, 0o644, 0, 0)
        for n in extra[::7] + sorted(set(names) - gone)[::7]:
            vol.lookup(d, n)
    assert_fsck_clean(img)
    assert levels(img, "/d") == 1
    assert _listed(img) == (set(names) - gone) | set(extra)
