"""The ext4 hash-tree directory format (dir_index): dx_root, dx_node and their dx_entries.

As fs/ext4/namei.c lays them out (and Documentation/filesystems/ext4, "Hash Tree
Directories"). Block 0 of an indexed directory is the dx_root: the "." record (12 bytes),
the ".." record whose rec_len runs to the end of the block (so a reader that knows no index
sees an ordinary directory block), then dx_root_info at byte 24 (reserved u32, hash_version,
info_length = 8, indirect_levels, unused_flags) and the dx_entries after it. A dx_node is one
empty record spanning the block (inode 0, rec_len = block size) followed by dx_entries. Every
other block is a leaf: ordinary directory records.

dx_entries: the first entry's hash field holds (limit u16, count u16) and its block the leaf
(or node) for hashes below the second entry's hash; entry i >= 1 is (hash u32, block u32),
ascending by hash. The low bit of an entry's hash is the continuation bit: the hashes of the
block before it run on into it (do_split sets it when a split falls inside equal hashes).
Block numbers are the directory's logical blocks (dx_get_block masks them to 28 bits).
"""

import struct

INFO_OFF = 24           # dx_root_info: after "." (12 bytes) and the ".." header and name (12)
INFO_LENGTH = 8         # sizeof(struct dx_root_info)
NODE_ENTRIES = 8        # a dx_node's entries: after its fake dirent header
MAX_LEVELS = 2          # indirect_levels < 2 without the large_dir feature (ext4_dir_htree_level)
BLOCK_MASK = 0x0FFFFFFF

_INFO = struct.Struct("<IBBBB")
_CL = struct.Struct("<HH")
_U32 = struct.Struct("<I")
_REC_LEN = struct.Struct("<H")


def root_limit(bs: int, info_length: int = INFO_LENGTH) -> int:
    """dx_root_limit: entries that fit after the dot records and the info."""
    return (bs - 24 - info_length) // 8


def node_limit(bs: int) -> int:
    """dx_node_limit: entries that fit after a node's 8-byte fake record."""
    return (bs - 8) // 8


def root_info(block) -> tuple[int, int, int, int]:
    """(hash_version, info_length, indirect_levels, unused_flags) of a dx_root."""
    return _INFO.unpack_from(block, INFO_OFF)[1:]


def set_levels(block: bytearray, levels: int) -> None:
    block[INFO_OFF + 6] = levels


def countlimit(block, off: int) -> tuple[int, int]:
    """(count, limit) of the entries at off."""
    limit, count = _CL.unpack_from(block, off)
    return count, limit


def entry(block, off: int, i: int) -> tuple[int, int]:
    """(hash, block) of entry i (entry 0's hash is 0: its field holds count and limit)."""
    h, b = struct.unpack_from("<II", block, off + 8 * i)
    return (0 if i == 0 else h), b & BLOCK_MASK


def entry_block(block, off: int, i: int) -> int:
    return _U32.unpack_from(block, off + 8 * i + 4)[0] & BLOCK_MASK


def entry_hash(block, off: int, i: int) -> int:
    return _U32.unpack_from(block, off + 8 * i)[0]


class Index:
    """A dx_root's or dx_node's fields read once (the probe of every lookup and insert reads
    them): `problem` as root_problem/node_problem say it, and for a usable block the hash
    version and levels (a root's), where its entries start, their hashes and their blocks."""
    __slots__ = ("snap", "problem", "version", "levels", "off", "hashes", "blocks")

    def __init__(self, block, root: bool):
        self.snap = bytes(block)
        self.version = self.levels = None
        if root:
            self.problem = root_problem(block)
            self.version, info_length, self.levels, _ = root_info(block)
            self.off = INFO_OFF + info_length
        else:
            self.problem = node_problem(block)
            self.off = NODE_ENTRIES
        self.hashes, self.blocks = [], []
        if not self.problem:
            count = countlimit(block, self.off)[0]
            raw = struct.unpack_from(f"<{2 * count}I", block, self.off)
            self.hashes = list(raw[0::2])
            self.blocks = [b & BLOCK_MASK for b in raw[1::2]]

    def find(self, hash_: int) -> int:
        """The entry a hash belongs under: the last one whose hash is <= hash_ (dx_probe's
        binary search over entries 1..count-1, its steps kept for an unsorted, damaged
        index too; 0 if none)."""
        hashes = self.hashes
        p, q = 1, len(hashes) - 1
        while p <= q:
            m = p + (q - p) // 2
            if hashes[m] > hash_:
                q = m - 1
            else:
                p = m + 1
        return p - 1


