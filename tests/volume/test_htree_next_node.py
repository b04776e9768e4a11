"""A lookup whose hash continues from the last leaf of one index node into the first leaf of
the next (ext4_htree_next_block climbing to the root and down again), in-process.

A two-level htree (test_htree_two_levels.py's names: 240 bytes, four to a 1 KiB leaf) is made,
then the root's entry for the second index node is given the smallest hash of that node's
first leaf with the continuation bit set: the tree a hash collision across a node split
leaves (ext4's do_split sets the bit). dx_probe then lands in the first node's last leaf;
the name is found only by walking on into the next node. And do_split's rule for what moves
to the new leaf, checked on every split of a growing directory."""

from __future__ import annotations

import struct

from tests.helpers import needs_e2fsprogs
from tests.volume.test_htree import make_dir, opts

from simfs.fs.volume import Volume
from simfs.ondisk import dirent
from simfs.ondisk import htree as fmt

pytestmark = needs_e2fsprogs
BS = 1024


def test_a_hash_continued_into_the_next_index_node_is_found(tmp_path):
    img = tmp_path / "img"
    names = [(b"%05d-" % i) + b"x" * 234 for i in range(700)]
    inos = make_dir(img, names, size="16M", inodes=2048)
    with Volume.open(img, opts()) as vol:
        ht = vol.dirs.htree
        d = vol.inodes.get(vol.lookup(vol.root_ino, b"d").st_ino)
        _, root = ht.read(d, 0, index=True)
        version, info_length, levels, _ = fmt.root_info(root)
        off = fmt.INFO_OFF + info_length
        assert levels == 1 and fmt.countlimit(root, off)[0] >= 2
        root_phys = ht.filemap.bmap(d, 0)
        _, node = ht.read(d, fmt.entry_block(root, off, 1), index=True)
        _, leaf = ht.read(d, fmt.entry_block(node, fmt.NODE_ENTRIES, 0))
        found = [(ht.name_hash(version, bytes(name)), bytes(name))
                 for _, ino, _, name, _ in dirent.iter_block(leaf, True) if ino and name]
        h, name = min(found)
        assert fmt.entry_hash(root, off, 1) <= h
    with open(img, "r+b") as f:                 # the root's entry 1: hash h, continued
        f.seek(root_phys * BS + off + 8)
        f.write(struct.pack("<I", h | 1))
    with Volume.open(img, opts()) as vol:
        dino = vol.lookup(vol.root_ino, b"d").st_ino
        assert vol.lookup(dino, name).st_ino == inos[name]
        for other in names[::50]:
            assert vol.lookup(dino, other).st_ino == inos[other]


def _leaves(vol, d):
    """{logical block: [(name, rec_len), ...]} of every leaf of directory d (block 0 is the root)."""
    ht = vol.dirs.htree
    out = {}
    for lidx in range(1, ht.nblocks(d)):
        _, buf = ht.read(d, lidx)
        if fmt.is_node_block(buf):
            continue
        out[lidx] = [(bytes(name), rec_len) for _, ino, rec_len, name, _ in dirent.iter_block(buf, True)
                     if ino and name]
    return out


def test_a_leaf_split_moves_what_fits_in_half_a_block(tmp_path):
    # Linux's do_split: the leaf's entries in hash order; from the greatest hash down, an
    # entry moves while the moved rec_lens plus half of its own fit in half the block
    # (`size + map[i].size/2 > blocksize/2` stops it); the new leaf takes those
    img = tmp_path / "img"
    names = [(b"%04d-" % i) + b"n" * (8 + (i * 37) % 90) for i in range(400)]
    make_dir(img, [], size="16M", inodes=1024)
    with Volume.open(img, opts()) as vol:
        ht = vol.dirs.htree
        dino = vol.mkdir(vol.root_ino, b"e", 0o755, 0, 0).st_ino
        splits = 0
        for name in names:
            d = vol.inodes.get(dino)
            before = _leaves(vol, d) if d.size > 2 * BS else None
            vol.create(dino, name, 0o644, 0, 0)
            d = vol.inodes.get(dino)
            if before is None or ht.nblocks(d) == len(before) + 1:
                continue
            after = _leaves(vol, d)
            new = max(after)
            old = next(k for k in before if set(after[k]) != set(before[k]))
            version = fmt.root_info(ht.read(d, 0, index=True)[1])[0]
            live = before[old]
            order = sorted(live, key=lambda e: ht.name_hash(version, e[0]))
            size, move, i = 0, 0, len(order) - 1
            while i >= 0 and size + order[i][1] // 2 <= BS // 2:
                size += order[i][1]
                move += 1
                i -= 1
            moved = {n for n, _ in order[len(order) - move:]}
            assert {n for n, _ in after[new]} - {name} == moved
            splits += 1
        assert splits >= 3


def test_a_root_with_a_longer_info_moves_into_a_node_with_only_its_entries(tmp_path):
    # dx_root_info's info_length is the root's to say (dx_probe takes the entries from after
    # it, with dx_root_limit(info_length)); with 12 the entries end 4 bytes before the block
    # does. When the full root moves into an index node, the node gets the entries and the
    # rest of its entry area zeroed (ext4_dx_add_entry copies icount entries), nothing more.
    img = tmp_path / "img"
    names = [(b"%05d-" % i) + b"x" * 234 for i in range(700)]
    make_dir(img, names[:40], size="16M", inodes=2048)
    with Volume.open(img, opts()) as vol:
        ht = vol.dirs.htree
        d = vol.inodes.get(vol.lookup(vol.root_ino, b"d").st_ino)
        phys = ht.filemap.bmap(d, 0)
    with open(img, "r+b") as f:
        f.seek(phys * BS)
        root = bytearray(f.read(BS))
        off = fmt.INFO_OFF + 8
        count, limit = fmt.countlimit(root, off)
        entries = bytes(root[off:off + 8 * count])
        root[fmt.INFO_OFF + 5] = 12                          # info_length
        new = fmt.INFO_OFF + 12
        root[off:] = bytes(BS - off)
        root[new:new + len(entries)] = entries
        struct.pack_into("<HH", root, new, fmt.root_limit(BS, 12), count)
        root[new + 8 * fmt.root_limit(BS, 12):] = b"\xee" * 4   # past the entries: not theirs
        assert fmt.root_problem(root) == ""
        f.seek(phys * BS)
        f.write(root)
    with Volume.open(img, opts()) as vol:
        dino = vol.lookup(vol.root_ino, b"d").st_ino
        ht = vol.dirs.htree
        for n in names[40:]:                                 # until the root moves into a node
            vol.create(dino, n, 0o644, 0, 0)
            d = vol.inodes.get(dino)
            _, root = ht.read(d, 0, index=True)
            if fmt.root_info(root)[2] == 1:
                break
        assert fmt.root_info(root)[2] == 1
        _, node = ht.read(d, fmt.entry_block(root, fmt.INFO_OFF + 12, 0), index=True)
        count, limit = fmt.countlimit(node, fmt.NODE_ENTRIES)
        assert bytes(node[fmt.NODE_ENTRIES + 8 * count:fmt.NODE_ENTRIES + 8 * limit]) == bytes(8 * (limit - count))
        for n in names[:names.index(n) + 1:35]:            # every name made is found
            vol.lookup(dino, n)
