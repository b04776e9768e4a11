"""The ext4 extent tree's on-disk format (Documentation/filesystems/ext4/ifork.rst, fs/ext4/ext4_extents.h).

A node is a 12-byte header (magic 0xF30A, entries, max, depth, generation) and 12-byte
entries: in a leaf (depth 0) extents (first logical block, length, 48-bit start; a length
over 32768 marks an unwritten extent), in an index node index entries (first logical block,
48-bit child block). The root lives in the inode's 60-byte i_block (4 entries); other nodes
fill a block, less the 4-byte tail the checksum would take. `check_node` judges a node as
the kernel's __ext4_ext_check does, so that simfs uses no entry the kernel would refuse.
"""

import struct

MAGIC = 0xF30A
MAX_LEN = 32768              # longest initialized extent (EXT_INIT_MAX_LEN)
MAX_DEPTH = 5                # EXT4_MAX_EXTENT_DEPTH (a 4K-block tree needs at most 4 levels)
ROOT_BYTES = 60              # i_block[15]
_HDR = struct.Struct("<HHHHI")
_ENTRY = struct.Struct("<IHHI")         # extent: block, len, start_hi, start_lo
_INDEX = struct.Struct("<IIHH")         # index: block, leaf_lo, leaf_hi, unused
ENTRY = 12
_N_BLOCKS = struct.Struct("<15I")


def root_max() -> int:
    return (ROOT_BYTES - _HDR.size) // ENTRY          # 4


def block_max(block_size: int) -> int:
    return (block_size - _HDR.size) // ENTRY          # 340 for 4 KiB (the tail left free)


class Node:
    """A decoded node: depth and its entries as (logical block, length, physical block)
    tuples (length is 0 for index entries, whose physical block is the child node)."""

    __slots__ = ("depth", "max", "entries", "generation")

    def __init__(self, depth: int, max_entries: int, entries=None, generation: int = 0):
        self.depth, self.max, self.generation = depth, max_entries, generation
        self.entries: list[tuple[int, int, int]] = entries if entries is not None else []

    @property
    def full(self) -> bool:
        return len(self.entries) >= self.max

    def pack_into(self, buf, length: int) -> None:
        """Write the node into buf[:length] (the rest of that span zeroed)."""
        buf[:length] = bytes(length)
        _HDR.pack_into(buf, 0, MAGIC, len(self.entries), self.max, self.depth, self.generation)
        off = _HDR.size
        if self.depth == 0:
            for lblk, n, phys in self.entries:
                _ENTRY.pack_into(buf, off, lblk, n, phys >> 32, phys & 0xFFFFFFFF)
                off += ENTRY
        else:
            for lblk, _, phys in self.entries:
                _INDEX.pack_into(buf, off, lblk, phys & 0xFFFFFFFF, phys >> 32, 0)
                off += ENTRY


def unpack(buf, length: int) -> tuple[Node | None, str]:
    """(node, "") or (None, why the header cannot be read), as far as the header goes."""
    if length < _HDR.size:
        return None, "node too short"
    magic, entries, max_entries, depth, gen = _HDR.unpack_from(buf, 0)
    if magic != MAGIC:
        return None, f"invalid magic 0x{magic:04x}"
    if max_entries == 0 or max_entries > (length - _HDR.size) // ENTRY:
        return None, f"invalid eh_max {max_entries}"
    if entries > max_entries:
        return None, f"invalid eh_entries {entries} (max {max_entries})"
    node = Node(depth, max_entries, generation=gen)
    off = _HDR.size
    if depth == 0:
        for _ in range(entries):
            lblk, n, hi, lo = _ENTRY.unpack_from(buf, off)
            node.entries.append((lblk, n, hi << 32 | lo))
            off += ENTRY
    else:
        for _ in range(entries):
            lblk, lo, hi, _unused = _INDEX.unpack_from(buf, off)
            node.entries.append((lblk, 0, hi << 32 | lo))
            off += ENTRY
    return node, ""


def check_node(node: Node, depth: int, max_entries: int, first: int, bad_range) -> str:
    """Why this node may not be used ("" if it may), as __ext4_ext_check and
    ext4_valid_extent_entries judge it: its depth is the one expected, eh_max is the node's
    room, an index node is not empty, every block is usable (`bad_range(b, n)` False:
    inside the file system, outside the metadata zones), logical blocks in order, at or past
    the parent's index `first`, and no extent runs past 2^32 blocks."""
    if node.depth != depth:
        return f"unexpected eh_depth {node.depth} (expected {depth})"
    if node.max > max_entries:
        return f"too large eh_max {node.max} (at most {max_entries})"
    if depth and not node.entries:
        return "eh_entries is 0 but eh_depth is > 0"
    prev_end = first
    for i, (lblk, n, phys) in enumerate(node.entries):
        if lblk < prev_end or (i and depth and lblk == prev_end):
            return f"entry {i} at logical block {lblk} out of order"
        if depth == 0:
            length = n - MAX_LEN if n > MAX_LEN else n
            if length == 0 or lblk + length > 1 << 32:
                return f"extent {i} has length {n}"
            if bad_range(phys, length):
                return f"extent {i} maps blocks {phys}..{phys + length - 1}, out of range"
            prev_end = lblk + length
        else:
            if bad_range(phys, 1):
                return f"index {i} points at block {phys}, out of range"
            prev_end = lblk
    return ""


def root_of(block_words) -> tuple[Node | None, str]:
    """The root node held in an inode's i_block (15 words)."""
    raw = _N_BLOCKS.pack(*block_words)
    return unpack(raw, ROOT_BYTES)


def root_words(node: Node) -> list[int]:
    """i_block's 15 words holding this root node: the bytes pack_into writes, read as 15
    little-endian words, built as words (the header and each entry are whole words; every
    extent a file grows stores its root again, so this runs once per block written)."""
    if len(node.entries) > root_max():
        raise ValueError(f"a root holds at most {root_max()} entries, not {len(node.entries)}")
    words = [MAGIC | len(node.entries) << 16, node.max | node.depth << 16, node.generation]
    for lblk, n, phys in node.entries:
        if node.depth:                  # _INDEX: block, leaf_lo, leaf_hi | unused
            words += (lblk, phys & 0xFFFFFFFF, phys >> 32)
        else:                           # _ENTRY: block, len | start_hi, start_lo
            words += (lblk, n | (phys >> 32) << 16, phys & 0xFFFFFFFF)
    return words + [0] * (ROOT_BYTES // 4 - len(words))


def extent_root(blocks: list[int]) -> list[int]:
    """i_block of a small file whose blocks 0, 1, ... are `blocks` (mkfs's root and lost+found):
    one extent per contiguous run, at most the root's four."""
    runs: list[tuple[int, int, int]] = []
    for lblk, phys in enumerate(blocks):
        if runs and runs[-1][2] + runs[-1][1] == phys:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1, runs[-1][2])
        else:
            runs.append((lblk, 1, phys))
    if len(runs) > root_max():
        raise ValueError(f"{len(runs)} extents do not fit the inode")
    return root_words(Node(0, root_max(), runs))
