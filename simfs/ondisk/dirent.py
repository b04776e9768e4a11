"""Linear ext2 directory blocks: entries of (inode, rec_len, name_len, file_type, name)."""

import struct

_HDR = struct.Struct("<IHBB")


def rec_len_for(name_len: int) -> int:
    """The smallest record that holds a name: 8 header bytes plus the name, 4-byte aligned."""
    return (8 + name_len + 3) & ~3


def iter_block(block: bytes, filetype: bool = True):
    """Yield (offset, ino, rec_len, name, file_type) for every record, live or not (ino 0).

    Raises ValueError on a record that would run off the block or loop forever.
    """
    off, size = 0, len(block)
    while off < size:
        if off + 8 > size:
            raise ValueError(f"directory record header at {off} runs off the block")
        ino, rec_len, name_len, ftype = _HDR.unpack_from(block, off)
        if not filetype:
            ftype = 0           # (the byte is ignored: ext2, ext4 and e2fsck read name_len's low byte)
        if rec_len < 8 or rec_len % 4 or off + rec_len > size or 8 + name_len > rec_len:
            raise ValueError(f"corrupt directory record at offset {off} (rec_len {rec_len})")
        yield off, ino, rec_len, bytes(block[off + 8:off + 8 + name_len]), ftype
        off += rec_len


def put(buf: bytearray, off: int, ino: int, rec_len: int, name: bytes, ftype: int) -> None:
    """Write one record at off; the bytes after the name up to rec_len are zeroed."""
    _HDR.pack_into(buf, off, ino, rec_len, len(name), ftype)
    buf[off + 8:off + 8 + len(name)] = name
    buf[off + 8 + len(name):off + rec_len] = bytes(rec_len - 8 - len(name))


def set_rec_len(buf: bytearray, off: int, rec_len: int) -> None:
    struct.pack_into("<H", buf, off + 4, rec_len)


def set_inode(buf: bytearray, off: int, ino: int, ftype: int | None = None) -> None:
    struct.pack_into("<I", buf, off, ino)
    if ftype is not None:
        buf[off + 7] = ftype


def empty_block(block_size: int) -> bytearray:
    buf = bytearray(block_size)
    _HDR.pack_into(buf, 0, 0, block_size, 0, 0)
    return buf


def new_dir_block(block_size: int, ino: int, parent: int, filetype: bool = True) -> bytearray:
    """The first block of a new directory: "." and ".." with the rest of the block in "..". """
    from simfs.ondisk.constants import FT_DIR
    buf = bytearray(block_size)
    ft = FT_DIR if filetype else 0
    put(buf, 0, ino, 12, b".", ft)
    put(buf, 12, parent, block_size - 12, b"..", ft)
    return buf
