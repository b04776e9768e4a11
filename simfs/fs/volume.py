"""The volume: every POSIX file-system operation in terms of inodes and blocks.

No FUSE here: the FUSE front end (simfs.fuse.operations) is a thin translation onto these methods, and
tests, replays and benchmarks drive a Volume in-process. Names are bytes; errors are
FSError(errno). The volume does no permission checks (the kernel does, with
default_permissions); ownership, modes, times and link counts are its job.

`Volume.open(path, options)` opens an image, after checking the options as the mount checks
them (simfs.fs.optionspec: an in-process caller gets the mount's one-line OptionError).

The image's clean state follows the kernel's ext2: "not clean" while mounted read-write, and
at unmount the state found at mount (an unchecked file system stays unchecked). An image that
was not cleanly unmounted, or has errors recorded, is refused read-write unless
`force` is given. What the tools wrote reaches the image in consistent commits at most
`commit` real seconds apart (simfs.blockio.imagefile), independent of the modelled write-back.
With `dataless` the image keeps metadata only: file data is charged and counted as usual but
reads as zeros; the superblock's mount options remember it (a later normal mount warns).

The operations live by job in mixins (namespace, fileio, xattrs, inspect, holds: the kernel's
references and open files); this module holds the parts they share — the image, the cache and
clock, the maps, the policies — and opening, closing, syncing, and the control operations.
"""

import errno
import fcntl
import json
import logging
import os
import stat
import time
import weakref

import disk_models

from policies import make_allocator, make_inode_placer
from policies.dirorder import make_dir_order
from policies.writeback import make_writeback
import simfs.outfile as outfile
from simfs.blockio.cache import BufferCache
from simfs.blockio.clock import SimClock
from simfs.blockio.imagefile import ImageFile, JournalError, journal_path, pending_journal, recover
from simfs.blockio.stats import Stats
from simfs.blockio.trace import TraceWriter
from simfs.errors import FSError, ImageError, ImageWriteError, OutputError
from simfs.fs import cpucost
from simfs.fs.checks import Checks, zone_overlap
from simfs.fs.delalloc import DelayedAllocation
from simfs.fs.directory import Directories
from simfs.fs.fileio import FileIO
from simfs.fs.filemap import FileMap
from simfs.fs.htree import HTree, wanted as htree_wanted
from simfs.fs.freespace import FreeSpace
from simfs.fs.holds import Holds
from simfs.fs.inodes import InodeTable, readahead_options
from simfs.fs.inspection import Inspection
from simfs.fs.namespace import Namespace, RecentlyFreed
from simfs.fs.operation import OperationCharger
from simfs.fs.optionspec import check_options
from simfs.fs.placement import Placement
from simfs.fs.types import (  # noqa: F401  (re-exported: callers import them from here)
    ENOATTR, MAX_PHASE_NAME, RENAME_EXCHANGE, RENAME_NOREPLACE, XATTR_CREATE, XATTR_REPLACE, Attr, StatFS,
    VolumeOptions,
)
from simfs.fs.xattrs import Xattrs
from simfs.ondisk.constants import (
    ERRORS_CONTINUE, FIRST_INO, INCOMPAT_FILETYPE, ROOT_INO, RO_COMPAT_LARGE_FILE, STATE_ERROR, STATE_VALID,
    SUPERBLOCK_OFFSET, ext2_max_size, ext4_max_size,
)
from simfs.ondisk.dirhash import DirHasher
from simfs.ondisk.groupdesc import unpack_table
from simfs.ondisk.superblock import Geometry, Superblock

log = logging.getLogger("simfs.fs.volume")
_CLOCK_REALTIME_COARSE = getattr(time, "CLOCK_REALTIME_COARSE", 5)   # 5 in Linux's <time.h>
_EXT4_ERR_EFSCORRUPTED = 5      # s_first/last_error_errcode (ext4.h EXT4_ERR_EFSCORRUPTED)


