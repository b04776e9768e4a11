"""What the volume takes and returns: its options, attributes, statfs, and flag values."""

import errno
from dataclasses import dataclass, field

from simfs.ondisk.constants import MAX_NAME_LEN

#: the longest phase name (Volume.mark, simfs ctl MNT mark), in bytes: a file name's NAME_MAX
MAX_PHASE_NAME = MAX_NAME_LEN

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
XATTR_CREATE = 1
XATTR_REPLACE = 2
ENOATTR = errno.ENODATA


def _readahead_blks(n: int | None) -> None:
    """ext4's parse_options bound for inode_readahead_blks."""
    if n is not None and (n < 0 or n > 1 << 30 or n & (n - 1)):
        raise ValueError(f"{n} (give 0 or a power of two up to 2^30, as ext4)")


@dataclass
class VolumeOptions:
    """Choices that shape a mounted volume; mount options (-o key=value) map onto these fields."""

    # The defaults model one real system, Linux's ext2 (the file system the image is): its block
    # allocator with its Orlov inode placement, asynchronous metadata write-back (Linux's ext2
    # writes inode, bitmap and directory blocks back later, through the page cache; only
    # `-o sync`/`dirsync` make them synchronous) and readdir in on-disk order (no dir_index).
    alloc: str = "ext2"                  # block allocator (see `simfs policies`)
    inode_placement: str = ""            # "" = the allocator's own placement policy
    disk: str = "sata7200"               # disk model preset, with overrides: "sata7200,rpm=5400"
    cache: int = 128 << 20               # buffer cache size in bytes
    writeback: str = "async"             # sync | async | softdep (see simfs.blockio.cache)
    dirorder: str = "linear"             # readdir order: linear | hash | inode | name
    maxio: int = 128 << 10               # largest request clustering and read-ahead build, bytes
    cpu_op_us: float = 10.0              # simulated CPU time charged per operation, microseconds
    sync_interval: float = 30.0          # the syncer's period, simulated seconds
    trace: str = ""                      # write a request trace (CSV) to this path
    stats: str = ""                      # write the final statistics (JSON) here at unmount
    atime: bool = False                  # update access times on read (noatime by default)
    relatime: bool = field(default=False, metadata={"help": (
        "with atime: update a file's access time on read only if it is not later than its "
        "modification or change time, or is a day old (Linux's relatime; the flag `relatime` "
        "sets both, `strictatime` atime alone)")})
    read_only: bool = False
    commit: float = 5.0                  # real seconds the image may trail what was written
    force: bool = False                  # mount read-write although not cleanly unmounted
    read_batch: bool = field(default=False, metadata={"help": (
        "submit a file read's whole window (the blocks asked for and the read-ahead) at once, in "
        "sector order, as Linux's mpage_readpages under a plug and its elevator do; off: one "
        "request after another in file order, waiting for those asked for (FreeBSD's cluster_read)")})
    inode_readahead_blks: int | None = field(default=None, metadata={
        "range": (0, 1 << 30), "check": _readahead_blks, "help": (
        "inode-table blocks read around an inode-table miss (ext4's __ext4_get_inode_loc; 0 = "
        "off; a power of two up to 2^30); default: 32 on an image with ext4's layout (extents or "
        "flex_bg), 0 on an ext2 image")})
    dataless: bool = field(default=False, metadata={"help": (
        "file data is charged and accounted but not stored: it reads as zeros, the image "
        "keeps only metadata (docs/durability.md: Data-less images)")})

class Attr:
    """A file's attributes, as a GETATTR or LOOKUP reply carries them (os.stat_result's names).

    A plain class with __slots__, not a dataclass: every GETATTR, LOOKUP and write builds one,
    and compiled (simfs.compiled) it is an extension type whose fields are fixed slots."""
    __slots__ = ("st_ino", "st_mode", "st_nlink", "st_uid", "st_gid", "st_rdev", "st_size",
                 "st_blocks", "st_blksize", "st_atime_ns", "st_mtime_ns", "st_ctime_ns", "generation")

    def __init__(self, st_ino, st_mode, st_nlink, st_uid, st_gid, st_rdev, st_size, st_blocks,
                 st_blksize, st_atime_ns, st_mtime_ns, st_ctime_ns, generation):
        self.st_ino, self.st_mode, self.st_nlink = st_ino, st_mode, st_nlink
        self.st_uid, self.st_gid = st_uid, st_gid
        self.st_rdev, self.st_size, self.st_blocks, self.st_blksize = st_rdev, st_size, st_blocks, st_blksize
        self.st_atime_ns, self.st_mtime_ns, self.st_ctime_ns = st_atime_ns, st_mtime_ns, st_ctime_ns
        self.generation = generation

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in Attr.__slots__)

    def __eq__(self, other):
        return self._fields() == other._fields() if isinstance(other, Attr) else NotImplemented

    def __repr__(self) -> str:
        return "Attr(" + ", ".join(f"{n}={v!r}" for n, v in zip(Attr.__slots__, self._fields())) + ")"


@dataclass
class StatFS:
    f_bsize: int
    f_frsize: int
    f_blocks: int
    f_bfree: int
    f_bavail: int
    f_files: int
    f_ffree: int
    f_favail: int
    f_namemax: int = MAX_NAME_LEN

