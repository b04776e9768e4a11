"""ext2 inodes: 128-byte base, and the extra fields of larger inodes (nanosecond times)."""

import os
import stat
import struct

from simfs.ondisk.constants import N_BLOCKS

#: the file types whose block[] holds no block map (has_block_map is false): st_rdev comes from it
_DEVICE_TYPES = frozenset((stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK))

_BASE = struct.Struct("<HHIIIIIHHII4x15IIII4xHHHH4x")
# mode uid size_lo atime ctime mtime dtime gid links blocks_lo flags (osd1) block[15]
# generation file_acl size_high (faddr) blocks_hi file_acl_hi uid_hi gid_hi (checksum_lo, reserved)
# _BASE in the pieces pack writes (offsets 0, 40, 116), so that the skipped words keep their bytes
_HEAD = struct.Struct("<HHIIIIIHHII")
_MIDDLE = struct.Struct("<15IIII")
_TAIL = struct.Struct("<HHHH")
assert _HEAD.size == 36 and _MIDDLE.size == 72 and _BASE.size == 128
_EXTRA = struct.Struct("<HHIIIII")  # extra_isize checksum_hi ctime_extra mtime_extra atime_extra crtime crtime_extra
EXTRA_ISIZE = 32  # covers up to i_projid, as mke2fs writes for 256-byte inodes


def _split_ns(ns: int) -> tuple[int, int]:
    """Seconds (low 32 bits, as stored) and the extra word (nsec << 2 | epoch bits), as Linux does."""
    sec, nsec = divmod(ns, 1_000_000_000)
    if 0 <= sec < 2**31:                         # 1970..2038: no epoch bits
        return sec, nsec << 2
    s32 = ((sec + 2**31) % 2**32) - 2**31
    return sec & 0xFFFFFFFF, (nsec << 2) | (((sec - s32) >> 32) & 3)


def _join_ns(lo: int, extra: int | None) -> int:
    sec = lo - (1 << 32) if lo >= 2**31 else lo  # signed 32-bit
    if extra is None:
        return sec * 1_000_000_000
    sec += (extra & 3) << 32
    return sec * 1_000_000_000 + (extra >> 2)


