"""What the volume takes and returns: its options, attributes, statfs, and flag values."""

import errno
from dataclasses import dataclass

from simfs.fs.optionspec import machine_memory, option
from simfs.ondisk.constants import MAX_NAME_LEN

#: the longest phase name (Volume.mark, simfs ctl MNT mark), in bytes: a file name's NAME_MAX
MAX_PHASE_NAME = MAX_NAME_LEN

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
RENAME_WHITEOUT = 4
XATTR_CREATE = 1
XATTR_REPLACE = 2
#: setxattr of an access ACL by a caller neither in the file's group nor privileged: the
#: set-group-ID bit goes (posix_acl_update_mode; FUSE_SETXATTR_ACL_KILL_SGID)
XATTR_ACL_KILL_SGID = 1 << 8
ACL_ACCESS = b"system.posix_acl_access"
ACL_DEFAULT = b"system.posix_acl_default"
ENOATTR = errno.ENODATA


def _allocators():
    from policies import ALLOCATORS
    return ALLOCATORS


def _inode_placers():
    from policies import INODE_PLACERS
    return INODE_PLACERS


def _dir_orders():
    from policies.dirorder import DIR_ORDERS
    return DIR_ORDERS


def _writeback_policies():
    from policies.writeback import WRITEBACK
    return WRITEBACK


def _ioscheds():
    from simfs.blockio.hostqueue import SCHEDULERS
    return list(SCHEDULERS)


def _writeback_orders():
    from simfs.blockio.cache import WRITEBACK_ORDERS
    return list(WRITEBACK_ORDERS)


def _disk_model(spec: str) -> None:
    """Build the model: catches what only building it finds (a geometry that does not fit)."""
    from disk_models import make_disk
    make_disk(spec)


def _readahead_blks(n: int | None) -> None:
    """ext4's parse_options bound for inode_readahead_blks."""
    if n is not None and (n < 0 or n > 1 << 30 or n & (n - 1)):
        raise ValueError(f"{n} (give 0 or a power of two up to 2^30, as ext4)")


