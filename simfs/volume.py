"""The mounted volume: every POSIX file-system operation in terms of inodes and blocks.

No FUSE here: the FUSE front end (fuse_ops) is a thin translation onto these methods, and
tests, replays and benchmarks drive a Volume in-process. Names are bytes; errors are
FSError(errno). The volume does no permission checks (the kernel does, with
default_permissions); ownership, modes, times and link counts are its job.

`Volume.open(path, options)` opens an image. Open files and kernel lookups are both
"holds" (`hold(ino)` / `drop(ino, n)`): an unlinked inode lives until its last hold drops.
"""

import errno
import fcntl
import functools
import json
import os
import stat
import time
from dataclasses import dataclass

import numpy as np

import disk_models

from policies import make_allocator, make_inode_placer, NoSpace
from policies.base import BlockRequest
from policies.dirhash import DirHasher
from policies.dirorder import BadCookie, make_dir_order
from .cache import METADATA, BufferCache, vkey
from .clock import SimClock
from .directory import Directories
from .errors import FSError, ImageError
from .filemap import FileMap
from .freespace import FreeSpace
from .inodes import InodeTable
from .stats import Stats
from .trace import TraceWriter
from .ondisk import xattr as xattr_fmt
from .ondisk.constants import (
    INCOMPAT_FILETYPE, LINK_MAX, MAX_NAME_LEN, ROOT_INO, RO_COMPAT_LARGE_FILE,
    STATE_VALID, SUPERBLOCK_OFFSET, file_type_of_mode,
)
from .ondisk.groupdesc import unpack_table
from .ondisk.superblock import Geometry, Superblock

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
XATTR_CREATE = 1
XATTR_REPLACE = 2
ENOATTR = errno.ENODATA


@dataclass
class VolumeOptions:
    """Choices that shape a mounted volume; mount options (-o key=value) map onto these fields."""

    alloc: str = "first-free"            # block allocator (see `simfs policies`)
    inode_placement: str = ""            # "" = the allocator's own placement policy
    disk: str = "sata7200"               # disk model preset, with overrides: "sata7200,rpm=5400"
    cache: int = 128 << 20               # buffer cache size in bytes
    writeback: str = "sync"              # sync | async | softdep (see simfs.cache)
    dirorder: str = "linear"             # readdir order: linear | hash | inode | name
    maxio: int = 128 << 10               # largest request clustering and read-ahead build, bytes
    cpu_op_us: float = 10.0              # simulated CPU time charged per operation, microseconds
    sync_interval: float = 30.0          # the syncer's period, simulated seconds
    trace: str = ""                      # write a request trace (CSV) to this path
    stats: str = ""                      # write the final statistics (JSON) here at unmount
    atime: bool = False                  # update access times on read (noatime by default)
    read_only: bool = False


# Which kinds of metadata an operation must write before returning, under writeback=sync
# (FFS's default mount: bwrite of the inode and directory block on namespace changes, of a
# new indirect block on file growth; data, bitmaps and descriptors are delayed).
_NAMESPACE_SYNC = METADATA
_SYNC_KINDS = {"create": _NAMESPACE_SYNC, "mkdir": _NAMESPACE_SYNC, "mknod": _NAMESPACE_SYNC,
               "symlink": _NAMESPACE_SYNC, "link": _NAMESPACE_SYNC, "unlink": _NAMESPACE_SYNC,
               "rmdir": _NAMESPACE_SYNC, "rename": _NAMESPACE_SYNC, "write": ("indirect",)}


def operation(fn):
    """Charge an operation: CPU time, its synchronous waits, and policy write-back at the end."""
    name = fn.__name__
    sync_kinds = _SYNC_KINDS.get(name, ())

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        clock = self.clock
        start = clock.now
        clock.cpu(self.cpu_op)
        self.cache.begin_op(sync_kinds)
        try:
            return fn(self, *args, **kwargs)
        finally:
            self.cache.end_op()
            self.stats.op(name, clock.now - start, clock.now)
    return wrapper


@dataclass
class Attr:
    st_ino: int
    st_mode: int
    st_nlink: int
    st_uid: int
    st_gid: int
    st_rdev: int
    st_size: int
    st_blocks: int
    st_blksize: int
    st_atime_ns: int
    st_mtime_ns: int
    st_ctime_ns: int
    generation: int


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


def _check_name(name: bytes) -> None:
    if len(name) > MAX_NAME_LEN:
        raise FSError(errno.ENAMETOOLONG)
    if not name or b"/" in name or b"\0" in name:
        raise FSError(errno.EINVAL)


