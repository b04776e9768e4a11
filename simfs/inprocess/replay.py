"""Replaying an op log (simfs.inprocess.oplog) on an image, in-process.

The image is opened as a Volume with the options given (the caller merges them with the log's),
every recorded operation is asked again with the log's handles mapped to this run's inodes, and
the volume is closed as the unmount closed it. Simulated time depends only on the operations
and the image, so a replay on an identical copy of the recorded image with the recorded options
gives the recorded statistics, field for field; with another allocator, write-back mode or disk
it gives that configuration's figures for the same operations.

A replay checks each outcome against the recording: an operation that fails where it succeeded
(or the other way round), a readdir that does not show the entries the recording saw, ran out of
space, or a handle the log never introduced stops it with ReplayError, naming the operation; the
volume is still closed, so the image stays consistent.

A log recorded with -o clocks=process (format 3, "processes" in its header) says which process
each operation ran for and what the clocks did between requests (simfs.inprocess.processlog):
the replay keeps the same per-process clocks, so concurrent operations overlap as they did on
the mount; with -o clocks=mount it times the same operations on one clock. A log without
process records (clocks=mount, the in-process verbs, version 2) cannot be replayed with
clocks=process: replay refuses that rather than invent processes.
"""

from __future__ import annotations

import errno
import inspect
import os

from simfs.inprocess.oplog import LogError, dec, errname, image_identity, iter_ops, read_header, scan
from simfs.inprocess.processlog import KINDS as PROCESS_RECORDS, ProcessLog, ProcessLogError
from simfs.errors import FSError, ImageError, ImageWriteError, OutputError
from simfs.fs.namespace import Namespace
from simfs.fs.operation import recorded_error
from simfs.ondisk.constants import SUPERBLOCK_OFFSET
from simfs.ondisk.superblock import Superblock


class ReplayError(Exception):
    """The replay cannot start or cannot go on (message for the user, one line)."""


def image_of(path: str) -> dict | None:
    """The identity of the ext2 image at PATH, or None if it cannot be read as one."""
    try:
        with open(path, "rb") as f:
            f.seek(SUPERBLOCK_OFFSET)
            raw = f.read(1024)
        return image_identity(Superblock(raw)) if len(raw) == 1024 else None
    except (OSError, ValueError):
        return None


def usable_image(path: str) -> dict | None:
    """The identity of the ext2 image at PATH after the checks Volume.open makes of its
    superblock (so a random file or an ext4 image gets the message `simfs verb` gives);
    ReplayError if simfs cannot use it. Where a commit was interrupted, the superblock is
    only compared (image_of): Volume.open finishes the commit first, and checks it then; a
    file that cannot be opened is Volume.open's to report too."""
    from simfs.blockio.imagefile import JournalError, pending_journal
    try:
        if pending_journal(path) is not None:
            return image_of(path)
    except JournalError as e:                  # (a link or a FIFO planted as the journal)
        raise ReplayError(str(e)) from None
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(SUPERBLOCK_OFFSET)
            raw = f.read(1024)
    except OSError:
        return None             # Volume.open says why (missing, a directory, no permission)
    if len(raw) < 1024:
        raise ReplayError(f"{path}: not an ext2 file system (file is only {size} bytes)")
    sb = Superblock(raw)
    try:
        sb.validate(path, size)
    except ImageError as e:
        raise ReplayError(str(e)) from None
    return image_identity(sb)


def check(log: str, image: str, *, force: bool = False, partial: bool = False) -> tuple[dict, int]:
    """Everything that can be checked before the image is opened: (header, operations). The
    image comes first: one simfs cannot use is refused as such, not as another image."""
    have = usable_image(image)
    try:
        head = read_header(log)
        n, closed = scan(log, OPS)
    except LogError as e:
        raise ReplayError(str(e)) from None
    if not closed and not partial:
        raise ReplayError(f"{log} ends after {n} operations without the unmount (cut short by a "
                          f"crash?); --partial replays those")
    want = head["image"]
    if have is not None and not force:
        for key in ("uuid", "block_size", "blocks_count"):
            if have.get(key) != want.get(key):
                raise ReplayError(f"{log} was recorded on another image ({key} {want.get(key)}, "
                                  f"{image} has {have.get(key)}); --force replays it anyway")
    return head, n