class Inode:
    """An in-core copy of an on-disk inode. `raw` keeps the bytes we do not interpret."""

    __slots__ = ("ino", "raw", "mode", "uid", "gid", "size", "atime_ns", "ctime_ns", "mtime_ns",
                 "crtime_ns", "dtime", "links", "blocks", "flags", "block", "generation", "file_acl",
                 "incore", "bad", "damaged")

    def __init__(self, ino: int, inode_size: int, raw: bytes | None = None):
        """A zeroed inode of `inode_size` bytes, or the one `raw` holds (see `unpack`)."""
        self.ino = ino
        self.incore = None  # per-inode state of the running volume (allocator hints); never written
        self.bad = ""       # why the inode as read from the image cannot be true (simfs.fs.checks)
        self.damaged = False  # its block map was found damaged (simfs.fs.filemap)
        if raw is None:
            self.raw = bytearray(inode_size)
            self.mode = self.uid = self.gid = self.size = 0
            self.atime_ns = self.ctime_ns = self.mtime_ns = self.crtime_ns = 0
            self.dtime = self.links = self.blocks = self.flags = self.generation = self.file_acl = 0
            self.block = [0] * N_BLOCKS
            return
        # decoded here, where compiled code sets the fields directly (simfs.compiled.slots):
        # every inode read from the image passes through here
        self.raw = bytearray(raw)
        fields = _BASE.unpack_from(raw)
        (mode, uid, size_lo, atime, ctime, mtime, self.dtime, gid, self.links, blocks_lo,
         self.flags) = fields[:11]
        self.block = list(fields[11:11 + N_BLOCKS])
        tail = fields[11 + N_BLOCKS:]
        self.generation = tail[0]
        acl_lo, size_hi, blocks_hi, acl_hi, uid_hi, gid_hi = tail[1:]
        self.mode = mode
        self.uid = uid | uid_hi << 16
        self.gid = gid | gid_hi << 16
        self.size = size_lo | size_hi << 32
        self.blocks = blocks_lo | blocks_hi << 32
        self.file_acl = acl_lo | acl_hi << 32
        a_x = c_x = m_x = None          # the extra words, where the inode has them
        self.crtime_ns = 0
        if len(raw) > 128:
            extra_isize, _, cx, mx, ax, crtime, cr_x = _EXTRA.unpack_from(raw, 128)
            if extra_isize >= 16:
                a_x, c_x, m_x = ax, cx, mx
            if extra_isize >= 24:
                self.crtime_ns = _join_ns(crtime, cr_x)
        self.atime_ns = _join_ns(atime, a_x)
        self.ctime_ns = _join_ns(ctime, c_x)
        self.mtime_ns = _join_ns(mtime, m_x)

    @classmethod
    def unpack(cls, ino: int, raw: bytes) -> "Inode":
        return cls(ino, len(raw), raw)

    def pack(self) -> bytes:
        return bytes(self.packed())

    def packed(self) -> bytearray:
        """The in-core fields written into `raw` (returned, not copied: the inode table
        copies it into its block at once)."""
        # _split_ns inline for the times of 1970..2038 (every put packs three or four)
        a, a_x = divmod(self.atime_ns, 1_000_000_000)
        if 0 <= a < 2**31:
            a_x <<= 2
        else:
            a, a_x = _split_ns(self.atime_ns)
        c, c_x = divmod(self.ctime_ns, 1_000_000_000)
        if 0 <= c < 2**31:
            c_x <<= 2
        else:
            c, c_x = _split_ns(self.ctime_ns)
        m, m_x = divmod(self.mtime_ns, 1_000_000_000)
        if 0 <= m < 2**31:
            m_x <<= 2
        else:
            m, m_x = _split_ns(self.mtime_ns)
        raw = self.raw
        # three pieces around the words the format skips (osd1, faddr, and the checksum and
        # reserved word), which keep their old bytes: _BASE with its "4x" pads, unpacked
        size, blocks, acl = self.size, self.blocks, self.file_acl
        _HEAD.pack_into(raw, 0, self.mode, self.uid & 0xFFFF, size & 0xFFFFFFFF, a, c, m, self.dtime,
                        self.gid & 0xFFFF, self.links, blocks & 0xFFFFFFFF, self.flags)
        _MIDDLE.pack_into(raw, 40, *self.block, self.generation, acl & 0xFFFFFFFF, size >> 32)
        _TAIL.pack_into(raw, 116, (blocks >> 32) & 0xFFFF, (acl >> 32) & 0xFFFF, self.uid >> 16, self.gid >> 16)
        if len(raw) > 128:
            cr, cr_x = _split_ns(self.crtime_ns)
            _EXTRA.pack_into(raw, 128, EXTRA_ISIZE, 0, c_x, m_x, a_x, cr, cr_x)
        return raw

    # convenience -------------------------------------------------------------------------
    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.mode)

    @property
    def is_reg(self) -> bool:
        return stat.S_ISREG(self.mode)

    @property
    def is_symlink(self) -> bool:
        return stat.S_ISLNK(self.mode)

    def is_fast_symlink(self, block_size: int) -> bool:
        """ext2's rule: a symlink with no data block (an xattr block aside) keeps its target inline."""
        if not self.is_symlink:
            return False
        acl_sectors = block_size // 512 if self.file_acl else 0
        return self.blocks - acl_sectors == 0

    @property
    def has_block_map(self) -> bool:
        """Device inodes store their number in block[]; fast symlinks store the target there."""
        return stat.S_IFMT(self.mode) not in _DEVICE_TYPES

    def stat_as(self, make, block_size: int):
        """What a stat reply carries, built by `make` (simfs.fs.types.Attr, handed in by the
        layer above, which this one does not import) from (ino, mode, links, uid, gid, rdev,
        size, blocks, block size, atime, mtime, ctime in ns, generation). Read here, where
        compiled code reaches the fields directly (simfs.compiled.slots), and passed straight
        on, no tuple in between: every GETATTR, LOOKUP, CREATE and SETATTR reply is built here."""
        mode = self.mode
        return make(self.ino, mode, self.links, self.uid, self.gid,
                    self.get_rdev() if mode & 0o170000 in _DEVICE_TYPES else 0,
                    self.size, self.blocks, block_size, self.atime_ns, self.mtime_ns, self.ctime_ns,
                    self.generation)

    # device numbers (Linux ext2 encoding) -------------------------------------------------
    def get_rdev(self) -> int:
        if self.block[0]:
            old = self.block[0]
            return os.makedev((old >> 8) & 0xFF, old & 0xFF)
        new = self.block[1]
        return os.makedev((new & 0xFFF00) >> 8, (new & 0xFF) | ((new >> 12) & 0xFFF00))

    def set_rdev(self, rdev: int) -> None:
        major, minor = os.major(rdev), os.minor(rdev)
        self.block = [0] * N_BLOCKS
        if major < 256 and minor < 256:
            self.block[0] = (major << 8) | minor
        else:
            self.block[1] = (minor & 0xFF) | (major << 8) | ((minor & ~0xFF) << 12)