class Volume:
    root_ino = ROOT_INO

    def __init__(self, path, fd, sb: Superblock, options: VolumeOptions):
        self.path = str(path)
        self.fd = fd
        self.sb = sb
        self.options = options
        self.geo = geo = Geometry(sb)
        self.block_size = geo.block_size
        self.disk = disk_models.make_disk(options.disk)
        self.stats = Stats()
        self.trace = TraceWriter(options.trace) if options.trace else None
        self.clock = SimClock(self.disk, self.stats, geo.block_size // 512, self.trace)
        self.cpu_op = options.cpu_op_us * 1e-6
        self.cache = BufferCache(fd, geo.block_size, options.cache // geo.block_size, self.stats, self.clock,
                                 writeback=options.writeback, maxio_blocks=options.maxio // geo.block_size,
                                 sync_interval=options.sync_interval)
        gdt = self.cache.peek(geo.first_data_block + 1, geo.gdt_blocks)
        self.descs = unpack_table(gdt, geo.groups)
        self._check_descs()
        self.space = FreeSpace(geo, self.descs, self.cache, self.stats)
        self.allocator = make_allocator(options.alloc)
        self.placer = make_inode_placer(options.inode_placement or self.allocator.placer)
        self.inodes = InodeTable(geo, self.descs, self.cache)
        self.filemap = FileMap(geo, self.cache, self.space, self.allocator, self.inodes)
        self.dirorder = make_dir_order(options.dirorder)
        self.hasher = DirHasher.from_superblock(sb.def_hash_version, sb.flags, sb.hash_seed)
        self.dirs = Directories(geo, self.cache, self.filemap, self.inodes,
                                filetype=bool(sb.feature_incompat & INCOMPAT_FILETYPE),
                                indexed=self.dirorder.name != "linear")
        self.delayed = self.allocator.decides == "flush"
        self.reallocates = hasattr(self.allocator, "reallocate")
        self.cache.resolver = self._place_delayed
        self.holds: dict[int, int] = {}
        self.generation = sb.wtime
        if sb.feature_ro_compat & RO_COMPAT_LARGE_FILE:   # i_blocks counts 512-byte sectors in 32 bits
            self.max_size = min(self.filemap.max_blocks * geo.block_size, 2**41 - geo.block_size)
        else:
            self.max_size = 2**31 - 1
        self.closed = False
        if not options.read_only:
            self.was_clean = bool(sb.state & STATE_VALID)
            sb.state &= ~STATE_VALID       # "not clean" while mounted, as the kernel marks it
            sb.mnt_count = (sb.mnt_count + 1) & 0xFFFF
            sb.mtime = int(time.time())
            self._write_super()
            self.cache.sync()

    # opening and closing -----------------------------------------------------------------
    @classmethod
    def open(cls, path, options: VolumeOptions | None = None) -> "Volume":
        options = options or VolumeOptions()
        name = os.fspath(path)
        try:
            fd = os.open(name, os.O_RDONLY if options.read_only else os.O_RDWR)
        except FileNotFoundError:
            raise ImageError(f"{name}: no such image file") from None
        except IsADirectoryError:
            raise ImageError(f"{name}: is a directory, not an image file") from None
        except OSError as e:
            raise ImageError(f"{name}: cannot open image: {e.strerror}") from None
        try:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if options.read_only else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ImageError(f"{name}: image already in use (mounted by another simfs?)") from None
            size = os.fstat(fd).st_size
            raw = os.pread(fd, 1024, SUPERBLOCK_OFFSET)
            if len(raw) < 1024:
                raise ImageError(f"{name}: not an ext2 file system (file is only {size} bytes)")
            sb = Superblock(raw)
            sb.validate(name, size)
            return cls(name, fd, sb, options)
        except BaseException:
            os.close(fd)
            raise

    def _check_descs(self) -> None:
        geo = self.geo
        for g, d in enumerate(self.descs):
            start, end = geo.group_start(g), geo.group_start(g) + geo.group_blocks(g)
            for what, b, n in (("block bitmap", d.block_bitmap, 1), ("inode bitmap", d.inode_bitmap, 1),
                               ("inode table", d.inode_table, geo.inode_table_blocks)):
                if not (start <= b and b + n <= end):
                    os.close(self.fd)
                    raise ImageError(f"{self.path}: corrupt group descriptor {g} ({what} at block {b})")

    def close(self) -> None:
        """Free orphans, write every dirty structure back, mark the file system clean, unlock."""
        if self.closed:
            return
        if not self.options.read_only:
            self.sync()                      # places delayed blocks, which releases their holds
            for ino in list(self.holds):
                self.holds[ino] = 1
                self.drop(ino)
            self.sb.state |= STATE_VALID
            self.sync()
        self.closed = True
        os.close(self.fd)
        if self.trace is not None:
            self.trace.close()
        if self.options.stats:
            with open(self.options.stats, "w") as f:
                json.dump(self.stats_snapshot(), f, indent=1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def sync(self) -> None:
        """Write everything back and wait until it is on the media."""
        start = self.clock.now
        self._write_super()
        self.cache.sync()
        self.stats.op("sync", self.clock.now - start, self.clock.now)

    # observation (simfs frag, simfs layout) -------------------------------------------------
    def extents(self, ino: int) -> dict:
        """Where an inode's blocks are, for `simfs frag` and `simfs layout`: an observation,
        not an I/O the tool would do, so nothing is charged or cached (like peek_attr).

        runs: [(lblk, phys, n)], maximal runs of logically and physically consecutive data
        blocks in logical order; indirect: [(level, phys)] with level "IND"/"DIND"/"TIND",
        in the order debugfs's `stat` lists them; delalloc: [(lblk, n)] runs of blocks a
        delayed allocator has not placed yet; xattr_block: the extended-attribute block or 0.
        Fast symlinks and device inodes have no runs."""
        import numpy as np
        from .ondisk.constants import DIND_BLOCK, IND_BLOCK, NDIR_BLOCKS, TIND_BLOCK

        if not 1 <= ino <= self.geo.inodes_count or not self.space.inode_used[ino - 1]:
            raise FSError(errno.ENOENT)
        inode = self.inodes.peek(ino)
        geo = self.geo
        lblks, physs, indirect = [], [], []
        mapped = inode.has_block_map and not inode.is_fast_symlink(geo.block_size)
        if mapped:
            direct = np.array(inode.block[:NDIR_BLOCKS], dtype=np.int64)
            idx = np.flatnonzero(direct)
            lblks.append(idx)
            physs.append(direct[idx])
            p = geo.ptrs_per_block
            bases = (NDIR_BLOCKS, NDIR_BLOCKS + p, NDIR_BLOCKS + p + p * p)

            def walk(blk: int, level: int, base: int) -> None:
                ptrs = np.frombuffer(self.cache.peek(blk), dtype="<u4").astype(np.int64)
                nz = np.flatnonzero(ptrs)
                if level == 1:
                    lblks.append(base + nz)
                    physs.append(ptrs[nz])
                    return
                span = p ** (level - 1)
                for i in nz:
                    child = int(ptrs[i])
                    indirect.append(("IND" if level == 2 else "DIND", child))
                    walk(child, level - 1, base + int(i) * span)

            for level, slot, name in ((1, IND_BLOCK, "IND"), (2, DIND_BLOCK, "DIND"), (3, TIND_BLOCK, "TIND")):
                if inode.block[slot]:
                    indirect.append((name, inode.block[slot]))
                    walk(inode.block[slot], level, bases[level - 1])
        runs = []
        if lblks:
            lb = np.concatenate(lblks)
            ph = np.concatenate(physs)
            if len(lb):
                brk = np.flatnonzero((np.diff(lb) != 1) | (np.diff(ph) != 1)) + 1
                starts = np.concatenate([[0], brk])
                ends = np.concatenate([brk, [len(lb)]])
                runs = [(int(lb[s]), int(ph[s]), int(e - s)) for s, e in zip(starts, ends)]
        delalloc = []
        pending = sorted((inode.incore or {}).get("pending") or ())
        for lblk in pending:
            if delalloc and delalloc[-1][0] + delalloc[-1][1] == lblk:
                delalloc[-1][1] += 1
            else:
                delalloc.append([lblk, 1])
        return {"ino": ino, "mode": inode.mode, "size": inode.size, "i_blocks": inode.blocks,
                "block_size": geo.block_size, "runs": runs, "indirect": indirect,
                "delalloc": [tuple(r) for r in delalloc], "xattr_block": inode.file_acl,
                "blocks_count": geo.blocks_count, "first_data_block": geo.first_data_block,
                "blocks_per_group": geo.blocks_per_group, "inodes_count": geo.inodes_count,
                "inodes_per_group": geo.inodes_per_group,
                # statfs's f_blocks: all blocks less the file system's own overhead
                "f_blocks": geo.blocks_count - geo.first_data_block - sum(
                    geo.super_and_gdt_blocks(g) + 2 + geo.inode_table_blocks for g in range(geo.groups))}

    # control (the /.simfs/ directory) --------------------------------------------------------
    def drop_caches(self) -> None:
        """Write back, then forget every cached block, inode and directory index: cold cache."""
        self.sync()
        self.cache.drop_clean()
        self.inodes.drop_unpinned()
        self.dirs.indexes.clear()
        self.dirs.indexed_entries = 0

    def metadata_scan(self) -> dict:
        """Read what e2fsck reads, in its order, through the cache and clock: every group's
        bitmaps; pass 1, every inode-table block group by group and every file's indirect
        blocks; pass 2, every directory block in block order (seed 003's fsck). Returns how
        many inodes and directory blocks it saw; the cost is the clock's advance."""
        geo, cache = self.geo, self.cache
        for d in self.descs:
            cache.read_run(d.block_bitmap, 1, "bitmap", 0, wait=True)
            cache.read_run(d.inode_bitmap, 1, "bitmap", 0, wait=True)
        dir_blocks, inodes = set(), 0
        ipg = geo.inodes_per_group
        for g, d in enumerate(self.descs):
            cache.read_run(d.inode_table, geo.inode_table_blocks, "inode", 0, wait=True)
            for i in np.flatnonzero(self.space.inode_used[g * ipg:(g + 1) * ipg]):
                inode = self.inodes.peek(g * ipg + int(i) + 1)
                inodes += 1
                if not inode.has_block_map or inode.is_fast_symlink(geo.block_size):
                    continue
                for lblk, phys in self.filemap.blocks(inode):      # reads the indirect blocks
                    if inode.is_dir and isinstance(lblk, int):
                        dir_blocks.add(phys)
        blocks = sorted(dir_blocks)
        i = 0
        while i < len(blocks):
            j = i + 1
            while j < len(blocks) and blocks[j] == blocks[j - 1] + 1:
                j += 1
            cache.read_run(blocks[i], j - i, "dir", 0, wait=True)
            i = j
        return {"inodes": inodes, "dir_blocks": len(blocks)}

    def mark(self, name: str) -> None:
        """Start a named phase: counters from here on are kept apart."""
        self.stats.mark(name, self.clock.now)

    def reset_stats(self) -> None:
        self.stats.reset(self.clock.now)

    def stats_snapshot(self) -> dict:
        return self.stats.snapshot(self.clock.now, {
            "disk": self.options.disk, "alloc": self.allocator.name, "writeback": self.options.writeback,
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
        return time.time_ns()

    def _count(self, key: str, n: int = 1) -> None:
        self.stats.count(key, n)

    @property
    def counters(self) -> dict[str, int]:
        """Totals of every counter over all phases."""
        return self.stats.totals()

    def _inode(self, ino: int):
        if not 1 <= ino <= self.geo.inodes_count or not self.space.inode_used[ino - 1]:
            raise FSError(errno.ENOENT)
        return self.inodes.get(ino)

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

    def _attr(self, inode) -> Attr:
        return Attr(st_ino=inode.ino, st_mode=inode.mode, st_nlink=inode.links, st_uid=inode.uid,
                    st_gid=inode.gid, st_rdev=0 if inode.has_block_map else inode.get_rdev(),
                    st_size=inode.size, st_blocks=inode.blocks, st_blksize=self.block_size,
                    st_atime_ns=inode.atime_ns, st_mtime_ns=inode.mtime_ns, st_ctime_ns=inode.ctime_ns,
                    generation=inode.generation)

    def _touch(self, inode, m: bool = True, c: bool = True) -> None:
        now = self._now()
        if m:
            inode.mtime_ns = now
        if c:
            inode.ctime_ns = now

    # namespace ---------------------------------------------------------------------------
    @operation
    def lookup(self, parent: int, name: bytes) -> Attr:
        _check_name(name)
        d = self._inode(parent)
        if not d.is_dir:
            raise FSError(errno.ENOTDIR)
        hit = self.dirs.lookup(d, name)
        if hit is None:
            raise FSError(errno.ENOENT)
        return self._attr(self.inodes.get(hit[0]))

    def peek_attr(self, ino: int) -> Attr:
        """Attributes without charging an inode read: readdirplus hands these to the kernel,
        and the tool's own later lookup or stat is what pays (the fidelity contract)."""
        if not 1 <= ino <= self.geo.inodes_count or not self.space.inode_used[ino - 1]:
            raise FSError(errno.ENOENT)
        return self._attr(self.inodes.peek(ino))

    @operation
    def getattr(self, ino: int) -> Attr:
        return self._attr(self._inode(ino))

    @operation
    def setattr(self, ino: int, *, mode=None, uid=None, gid=None, size=None, atime_ns=None,
                mtime_ns=None) -> Attr:
        self._writable()
        inode = self._inode(ino)
        if size is not None:
            if inode.is_dir:
                raise FSError(errno.EISDIR)
            if not inode.is_reg:
                raise FSError(errno.EINVAL)
            self._truncate(inode, size)
            self._touch(inode)
        if mode is not None:
            inode.mode = stat.S_IFMT(inode.mode) | stat.S_IMODE(mode)
        if uid is not None:
            inode.uid = uid
        if gid is not None:
            inode.gid = gid
        if atime_ns is not None:
            inode.atime_ns = atime_ns
        if mtime_ns is not None:
            inode.mtime_ns = mtime_ns
        inode.ctime_ns = self._now()
        self.inodes.put(inode)
        return self._attr(inode)

    def _new_inode(self, parent, name: bytes, mode: int, uid: int, gid: int):
        """Allocate and link a new inode named `name` in directory `parent`."""
        self._writable()
        _check_name(name)
        d = self._dir(parent)
        if self.dirs.lookup(d, name) is not None:
            raise FSError(errno.EEXIST)
        is_dir = stat.S_ISDIR(mode)
        if is_dir and d.links >= LINK_MAX:
            raise FSError(errno.EMLINK)
        try:
            ino = self.placer.choose(self.space, parent, is_dir)
        except NoSpace:
            raise FSError(errno.ENOSPC) from None
        self.space.take_inode(ino, is_dir)
        inode = self.inodes.new(ino)
        if d.mode & stat.S_ISGID:       # BSD group semantics of a setgid directory
            gid = d.gid
            if is_dir:
                mode |= stat.S_ISGID
        inode.mode, inode.uid, inode.gid = mode, uid, gid
        inode.links = 2 if is_dir else 1
        now = self._now()
        inode.atime_ns = inode.mtime_ns = inode.ctime_ns = inode.crtime_ns = now
        self.generation = (self.generation + 1) & 0xFFFFFFFF
        inode.generation = self.generation
        try:
            if is_dir:
                self.dirs.init(inode, parent)
            self.inodes.put(inode)
            self.dirs.add(d, name, ino, file_type_of_mode(mode))
        except FSError:
            self.filemap.truncate(inode, 0)
            self.space.release_inode(ino, is_dir)
            self.inodes.forget(ino)
            raise
        if is_dir:
            d.links += 1
        self._touch(d)
        self.inodes.put(d)
        return inode

    @operation
    def create(self, parent: int, name: bytes, mode: int, uid: int, gid: int) -> Attr:
        return self._attr(self._new_inode(parent, name, stat.S_IFREG | stat.S_IMODE(mode), uid, gid))

    @operation
    def mkdir(self, parent: int, name: bytes, mode: int, uid: int, gid: int) -> Attr:
        return self._attr(self._new_inode(parent, name, stat.S_IFDIR | (mode & 0o7777), uid, gid))

    @operation
    def mknod(self, parent: int, name: bytes, mode: int, rdev: int, uid: int, gid: int) -> Attr:
        fmt = stat.S_IFMT(mode) or stat.S_IFREG
        if fmt not in (stat.S_IFREG, stat.S_IFCHR, stat.S_IFBLK, stat.S_IFIFO, stat.S_IFSOCK):
            raise FSError(errno.EINVAL)
        inode = self._new_inode(parent, name, fmt | (mode & 0o7777), uid, gid)
        if fmt in (stat.S_IFCHR, stat.S_IFBLK):
            inode.set_rdev(rdev)
            self.inodes.put(inode)
        return self._attr(inode)

    @operation
    def symlink(self, parent: int, name: bytes, target: bytes, uid: int, gid: int) -> Attr:
        if len(target) >= self.block_size:
            raise FSError(errno.ENAMETOOLONG)
        if not target:
            raise FSError(errno.ENOENT)
        inode = self._new_inode(parent, name, stat.S_IFLNK | 0o777, uid, gid)
        try:
            if len(target) < 60:   # fast symlink: the target lives in i_block
                raw = target.ljust(60, b"\0")
                inode.block = [int.from_bytes(raw[i:i + 4], "little") for i in range(0, 60, 4)]
            else:
                phys, _ = self.filemap.map_for_write(inode, 0, "symlink")
                self.cache.write(phys, target.ljust(self.block_size, b"\0"), "symlink", inode.ino)
            inode.size = len(target)
            self.inodes.put(inode)
        except FSError:
            self.unlink(parent, name)
            raise
        return self._attr(inode)

    @operation
    def readlink(self, ino: int) -> bytes:
        inode = self._inode(ino)
        if not inode.is_symlink:
            raise FSError(errno.EINVAL)
        if inode.is_fast_symlink(self.block_size):
            return b"".join(b.to_bytes(4, "little") for b in inode.block)[: inode.size]
        phys = self.filemap.bmap(inode, 0)
        return bytes(self.cache.bread(phys, "symlink", ino)[: inode.size])

    @operation
    def link(self, ino: int, new_parent: int, new_name: bytes) -> Attr:
        self._writable()
        _check_name(new_name)
        inode = self._inode(ino)
        if inode.is_dir:
            raise FSError(errno.EPERM)
        if inode.links >= LINK_MAX:
            raise FSError(errno.EMLINK)
        if inode.links == 0:
            raise FSError(errno.ENOENT)
        d = self._dir(new_parent)
        if self.dirs.lookup(d, new_name) is not None:
            raise FSError(errno.EEXIST)
        self.dirs.add(d, new_name, ino, file_type_of_mode(inode.mode))
        inode.links += 1
        self._touch(inode, m=False)
        self.inodes.put(inode)
        self._touch(d)
        self.inodes.put(d)
        return self._attr(inode)

    @operation
    def unlink(self, parent: int, name: bytes) -> None:
        self._writable()
        _check_name(name)
        d = self._dir(parent)
        hit = self.dirs.lookup(d, name)
        if hit is None:
            raise FSError(errno.ENOENT)
        inode = self.inodes.get(hit[0])
        if inode.is_dir:
            raise FSError(errno.EISDIR)
        self.dirs.remove(d, name)
        self._touch(d)
        self.inodes.put(d)
        self._unref(inode)

    @operation
    def rmdir(self, parent: int, name: bytes) -> None:
        self._writable()
        _check_name(name)
        if name == b".":
            raise FSError(errno.EINVAL)
        if name == b"..":
            raise FSError(errno.ENOTEMPTY)
        d = self._dir(parent)
        hit = self.dirs.lookup(d, name)
        if hit is None:
            raise FSError(errno.ENOENT)
        victim = self.inodes.get(hit[0])
        if not victim.is_dir:
            raise FSError(errno.ENOTDIR)
        if not self.dirs.is_empty(victim):
            raise FSError(errno.ENOTEMPTY)
        self.dirs.remove(d, name)
        d.links -= 1
        self._touch(d)
        self.inodes.put(d)
        victim.links = 0
        self._touch(victim, m=False)
        self._unref(victim, dropped_dir=True)

    def _unref(self, inode, dropped_dir: bool = False) -> None:
        """One name less: free the inode when no name and no hold is left."""
        if not dropped_dir:
            inode.links -= 1
            self._touch(inode, m=False)
        self.inodes.put(inode)
        if inode.links == 0 and not self.holds.get(inode.ino):
            self._free_inode(inode)

    def _free_inode(self, inode) -> None:
        if inode.is_dir:
            self.dirs.forget(inode.ino)
        if inode.has_block_map and not inode.is_fast_symlink(self.block_size):
            if self.delayed:
                self._undelay(inode, 0)
            self.filemap.truncate(inode, 0)
        if inode.file_acl:
            self._release_xattr_block(inode)
        inode.dtime = int(time.time())
        inode.size = 0
        self.inodes.put(inode)
        self.space.release_inode(inode.ino, inode.is_dir)
        self.inodes.forget(inode.ino)

    def _is_ancestor(self, anc: int, ino: int) -> bool:
        """True if directory `anc` is `ino` or one of its ancestors (walking "..")."""
        while True:
            if ino == anc:
                return True
            if ino == ROOT_INO:
                return False
            d = self.inodes.get(ino)
            hit = self.dirs.lookup(d, b"..")
            if hit is None or hit[0] == ino:
                return False
            ino = hit[0]

    @operation
    def rename(self, old_parent: int, old_name: bytes, new_parent: int, new_name: bytes, flags: int = 0) -> None:
        self._writable()
        _check_name(old_name)
        _check_name(new_name)
        if flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE) or flags == RENAME_NOREPLACE | RENAME_EXCHANGE:
            raise FSError(errno.EINVAL)
        if old_name in (b".", b"..") or new_name in (b".", b".."):
            raise FSError(errno.EBUSY)
        od, nd = self._dir(old_parent), self._dir(new_parent)
        src = self.dirs.lookup(od, old_name)
        if src is None:
            raise FSError(errno.ENOENT)
        s = self.inodes.get(src[0])
        dst = self.dirs.lookup(nd, new_name)
        if flags & RENAME_EXCHANGE:
            if dst is None:
                raise FSError(errno.ENOENT)
            return self._exchange(od, old_name, s, nd, new_name, self.inodes.get(dst[0]))
        if dst is not None and flags & RENAME_NOREPLACE:
            raise FSError(errno.EEXIST)
        if s.is_dir and old_parent != new_parent and self._is_ancestor(s.ino, new_parent):
            raise FSError(errno.EINVAL)
        if dst is not None:
            if dst[0] == s.ino:
                return            # both names are links to one inode: POSIX says do nothing
            t = self.inodes.get(dst[0])
            if s.is_dir and not t.is_dir:
                raise FSError(errno.ENOTDIR)
            if not s.is_dir and t.is_dir:
                raise FSError(errno.EISDIR)
            if t.is_dir and not self.dirs.is_empty(t):
                raise FSError(errno.ENOTEMPTY)
            self.dirs.replace(nd, new_name, s.ino, file_type_of_mode(s.mode))
            if t.is_dir:
                t.links = 0
                nd.links -= 1        # the victim's ".." goes
                self._unref(t, dropped_dir=True)
            else:
                self._unref(t)
        else:
            if s.is_dir and nd.links >= LINK_MAX and old_parent != new_parent:
                raise FSError(errno.EMLINK)
            self.dirs.add(nd, new_name, s.ino, file_type_of_mode(s.mode))
        self.dirs.remove(od, old_name)
        if s.is_dir and old_parent != new_parent:
            self.dirs.set_parent(s, new_parent)
            od.links -= 1
            nd.links += 1
        self._touch(s, m=False)
        self.inodes.put(s)
        for d in {od.ino: od, nd.ino: nd}.values():
            self._touch(d)
            self.inodes.put(d)

    def _exchange(self, od, old_name, s, nd, new_name, t) -> None:
        if od.ino != nd.ino:
            if s.is_dir and self._is_ancestor(s.ino, nd.ino) or t.is_dir and self._is_ancestor(t.ino, od.ino):
                raise FSError(errno.EINVAL)
        self.dirs.replace(od, old_name, t.ino, file_type_of_mode(t.mode))
        self.dirs.replace(nd, new_name, s.ino, file_type_of_mode(s.mode))
        if od.ino != nd.ino:
            if s.is_dir:
                self.dirs.set_parent(s, nd.ino)
                od.links -= 1
                nd.links += 1
            if t.is_dir:
                self.dirs.set_parent(t, od.ino)
                nd.links -= 1
                od.links += 1
        for inode in (s, t):
            self._touch(inode, m=False)
            self.inodes.put(inode)
        for d in {od.ino: od, nd.ino: nd}.values():
            self._touch(d)
            self.inodes.put(d)

    # holds: kernel references and open files ---------------------------------------------
    def hold(self, ino: int, n: int = 1) -> None:
        if ino not in self.holds:
            self.inodes.pin(ino)
        self.holds[ino] = self.holds.get(ino, 0) + n

    def drop(self, ino: int, n: int = 1) -> None:
        left = self.holds.get(ino, 0) - n
        if left > 0:
            self.holds[ino] = left
            return
        self.holds.pop(ino, None)
        if self.options.read_only or not self.space.inode_used[ino - 1]:
            self.inodes.forget(ino)
            return
        inode = self.inodes.get(ino)
        self.inodes.unpin(ino)
        if inode.incore is not None:      # last close: ext2_discard_reservation and the like
            self.allocator.release(inode.incore["alloc"])
        if inode.links == 0:
            self._free_inode(inode)

    # data --------------------------------------------------------------------------------
    @operation
    def read(self, ino: int, offset: int, size: int) -> bytes:
        inode = self._inode(ino)
        if inode.is_dir:
            raise FSError(errno.EISDIR)
        if offset < 0 or size < 0:
            raise FSError(errno.EINVAL)
        end = min(inode.size, offset + size)
        if offset >= end:
            return b""
        bs = self.block_size
        first, last = offset // bs, (end - 1) // bs
        pages = self._pending_pages(inode, first, last)
        phys = self._prefetch(inode, first, last)
        out = bytearray()
        for lblk in range(first, last + 1):
            lo = max(offset - lblk * bs, 0)
            hi = min(end - lblk * bs, bs)
            p = phys[lblk - first]
            if p:
                out += self.cache.bread(p, "data", ino)[lo:hi]
            elif lblk in pages:
                out += pages[lblk][lo:hi]
            else:
                out += bytes(hi - lo)
        self._count("bytes_read", len(out))
        if self.options.atime and not self.options.read_only:
            inode.atime_ns = self._now()
            self.inodes.put(inode)
        return bytes(out)

    def _pending_pages(self, inode, first: int, last: int) -> dict[int, bytearray]:
        """The pages of first..last still waiting for delayed allocation, taken before the
        read does any I/O: a cache miss can evict, and write-back then places these pages
        under block numbers the read has already looked up as holes."""
        pending = self.delayed and inode.incore is not None and inode.incore.get("pending")
        if not pending:
            return {}
        return {lblk: self.cache.page(vkey(inode.ino, lblk), "data", inode.ino)
                for lblk in range(first, last + 1) if lblk in pending}

    def _prefetch(self, inode, first: int, last: int) -> list[int]:
        """Bring blocks first..last into the cache as clustered reads, and read ahead.

        A read that continues the previous one (or starts the file) is sequential: the
        read-ahead window doubles up to maxio. Physically contiguous blocks are read with one
        request; a file laid out in one-block runs gets one request per block, so clustering
        and read-ahead buy nothing (seed 000's mechanism). Returns the physical blocks of
        first..last (0 for holes)."""
        if inode.incore is None:
            inode.incore = {"alloc": self.allocator.new_inode_state()}
        ra = inode.incore.setdefault("ra", [0, 0])        # next expected block, window
        maxio = self.cache.maxio
        nblocks = -(-inode.size // self.block_size)
        if first == ra[0] or first == 0:
            window = min(max(2 * ra[1], 4), maxio)
        else:
            window = 0
        ra[0], ra[1] = last + 1, window
        stop = min(last + 1 + window, nblocks)
        phys = [self.filemap.bmap(inode, lblk) for lblk in range(first, stop)]
        i = 0
        while i < len(phys):
            if not phys[i]:
                i += 1
                continue
            j = i + 1
            while j < len(phys) and phys[j] == phys[j - 1] + 1 and j - i < maxio:
                j += 1
            self.cache.read_run(phys[i], j - i, "data", inode.ino, wait=first + i <= last)
            i = j
        return phys[: last - first + 1]

    @operation
    def write(self, ino: int, offset: int, data: bytes) -> int:
        self._writable()
        inode = self._inode(ino)
        if inode.is_dir:
            raise FSError(errno.EISDIR)
        if offset < 0:
            raise FSError(errno.EINVAL)
        if not data:
            return 0
        if offset + len(data) > self.max_size:
            if offset >= self.max_size:
                raise FSError(errno.EFBIG)
            data = data[: self.max_size - offset]
        bs = self.block_size
        done = 0
        try:
            while done < len(data):
                pos = offset + done
                lblk, lo = divmod(pos, bs)
                n = min(bs - lo, len(data) - done)
                if self.delayed and not self.filemap.bmap(inode, lblk):
                    key = self._delay(inode, lblk)
                    buf = self.cache.page(key, "data", ino)
                    buf[lo:lo + n] = data[done:done + n]
                    self.cache.mark_dirty(key, buf, "data", ino)
                    done += n
                    continue
                phys, new = self.filemap.map_for_write(inode, lblk)
                if new and self.reallocates:
                    phys = self._cluster_write(inode, lblk, phys)
                if new or n == bs:
                    buf = self.cache.getblk(phys, "data", ino)
                else:
                    buf = self.cache.bread(phys, "data", ino)
                buf[lo:lo + n] = data[done:done + n]
                self.cache.mark_dirty(phys, buf, "data", ino)
                done += n
        except FSError as e:
            if e.errno != errno.ENOSPC or done == 0:
                self._finish_write(inode, offset, done)
                raise
        self._finish_write(inode, offset, done)
        self._count("bytes_written", done)
        return done

    def _cluster_write(self, inode, lblk: int, phys: int) -> int:
        """FFS cluster_write: a block appended out of line with its predecessor offers the
        allocator the still-dirty contiguous run before it plus itself (ffs_reallocblks);
        if a new contiguous place is found the run moves there. Returns lblk's block."""
        prev = self.filemap.bmap(inode, lblk - 1) if lblk else 0
        if not prev or prev + 1 == phys:
            return phys
        cluster = [(lblk, phys)]
        l, p = lblk - 1, prev
        while l >= 0 and len(cluster) < self.cache.maxio:
            if not self.cache.is_dirty(p):       # already written: no longer part of a cluster
                break
            cluster.insert(0, (l, p))
            q = self.filemap.bmap(inode, l - 1) if l else 0
            if not q or q + 1 != p:
                break
            l, p = l - 1, q
        if len(cluster) < 2:
            return phys
        start = cluster[0][0]
        slot, map_block = self.filemap.locate(inode, start)
        req = BlockRequest(ino=inode.ino, inode_group=self.geo.group_of_inode(inode.ino), lblk=start,
                           slot=slot, map_block=map_block,
                           prev_phys=self.filemap.bmap(inode, start - 1) if start else 0)
        new = self.allocator.reallocate(self.space, req, inode.incore["alloc"], cluster)
        if not new:
            return phys
        for (l, old), nb in zip(cluster, new):
            if nb == old:
                continue
            self.space.take_block(nb, inode.ino)
            self.filemap.set_pointer(inode, l, nb)
            if l != lblk:                        # lblk's own data is not written yet
                self._move_data(inode.ino, old, nb)
            self.space.release_block(old)
        self._count("clusters_reallocated")
        return new[-1]

    def _move_data(self, ino: int, old: int, new: int) -> None:
        """A reallocated block's data goes with it: its dirty buffer is re-keyed; if a cache
        miss while the cluster was gathered or moved evicted it (writing it to `old`), it is
        read back and written to `new`, which would otherwise keep what the disk held there."""
        if old in self.cache:
            self.cache.rekey(old, new)
        else:
            self.cache.write(new, self.cache.bread(old, "data", ino), "data", ino)
            self.cache.forget(old)

    # delayed allocation ------------------------------------------------------------------
    def _pending(self, inode) -> set:
        if inode.incore is None:
            inode.incore = {"alloc": self.allocator.new_inode_state()}
        return inode.incore.setdefault("pending", set())

    def _delay(self, inode, lblk: int) -> int:
        """Reserve a block for a delayed write of lblk, and the indirect blocks it maps through
        that no other pending block of the file reserved yet; its cache key."""
        pending = self._pending(inode)
        if lblk not in pending:
            space = self.space
            maps = inode.incore.setdefault("maps", set())
            new = [node for node in self._map_nodes(lblk) if node not in maps]
            if space.free_blocks - space.reserved < 1 + len(new):
                raise FSError(errno.ENOSPC)
            pending.add(lblk)
            maps.update(new)
            space.reserved += 1 + len(new)
            if len(pending) == 1:
                self.hold(inode.ino)          # keep the in-core inode until its blocks are placed
        return vkey(inode.ino, lblk)

    def _map_nodes(self, lblk: int) -> list[tuple]:
        """The indirect blocks lblk maps through, named by their place in the tree. Reserved
        whether allocated or not (no reads): a sparse file's pages far apart each need their
        own, and placing them must not run out of room after the writes succeeded."""
        slot, idx = self.filemap.path(lblk)
        return [(slot, *idx[:depth]) for depth in range(len(idx))]

    def _reserve_maps(self, inode) -> None:
        """Reserve the indirect blocks of the file's pending blocks anew (after some left)."""
        maps = {node for lblk in inode.incore.get("pending", ()) for node in self._map_nodes(lblk)}
        self.space.reserved += len(maps) - len(inode.incore.get("maps", ()))
        inode.incore["maps"] = maps

    def _undelay(self, inode, keep_blocks: int) -> None:
        """Forget delayed blocks at or past keep_blocks (truncate, unlink)."""
        pending = self._pending(inode) if inode.incore else set()
        gone = [lblk for lblk in pending if lblk >= keep_blocks]
        for lblk in gone:
            pending.discard(lblk)
            self.cache.forget(vkey(inode.ino, lblk))
            self.space.reserved -= 1
        if gone:
            self._reserve_maps(inode)
        if gone and not pending:
            self.drop(inode.ino)

    def _place_delayed(self, keys: list[int]) -> dict[int, int]:
        """Write-back reached delayed blocks: place every pending block of their inodes, in
        logical order, as runs of consecutive blocks (ext4_writepages → mballoc)."""
        placed = {}
        inos = sorted({(-k - 1) >> 32 for k in keys})
        for ino in inos:
            inode = self.inodes.get(ino)
            pending = self._pending(inode)
            lblks = sorted(pending)
            state = inode.incore["alloc"]
            self.space.reserved -= len(inode.incore.pop("maps", ()))   # the indirect blocks' room
            try:
                i = 0
                while i < len(lblks):
                    j = i + 1
                    while j < len(lblks) and lblks[j] == lblks[j - 1] + 1 and j - i < self.allocator.max_run:
                        j += 1
                    first = lblks[i]
                    req = BlockRequest(ino=ino, inode_group=self.geo.group_of_inode(ino), lblk=first,
                                       prev_phys=self.filemap.bmap(inode, first - 1) if first else 0)
                    try:
                        blocks = self.allocator.allocate_run(self.space, req, state, j - i)
                    except NoSpace:
                        raise FSError(errno.ENOSPC, "delayed allocation found no room at write-back") from None
                    for phys in blocks:   # all at once: an indirect block mapped below must go elsewhere
                        self.space.take_block(phys, ino)
                    self.space.reserved -= len(blocks)
                    for k, (lblk, phys) in enumerate(zip(lblks[i:j], blocks)):
                        try:
                            self.filemap.map_for_write(inode, lblk, "data", phys=phys)
                        except FSError:
                            for b in blocks[k:]:
                                self.space.release_block(b)
                            self.space.reserved += len(blocks) - k
                            raise
                        pending.discard(lblk)
                        state.add(lblk, phys, 1)
                        self.cache.rekey(vkey(ino, lblk), phys)
                        placed[vkey(ino, lblk)] = phys
                    i = j
            except FSError:           # what was not placed stays pending, with its reservation
                self._reserve_maps(inode)
                raise
            self.inodes.put(inode)
            self.drop(ino)
        self._count("delayed_blocks_placed", len(placed))
        return placed

    def _finish_write(self, inode, offset: int, done: int) -> None:
        """The file grows by what was written, not by what was asked (a failed write past
        EOF must not leave a hole of its size)."""
        if done and offset + done > inode.size:
            inode.size = offset + done
        if done:
            self._touch(inode)
        self.inodes.put(inode)

    def _truncate(self, inode, size: int) -> None:
        if size < 0:
            raise FSError(errno.EINVAL)
        if size > self.max_size:
            raise FSError(errno.EFBIG)
        bs = self.block_size
        if size < inode.size:
            if self.delayed:
                self._undelay(inode, -(-size // bs))
            if inode.incore is not None:
                self.allocator.release(inode.incore["alloc"])
            self.filemap.truncate(inode, -(-size // bs))
            if size % bs:
                self._zero_tail(inode, size)
        inode.size = size
        self.inodes.put(inode)

    def _zero_tail(self, inode, size: int) -> None:
        """Zero the last block past `size`, so a later extension reads zeros: in the allocated
        block, or in the page still waiting for delayed allocation (which unmount would write)."""
        bs = self.block_size
        lblk, lo = divmod(size, bs)
        phys = self.filemap.bmap(inode, lblk)
        if phys:
            buf = self.cache.bread(phys, "data", inode.ino)
            key = phys
        elif self.delayed and vkey(inode.ino, lblk) in self.cache:
            key = vkey(inode.ino, lblk)
            buf = self.cache.page(key, "data", inode.ino)
        else:
            return
        buf[lo:] = bytes(bs - lo)
        self.cache.mark_dirty(key, buf, "data", inode.ino)

    @operation
    def fsync(self, ino: int, datasync: bool = False) -> None:
        inode = self._inode(ino)
        if self.delayed and inode.incore and inode.incore.get("pending"):
            # written first, so that the cache's write-back places them: placed from here, a
            # block the placement reads or allocates could evict the file's other pages and
            # start a second placement of this file (blocks handed out twice)
            self.cache.flush_blocks([vkey(ino, lblk) for lblk in inode.incore["pending"]])
        blocks = [b for _, b in self.filemap.blocks(inode)]
        blocks.append(self.inodes.block_of(ino))
        if inode.file_acl:
            blocks.append(inode.file_acl)
        self.cache.flush_blocks(blocks)

    # directories -------------------------------------------------------------------------
    @operation
    def readdir(self, ino: int, cookie: int = 0, state=None) -> list[tuple[bytes, int, int]]:
        """[(name, ino, next_cookie)] after `cookie` (0: from the start), in the mount's
        directory order; next_cookie resumes after that entry, even if the directory changes.
        `state` (from `opendir_state`, one per open handle) keeps a sorted listing between
        calls; the name order needs it to resume."""
        d = self._inode(ino)
        if not d.is_dir:
            raise FSError(errno.ENOTDIR)
        if self.dirorder.name == "linear":
            return [(name, eino, pos + 1) for pos, name, eino, _ in self.dirs.entries(d, cookie)]
        entries = ((name, eino, ftype, pos) for pos, name, eino, ftype in self.dirs.entries(d, 0))
        try:
            # every entry change sets the directory's ctime, which no tool can set back
            listing = self.dirorder.iterate(entries, after=cookie, hash_ctx=self.hasher, state=state,
                                            generation=(ino, d.ctime_ns, d.mtime_ns, d.size))
            return [(e[0], e[1], c) for e, c in listing]
        except BadCookie:
            raise FSError(errno.EINVAL) from None

    def opendir_state(self):
        """Per-handle readdir state for the directory-order policy."""
        return self.dirorder.new_state()

    @operation
    def statfs(self) -> StatFS:
        geo = self.geo
        overhead = geo.first_data_block + sum(geo.super_and_gdt_blocks(g) + 2 + geo.inode_table_blocks
                                              for g in range(geo.groups))
        free = self.space.free_blocks - self.space.reserved
        return StatFS(f_bsize=geo.block_size, f_frsize=geo.block_size, f_blocks=geo.blocks_count - overhead,
                      f_bfree=free, f_bavail=max(0, free - self.sb.r_blocks_count),
                      f_files=geo.inodes_count, f_ffree=self.space.free_inodes, f_favail=self.space.free_inodes)

    # extended attributes -----------------------------------------------------------------
    def _xattrs(self, inode) -> dict[bytes, bytes]:
        if not inode.file_acl:
            return {}
        try:
            return xattr_fmt.decode(self.cache.bread(inode.file_acl, "xattr", inode.ino))
        except ValueError as e:
            raise FSError(errno.EIO, f"inode {inode.ino}: {e}") from None

    @operation
    def getxattr(self, ino: int, name: bytes) -> bytes:
        attrs = self._xattrs(self._inode(ino))
        if name not in attrs:
            raise FSError(ENOATTR)
        return attrs[name]

    @operation
    def listxattr(self, ino: int) -> list[bytes]:
        return list(self._xattrs(self._inode(ino)))

    @operation
    def setxattr(self, ino: int, name: bytes, value: bytes, flags: int = 0) -> None:
        self._writable()
        inode = self._inode(ino)
        if xattr_fmt.split_name(name) is None:
            raise FSError(errno.EOPNOTSUPP)
        if len(name) > 255:
            raise FSError(errno.ERANGE)
        attrs = self._xattrs(inode)
        if flags & XATTR_CREATE and name in attrs:
            raise FSError(errno.EEXIST)
        if flags & XATTR_REPLACE and name not in attrs:
            raise FSError(ENOATTR)
        attrs[name] = bytes(value)
        self._store_xattrs(inode, attrs)

    @operation
    def removexattr(self, ino: int, name: bytes) -> None:
        self._writable()
        inode = self._inode(ino)
        attrs = self._xattrs(inode)
        if name not in attrs:
            raise FSError(ENOATTR)
        del attrs[name]
        self._store_xattrs(inode, attrs)

    def _store_xattrs(self, inode, attrs: dict[bytes, bytes]) -> None:
        if xattr_fmt.space_needed(attrs) > self.block_size:
            raise FSError(errno.ENOSPC)
        if inode.file_acl:
            refcount = int.from_bytes(self.cache.bread(inode.file_acl, "xattr", inode.ino)[4:8], "little")
            if refcount > 1 or not attrs:        # shared (copy on write) or no longer needed
                self._release_xattr_block(inode)
        if attrs:
            if not inode.file_acl:
                inode.file_acl = self.filemap.allocate_extra(inode, "xattr")
            self.cache.write(inode.file_acl, xattr_fmt.encode(attrs, self.block_size), "xattr", inode.ino)
        inode.ctime_ns = self._now()
        self.inodes.put(inode)

    def _release_xattr_block(self, inode) -> None:
        blk = inode.file_acl
        buf = self.cache.bread(blk, "xattr", inode.ino)
        refcount = int.from_bytes(buf[4:8], "little")
        if refcount > 1:
            buf[4:8] = (refcount - 1).to_bytes(4, "little")
            self.cache.mark_dirty(blk, buf, "xattr")
            inode.blocks -= self.block_size // 512
        else:
            self.filemap.free_extra(inode, blk)
        inode.file_acl = 0
