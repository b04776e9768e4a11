"""Hash-tree (dir_index) directories: the index walk of a lookup, an insert with its leaf and
index splits, and the hash-order block list readdir reads, as fs/ext4/namei.c does them.

Every block is read through the buffer cache, so a lookup is charged what ext4_dx_find_entry
reads: the root, the node (two-level trees) and the leaf the hash picks (and the next leaves
while their hashes continue the name's). Records inside a block (search, insert, delete) are
the caller's (simfs.fs.directory): a leaf is an ordinary directory block.

A dx_root or dx_node that dx_probe would not use (simfs.ondisk.htree.root_problem) raises
`BadIndex`: ext4 then warns and reads the directory linearly, and an insert drops the index
(INDEX_FL cleared); a block the index points past the directory's end, into a hole, or a leaf
where a node should be is an inconsistency (EUCLEAN, reported), as ext4_read_dirblock has it.
"""

import errno
import functools
import logging
import struct

from simfs.errors import FSError
from simfs.fs.dirblocks import Blocks
from simfs.ondisk import dirent
from simfs.ondisk import htree as fmt
from simfs.ondisk.constants import COMPAT_DIR_INDEX, FLAGS_UNSIGNED_HASH, INCOMPAT, INDEX_FL
from simfs.ondisk.dirhash import DirHasher

log = logging.getLogger("simfs.fs.htree")


_EXT4_LAYOUT = sum(bit for bit, name in INCOMPAT.items() if name in ("extent", "flex_bg"))


def wanted(sb, asked: bool | None) -> bool:
    """Whether a volume keeps htrees: never without the dir_index feature; else as the mount
    asks, by default on an image with ext4's layout (ext4 keeps them, Linux's ext2 does not)."""
    if not sb.feature_compat & COMPAT_DIR_INDEX:
        return False
    return asked if asked is not None else bool(sb.feature_incompat & _EXT4_LAYOUT)


class BadIndex(Exception):
    """dx_probe's ERR_BAD_DX_DIR: the index is not used; the directory is read linearly."""


class Frame:
    """One index block on a probe's path: its logical and physical block, its data, where its
    entries start and the entry the path goes through (struct dx_frame)."""
    __slots__ = ("lidx", "phys", "buf", "off", "at")

    def __init__(self, lidx, phys, buf, off, at):
        self.lidx, self.phys, self.buf, self.off, self.at = lidx, phys, buf, off, at


