"""Parsed directory blocks, kept while their bytes are unchanged: an htree leaf's records
walked once, not once per lookup and once more per insert.

An htree lookup reads one leaf and an insert reads it again to find room; walking its ~100
records in Python each time was most of an ext4-profile create's and lookup's CPU. `Parsed`
holds what one walk learns (each live name's record, each record's room, the first damaged
record) together with a copy of the bytes it was made from; `Blocks.get` hands it out only
while the block's bytes still equal that copy (one memcmp), so a change by any code path - a
split, an unlink, a repair, a block reused by another directory - is seen, and the answers are
exactly those of a fresh walk. It is a shortcut for the CPU, not for the model: the caller has
read the block through the buffer cache (charged) before asking. Bounded: past 512 blocks (a
4 KiB leaf full of short names parses to about 25 KiB: some 12 MiB in all) the least recently
used are forgotten.
"""

import struct
from bisect import bisect_left
from collections import OrderedDict

from simfs.ondisk import dirent

_HDR = struct.Struct("<IHBB")       # a record's header: inode, rec_len, name_len, file type


def records(block):
    """(offset, inode, rec_len, name_len) of every record: dirent.iter_block's walk and checks
    (a ValueError at the first record it cannot pass), without making the names."""
    off, size = 0, len(block)
    unpack = _HDR.unpack_from
    while off < size:
        if off + 8 > size:
            raise ValueError(f"directory record header at {off} runs off the block")
        ino, rec_len, name_len, _ = unpack(block, off)
        if rec_len < 8 or rec_len % 4 or off + rec_len > size or 8 + name_len > rec_len:
            raise ValueError(f"corrupt directory record at offset {off} (rec_len {rec_len})")
        yield off, ino, rec_len, name_len
        off += rec_len


def search(block, name: bytes):
    """(offset, inode, file type byte) of name in a damaged block, or None, as ext4_search_dir
    finds it: records are followed by rec_len with no more checking than the kernel does
    (past a bad record the walk goes on wherever rec_len takes it), a live record whose name
    matches gets the full check (ext4_check_dir_entry), and a rec_len of 0 ends the search.
    A failed check or a rec_len of 0 is a ValueError: the kernel's lookup answers EFSCORRUPTED
    (Linux 6.8's "ext4: return error on ext4_find_entry"); walking off the block is a miss,
    and the search goes on in the next block."""
    size, n = len(block), len(name)
    unpack = _HDR.unpack_from
    off = 0
    while off < size - 8:
        ino, rec_len, name_len, ftype = unpack(block, off)
        if ino and name_len == n and off + 8 + n <= size and block[off + 8:off + 8 + n] == name:
            nxt = off + rec_len
            if (rec_len < 12 or rec_len % 4 or rec_len < ((8 + n + 3) & ~3) or nxt > size
                    or (nxt > size - 12 and nxt != size)):
                raise ValueError(f"corrupt directory record at offset {off} (rec_len {rec_len}) "
                                 f"for the name searched")
            return off, ino, ftype
        if rec_len == 0:
            raise ValueError(f"directory record at offset {off} has rec_len 0")
        off += rec_len
    return None