FILLER = 0   # the byte replay writes: the model's timing does not depend on the data

# The longest read or write a log can hold. Every recorded READ and WRITE is one FUSE request
# (the in-process verbs' kernel model splits at max_write 128 KiB and max_read 1 MiB), and a
# Linux FUSE request carries at most max_pages pages: 256 (1 MiB) up to Linux 6.12, and since
# 6.13 at most fs.fuse.max_pages_limit, whose ceiling is 65535 (FUSE_INIT's max_pages is a u16)
# - 65535 pages of 4 KiB. A longer one was edited by hand: replay refuses it as malformed
# instead of allocating its filler (10**12 bytes: a MemoryError).
MAX_REQUEST = 65535 * 4096


#: what a recorded setattr may change: the keywords of Volume.setattr
SETATTR_KEYS = frozenset(inspect.signature(Namespace.setattr).parameters) - {"self", "ino"}


class Replayer:
    """Asks a volume for the operations of a log; `step(lineno, rec)` does one."""

    def __init__(self, vol):
        self.vol = vol
        self.inos: dict[int, int] = {0: vol.root_ino}
        self.states: dict[int, object] = {}
        self._zeros = b""
        self.index = 0
        self.op = ""

    def ino(self, h) -> int:
        try:
            return self.inos[h]
        except (KeyError, TypeError):
            raise self._stop(f"uses handle {h!r}, which no earlier operation introduced") from None

    def _stop(self, why: str) -> ReplayError:
        return ReplayError(f"operation {self.index} ({self.op}) {why}")

    def _bind(self, h, ino: int) -> None:
        have = self.inos.get(h)
        if have is None:
            self.inos[h] = ino
        elif have != ino:
            raise self._stop(f"reached inode {ino} where the recording reached handle {h} "
                             f"(inode {have} here): the run diverged")

    @staticmethod
    def _length(n) -> int:
        """A recorded read or write length, checked (ValueError: the operation is malformed)."""
        if type(n) is not int or not 0 <= n <= MAX_REQUEST:
            raise ValueError(f"length {n!r} is not a byte count from 0 to {MAX_REQUEST} (the "
                             "longest FUSE request a mount can record)")
        return n

    def _data(self, n: int) -> bytes:
        if len(self._zeros) < n:
            self._zeros = bytes([FILLER]) * max(n, 1 << 17)
        return self._zeros[:n] if n != len(self._zeros) else self._zeros

    def step(self, lineno: int, rec: list) -> None:
        self.index += 1
        self.op = op = rec[0]
        want, args = rec[1], rec[2:]
        fn = getattr(self, "op_" + op, None)
        if fn is None:
            raise ReplayError(f"operation {self.index} (line {lineno}): unknown operation {op!r}")
        if len(args) != fn.__code__.co_argcount - 1:
            raise ReplayError(f"operation {self.index} (line {lineno}, {op}) is malformed: {op} "
                              f"takes {fn.__code__.co_argcount - 1} arguments, the line gives {len(args)}")
        try:
            got = fn(*args)
        except FSError as e:
            name = errname(e.errno)
            if want == name:
                return
            if e.errno == errno.ENOSPC:
                raise self._stop("ran out of space (ENOSPC)") from None
            raise self._stop(f"failed with {name}" + (f" where the recording got {want}"
                                                      if isinstance(want, str) else
                                                      " where the recording succeeded")) from None
        except (TypeError, ValueError, IndexError, AttributeError) as e:
            if recorded_error(e):                       # raised inside the volume, not by the record
                raise
            raise ReplayError(f"operation {self.index} (line {lineno}, {op}) is malformed: {e}") from None
        if isinstance(want, str):
            raise self._stop(f"succeeded where the recording failed with {want}")
        self._check(op, want, got)

    def _check(self, op: str, want, got) -> None:
        if op in ("lookup", "create", "mkdir", "mknod", "symlink", "link", "rename_whiteout"):
            self._bind(want, got.st_ino)
        elif op == "readdir" and want:
            here = {name: ino for name, ino, _ in got}
            for name, h in want:
                if dec(name) not in here:
                    raise self._stop(f"does not list {dec(name)!r}, which the recording's did "
                                     "(another directory order?)")
                self._bind(h, here[dec(name)])
        elif op == "write" and got != want:
            raise self._stop(f"ran out of space (wrote {got} of {want} bytes)" if got < want else
                             f"wrote {got} bytes where the recording wrote {want}")
        elif op == "read" and isinstance(want, int) and len(got) != want:
            raise self._stop(f"read {len(got)} bytes where the recording read {want} "
                             "(the file is not what it was when recorded)")

    # the operations: the log's arguments in, the volume's result out -------------------------------
    def op_lookup(self, p, name): return self.vol.lookup(self.ino(p), dec(name))
    def op_getattr(self, h): return self.vol.getattr(self.ino(h))
    def op_setattr(self, h, kw):
        if not isinstance(kw, dict) or not kw.keys() <= SETATTR_KEYS:
            raise ValueError(f"{kw!r} is not a set of attributes ({', '.join(sorted(SETATTR_KEYS))})")
        return self.vol.setattr(self.ino(h), **kw)

    def op_readlink(self, h): return self.vol.readlink(self.ino(h))
    def op_create(self, p, name, mode, uid, gid): return self.vol.create(self.ino(p), dec(name), mode, uid, gid)
    def op_mkdir(self, p, name, mode, uid, gid): return self.vol.mkdir(self.ino(p), dec(name), mode, uid, gid)

    def op_mknod(self, p, name, mode, rdev, uid, gid):
        return self.vol.mknod(self.ino(p), dec(name), mode, rdev, uid, gid)

    def op_symlink(self, p, name, target, uid, gid):
        return self.vol.symlink(self.ino(p), dec(name), dec(target), uid, gid)

    def op_link(self, h, p, name): return self.vol.link(self.ino(h), self.ino(p), dec(name))
    def op_unlink(self, p, name): return self.vol.unlink(self.ino(p), dec(name))
    def op_rmdir(self, p, name): return self.vol.rmdir(self.ino(p), dec(name))

    def op_rename(self, op_, on, np_, nn, flags):
        return self.vol.rename(self.ino(op_), dec(on), self.ino(np_), dec(nn), flags)

    def op_rename_whiteout(self, op_, on, np_, nn, flags, uid, gid):
        return self.vol.rename(self.ino(op_), dec(on), self.ino(np_), dec(nn), flags, uid, gid)

    def op_readdir(self, h, cookie, sid):
        state = self.states.get(sid) if sid is not None else None
        return self.vol.readdir(self.ino(h), cookie, state=state)

    def op_statfs(self): return self.vol.statfs()
    def op_hold(self, h, n): return self.vol.hold(self.ino(h), n)
    def op_drop(self, h, n): return self.vol.drop(self.ino(h), n)
    def op_open(self, h): return self.vol.open_file(self.ino(h))
    def op_release(self, h, writer): return self.vol.release_file(self.ino(h), writer)
    def op_read(self, h, off, size): return self.vol.read(self.ino(h), off, self._length(size))
    def op_write(self, h, off, n): return self.vol.write(self.ino(h), off, self._data(self._length(n)))
    def op_fsync(self, h, datasync): return self.vol.fsync(self.ino(h), datasync)
    def op_getxattr(self, h, name): return self.vol.getxattr(self.ino(h), dec(name))
    def op_listxattr(self, h): return self.vol.listxattr(self.ino(h))

    def op_setxattr(self, h, name, value, flags):
        return self.vol.setxattr(self.ino(h), dec(name), dec(value), flags)

    def op_removexattr(self, h, name): return self.vol.removexattr(self.ino(h), dec(name))
    def op_sync(self): return self.vol.sync()
    def op_drop_caches(self): return self.vol.drop_caches()
    def op_mark(self, name): return self.vol.mark(name)
    def op_reset_stats(self): return self.vol.reset_stats()
    def op_close(self): return None         # the caller closes the volume after the last one