class HTree:
    def __init__(self, geometry, cache, filemap, inodes, checks, def_hash_version: int, s_flags: int,
                 seed: bytes, filetype: bool = True):
        self.bs, self.max_blocks = geometry.block_size, geometry.blocks_count
        self.cache, self.filemap, self.inodes, self.checks = cache, filemap, inodes, checks
        self.filetype, self.def_hash_version = filetype, def_hash_version
        self.unsigned = 3 if s_flags & FLAGS_UNSIGNED_HASH else 0     # s_hash_unsigned
        self.seed = bytes(seed)
        self._hashers: dict[int, DirHasher] = {}
        self._last = (-1, b"", 0)       # (version, name, hash) of the name hashed last
        self.roots = Blocks(256, functools.partial(fmt.Index, root=True))     # read once while
        self.nodes = Blocks(256, functools.partial(fmt.Index, root=False))    # their bytes stay

    def is_dx(self, d) -> bool:
        return bool(d.flags & INDEX_FL)

    def hasher(self, version: int) -> DirHasher:
        """The hash of a root's hash_version (0..2), unsigned if the superblock says so."""
        h = self._hashers.get(version)
        if h is None:
            h = self._hashers[version] = DirHasher(version + self.unsigned, self.seed)
        return h

    def name_hash(self, version: int, name: bytes) -> int:
        """The major hash of name under a root's hash_version. A create or an unlink probes
        its name twice (the lookup before, then the change): the last one is kept."""
        last = self._last
        if last[1] == name and last[0] == version:
            return last[2]
        h = self.hasher(version)(name)[0]
        self._last = (version, bytes(name), h)
        return h

    # blocks --------------------------------------------------------------------------------
    def nblocks(self, d) -> int:
        return min(-(-d.size // self.bs), self.max_blocks)

    def read(self, d, lidx: int, index: bool = False):
        """(physical block, data) of directory block lidx, as ext4_read_dirblock reads it."""
        if lidx >= self.nblocks(d):
            raise self.checks.corrupt(f"directory {d.ino}: htree block {lidx} past i_size", d.ino, 0,
                                      "ext4_read_dirblock")
        phys = self.filemap.bmap(d, lidx)
        if not phys:
            raise self.checks.corrupt(f"directory {d.ino}: hole at htree block {lidx}", d.ino, 0,
                                      "ext4_read_dirblock")
        buf = self.cache.bread(phys, "dir", d.ino)
        if index and lidx and not fmt.is_node_block(buf):
            raise self.checks.corrupt(f"directory {d.ino}: leaf block {lidx} found instead of an index block",
                                      d.ino, phys, "ext4_read_dirblock")
        return phys, buf

    def append(self, d, buf: bytearray | None = None):
        """A new block at the directory's end (ext4_append): (lidx, phys, data)."""
        lidx = self.nblocks(d)
        phys, _ = self.filemap.map_for_write(d, lidx, "dir")
        data = self.cache.getblk(phys, "dir", d.ino)
        data[:] = buf if buf is not None else dirent.empty_block(self.bs)
        d.size += self.bs
        self.inodes.put(d)
        return lidx, phys, data

    def dirty(self, d, phys: int, buf) -> None:
        self.cache.mark_dirty(phys, buf, "dir", d.ino)

    def bad(self, d, why: str) -> BadIndex:
        log.warning("directory %d: %s: corrupt htree index, reading it linearly (run e2fsck)", d.ino, why)
        return BadIndex(why)

    # the index -----------------------------------------------------------------------------
    def probe(self, d, name: bytes):
        """dx_probe: ([Frame] root first, the leaf's logical block, the name's hash)."""
        phys, buf = self.read(d, 0, index=True)
        ix = self.roots.get(phys, buf)
        if ix.problem:
            raise self.bad(d, ix.problem)
        levels = ix.levels
        h = self.name_hash(ix.version, name)
        lidx, seen, frames = 0, [0], []
        while True:
            at = ix.find(h)
            frames.append(Frame(lidx, phys, buf, ix.off, at))
            blk = ix.blocks[at]
            if blk in seen:
                raise self.bad(d, f"tree cycle: block {blk} points back")
            if len(frames) > levels:
                return frames, blk, h
            seen.append(blk)
            phys, buf = self.read(d, blk, index=True)
            ix = self.nodes.get(phys, buf)
            if ix.problem:
                raise self.bad(d, f"node {blk}: {ix.problem}")
            lidx = blk

    def next_leaf(self, d, frames: list, h: int) -> int | None:
        """ext4_htree_next_block: the leaf after the path's one if its hash range continues
        h (its index hash is h with or without the continuation bit), else None."""
        i = len(frames) - 1
        while True:
            f = frames[i]
            f.at += 1
            if f.at < fmt.countlimit(f.buf, f.off)[0]:
                break
            if i == 0:
                return None
            i -= 1
        if fmt.entry_hash(f.buf, f.off, f.at) & ~1 != h:
            return None
        while i < len(frames) - 1:
            blk = fmt.entry_block(frames[i].buf, frames[i].off, frames[i].at)
            phys, buf = self.read(d, blk, index=True)
            i += 1
            frames[i] = Frame(blk, phys, buf, fmt.NODE_ENTRIES, 0)
        return fmt.entry_block(frames[-1].buf, frames[-1].off, frames[-1].at)

    def leaf_order(self, d) -> list[int]:
        """Block 0 and the leaves in hash order, reading the index blocks on the way: what
        ext4_htree_fill_tree reads for a readdir from the start."""
        phys, root = self.read(d, 0, index=True)
        why = fmt.root_problem(root)
        if why:
            raise self.bad(d, why)
        _, info_length, levels, _ = fmt.root_info(root)
        order, seen = [0], {0}
        tops = [(root, fmt.INFO_OFF + info_length)]
        if levels:
            nodes = []
            for blk in self._blocks(*tops[0]):
                _, node = self.read(d, blk, index=True)
                why = fmt.node_problem(node)
                if why:
                    raise self.bad(d, f"node {blk}: {why}")
                nodes.append((node, fmt.NODE_ENTRIES))
                seen.add(blk)
            tops = nodes
        for buf, off in tops:
            for blk in self._blocks(buf, off):
                if blk not in seen:
                    if blk >= self.nblocks(d):
                        raise self.checks.corrupt(f"directory {d.ino}: htree leaf {blk} past i_size", d.ino, 0,
                                                  "ext4_read_dirblock")
                    seen.add(blk)
                    order.append(blk)
        return order

    @staticmethod
    def _blocks(buf, off: int) -> list[int]:
        return [fmt.entry_block(buf, off, i) for i in range(fmt.countlimit(buf, off)[0])]

    def make_root(self, d, root_phys: int, root: bytearray):
        """make_indexed_dir: block 0's records after ".." move to a new leaf, block 0 becomes
        the root with one entry for it. ([root Frame], leaf lidx, leaf phys, leaf data)."""
        bs = self.bs
        first = 12 + struct.unpack_from("<H", root, 16)[0]      # the record after ".."
        if first >= bs:
            raise self.checks.corrupt(f"directory {d.ino}: invalid rec_len for '..'", d.ino, root_phys,
                                      "make_indexed_dir")
        data = bytearray(bs)
        data[:bs - first] = root[first:]
        last = max(off for off, *_ in dirent.iter_block(data[:bs - first], self.filetype))
        dirent.set_rec_len(data, last, bs - last)
        lidx, phys, leaf = self.append(d, data)
        fmt.make_root(root, self.def_hash_version, lidx)
        d.flags |= INDEX_FL
        self.inodes.put(d)
        self.dirty(d, root_phys, root)
        self.dirty(d, phys, leaf)
        return [Frame(0, root_phys, root, fmt.INFO_OFF + fmt.INFO_LENGTH, 0)], lidx, phys, leaf

    def make_room(self, d, frames: list) -> None:
        """Before a leaf split: a full index block on the path is split, or the tree grows a
        level (ext4_dx_add_entry); ENOSPC when both levels are full (no large_dir)."""
        f = frames[-1]
        count, limit = fmt.countlimit(f.buf, f.off)
        if count < limit:
            return
        raw = bytes(f.buf[f.off:f.off + 8 * count])
        if len(frames) == 1:                                  # the root moves into a node
            lidx, phys, node = self.append(d, fmt.new_node(self.bs, raw))
            fmt.set_count(f.buf, f.off, 1)
            fmt.set_block(f.buf, f.off, 0, lidx)
            fmt.set_levels(f.buf, 1)
            frames.append(Frame(lidx, phys, node, fmt.NODE_ENTRIES, f.at))
            f.at = 0
        else:
            parent = frames[-2]
            if fmt.countlimit(parent.buf, parent.off)[0] >= fmt.countlimit(parent.buf, parent.off)[1]:
                raise FSError(errno.ENOSPC, f"directory {d.ino}: index full at its greatest depth")
            half = count // 2
            lidx, phys, node = self.append(d, fmt.new_node(self.bs, raw[8 * half:]))
            fmt.set_count(f.buf, f.off, half)
            fmt.insert(parent.buf, parent.off, parent.at, fmt.entry_hash(f.buf, f.off, half), lidx)
            self.dirty(d, phys, node)
            if f.at >= half:
                frames[-1] = Frame(lidx, phys, node, fmt.NODE_ENTRIES, f.at - half)
                parent.at += 1
        for fr in frames:
            self.dirty(d, fr.phys, fr.buf)

    def split(self, d, frames: list, phys: int, leaf: bytearray, h: int):
        """do_split: the leaf's entries sorted by hash, the upper part (no more than half the
        block) moved to a new leaf, the index told. (phys, data) of the leaf that takes hash h."""
        bs, frame = self.bs, frames[-1]
        hasher = self.hasher(fmt.root_info(frames[0].buf)[0])
        live = [(off, rec_len, name) for off, ino, rec_len, name, _ in dirent.iter_block(leaf, self.filetype)
                if ino and name]
        hashes = hasher.many([e[2] for e in live])
        order = _sort_map([(hashes[i][0], i) for i in range(len(live) - 1, -1, -1)])
        count, size, move, i = len(order), 0, 0, len(order) - 1
        while i >= 0 and size + live[order[i]][1] // 2 <= bs // 2:
            size += live[order[i]][1]
            move += 1
            i -= 1
        cut = count - move if i >= 0 else count // 2     # (i >= 0 since Linux's 2025 "ext4: fix
                                                          # off-by-one error in do_split"; was i > 0)
        hash2 = hashes[order[cut]][0]
        continued = 1 if hash2 == hashes[order[cut - 1]][0] else 0
        moved = order[cut:]
        lidx, nphys, nbuf = self.append(d, _pack(leaf, [live[j][0] for j in moved], bs))   # (ENOSPC: unchanged)
        leaf[:] = _pack(leaf, sorted(live[j][0] for j in order[:cut]), bs)
        fmt.insert(frame.buf, frame.off, frame.at, hash2 + continued, lidx)
        self.dirty(d, frame.phys, frame.buf)
        self.dirty(d, phys, leaf)
        self.dirty(d, nphys, nbuf)
        return (nphys, nbuf) if h >= hash2 else (phys, leaf)


def _sort_map(m: list) -> list[int]:
    """dx_sort_map's comb sort then bubble sort over (hash, i) as dx_make_map built them (the
    block's last entry first), so that entries of equal hash end in ext4's order; the i's."""
    count, top = len(m), len(m) - 1
    while count > 2:
        count = count * 10 // 13
        if count in (9, 10):
            count = 11
        p, q = top, top - count
        while q >= 0:
            if m[p][0] < m[q][0]:
                m[p], m[q] = m[q], m[p]
            p, q = p - 1, q - 1
    more = True
    while more:
        more = False
        for q in range(top - 1, -1, -1):
            if m[q + 1][0] < m[q][0]:
                m[q], m[q + 1] = m[q + 1], m[q]
                more = True
    return [i for _, i in m]


def _pack(src, offs: list[int], bs: int) -> bytearray:
    """The records at offs of src, in that order, packed from the start of a new block
    (dx_move_dirents; dx_pack_dirents with offs ascending); the last one runs to the end."""
    out = bytearray(bs)
    at = last = 0
    for off in offs:
        n = dirent.rec_len_for(src[off + 6])
        out[at:at + n] = src[off:off + n]
        dirent.set_rec_len(out, at, n)
        last, at = at, at + n
    dirent.set_rec_len(out, last, bs - last)
    return out

