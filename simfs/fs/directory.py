"""Linear ext2 directories: lookup, insert, delete and iterate entries in directory blocks.

Entries live only in directory blocks. To keep Python fast on large directories, a bounded
in-memory index (name -> inode, type, position) and a per-block free-space hint are kept
for recently used directories; they are a shortcut for the CPU, not for the model: every
operation still reads the directory blocks a linear ext2 directory would read.

A damaged directory block does not hide the rest of the directory: a record whose rec_len or
name_len breaks the block's chain ends that block only (ext4_check_dir_entry's "skip to the
next block"), a hole or a block met twice is skipped, each reported as an inconsistency
(simfs.fs.checks); the entries before the break, and every other block, stay listed (as
ext4_readdir lists them). A lookup searches as ext4's linear search does, block after block
from the first: a damaged block on the way is searched as ext4_search_dir searches it
(simfs.fs.dirblocks.search), so the lookup fails (EUCLEAN) only where the kernel's does (a
rec_len of 0 met, a matched record that fails its check) and otherwise goes on to the names of
later blocks. A new name goes into a block before the first damaged one or not at all
(ext4_find_dest_de meets the damage before it finds room), never into a damaged block.

With an `HTree` (the image has dir_index and the volume keeps htrees), a directory with
INDEX_FL is looked up, added to and listed through its hash index (simfs.fs.htree; the records
of a block stay this module's job), and a linear directory whose one block is full becomes one
(make_indexed_dir). An index ext4 would not use is read linearly, as ext4 falls back, with no
name index kept for it; an insert then drops the index (INDEX_FL cleared).
"""

import errno
import zlib
from collections import OrderedDict

from simfs.errors import FSError
from simfs.fs.dirblocks import Blocks, records, search
from simfs.fs.htree import BadIndex
from simfs.ondisk import dirent
from simfs.ondisk.constants import FT_DIR, INDEX_FL


class DirIndex:
    __slots__ = ("names", "free", "nentries", "bad", "broken", "wild")

    def __init__(self):
        self.names: dict[bytes, tuple[int, int, int]] = {}   # name -> (ino, ftype, position)
        self.free: list[int] = []                           # per block: largest insertable record
        self.bad = -1                                       # first block whose chain breaks
        self.broken: dict[int, int] = {}                    # block -> offset of its first bad record
        self.wild = -1                                      # first block with an entry naming an
                                                            # inode past the inode count


def _slot(block: bytes, need: int, filetype: bool):
    """The first record a new entry of `need` bytes fits in, as ext2_add_link looks for it:
    (offset, rec_len, used, rest) — used 0 for an empty record taken whole, else the live
    record's own length, with rec_len - used bytes to spare; `rest` the largest room in the
    block's other records (so the block's free space after the insertion needs no second
    scan). None if none fits."""
    found, rest = None, 0
    for off, ino, rec_len, name_len in records(block):
        used = (8 + name_len + 3) & ~3 if ino else 0
        if found is None and rec_len - used >= need:
            found = (off, rec_len, used)
            continue
        if rec_len - used > rest:
            rest = rec_len - used
    return None if found is None else (*found, rest)