class Parsed:
    """One walk of a directory block: `names` (name -> offset of the first live record so
    named), per record `offs` and `rooms` (rec_len less what its name
    uses; all of it for an empty record), and `err`, the ValueError message of the first record
    the walk cannot pass ("" if none: names and records stop there) with `erroff`, its offset."""
    __slots__ = ("snap", "names", "offs", "rooms", "err", "erroff")

    def __init__(self, buf):
        self._walk(buf)

    def _walk(self, buf) -> None:
        self.snap = bytes(buf)
        names, offs, rooms, err, end = {}, [], [], "", 0
        try:
            for off, ino, rec_len, name_len in records(buf):
                if ino:
                    rooms.append(rec_len - ((8 + name_len + 3) & ~3))
                    name = bytes(buf[off + 8:off + 8 + name_len])
                    if name not in names:
                        names[name] = off
                else:
                    rooms.append(rec_len)
                offs.append(off)
                end = off + rec_len
        except ValueError as e:
            err = str(e)
        self.names, self.offs, self.rooms, self.err, self.erroff = names, offs, rooms, err, end

    def find(self, name: bytes):
        """(offset, inode, file type byte) of the live record named name, or None. In a
        block with a record the walk cannot pass, a name not found before it is searched for
        as the kernel searches (`search`: found, missed, or a ValueError)."""
        off = self.names.get(name)
        if off is None:
            return search(self.snap, name) if self.err else None
        ino, _, _, ftype = _HDR.unpack_from(self.snap, off)
        return off, ino, ftype

    def put(self, buf: bytearray, name: bytes, ino: int, ft: int) -> bool:
        """add_dirent_to_buf: the name into the first record with room for it (an empty one
        taken whole, else the slack after a live one), this parse kept in step; False if no
        record has room. A damaged record anywhere in the block is a ValueError."""
        if self.err:
            raise ValueError(self.err)
        need = dirent.rec_len_for(len(name))
        rooms = self.rooms
        if not rooms or max(rooms) < need:
            return False
        i = 0
        while rooms[i] < need:
            i += 1
        off = self.offs[i]
        ino0, rec_len = _HDR.unpack_from(buf, off)[:2]
        if not ino0:                                # an empty record taken whole
            dirent.put(buf, off, ino, rec_len, name, ft)
            rooms[i] = rec_len - need
        else:                                       # the slack after a live entry
            used = rec_len - rooms[i]
            dirent.set_rec_len(buf, off, used)
            off += used
            dirent.put(buf, off, ino, rec_len - used, name, ft)
            rooms[i] = 0
            self.offs.insert(i + 1, off)
            rooms.insert(i + 1, rec_len - used - need)
        if self.names.get(name, len(buf)) > off:
            self.names[name] = off
        self.snap = bytes(buf)
        return True

    def remove(self, buf: bytearray, off: int, name: bytes) -> None:
        """Delete the live record at off (one `find` returned, named name) as ext4 does: its
        space merged into the record before it and its bytes zeroed, or, the block's first
        record, left empty (inode 0, name zeroed, rec_len kept); this parse kept in step."""
        offs, rooms = self.offs, self.rooms
        i = bisect_left(offs, off)
        rec_len = _HDR.unpack_from(buf, off)[1]
        if i == 0:
            dirent.set_inode(buf, off, 0)
            buf[off + 6:off + rec_len] = bytes(rec_len - 6)
            rooms[0] = rec_len
        else:
            prev = offs[i - 1]
            dirent.set_rec_len(buf, prev, _HDR.unpack_from(buf, prev)[1] + rec_len)
            buf[off:off + rec_len] = bytes(rec_len)
            rooms[i - 1] += rec_len
            del offs[i], rooms[i]
        del self.names[name]
        if buf.find(name, 8) >= 0:          # another record holds the name too (or part of one)
            self._walk(buf)
        else:
            self.snap = bytes(buf)


class Blocks:
    """The parsed form of recently used directory blocks, by physical block number: `parse`
    (bytes -> an object whose `snap` holds the bytes it was made from), Parsed by default."""

    def __init__(self, capacity: int = 512, parse=Parsed):
        self.capacity = capacity
        self.parse = parse
        self.parsed: OrderedDict = OrderedDict()

    def get(self, phys: int, buf):
        """The parse of buf (block phys as just read): the kept one if the bytes are those it
        was made from, else a new one."""
        p = self.parsed.get(phys)
        if p is not None and p.snap == buf:
            self.parsed.move_to_end(phys)
            return p
        p = self.parsed[phys] = self.parse(buf)
        self.parsed.move_to_end(phys)
        if len(self.parsed) > self.capacity:
            self.parsed.popitem(last=False)
        return p
