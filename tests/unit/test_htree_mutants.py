"""do_split's second rule, which a growing directory of ordinary names never reaches: when the
live entries of the full leaf fit in half the block even with the lowest-hash one moved (the
move loop runs out, i < 0), the leaf is split in half by count (`split = count/2`, Linux's
do_split: "each resulting block will have at least half the space free").

That takes a leaf whose records are mostly slack and dead space that a long name still cannot
use: its first record deleted (inode 0, 260 bytes: ext4 cannot merge a block's first record
into a previous one), the lowest-hash name's record 508 bytes long (260 of them free), and three
short names; a 255-byte name (264 bytes) fits nowhere, so creating it splits the leaf. The
leaf is laid out so by rewriting it in the image with the same names and inodes (e2fsck -fn
clean before and after), then the name is created in-process."""

from __future__ import annotations

import errno
import itertools
import shutil
import struct

import pytest

from tests.helpers import assert_fsck_clean, fill_volume, free_blocks, needs_e2fsprogs
from tests.volume.test_htree import make_dir, opts

from simfs.errors import FSError
from simfs.fs.volume import Volume
from simfs.ondisk import dirent
from simfs.ondisk import htree as fmt

pytestmark = needs_e2fsprogs
BS = 1024
FT_REG = 1


def _live(buf) -> list[tuple[bytes, int, int]]:
    return [(bytes(name), ino, rec_len) for _, ino, rec_len, name, _ in dirent.iter_block(buf, True)
            if ino and name]


def _pick(hash_of, lo: int, hi: int, make, n: int) -> list[bytes]:
    """n names make(k) whose hash lies in [lo, hi), the first n found."""
    found = (make(k) for k in itertools.count())
    return list(itertools.islice((x for x in found if lo <= hash_of(x) < hi), n))