def _weak_reporter(method):
    """The volume's error recorder for its parts, holding the volume weakly."""
    ref = weakref.WeakMethod(method)

    def report(what: str, ino: int = 0, block: int = 0, func: str = "") -> None:
        fs_error = ref()
        if fs_error is not None:
            fs_error(what, ino=ino, block=block, func=func)
    return report


def _live(inode) -> bool:
    """Whether an inode's own fields say it is in use (links, a file type), whatever its
    bitmap bit says: ext2 reads an inode a name leads to without asking the bitmap."""
    return inode.links > 0 and stat.S_IFMT(inode.mode) != 0 and not inode.dtime


def _is_clean(sb: Superblock) -> bool:
    return bool(sb.state & STATE_VALID) and not sb.state & STATE_ERROR


def _unclean_reason(sb: Superblock) -> str:
    if sb.state & STATE_ERROR:
        return "file system has errors recorded"
    return "file system was not cleanly unmounted (a crash, or still mounted elsewhere)"


def _mount_warnings(sb: Superblock) -> list[str]:
    """What the kernel's ext2_setup_super warns about when mounting."""
    out = []
    if not sb.state & STATE_VALID:
        out.append("mounting unchecked fs, running e2fsck is recommended")
    if sb.state & STATE_ERROR:
        out.append("mounting fs with errors, running e2fsck is recommended")
    if sb.max_mnt_count > 0 and sb.mnt_count >= sb.max_mnt_count:
        out.append("maximal mount count reached, running e2fsck is recommended")
    if sb.checkinterval and sb.lastcheck + sb.checkinterval <= time.time():
        out.append("checktime reached, running e2fsck is recommended")
    return out