def insert(block: bytearray, off: int, at: int, hash_: int, blk: int) -> None:
    """dx_insert_block: a new entry (hash_, blk) right after entry `at`; the caller checked
    count < limit."""
    count, limit = countlimit(block, off)
    start, end = off + 8 * (at + 1), off + 8 * count
    block[start + 8:end + 8] = block[start:end]
    struct.pack_into("<II", block, start, hash_, blk)
    _CL.pack_into(block, off, limit, count + 1)


def set_count(block: bytearray, off: int, count: int) -> None:
    _CL.pack_into(block, off, countlimit(block, off)[1], count)


def set_block(block: bytearray, off: int, i: int, blk: int) -> None:
    _U32.pack_into(block, off + 8 * i + 4, blk)


def write_entries(block: bytearray, off: int, limit: int, raw: bytes) -> None:
    """Put raw entries (8 bytes each, entry 0 first) at off with count and limit set; the
    rest of the entry area is zeroed."""
    count = len(raw) // 8
    block[off:off + 8 * limit] = bytes(8 * limit)
    block[off:off + len(raw)] = raw
    _CL.pack_into(block, off, limit, count)


def new_node(bs: int, raw: bytes) -> bytearray:
    """A dx_node holding raw entries (entry 0 first)."""
    buf = bytearray(bs)
    struct.pack_into("<IHBB", buf, 0, 0, bs, 0, 0)
    write_entries(buf, NODE_ENTRIES, node_limit(bs), raw)
    return buf


def make_root(block: bytearray, hash_version: int, first_leaf: int) -> None:
    """Turn a directory's block 0 (its "." and ".." records first) into a dx_root whose one
    entry points at first_leaf: ".." now runs to the end of the block, the rest is the index
    (make_indexed_dir)."""
    bs = len(block)
    _REC_LEN.pack_into(block, 12 + 4, bs - 12)
    block[INFO_OFF:] = bytes(bs - INFO_OFF)
    _INFO.pack_into(block, INFO_OFF, 0, hash_version, INFO_LENGTH, 0, 0)
    write_entries(block, INFO_OFF + INFO_LENGTH, root_limit(bs), struct.pack("<II", 0, first_leaf))


def is_node_block(block) -> bool:
    """Whether a block can be a dx_node: its first record spans it (ext4_read_dirblock's test
    before it takes a block as an index block)."""
    return _REC_LEN.unpack_from(block, 4)[0] == len(block)


def root_problem(block) -> str:
    """Why dx_probe would not use this dx_root ("" if it would): a hash version it does not
    know, unknown flags, too many levels, a limit that is not the root's, a count of 0 or
    beyond the limit. (ext4 then warns and reads the directory as a linear one.)"""
    hash_version, info_length, levels, flags = root_info(block)
    if hash_version > 2:
        return f"unrecognised hash version {hash_version}"
    if flags & 1:
        return f"unimplemented hash flags 0x{flags:x}"
    if levels >= MAX_LEVELS:
        return f"htree depth {levels} exceeds the supported value"
    off = INFO_OFF + info_length
    if off + 8 > len(block):
        return f"info_length {info_length} runs off the block"
    count, limit = countlimit(block, off)
    if limit != root_limit(len(block), info_length):
        return f"limit {limit} != root limit {root_limit(len(block), info_length)}"
    return count_problem(count, limit)


def node_problem(block) -> str:
    """Why dx_probe would not use this dx_node ("" if it would)."""
    count, limit = countlimit(block, NODE_ENTRIES)
    if limit != node_limit(len(block)):
        return f"limit {limit} != node limit {node_limit(len(block))}"
    return count_problem(count, limit)


def count_problem(count: int, limit: int) -> str:
    return f"count {count} beyond limit {limit}" if not count or count > limit else ""
