"""ext2 group descriptors (32 bytes each)."""

import struct

from simfs.ondisk.constants import GROUP_DESC_SIZE

_GD = struct.Struct("<IIIHHHH")  # block_bitmap, inode_bitmap, inode_table, free_blocks, free_inodes, used_dirs, flags


class GroupDesc:
    __slots__ = ("block_bitmap", "inode_bitmap", "inode_table", "free_blocks", "free_inodes",
                 "used_dirs", "flags", "rest")

    def __init__(self, block_bitmap=0, inode_bitmap=0, inode_table=0, free_blocks=0, free_inodes=0,
                 used_dirs=0, flags=0, rest=bytes(GROUP_DESC_SIZE - _GD.size)):
        self.block_bitmap, self.inode_bitmap, self.inode_table = block_bitmap, inode_bitmap, inode_table
        self.free_blocks, self.free_inodes, self.used_dirs, self.flags = free_blocks, free_inodes, used_dirs, flags
        self.rest = rest

    @classmethod
    def unpack(cls, raw: bytes) -> "GroupDesc":
        return cls(*_GD.unpack_from(raw), rest=bytes(raw[_GD.size:GROUP_DESC_SIZE]))

    def pack(self) -> bytes:
        return _GD.pack(self.block_bitmap, self.inode_bitmap, self.inode_table, self.free_blocks,
                        self.free_inodes, self.used_dirs, self.flags) + self.rest


def unpack_table(raw: bytes, groups: int) -> list[GroupDesc]:
    return [GroupDesc.unpack(raw[i * GROUP_DESC_SIZE:(i + 1) * GROUP_DESC_SIZE]) for i in range(groups)]


def pack_table(descs: list[GroupDesc], block_size: int) -> bytes:
    raw = b"".join(d.pack() for d in descs)
    return raw.ljust(-(-len(raw) // block_size) * block_size, b"\0")