class Volume(Namespace, FileIO, Xattrs, Inspection, Holds):
    root_ino = ROOT_INO

    def __init__(self, path, fd, sb: Superblock, options: VolumeOptions):
        self.path = str(path)
        self.fd = fd
        self.sb = sb
        self.options = options
        self.geo = geo = Geometry(sb)
        self.block_size = geo.block_size
        # the policies and the disk model first: a bad name (or package.module:Class) is
        # refused before anything of the image is touched
        self.disk = disk_models.make_disk(options.disk)
        writeback = make_writeback(options.writeback)
        allocator = make_allocator(options.alloc)
        self.placer = make_inode_placer(options.inode_placement or allocator.placer)
        self.dirorder = make_dir_order(options.dirorder)
        self.stats = Stats()
        self.trace = TraceWriter(options.trace) if options.trace else None
        self.clock = SimClock(self.disk, self.stats, geo.block_size // 512, self.trace)
        self.cpu_op, cpu_era = cpucost.model(options)     # flat seconds, or the kernel's era
        self.image = ImageFile(self.path, fd, geo.block_size, writable=not options.read_only,
                               commit_interval=options.commit, dataless=options.dataless)
        self.cache = BufferCache(self.image, geo.block_size, options.cache // geo.block_size, self.stats, self.clock,
                                 writeback=writeback, maxio_blocks=options.maxio // geo.block_size,
                                 sync_interval=options.sync_interval, iosched=options.iosched,
                                 writeback_order=options.writeback_order,
                                 nr_requests=options.nr_requests,
                                 max_request_blocks=(options.max_sectors_kb << 10) // geo.block_size
                                 if options.max_sectors_kb else None)
        self.ops = OperationCharger(self.clock, self.cache, self.stats, self.cpu_op,
                                    None if cpu_era is None else cpucost.KernelCharge(cpu_era))
        # the superblock's block and the descriptor table, read as the mount reads them and
        # held to the unmount (ext4_load_super's s_sbh, ext4_group_desc_init's s_group_desc[];
        # Linux's ext2 and FreeBSD's ext2fs also keep them from mount on): never read again
        self.cache.hold(geo.first_data_block, 1, "super")
        self.cache.hold(geo.first_data_block + 1, geo.gdt_blocks, "gdt")
        gdt = self.cache.peek(geo.first_data_block + 1, geo.gdt_blocks)
        self.descs = unpack_table(gdt, geo.groups)
        self._check_descs()
        if sb.feature_ro_compat & RO_COMPAT_LARGE_FILE:   # i_blocks counts 512-byte sectors in 32 bits
            self.max_size = ext2_max_size(geo.block_size, geo.huge_file)
        else:
            self.max_size = 2**31 - 1
        extent_max = ext4_max_size(geo.block_size, geo.huge_file) if geo.extents else self.max_size
        self.checks = Checks(geo, self.descs, self.max_size, extent_max)
        self.max_size = extent_max          # (new files are extent-mapped with the feature)
        self.space = FreeSpace(geo, self.descs, self.cache, self.stats, self.checks)
        self.placement = Placement(allocator, self.space, geo)
        self.inodes = InodeTable(geo, self.descs, self.cache, checks=self.checks,
                                 **readahead_options(sb, options.inode_readahead_blks))
        root = self.inodes.peek(ROOT_INO)
        if root.bad or not (root.is_dir and root.blocks and root.size and root.links):     # ext2_fill_super refuses it so
            raise ImageError(f"{self.path}: corrupt root inode: run `simfs fsck --repair {self.path}`")
        self.inodes.pin(ROOT_INO)           # read at mount and held by the mount's root dentry
        self.inodes.get(ROOT_INO)           # (ext4_fill_super's ext4_iget, sb->s_root) to the end
        self.filemap = FileMap(geo, self.cache, self.space, self.placement, self.inodes)
        self.hasher = DirHasher.from_superblock(sb.def_hash_version, sb.flags, sb.hash_seed)
        filetype = bool(sb.feature_incompat & INCOMPAT_FILETYPE)
        htree = (HTree(geo, self.cache, self.filemap, self.inodes, self.checks, sb.def_hash_version, sb.flags,
                       sb.hash_seed, filetype) if htree_wanted(sb, options.htree) else None)
        self.dirs = Directories(geo, self.cache, self.filemap, self.inodes, filetype=filetype,
                                indexed=not self.dirorder.slot_order, htree=htree)
        self.delalloc = DelayedAllocation(geo, self.space, self.filemap, self.placement, self.inodes,
                                          self.cache, self.stats)
        if self.placement.delayed:
            self.cache.placer = self.delalloc
        self.holds: dict[int, int] = {}         # inode -> kernel references and open files
        self.handles: dict[int, int] = {}       # inode -> open files
        self.orphans: set[int] = set()          # unlinked here, freed when the last hold goes
        self.stale: dict[int, tuple[int, Attr]] = {}    # freed inode -> (references the kernel
                                                        # still holds, its last attributes)
        self.freed_recently = RecentlyFreed()       # (_choose_inode)
        self.generation_key = bytes(sb.uuid) + bytes(sb.hash_seed)     # new inodes' i_generation
        self.closed = False
        self._durable_asked = False                     # an fsync waits for the next commit
        #: a run with nobody to free space on the image's host and nothing to wait for (verbs,
        #: replay): the first commit the host refuses ends it (ImageWriteError out of the
        #: operation), instead of changes refused until a later commit succeeds (a mount)
        self.stop_when_unwritable = False
        self.mount_state = sb.state          # written back at unmount, as the kernel does
        self.warnings = _mount_warnings(sb)
        if options.htree and htree is None:
            self.warnings.append("htree: the image has no dir_index feature: directories stay linear")
        if sb.dataless and not options.dataless:
            self.warnings.append("image was mounted data-less before: file data written then "
                                 "was not stored (reads as zeros)")
        if not options.read_only:
            sb.state &= ~STATE_VALID       # "not clean" while mounted, as the kernel marks it
            sb.mnt_count = (sb.mnt_count + 1) & 0xFFFF
            sb.mtime = int(time.time())
            self._write_super()
            self.cache.sync()
            try:
                self.commit()              # the image says "not clean" before any change
            except ImageWriteError as e:
                self.image.close()
                raise ImageError(f"{path}: cannot be written ({os.strerror(e.errno)}): make room on "
                                 "its file system first, or mount it read-only (-o ro)") from None
        self._errors_logged = 0
        self.checks.report = _weak_reporter(self.fs_error)   # (no cycle: a closed volume goes at once)
        for what, ino, block, func in self.checks.pending:
            self.fs_error(what, ino=ino, block=block, func=func)
        self.checks.pending = []

    # opening and closing -----------------------------------------------------------------
    @classmethod
    def open(cls, path, options: VolumeOptions | None = None) -> "Volume":
        """The volume on the image at `path`. The options are held to what the mount takes
        first, with its one-line OptionError, before the image is touched."""
        options = options or VolumeOptions()
        check_options(options)
        name = os.fspath(path)
        try:
            fd = os.open(name, os.O_RDONLY if options.read_only else os.O_RDWR)
        except FileNotFoundError:
            raise ImageError(f"{name}: no such image file") from None
        except IsADirectoryError:
            raise ImageError(f"{name}: is a directory, not an image file") from None
        except OSError as e:
            raise ImageError(f"{name}: cannot open image: {e.strerror}") from None
        if stat.S_ISDIR(os.fstat(fd).st_mode):          # (read-only, a directory opens)
            os.close(fd)
            raise ImageError(f"{name}: is a directory, not an image file")
        try:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if options.read_only else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ImageError(f"{name}: image already in use (mounted by another simfs?)") from None
            cls._recover(name, fd, options)
            size = os.fstat(fd).st_size
            raw = os.pread(fd, 1024, SUPERBLOCK_OFFSET)
            if len(raw) < 1024:
                raise ImageError(f"{name}: not an ext2 file system (file is only {size} bytes)")
            sb = Superblock(raw)
            sb.validate(name, size)
            if not options.read_only and not options.force and not _is_clean(sb):
                raise ImageError(f"{name}: {_unclean_reason(sb)}: run `simfs fsck --repair {name}` "
                                 "first, or mount with -o force (or -o ro) to use it as it is")
            return cls(name, fd, sb, options)
        except BaseException:
            os.close(fd)
            raise

    @staticmethod
    def _recover(name: str, fd: int, options: VolumeOptions) -> None:
        """Finish a commit a crash interrupted (the journal beside the image), before
        anything of the image is read."""
        state = pending_journal(name)
        if state is None:
            return
        if options.read_only:
            raise ImageError(f"{name}: a commit was interrupted ({journal_path(name)}): mount it "
                             f"read-write once or run `simfs fsck --repair {name}` to finish it")
        try:
            n = recover(name, fd)
        except JournalError as e:
            raise ImageError(str(e)) from None
        log.warning("%s: %s", name, f"finished an interrupted commit ({n} records from the journal)"
                    if n else "discarded a torn journal (the image is as of the commit before)")

    def _check_descs(self) -> None:
        """Refuse a corrupt superblock or descriptor table (or an image the disk model cannot
        hold) before anything is written, with the reason; Volume.open closes the image."""
        geo, sb, name = self.geo, self.sb, self.path

        def corrupt(what: str):
            raise ImageError(f"{name}: corrupt {what}")
        if sb.r_blocks_count > sb.blocks_count:
            corrupt(f"superblock (reserved block count {sb.r_blocks_count} > block count {sb.blocks_count})")
        if sb.free_blocks_count > sb.blocks_count:
            corrupt(f"superblock (free block count {sb.free_blocks_count} > block count {sb.blocks_count})")
        if not FIRST_INO <= sb.first_ino <= sb.inodes_count:
            corrupt(f"superblock (first inode {sb.first_ino}, of {sb.inodes_count})")
        if sb.free_inodes_count > sb.inodes_count:
            corrupt(f"superblock (free inode count {sb.free_inodes_count} > inode count {sb.inodes_count})")
        for g, d in enumerate(self.descs):
            start, end = geo.group_start(g), geo.group_start(g) + geo.group_blocks(g)
            first, last = geo.table_bounds(g)
            zone = "blocks flex_bg allows," if geo.flex_bg else "group's blocks"
            spans = sorted([(d.block_bitmap, 1, "block bitmap"), (d.inode_bitmap, 1, "inode bitmap"),
                            (d.inode_table, geo.inode_table_blocks, "inode table")])
            for b, n, what in spans:
                if not (first <= b and b + n <= last):
                    corrupt(f"group descriptor {g} ({what} at block {b}, outside the "
                            f"{zone} {first}..{last - 1})")
            for (b, n, what), (b2, _, what2) in zip(spans, spans[1:]):
                if b + n > b2:
                    corrupt(f"group descriptor {g} ({what} at block {b} overlaps the {what2} at block {b2})")
            if d.free_blocks > end - start:
                corrupt(f"group descriptor {g} ({d.free_blocks} free blocks in a group of {end - start})")
            if d.free_inodes + d.used_dirs > geo.inodes_per_group:
                corrupt(f"group descriptor {g} ({d.free_inodes} free inodes and {d.used_dirs} directories "
                        f"in a group of {geo.inodes_per_group} inodes)")
        overlap = zone_overlap(geo, self.descs)
        if overlap:
            corrupt(f"group descriptors ({overlap})")
        need = sb.blocks_count * geo.sectors_per_block
        if need > self.disk.sectors:
            raise ImageError(f"{name}: the file system ({need} sectors) does not fit the disk model "
                             f"{self.options.disk} ({self.disk.sectors} sectors); give it a larger capacity=")

    def close(self) -> None:
        """Free orphans, write every dirty structure back, put back the state found at mount
        (clean if it was clean and no error was seen), commit, unlock. If the image cannot
        be written (ImageWriteError, raised on) it is closed and unlocked all the same, as it
        was at its last commit (marked "not clean", as at mount), or with the journal that
        completes it."""
        if self.closed:
            return
        before = (self.clock.now, self.stats.totals(), self.stats.disk_busy())
        try:
            if self.image.writable:
                self.sync()                      # places delayed blocks
                self.stale.clear()
                for ino in list(self.holds):
                    self.holds[ino] = 1
                    self.drop(ino)
                self.sb.state = self.mount_state
                self.sync()
        except ImageWriteError:
            self._release()
            raise
        self._release()
        self.unmount_stats = self.stats.since(*before, self.clock.now)   # the final write-back
        if self.options.stats:
            try:
                outfile.write_whole(self.options.stats,
                                    json.dumps(self.stats_snapshot(), indent=1).encode())
            except OSError as e:
                raise OutputError(e.errno, f"cannot write the stats file {self.options.stats}: "
                                           f"{e.strerror or e} (the image is written back)") from None
        if self.trace is not None and self.trace.error:
            raise OutputError(errno.EIO, self.trace.error + " (the image is written back)")

    def _release(self) -> None:
        """The image file, its journal and the trace closed; the image unlocked."""
        self.closed = True
        self.image.close()
        os.close(self.fd)
        if self.trace is not None:
            self.trace.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def sync(self) -> None:
        """Write everything back and wait until it is on the media (the model), and commit
        it to the image (real)."""
        start = self.clock.now
        self._write_super()
        self.cache.sync()
        self.stats.op("sync", self.clock.now - start, self.clock.now)
        self.commit()

    def commit(self) -> None:
        """Make the image hold everything written so far (no simulated time passes).

        If the image file cannot be written (ImageWriteError: its host file system is full,
        say), the error goes on, and until a commit succeeds every change is refused with its
        errno (ENOSPC: "No space left on device"): what was written stays in memory, nothing
        is dropped, and a later commit (retried every `commit` seconds) writes it all."""
        self.inodes.pack()
        self.space.pack()
        if self.image.writable:
            sb = self.sb
            sb.free_blocks_count = self.space.free_blocks
            sb.free_inodes_count = self.space.free_inodes
            if self.image.drops_data:          # in the commit before the first data is dropped:
                sb.mark_dataless()             # a data-less run that writes no data marks nothing
            self.image.note_bytes(SUPERBLOCK_OFFSET, sb.pack())
            failed = self.unwritable
            self.image.commit()
            if failed is not None:
                log.warning("%s written again: changes are accepted", self.path)

    @property
    def unwritable(self) -> ImageWriteError | None:
        """Why the last commit could not be written (changes are refused meanwhile), or None."""
        return self.image.failure

    def commit_if_due(self) -> None:
        """Commit if one is owed (called between requests, and by every operation at its end).
        An image that cannot be written is logged here (once) and refuses changes meanwhile;
        only an fsync waiting for this commit fails with it (`stop_when_unwritable`: it ends
        the run instead)."""
        ops = self.ops
        if not ops.depth and (ops.commit_asked or self.image.due()):
            durable, ops.commit_asked, self._durable_asked = self._durable_asked, False, False
            first = self.unwritable is None
            try:
                self.commit()
            except ImageWriteError as e:
                if self.stop_when_unwritable:
                    raise
                if first:
                    log.error("%s; changes are refused (%s) until a commit succeeds, what was "
                              "written is kept in memory meanwhile", e.strerror,
                              errno.errorcode.get(e.errno, e.errno))
                if durable:
                    raise FSError(e.errno or errno.EIO, str(e.strerror)) from None

    def commit_soon(self, durable: bool = False) -> None:
        """Commit at the end of the current operation (a recorded error; with `durable`, an
        fsync: the operation fails if the commit does)."""
        self.ops.commit_asked = True
        self._durable_asked |= durable
        self.commit_if_due()

    def fs_error(self, what: str, ino: int = 0, block: int = 0, func: str = "") -> None:
        """Record a detected inconsistency as the kernel's ext2_error / ext4's __ext4_error do:
        the error state and the superblock's error record (count, first and last error:
        time, inode, block, function) go to the image now, so that it is not marked clean at
        unmount and e2fsck checks it next time; the superblock's errors behaviour applies
        (continue, or remount read-only; panic is taken as remount read-only). The log names
        the first 100 errors of a mount (the kernel rate-limits its messages)."""
        self._errors_logged = n = getattr(self, "_errors_logged", 0) + 1
        if n <= 100:
            log.error("file system error: %s", what)
        elif n == 101:
            log.error("more file system errors: not logged (the superblock counts them)")
        if not self.image.writable:
            return
        self.mount_state |= STATE_ERROR
        self.sb.state |= STATE_ERROR
        self.sb.record_error(int(time.time()), func or "simfs", ino, block, _EXT4_ERR_EFSCORRUPTED)
        if self.sb.errors != ERRORS_CONTINUE and not self.options.read_only:
            log.error("errors behaviour %d: remounting read-only", self.sb.errors)
            self.options.read_only = True
        self.commit_soon()

    # control (the /.simfs/ directory) --------------------------------------------------------
    def drop_caches(self) -> None:
        """Write back, then forget every cached block, inode and directory index, and what the
        drive's buffer holds: cold cache, but for what the kernel's drop_caches cannot free
        either: the superblock and descriptor buffers the mount holds (`BufferCache.hold`) and
        the root inode, which the mount's root dentry (sb->s_root) keeps in core."""
        self.sync()
        self.cache.drop_clean()                # and, through the clock, the drive's buffer
        self.inodes.drop_all(keep=(self.root_ino,))   # (held inodes too: read again at next use)
        self.dirs.indexes.clear()
        self.dirs.indexed_entries = 0

    def mark(self, name: str) -> None:
        """Start a named phase: counters from here on are kept apart. The name heads a column
        of every statistics table and names trace rows: one line, at most MAX_PHASE_NAME bytes
        (EINVAL otherwise)."""
        if not name.strip() or "\n" in name or len(name.encode(errors="surrogateescape")) > MAX_PHASE_NAME:
            raise FSError(errno.EINVAL, f"a phase name is one line of 1 to {MAX_PHASE_NAME} bytes")
        self.stats.mark(name, self.clock.now)

    def reset_stats(self) -> None:
        self.stats.reset(self.clock.now)

    def stats_snapshot(self) -> dict:
        """The `time` section of /.simfs/stats; once closed, with `unmount`: the final write-back."""
        extra = {"unmount": self.unmount_stats} if getattr(self, "unmount_stats", None) else {}
        return self.stats.snapshot(self.clock.now, {**extra,
            "disk": self.options.disk, "alloc": self.placement.name, "writeback": self.options.writeback,
            "dirorder": self.dirorder.name,
            "block_size": self.block_size, "dirty_blocks": self.cache.ndirty,
            "cached_blocks": len(self.cache)})

    def _write_super(self) -> None:
        sb = self.sb
        sb.free_blocks_count = self.space.free_blocks
        sb.free_inodes_count = self.space.free_inodes
        sb.wtime = int(time.time())
        if self.block_size == 1024:
            self.cache.write(1, sb.pack(), "super")
        else:
            buf = self.cache.bread(0, "super")
            buf[SUPERBLOCK_OFFSET:SUPERBLOCK_OFFSET + 1024] = sb.pack()
            self.cache.mark_dirty(0, buf, "super")

    # helpers -----------------------------------------------------------------------------
    def _now(self) -> int:
        """Time stamps from the kernel's own clock (coarse, like current_time()), so a
        utimensat(UTIME_NOW), whose "now" the kernel supplies, is never earlier than a
        time simfs set a moment before."""
        return time.clock_gettime_ns(_CLOCK_REALTIME_COARSE)

    def _count(self, key: str, n: int = 1) -> None:
        self.stats.count(key, n)

    @property
    def counters(self) -> dict[str, int]:
        """Totals of every counter over all phases."""
        return self.stats.totals()

    def _inode(self, ino: int):
        if not 1 <= ino <= self.geo.inodes_count:
            raise FSError(errno.ENOENT)
        if not self.space.inode_in_use[ino - 1] and not _live(self.inodes.peek(ino, False)):
            raise FSError(errno.ENOENT)     # (one in use whose bit is clear is served, as by ext2)
        inode = self.inodes.get(ino)
        if inode.bad:
            raise self.checks.corrupt(f"inode {ino}: {inode.bad}", ino, 0, "iget")
        return inode

    def _named(self, d, name: bytes, ino: int):
        """The inode a directory entry names, checked as ext4's __ext4_iget checks it: a
        number out of range or reserved, an inode not in use or with no links ("deleted inode
        referenced") is an inconsistency (EUCLEAN), not a missing name."""
        checks = self.checks
        problem = checks.entry_ino_problem(ino)
        if problem:
            raise checks.corrupt(f"directory {d.ino}: entry {name!r} names {problem}", d.ino, 0, "lookup")
        if not self.space.inode_in_use[ino - 1] and not _live(self.inodes.peek(ino, False)):
            raise checks.corrupt(f"directory {d.ino}: entry {name!r} names unused inode {ino}", ino, 0, "iget")
        inode = self.inodes.get(ino)
        problem = inode.bad or ("" if inode.links else "deleted inode referenced")
        if problem:
            raise checks.corrupt(f"inode {ino} (entry {name!r} of directory {d.ino}): {problem}", ino, 0, "iget")
        return inode

    def _listable(self, d, ino: int) -> bool:
        """Whether readdir may hand out an entry naming `ino` past the inode count, or inode 1
        (FUSE's root node id): never (no node id can stand for it); reported and left out, the
        listing goes on (ext4_check_dir_entry's "inode out of bounds")."""
        self.checks.report(f"directory {d.ino}: an entry names inode {ino}, beyond the inode count "
                           "or the bad-blocks inode", d.ino, 0, "readdir")
        return False

    def _dir(self, ino: int):
        d = self._inode(ino)
        if not d.is_dir:
            raise FSError(errno.ENOTDIR)
        if d.links == 0:
            raise FSError(errno.ENOENT)   # a removed directory takes no new entries
        return d

    def _writable(self) -> None:
        if self.options.read_only:
            raise FSError(errno.EROFS)
        if self.unwritable is not None:
            raise FSError(self.unwritable.errno or errno.EIO)

    def _attr(self, inode) -> Attr:
        return inode.stat_as(Attr, self.block_size)

    def _touch(self, inode, m: bool = True, c: bool = True) -> None:
        now = self._now()
        if m:
            inode.mtime_ns = now
        if c:
            inode.ctime_ns = now