#: every operation a log may hold: what the Replayer asks, and the readdir states replay() keeps
OPS = frozenset([n[len("op_"):] for n in dir(Replayer) if n.startswith("op_")] + ["opendir", "releasedir"]) \
    | PROCESS_RECORDS


def replay(log: str, image: str, options, *, force: bool = False, partial: bool = False,
           progress=None, checked: tuple[dict, int] | None = None) -> dict:
    """Replay LOG on IMAGE with VolumeOptions `options`; the statistics of the run:
    {"operations": n, "time": the snapshot -o stats= would hold, "counters": totals}.
    `progress(done, total)` is called now and then. Raises ReplayError for bad input, an
    image that cannot be opened, and a run that stops (the volume is closed first).
    `checked`: what check() returned for these arguments, if the caller ran it already."""
    from simfs.fs.volume import Volume

    head, total = checked or check(log, image, force=force, partial=partial)
    recorded = bool(head.get("processes"))
    per_process = getattr(options, "clocks", "mount") == "process"
    if per_process and not recorded:
        raise ReplayError(f"clocks=process: {log} does not record which process asked each "
                          "operation (recorded with clocks=mount, by a verb, or by a simfs before "
                          "format 3), so a replay times them on one clock; give -o clocks=mount "
                          "(docs/concurrency.md)")
    stats_path = options.stats
    try:
        vol = Volume.open(image, options)
    except ImageError as e:
        raise ReplayError(str(e)) from None
    except (ValueError, KeyError) as e:
        raise ReplayError(f"bad option value: {e}") from None
    vol.stop_when_unwritable = True
    r = Replayer(vol)
    procs = None                # made at the first process record, as the mount's at its first request
    records = 0                 # process records among the lines
    try:
        for lineno, rec in iter_ops(log):
            if rec[0] in PROCESS_RECORDS:
                r.index += 1
                r.op = rec[0]
                records += 1
                if not recorded:
                    raise ReplayError(f"operation {r.index} (line {lineno}) is a {rec[0]!r} record "
                                      "in a log whose header announces no process records")
                if per_process:
                    if procs is None:
                        procs = ProcessLog(vol.clock)
                    try:
                        procs.step(rec)
                    except ProcessLogError as e:
                        raise ReplayError(f"operation {r.index} (line {lineno}, {rec[0]}) is "
                                          f"malformed: {e}") from None
            elif rec[0] == "opendir":             # [opendir, state id]
                r.index += 1
                r.op = "opendir"
                r.states[rec[1]] = vol.opendir_state()
            elif rec[0] == "releasedir":        # [releasedir, state id]
                r.index += 1
                r.op = "releasedir"
                r.states.pop(rec[1], None)
            else:
                r.step(lineno, rec)
            if progress is not None and r.index % 1000 == 0:
                progress(r.index, total)
            if r.index >= total:
                break
        if procs is not None:
            procs.finish()                      # the unmount runs at the mount's latest time
    except (ReplayError, LogError) as e:
        vol.options.stats = ""                  # no statistics file for a run that stopped
        _close(vol, str(e))
        raise ReplayError(str(e)) from None
    except BaseException as e:
        vol.options.stats = ""
        _close(vol, f"stopped at operation {r.index} ({r.op})" if isinstance(e, ImageWriteError) else "")
        if isinstance(e, Exception) and recorded_error(e):
            raise ReplayError(f"operation {r.index} ({r.op}) stopped half-way: {type(e).__name__}: {e}; "
                              f"{recorded_error(e)}") from e
        raise
    _close(vol)
    if progress is not None:
        progress(r.index, total)
    return {"operations": r.index - records, "time": vol.stats_snapshot(), "counters": vol.counters,
            "stats_file": stats_path or None, "header": head,
            "processes": [p.t for p in procs.procs] if procs is not None else None}


def _close(vol, why: str = "") -> None:
    """Close the volume; an image its host cannot take (full, failing) is one error line
    saying what the image holds."""
    try:
        vol.close()
    except ImageWriteError as e:
        raise ReplayError((f"{why}; " if why else "") + e.at_close) from None
    except OutputError as e:
        raise ReplayError((f"{why}; " if why else "") + e.strerror) from None