def test_a_leaf_whose_live_entries_fit_in_half_a_block_is_split_in_half_by_count(tmp_path):
    img = tmp_path / "img"
    make_dir(img, [(b"%02d-" % i) + b"x" * 236 for i in range(5)], size="8M", inodes=256)
    with Volume.open(img, opts()) as vol:
        ht = vol.dirs.htree
        dino = vol.lookup(vol.root_ino, b"d").st_ino
        d = vol.inodes.get(dino)
        _, root = ht.read(d, 0, index=True)
        version, info_length, levels, _ = fmt.root_info(root)
        off = fmt.INFO_OFF + info_length
        assert levels == 0 and fmt.countlimit(root, off)[0] >= 2
        leaf_lidx, hi = fmt.entry_block(root, off, 0), fmt.entry_hash(root, off, 1) & ~1

        def h(name: bytes) -> int:
            return ht.name_hash(version, name)

        for name, _, _ in _live(ht.read(d, leaf_lidx)[1]):                 # leaf 0 emptied
            vol.unlink(dino, name)
        a = _pick(h, 0, hi // 2, lambda k: (b"a%04d-" % k) + b"y" * 234, 1)[0]    # 240 bytes: 248
        short = _pick(h, h(a) + 1, hi, lambda k: b"s%d" % k, 3)                    # 12 each
        new = _pick(h, 0, hi, lambda k: (b"n%04d-" % k) + b"z" * 249, 1)[0]       # 255 bytes: 264
        for name in (a, *short):
            vol.create(dino, name, 0o644, 0, 0)
        d = vol.inodes.get(dino)
        phys, buf = ht.read(d, leaf_lidx)
        inos = {name: ino for name, ino, _ in _live(buf)}
        assert set(inos) == {a, *short}
    # [dead 260][a 508][s 12][s 12][s 232]: 4 live entries, 764 bytes, every gap under 264
    leaf = bytearray(BS)
    dirent.put(leaf, 0, 0, 260, b"", 0)
    at = 260
    for name, rec_len in ((a, 508), (short[0], 12), (short[1], 12), (short[2], 232)):
        dirent.put(leaf, at, inos[name], rec_len, name, FT_REG)
        at += rec_len
    assert at == BS
    with open(img, "r+b") as f:
        f.seek(phys * BS)
        f.write(leaf)
    assert_fsck_clean(img)
    with Volume.open(img, opts()) as vol:
        ht = vol.dirs.htree
        vol.create(dino, new, 0o644, 0, 0)
        d = vol.inodes.get(dino)
        _, root = ht.read(d, 0, index=True)
        kept = {name for name, _, _ in _live(ht.read(d, leaf_lidx)[1])} - {new}
        # hash order a, then the short names: count/2 = 2 stay (a and the lowest short one);
        # with the move loop's last step skipped (i > 0) only a would stay
        lowest_short = min(short, key=h)
        assert kept == {a, lowest_short}
        for name in (a, *short, new):
            vol.lookup(dino, name)
    assert_fsck_clean(img)


def _longer_info(img, phys: int) -> None:
    """The dx_root at block phys rewritten with info_length 12: its entries 4 bytes further on,
    ending 4 bytes before the block does, those 4 bytes 0xee (not the index's)."""
    with open(img, "r+b") as f:
        f.seek(phys * BS)
        root = bytearray(f.read(BS))
        off, new = fmt.INFO_OFF + 8, fmt.INFO_OFF + 12
        count = fmt.countlimit(root, off)[0]
        entries = bytes(root[off:off + 8 * count])
        root[fmt.INFO_OFF + 5] = 12
        root[off:] = bytes(BS - off)
        root[new:new + len(entries)] = entries
        struct.pack_into("<HH", root, new, fmt.root_limit(BS, 12), count)
        root[new + 8 * fmt.root_limit(BS, 12):] = b"\xee" * 4
        assert fmt.root_problem(root) == ""
        f.seek(phys * BS)
        f.write(root)


def test_a_root_moved_into_a_node_before_an_enospc_leaves_the_node_only_its_entries(tmp_path):
    # ext4_dx_add_entry grows the tree (the full root's entries copied into a new index node,
    # icount of them, into a zeroed block) before do_split appends the new leaf; when that
    # append finds no block, the grown tree stays. Its node then holds the root's entries and
    # zeros after them: not the bytes that followed the root's entries (a root with
    # info_length 12 has 4), which a leaf split would otherwise overwrite at once.
    names = [(b"%05d-" % i) + b"x" * 234 for i in range(700)]
    seed = tmp_path / "seed"
    make_dir(seed, names[:40], size="16M", inodes=2048)
    with Volume.open(seed, opts()) as vol:
        ht = vol.dirs.htree
        d = vol.inodes.get(vol.lookup(vol.root_ino, b"d").st_ino)
        phys = ht.filemap.bmap(d, 0)
    _longer_info(seed, phys)
    probe = tmp_path / "probe"
    shutil.copyfile(seed, probe)
    with Volume.open(probe, opts()) as vol:                 # which name makes the root move
        ht = vol.dirs.htree
        dino = vol.lookup(vol.root_ino, b"d").st_ino
        for k, n in enumerate(names[40:], start=40):
            vol.create(dino, n, 0o644, 0, 0)
            if fmt.root_info(ht.read(vol.inodes.get(dino), 0, index=True)[1])[2] == 1:
                break
    img = tmp_path / "img"
    shutil.copyfile(seed, img)
    with Volume.open(img, opts()) as vol:
        ht = vol.dirs.htree
        dino = vol.lookup(vol.root_ino, b"d").st_ino
        for n in names[40:k]:
            vol.create(dino, n, 0o644, 0, 0)
        free_blocks(vol, fill_volume(vol), 1)              # room for the node, not the leaf
        with pytest.raises(FSError) as e:
            vol.create(dino, names[k], 0o644, 0, 0)
        assert e.value.errno == errno.ENOSPC
        d = vol.inodes.get(dino)
        _, root = ht.read(d, 0, index=True)
        assert fmt.root_info(root)[2] == 1
        _, node = ht.read(d, fmt.entry_block(root, fmt.INFO_OFF + 12, 0), index=True)
        count, limit = fmt.countlimit(node, fmt.NODE_ENTRIES)
        assert count == fmt.root_limit(BS, 12)
        assert bytes(node[fmt.NODE_ENTRIES + 8 * count:]) == bytes(8 * (limit - count))
        for n in names[:k:25]:
            vol.lookup(dino, n)
    assert_fsck_clean(img)