@dataclass
class VolumeOptions:
    """Choices that shape a mounted volume; mount options (-o key=value) map onto these fields.
    Each option's type, help, unit, range and check are declared here (simfs.fs.optionspec)."""

    # The defaults model one real system, Linux's ext2 (the file system the image is): its block
    # allocator with its Orlov inode placement, asynchronous metadata write-back (Linux's ext2
    # writes inode, bitmap and directory blocks back later, through the page cache; only
    # `-o sync`/`dirsync` make them synchronous) and readdir in on-disk order (no dir_index).
    alloc: str = option("ext2", "block allocator (see `simfs policies`)", registry=_allocators)
    inode_placement: str = option("", "inode placement policy; empty: the allocator's own",
                                  registry=_inode_placers)
    disk: str = option("sata7200", "disk model preset, with overrides: sata7200,rpm=5400 "
                                   "(see `simfs disks`)", check=_disk_model, suboptions=True)
    # cache: the buffer cache keeps at least 64 blocks whatever it is told (64K of 1K blocks)
    cache: int = option(128 << 20, "buffer cache size", unit="bytes", range=(64 << 10, machine_memory))
    writeback: str = option("async", "write-back policy (see simfs.blockio.cache)", registry=_writeback_policies)
    dirorder: str = option("linear", "readdir order", registry=_dir_orders)
    # maxio: a number of blocks of any block size (a remainder would be dropped without a word)
    maxio: int = option(128 << 10, "largest request clustering and read-ahead build", unit="bytes",
                        range=(4 << 10, 64 << 20), multiple=4 << 10)
    cpu: str = option("kernel", (
        "CPU charged per operation: kernel (what Linux's own system calls spend, measured per kind, "
        "scaled to the seeds' 2011 CPUs; = kernel-2011), kernel-host (unscaled: the measuring "
        "machine's), flat (cpu_op_us, 10 us, for every operation; docs/statistics.md: CPU time)"),
        choices=["kernel", "kernel-2011", "kernel-host", "flat"])
    cpu_op_us: float | None = option(None, "a flat simulated CPU time for every operation, whatever "
                                           "`cpu` says (cpu=flat without it: 10)", unit="microseconds",
                                     range=(0.0, 1e6))
    sync_interval: float = option(30.0, "the syncer's period (it must run)", unit="simulated seconds",
                                  range=(0.01, 86400.0))
    trace: str = option("", "write a request trace (CSV) to this path", path=True)
    stats: str = option("", "write the final statistics (JSON) here at unmount", path=True)
    atime: bool = option(False, "update access times on read (noatime by default)")
    relatime: bool = option(False, (
        "with atime: update a file's access time on read only if it is not later than its "
        "modification or change time, or is a day old (Linux's relatime; the flag `relatime` "
        "sets both, `strictatime` atime alone)"))
    read_only: bool = option(False, "mount read-only (also: ro / rw)")
    commit: float = option(5.0, "how long the image may trail what was written", unit="real seconds",
                           range=(0.05, 86400.0))
    force: bool = option(False, "mount read-write although not cleanly unmounted")
    read_batch: bool = option(False, (
        "submit a file read's whole window (the blocks asked for and the read-ahead) at once, in "
        "file order under the plug, as Linux's mpage_readpages does; the order the drive sees is "
        "iosched's (none: file order; name the era's scheduler: cfq for 2.6, mq-deadline for a 6.x "
        "disk); off: one request after another in file order, waiting for those asked for "
        "(FreeBSD's cluster_read)"))
    # the host's request queue (simfs.blockio.hostqueue; docs/host-queue.md): names as sysfs's
    # /sys/block/DEV/queue/{scheduler,nr_requests,max_sectors_kb}
    iosched: str = option("none", (
        "the block layer's I/O scheduler: none (blk-mq without one: merges with the newest plugged "
        "request, submission order), mq-deadline (6.x's default for a rotating disk: sector order "
        "from the last position, reads first, expiry), 2.6's noop, deadline and cfq (one process's "
        "queues: the nearest request, backward seeks counted double, the fifo once a slice), "
        "FreeBSD's disksort (bioq_disksort: a one-way sweep, no merging); "
        "default none: the order the cache submits in"), choices=_ioscheds)
    writeback_order: str = option("block", (
        "the order the buffer cache's own write-back batches (syncer, dirty thresholds, eviction, "
        "fsync, sync) leave it in: block (sorted by block by the cache, adjacent blocks of any "
        "file joined), linux (the flusher: inode by inode, oldest dirtied first, pages ascending, "
        "metadata as the block device's pages), freebsd (the syncer: vnode by vnode, buffers by "
        "logical block, only a regular file's data clustered); default block"),
        choices=_writeback_orders)
    nr_requests: int = option(128, (
        "requests the block layer's queue holds (merged and sorted together); a submitter finding "
        "none free flushes its plug. 2.6.x: 128 (BLKDEV_MAX_RQ); 6.x with a scheduler: 2 x "
        "min(host tags, 128), 64 for a SATA host"), unit="requests", range=(4, 2048))
    max_sectors_kb: int | None = option(None, (
        "largest request the block layer merges bios into; default: maxio (no request grows past "
        "what the cache builds, as FreeBSD, whose MAXPHYS is 128K). Linux 2.6.x: 512 "
        "(BLK_DEF_MAX_SECTORS = 1024 sectors); 4.4-6.16: 1280 (2560); 6.17 on: 4096"),
        unit="KiB", range=(4, 32768), multiple=4)
    inode_readahead_blks: int | None = option(
        None, "inode-table blocks read around an inode-table miss (ext4's __ext4_get_inode_loc; "
              "0 = off; a power of two up to 2^30); default: 32 on an image with ext4's layout "
              "(extents or flex_bg), 0 on an ext2 image", unit="blocks", range=(0, 1 << 30),
        check=_readahead_blks)
    htree: bool | None = option(
        None, "keep directories past one block as hash trees (ext4's dir_index: root, node and "
              "leaf blocks, lookups through the index), on an image with the dir_index feature; "
              "off: ext2's linear directories, whose writes clear an index the image had; default: "
              "on for an image with ext4's layout (extents or flex_bg), off on an ext2 image")
    acl: bool = option(False, "POSIX ACLs, as ext2's `acl` mount option: system.posix_acl_access/"
                              "_default stored in ext2's format, enforced by the kernel, kept in "
                              "step with the mode, inherited on create (docs/ext2-differences.md: "
                              "one difference with umask); without it (noacl) they are refused "
                              "with EOPNOTSUPP")
    dataless: bool = option(False, (
        "file data is charged and accounted but not stored: it reads as zeros, the image "
        "keeps only metadata (docs/durability.md: Data-less images)"))
    clocks: str = option("mount", (
        "simulated clocks of a mount: mount (one clock, requests timed one after another in "
        "arrival order) or process (one per process: concurrent processes' time overlaps, the "
        "drive is shared; docs/concurrency.md)"), choices=["mount", "process"])


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

