"""ext2 extended-attribute blocks (feature ext_attr): one block of entries and values per inode."""

import struct

XATTR_MAGIC = 0xEA020000
_HDR = struct.Struct("<IIIII12x")        # magic refcount blocks hash checksum reserved
_ENT = struct.Struct("<BBHIII")          # name_len name_index value_offs value_inum value_size hash
PREFIXES = {b"user.": 1, b"system.posix_acl_access": 2, b"system.posix_acl_default": 3,
            b"trusted.": 4, b"security.": 6}
_INDEX_PREFIX = {v: k for k, v in PREFIXES.items()}


def split_name(full: bytes) -> tuple[int, bytes] | None:
    """(name_index, suffix) for a full attribute name, or None if the namespace is unknown."""
    for prefix, idx in PREFIXES.items():
        if idx in (2, 3):
            if full == prefix:
                return idx, b""
        elif full.startswith(prefix) and len(full) > len(prefix):
            return idx, full[len(prefix):]
    return None


def join_name(index: int, suffix: bytes) -> bytes:
    return _INDEX_PREFIX.get(index, b"") + suffix


def _pad4(n: int) -> int:
    return (n + 3) & ~3


def entry_hash(name: bytes, value: bytes) -> int:
    """ext2_xattr_hash_entry: name bytes, then the value's 32-bit words (zero padded)."""
    h = 0
    for c in name:
        c = c - 256 if c >= 128 else c  # the kernel hashes (signed) char
        h = ((h << 5) ^ (h >> 27) ^ c) & 0xFFFFFFFF
    padded = value.ljust(_pad4(len(value)), b"\0")
    for (w,) in struct.iter_unpack("<I", padded):
        h = ((h << 16) ^ (h >> 16) ^ w) & 0xFFFFFFFF
    return h


def decode(block: bytes) -> dict[bytes, bytes]:
    """Full attribute name -> value. Raises ValueError if the block is not an xattr block."""
    magic, _, nblocks, _, _ = _HDR.unpack_from(block)
    if magic != XATTR_MAGIC or nblocks != 1:
        raise ValueError("not an ext2 extended-attribute block")
    out, off = {}, _HDR.size
    while off + 4 <= len(block) and struct.unpack_from("<I", block, off)[0] != 0:
        name_len, index, voff, vinum, vsize, _ = _ENT.unpack_from(block, off)
        name = bytes(block[off + _ENT.size:off + _ENT.size + name_len])
        if vinum or voff + vsize > len(block):
            raise ValueError("corrupt extended-attribute entry")
        out[join_name(index, name)] = bytes(block[voff:voff + vsize])
        off += _pad4(_ENT.size + name_len)
    return out


def _split_known(full: bytes) -> tuple[int, bytes]:
    """split_name for a name the caller has checked (simfs/fs/xattrs.py refuses the others)."""
    parts = split_name(full)
    if parts is None:
        raise ValueError(f"attribute name {full!r}: unknown namespace")
    return parts


def space_needed(attrs: dict[bytes, bytes]) -> int:
    total = _HDR.size + 4
    for full, value in attrs.items():
        _, suffix = _split_known(full)
        total += _pad4(_ENT.size + len(suffix)) + _pad4(len(value))
    return total


def encode(attrs: dict[bytes, bytes], block_size: int, refcount: int = 1) -> bytes:
    """One xattr block; entries sorted as the kernel sorts them (index, name length, name)."""
    if space_needed(attrs) > block_size:
        raise OverflowError("attributes do not fit in one block")
    items = sorted(((*_split_known(k), v) for k, v in attrs.items()), key=lambda t: (t[0], len(t[1]), t[1]))
    buf = bytearray(block_size)
    off, vend, block_hash = _HDR.size, block_size, 0
    for index, suffix, value in items:
        vend -= _pad4(len(value))
        voff = vend if value else 0
        buf[vend:vend + len(value)] = value
        h = entry_hash(suffix, value)
        _ENT.pack_into(buf, off, len(suffix), index, voff, 0, len(value), h)
        buf[off + _ENT.size:off + _ENT.size + len(suffix)] = suffix
        off += _pad4(_ENT.size + len(suffix))
        block_hash = ((block_hash << 16) ^ (block_hash >> 16) ^ h) & 0xFFFFFFFF
    _HDR.pack_into(buf, 0, XATTR_MAGIC, refcount, 1, block_hash, 0)
    return bytes(buf)