class Directories:
    def __init__(self, geometry, cache, filemap, inodes, filetype: bool = True, indexed: bool = False,
                 capacity_entries: int = 500_000, htree=None):
        self.geo = geometry
        self.bs = geometry.block_size
        self.cache = cache
        self.filemap = filemap
        self.inodes = inodes
        self.filetype = filetype
        self.indexed = indexed      # charge lookups as an htree/b-tree would: root block + leaf
        self.capacity = capacity_entries
        self.indexes: "OrderedDict[int, DirIndex]" = OrderedDict()
        self.indexed_entries = 0
        self.checks = filemap.checks
        self.broken = -1            # the block a walk found damaged last
        self.htree = htree          # simfs.fs.htree.HTree: dir_index directories kept as htrees
        self.leaves = Blocks()      # htree leaves walked once (simfs.fs.dirblocks)

    # blocks --------------------------------------------------------------------------------
    def nblocks(self, d) -> int:
        """Blocks the directory's size covers (a partial last one read whole, as ext2 reads
        it), never more than the file system has: what a damaged i_size can make a walk read."""
        n = -(-d.size // self.bs)
        return n if n <= self.geo.blocks_count else self.geo.blocks_count

    def read_block(self, d, lidx: int) -> bytearray:
        phys = self.filemap.bmap(d, lidx)
        if not phys:
            raise FSError(errno.EIO, f"directory {d.ino} has a hole at block {lidx}")
        return self.cache.bread(phys, "dir", d.ino)

    def _dirty(self, d, lidx: int, buf) -> None:
        self.cache.mark_dirty(self.filemap.bmap(d, lidx), buf, "dir", d.ino)
        if d.flags & INDEX_FL and self.htree is None:   # linear entries: the index no longer holds
            d.flags &= ~INDEX_FL
            self.inodes.put(d)

    def _records(self, d, lidx: int, seen: set):
        """The records of block lidx up to the first bad one (reported: the rest of the block
        is skipped). `seen` holds the physical blocks this walk read: a hole, a block read
        before or a bad block number (EUCLEAN from the map) is reported and yields nothing."""
        try:
            phys = self.filemap.bmap(d, lidx)
        except FSError as e:
            if e.errno != errno.EUCLEAN:        # reported already: the block is skipped
                raise
            return
        if not phys or phys in seen:
            if -1 not in seen:                  # once a walk: a damaged i_size makes many
                seen.add(-1)
                self.checks.report(f"directory {d.ino}: block {lidx} is a hole or repeats block {phys}",
                                   d.ino, phys, "readdir")
            return
        seen.add(phys)
        try:
            yield from dirent.iter_block(self.cache.bread(phys, "dir", d.ino), self.filetype)
        except ValueError as e:
            self.checks.report(f"directory {d.ino} block {lidx}: {e}", d.ino, phys, "check_dir_entry")
            self.broken = lidx
            self._bad_block(d, lidx)

    def _bad_block(self, d, lidx: int) -> None:
        """No entry goes into a damaged block (its index room is 0)."""
        idx = self.indexes.get(d.ino)
        if idx is not None and lidx < len(idx.free):
            idx.free[lidx] = 0

    # the index ---------------------------------------------------------------------------
    def _index(self, d) -> DirIndex:
        idx = self.indexes.get(d.ino)
        if idx is not None:
            self.indexes.move_to_end(d.ino)
            return idx
        idx = DirIndex()
        seen: set[int] = set()
        self.broken = -1
        for lidx in range(self.nblocks(d)):
            best = 0
            end = 0
            for off, ino, rec_len, name, ftype in self._records(d, lidx, seen):
                if ino:
                    if ino > self.geo.inodes_count and idx.wild < 0:
                        idx.wild = lidx
                    if name not in idx.names:
                        idx.names[name] = (ino, ftype, lidx * self.bs + off)
                    best = max(best, rec_len - dirent.rec_len_for(len(name)))
                else:
                    best = max(best, rec_len)
                end = off + rec_len
            idx.free.append(best if end == self.bs else 0)      # a damaged block takes no entry
            if self.broken == lidx:
                idx.broken[lidx] = end
                if idx.bad < 0:
                    idx.bad = lidx
        self.indexes[d.ino] = idx
        self.indexed_entries += len(idx.names)
        while self.indexed_entries > self.capacity and len(self.indexes) > 1:
            _, old = self.indexes.popitem(last=False)
            self.indexed_entries -= len(old.names)
        return idx

    def forget(self, ino: int) -> None:
        idx = self.indexes.pop(ino, None)
        if idx is not None:
            self.indexed_entries -= len(idx.names)

    def _touch_upto(self, d, lidx: int) -> None:
        """Read the blocks a lookup reads: a linear scan reads 0..lidx; an indexed directory
        reads its root block and the one leaf that holds the name."""
        for i in ((0, lidx) if self.indexed and lidx > 0 else range(lidx + 1)):
            phys = self.filemap.bmap(d, i)
            if phys:                    # a hole (reported when the index was made) is skipped
                self.cache.bread(phys, "dir", d.ino)

    # operations --------------------------------------------------------------------------
    def lookup(self, d, name: bytes) -> tuple[int, int] | None:
        """(inode, file type) of name in directory d, or None."""
        if self._dx(d):
            try:
                hit = self._dx_find(d, name)
                return None if hit is None else hit[4:]
            except BadIndex:
                return self._unindexed(d, self._lookup, name)
        return self._lookup(d, name)

    def _lookup(self, d, name: bytes) -> tuple[int, int] | None:
        idx = self._index(d)
        hit = idx.names.get(name)
        if idx.broken:
            odd = self._damaged_first(d, idx, name, hit)
            if odd is not None:
                return odd
        if hit:
            self._touch_upto(d, hit[2] // self.bs)
            return hit[0], hit[1]
        # a miss scans everything, or reads the root and the leaf the hash picks
        self._touch_upto(d, (zlib.crc32(name) % max(1, self.nblocks(d))) if self.indexed else self.nblocks(d) - 1)
        return None

    def _damaged_first(self, d, idx: DirIndex, name: bytes, hit):
        """The damaged blocks a linear search from block 0 meets before it reaches the name's
        block (all of them for a miss), each searched as ext4_search_dir searches it
        (simfs.fs.dirblocks.search): one where the search fails fails the lookup (EUCLEAN,
        reported); a block whose walk runs off its end is passed, so the names of later
        blocks are found. (ino, ftype) of a record the walk matched where no index looked
        (past the break), else None."""
        stop = hit[2] // self.bs if hit else self.nblocks(d)
        for lidx in idx.broken:
            if lidx >= stop:                # the name lies before this block's break
                break
            buf = self.read_block(d, lidx)
            try:
                found = search(buf, name)
            except ValueError as e:
                raise self.checks.corrupt(f"directory {d.ino} block {lidx}: {e}", d.ino,
                                          self.filemap.bmap(d, lidx), "search_dirblock") from None
            if found is not None:
                return found[1], found[2] if self.filetype else 0
        return None

    def _past_damage(self, d, idx: DirIndex, name: bytes, hit) -> None:
        """Before a record is removed or changed: EUCLEAN where the lookup fails, or where it
        found the name past a damaged record (ext4_generic_delete_entry checks every record
        before its target); ENOENT if there is no such name."""
        if idx.broken and self._damaged_first(d, idx, name, hit) is not None:
            raise self.checks.corrupt(f"directory {d.ino}: '{name.decode(errors='replace')}' lies past a "
                                      "damaged record", d.ino, 0, "delete_entry")
        if hit is None:
            raise FSError(errno.ENOENT)

    def add(self, d, name: bytes, ino: int, ftype: int) -> None:
        """Insert an entry; the caller checked that the name is new. May grow the directory."""
        if self.htree is not None and self._dx_add(d, name, ino, ftype):
            return
        idx = self._index(d)
        need = dirent.rec_len_for(len(name))
        ft = ftype if self.filetype else 0
        for lidx, room in enumerate(idx.free):
            if room < need:
                continue
            if 0 <= idx.bad < lidx:
                break                               # the damaged block comes first
            buf = self.read_block(d, lidx)
            slot = _slot(buf, need, self.filetype)
            if slot is None:
                continue
            off, rec_len, used, rest = slot
            if 0 <= idx.wild < lidx:                 # a block passed over holds it
                self._check_dest(d, idx.wild, self.read_block(d, idx.wild), self.bs, True)
            elif idx.wild == lidx:
                self._check_dest(d, lidx, buf, off, False)
            if not used:                            # an empty record takes it whole
                dirent.put(buf, off, ino, rec_len, name, ft)
                pos = off
            else:                                   # the slack after a live entry
                dirent.set_rec_len(buf, off, used)
                dirent.put(buf, off + used, ino, rec_len - used, name, ft)
                pos = off + used
            self._dirty(d, lidx, buf)
            idx.free[lidx] = max(rest, rec_len - used - need)
            self._indexed(idx, name, (ino, ftype, lidx * self.bs + pos))
            return
        if idx.bad >= 0:
            # ext4_add_entry tries the blocks in order: find_dest_de checks every record it
            # passes, so the damaged block fails the insertion before any later block is tried
            raise self.checks.corrupt(f"directory {d.ino}: block {idx.bad} is damaged before any room "
                                      "for a new entry", d.ino, self.filemap.bmap(d, idx.bad), "find_dest_de")
        if idx.wild >= 0:
            self._check_dest(d, idx.wild, self.read_block(d, idx.wild), self.bs, True)
        lidx = self.nblocks(d)
        phys, _ = self.filemap.map_for_write(d, lidx, "dir")
        buf = self.cache.getblk(phys, "dir", d.ino)
        dirent.put(buf, 0, ino, self.bs, name, ft)
        self.cache.mark_dirty(phys, buf, "dir", d.ino)
        d.size += self.bs
        self.inodes.put(d)
        idx.free.append(self.bs - need)
        self._indexed(idx, name, (ino, ftype, lidx * self.bs))

    def _check_dest(self, d, lidx: int, buf, upto: int, whole: bool) -> None:
        """EUCLEAN if a record the kernel checks before inserting an entry names an inode past
        the inode count: ext4_find_dest_de runs ext4_check_dir_entry on every record up to the
        one it takes (`upto`), and on all of a block it passed over (`whole`)."""
        for off, ino, _, _ in records(buf):
            if off > upto and not whole:
                return
            if ino > self.geo.inodes_count:
                raise self.checks.corrupt(f"directory {d.ino} block {lidx}: the entry at offset {off} "
                                          f"names inode {ino}, past the inode count", d.ino,
                                          self.filemap.bmap(d, lidx), "find_dest_de")

    def _indexed(self, idx: DirIndex, name: bytes, value) -> None:
        if name not in idx.names:
            self.indexed_entries += 1
        idx.names[name] = value

    def remove(self, d, name: bytes) -> int:
        """Delete an entry (merging its space into the previous record, as ext2 does)."""
        if self._dx(d):
            try:
                hit = self._dx_find(d, name)
            except BadIndex:
                return self._unindexed(d, self._remove, name)
            if hit is None:
                raise FSError(errno.ENOENT)
            lidx, phys, buf, off, ino, _ = hit
            self.leaves.get(phys, buf).remove(buf, off, name)   # (_unlink's ext4 way, wiped)
            self.htree.dirty(d, phys, buf)          # a leaf stays, however empty (no merge)
            return ino
        return self._remove(d, name)

    def _remove(self, d, name: bytes) -> int:
        idx = self._index(d)
        hit = idx.names.get(name)
        self._past_damage(d, idx, name, hit)
        lidx, target = divmod(hit[2], self.bs)
        self._touch_upto(d, lidx)
        buf = self.read_block(d, lidx)
        room = _unlink(d, lidx, buf, target, self.bs)
        self._dirty(d, lidx, buf)
        del idx.names[name]
        self.indexed_entries -= 1
        # a removal only makes one record's room larger (the removed entry's own slack is
        # part of it): the block's largest room is the old one or that
        idx.free[lidx] = max(idx.free[lidx], room)
        return hit[0]

    def replace(self, d, name: bytes, ino: int, ftype: int) -> int:
        """Point an existing entry at another inode; returns the old inode."""
        if self._dx(d):
            try:
                hit = self._dx_find(d, name)
            except BadIndex:
                return self._unindexed(d, self._replace, name, ino, ftype)
            if hit is None:
                raise FSError(errno.ENOENT)
            _, phys, buf, off, old, _ = hit
            dirent.set_inode(buf, off, ino, ftype if self.filetype else None)
            self.htree.dirty(d, phys, buf)
            return old
        return self._replace(d, name, ino, ftype)

    def _replace(self, d, name: bytes, ino: int, ftype: int) -> int:
        idx = self._index(d)
        old = idx.names.get(name)
        self._past_damage(d, idx, name, old)
        lidx, off = divmod(old[2], self.bs)
        self._touch_upto(d, lidx)
        buf = self.read_block(d, lidx)
        dirent.set_inode(buf, off, ino, ftype if self.filetype else None)
        self._dirty(d, lidx, buf)
        idx.names[name] = (ino, ftype, old[2])
        return old[0]

    def is_empty(self, d) -> bool:
        if self._dx(d):                 # every block read, as ext4_empty_dir reads them
            self.broken = -1
            names = [name for _, name, _, _ in self.entries(d)]
            broken = self.broken >= 0
        else:
            idx = self._index(d)
            names, broken = idx.names, idx.bad >= 0
        # a damaged record is not an empty directory (ext4_empty_dir): its blocks may hold names
        return not broken and all(n in (b".", b"..") for n in names)

    def entries(self, d, from_pos: int = 0):
        """Yield (position, name, ino, ftype) of live entries at or after byte position from_pos."""
        seen: set[int] = set()
        for lidx in range(from_pos // self.bs, self.nblocks(d)):
            for off, ino, rec_len, name, ftype in self._records(d, lidx, seen):
                pos = lidx * self.bs + off
                if ino and pos >= from_pos:
                    yield pos, name, ino, ftype

    def listing(self, d):
        """(position, name, ino, ftype) of every live entry, the blocks read in the order a
        readdir in hash order reads them: an htree's leaves in index order (dx_readdir), a
        linear directory's blocks in slot order."""
        order = None
        if self._dx(d):
            try:
                order = self.htree.leaf_order(d)
            except BadIndex:
                pass
        if order is None:
            yield from self.entries(d)
            return
        seen: set[int] = set()
        for lidx in order:
            for off, ino, rec_len, name, ftype in self._records(d, lidx, seen):
                if ino:
                    yield lidx * self.bs + off, name, ino, ftype

    def init(self, d, parent_ino: int) -> None:
        """Give a new directory its first block with "." and ".."."""
        phys, _ = self.filemap.map_for_write(d, 0, "dir")
        buf = self.cache.getblk(phys, "dir", d.ino)
        buf[:] = dirent.new_dir_block(self.bs, d.ino, parent_ino, self.filetype)
        self.cache.mark_dirty(phys, buf, "dir", d.ino)
        d.size = self.bs

    def set_parent(self, d, parent_ino: int) -> None:
        self.replace(d, b"..", parent_ino, FT_DIR)

    # hash-tree directories (simfs.fs.htree) ------------------------------------------------
    def _dx(self, d) -> bool:
        return self.htree is not None and bool(d.flags & INDEX_FL)

    def _unindexed(self, d, op, *args):
        """An operation on a directory whose index ext4 would not use: done linearly, with no
        name index left behind (the next operation tries the index again)."""
        try:
            return op(d, *args)
        finally:
            self.forget(d.ino)

    def _dx_find(self, d, name: bytes):
        """(lidx, phys, data, offset, inode, file type) of name through the index, or None:
        the root, node and leaf reads of ext4_dx_find_entry ("." and ".." in block 0)."""
        ht = self.htree
        frames = None
        if name in (b".", b".."):
            leaf = 0
        else:
            frames, leaf, h = ht.probe(d, name)
        while True:
            phys, buf = ht.read(d, leaf)
            try:
                p = self.leaves.get(phys, buf)
                hit = p.find(name) if p.err or buf.find(name, 8) >= 0 else None
                if hit and p.err and hit[0] >= p.erroff:
                    # found past the damage: removing or changing it would walk through it
                    # (ext4_generic_delete_entry), and the kernel's dx search reads it linearly
                    raise ValueError(f"'{name.decode(errors='replace')}' lies past a damaged record")
            except ValueError as e:
                raise self.checks.corrupt(f"directory {d.ino} block {leaf}: {e}", d.ino, phys,
                                          "check_dir_entry") from None
            if hit:
                return leaf, phys, buf, hit[0], hit[1], hit[2] if self.filetype else 0
            leaf = None if frames is None else ht.next_leaf(d, frames, h)
            if leaf is None:
                return None

    def _dx_add(self, d, name: bytes, ino: int, ftype: int) -> bool:
        """Add through the index (True), or turn a full one-block directory into an htree
        (make_indexed_dir, True); False leaves it to the linear insert. An index ext4 would
        not use is dropped first (INDEX_FL cleared, as ext4_add_entry's dx_fallback)."""
        ht = self.htree
        ft = ftype if self.filetype else 0
        if not d.flags & INDEX_FL:
            idx = self._index(d)
            if self.nblocks(d) != 1 or idx.bad >= 0 or idx.free[0] >= dirent.rec_len_for(len(name)):
                return False
            root = self.read_block(d, 0)
            self.forget(d.ino)
            frames, _, phys, leaf = ht.make_root(d, self.filemap.bmap(d, 0), root)
            h = ht.name_hash(ht.def_hash_version, name)
        else:
            try:
                frames, lidx, h = ht.probe(d, name)
            except BadIndex:
                d.flags &= ~INDEX_FL
                self.inodes.put(d)
                self.forget(d.ino)
                return False
            phys, leaf = ht.read(d, lidx)
            if self._put(d, phys, leaf, name, ino, ft):
                return True
            ht.make_room(d, frames)
        phys, leaf = ht.split(d, frames, phys, leaf, h)
        if not self._put(d, phys, leaf, name, ino, ft):
            raise FSError(errno.EIO, f"directory {d.ino}: no room for a name after a leaf split")
        return True

    def _put(self, d, phys: int, buf, name: bytes, ino: int, ft: int) -> bool:
        """add_dirent_to_buf: the name into the first record with room, if one has."""
        try:
            if not self.leaves.get(phys, buf).put(buf, name, ino, ft):
                return False
        except ValueError as e:
            raise self.checks.corrupt(f"directory {d.ino}: {e}", d.ino, phys, "check_dir_entry") from None
        self.htree.dirty(d, phys, buf)
        return True


def _unlink(d, lidx: int, buf, target: int, bs: int) -> int:
    """Delete the record at target from a block, merging its space into the previous record
    (ext2_delete_entry); the room the block has there now. (An htree leaf's: Parsed.remove.)"""
    prev = None
    try:
        for off, eino, rec_len, name_len in records(buf):
            if off == target:
                if prev is None:
                    dirent.set_inode(buf, off, 0)
                    return rec_len                          # an empty record now
                dirent.set_rec_len(buf, prev[0], prev[1] + rec_len)
                return prev[1] + rec_len - prev[2]          # the previous one's slack grew
            prev = (off, rec_len, (8 + name_len + 3) & ~3)
    except ValueError as e:
        raise FSError(errno.EIO, f"directory {d.ino} block {lidx}: {e}") from None
    raise FSError(errno.EIO, f"directory {d.ino}: index and block disagree")
