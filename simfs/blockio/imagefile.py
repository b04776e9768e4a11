"""The image file as real storage: blocks reach it in whole, consistent commits.

The buffer cache is a *model* of when the simulated system writes a block; it never writes
the image itself. Every block an operation changes is noted here (a reference to the
buffer's bytes, so a commit writes the newest contents), and `commit()` writes everything
noted since the last commit, between two operations, so the image on disk is always the file
system as it stood at the end of some operation. A commit first goes to a journal beside the
image (`IMAGE.journal`: the records, then a checksum), is made durable, and only then is
written in place; a crash half-way through the in-place writes is finished at the next open
by replaying the journal, and a torn journal is ignored (the image is then the previous
commit, intact). Blocks that were free at the last commit (new file data, mostly) skip the
journal, as data=ordered does: they are written in place and made durable before the
journal, for nothing in the committed image points at them yet - a crash before the journal
leaves the previous commit intact with only free blocks changed. The file system says which
blocks it takes and frees (`allocated`, `freed`). Commits cost no simulated time: real
durability and the modelled write-back are separate.

Data-less images (`dataless=True`): blocks noted as kind "data" are not kept and never
reach the journal or the image; reading a data block gives zeros without touching the file.
After a commit is in place, the data blocks noted since the one before are punched out of
the image (made holes), so they read as zeros whatever they held before, and the file stays
sparse. The punch needs no journal: it changes only data blocks of the committed state,
whose contents a data-less image does not keep.

Journal format, little-endian: header `SIMFSJ2\\0`, the 1024-byte superblock the image held
when the commit began, u32 record count; per record u64 byte offset, u32 length, the bytes;
trailer u32 CRC-32 of everything before it, `COMMIT\\0\\0`. A journal is replayed only over
the image it was written for: one whose superblock is still the one it began from, or the one
it writes (the commit was interrupted in place). Any other (left by an image that was since
repaired, used again or made anew) is stale and is discarded, never replayed over a newer
file system. The journal's name comes from the image's real path, so a symbolic link to the
image finds the same journal.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import hashlib
import os
import struct
import time
import zlib

import simfs.outfile as outfile
from simfs.errors import ImageError, ImageWriteError
from simfs.ondisk.constants import SUPERBLOCK_OFFSET

HEADER = b"SIMFSJ2\0"
SB_OFFSET, SB_SIZE = SUPERBLOCK_OFFSET, 1024  # the primary superblock, which every commit checks
TRAILER = b"COMMIT\0\0"
_REC = struct.Struct("<QI")
# Above this much noted data a commit is made at the next operation boundary, so memory held
# for the image stays bounded whatever the model keeps dirty.
COMMIT_MAX_BYTES = 64 << 20


# Above this many data blocks waiting to be punched (data-less images) a commit is owed.
PUNCH_MAX_BLOCKS = 1 << 18
# Above this many blocks taken or freed since the last commit a commit is owed: the sets that
# let new blocks skip the journal (fresh, reused) stay bounded through an rm -rf of millions.
TRACKED_MAX_BLOCKS = 1 << 20
_IOV_MAX = os.sysconf("SC_IOV_MAX")           # iovecs one pwritev takes (1024 on Linux)
_PUNCH_HOLE = 0x02 | 0x01                  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
_libc = None


def punch(fd: int, offset: int, length: int) -> None:
    """Make offset..offset+length of the file read as zeros, as a hole where the host file
    system can (fallocate PUNCH_HOLE), else by writing zeros."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        _libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    if _libc.fallocate(fd, _PUNCH_HOLE, offset, length) == 0:
        return
    err = ctypes.get_errno()
    if err not in (errno.EOPNOTSUPP, errno.ENOSYS):
        raise OSError(err, os.strerror(err))
    for pos in range(offset, offset + length, 1 << 20):
        os.pwrite(fd, bytes(min(1 << 20, offset + length - pos)), pos)


def _pwritev_all(fd: int, pieces: list, offset: int) -> None:
    """Write the pieces one after another from `offset`, in as few system calls as the
    kernel's iovec limit allows, finishing short writes."""
    i = 0
    while i < len(pieces):
        batch = pieces[i:i + _IOV_MAX]
        want = sum(len(p) for p in batch)
        done = os.pwritev(fd, batch, offset)
        if done < want:                                # short: the rest, one piece at a time
            rest = b"".join(bytes(p) for p in batch)[done:]
            while rest:
                n = os.pwrite(fd, rest, offset + done)
                done, rest = done + n, rest[n:]
        offset += want
        i += _IOV_MAX


def journal_path(image: str) -> str:
    """IMAGE.journal beside the image (by its real path: a symbolic link to the image names
    the same journal); for a name too long for that, a hidden name made from its hash (same
    directory, so a rename of the pair keeps them together)."""
    image = os.path.realpath(image)
    head, base = os.path.split(image)
    if len(os.fsencode(base)) + len(".journal") <= 255:
        return image + ".journal"
    digest = hashlib.sha256(os.fsencode(base)).hexdigest()[:32]
    return os.path.join(head, f".{digest}.journal")


class JournalError(ImageError):
    """The journal cannot be read, replayed or removed (its message is one line for the user);
    an ImageError: the image cannot be used until that is resolved."""


def journal_limit(image_size: int) -> int:
    """The most a journal of an image this large can hold: its records are distinct blocks
    of the image (12 bytes of header each, a block at least 1 KiB) and the superblock,
    plus the journal's own header and trailer. A larger file is not one simfs wrote."""
    return image_size + image_size // 64 + (1 << 20)


def _read_journal(image: str, image_size: int) -> bytes | None:
    """The journal's bytes (None: there is none), read as simfs.outfile reads a file beside
    an image: never through a link, never a FIFO or a device, never another user's file,
    never more than a journal of this image can hold."""
    path = journal_path(image)
    try:
        return outfile.read_private(path, journal_limit(image_size))
    except outfile.Refused as e:
        raise JournalError(f"{path}: refusing to read the journal: {e.strerror}") from None
    except OSError as e:
        raise JournalError(f"{path}: cannot read the journal: {e.strerror}") from None


def _parse(raw: bytes) -> tuple[bytes, list[tuple[int, bytes]]] | None:
    """(the superblock the commit began from, the records) of a complete journal, or None
    if it is torn or foreign."""
    start = len(HEADER) + SB_SIZE + 4
    if len(raw) < start + 4 + len(TRAILER) or not raw.startswith(HEADER):
        return None
    if not raw.endswith(TRAILER):
        return None
    body, crc = raw[:-len(TRAILER) - 4], raw[-len(TRAILER) - 4:-len(TRAILER)]
    if zlib.crc32(body) != struct.unpack("<I", crc)[0]:
        return None
    before = body[len(HEADER):len(HEADER) + SB_SIZE]
    (count,) = struct.unpack_from("<I", body, start - 4)
    pos, out = start, []
    for _ in range(count):
        off, n = _REC.unpack_from(body, pos)
        pos += _REC.size
        out.append((off, body[pos:pos + n]))
        pos += n
    return (before, out) if pos == len(body) else None


def _written_over(sb: bytes, records: list[tuple[int, bytes]]) -> bytes:
    """The superblock `sb` once the records are written in place."""
    out = bytearray(sb)
    for off, data in records:
        lo, hi = max(off, SB_OFFSET), min(off + len(data), SB_OFFSET + SB_SIZE)
        if lo < hi:
            out[lo - SB_OFFSET:hi - SB_OFFSET] = data[lo - off:hi - off]
    return bytes(out)


def _state(raw: bytes, fd: int) -> tuple[str, list[tuple[int, bytes]]]:
    """('complete', records) for a journal to replay over the image open as fd; ('torn', [])
    for a partial one, ('stale', []) for one written for another state of the image."""
    parsed = _parse(raw)
    if parsed is None:
        return "torn", []
    before, records = parsed
    now = os.pread(fd, SB_SIZE, SB_OFFSET)
    if now not in (before, _written_over(before, records)):
        return "stale", []
    return "complete", records


def pending_journal(image: str) -> str | None:
    """'complete' if IMAGE.journal holds a commit to finish, 'torn' if it holds a partial one
    and 'stale' if it belongs to another state of the image (either: nothing to do but
    remove it), None if there is none; JournalError if it is not a file simfs may read."""
    try:
        size = os.stat(image).st_size
    except FileNotFoundError:
        return None
    raw = _read_journal(image, size)
    if not raw:
        return None
    try:
        fd = os.open(image, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        return _state(raw, fd)[0]
    finally:
        os.close(fd)


def recover(image: str, fd: int) -> int:
    """Finish an interrupted commit on the image open read-write as fd; remove the journal.
    Returns how many records were replayed (0: none, or a torn or stale journal was
    discarded)."""
    path = journal_path(image)
    raw = _read_journal(image, os.fstat(fd).st_size)
    if raw is None:
        return 0
    records = _state(raw, fd)[1] if raw else []
    for off, data in records:
        os.pwrite(fd, data, off)
    if records:
        os.fsync(fd)
    try:
        os.unlink(path)
    except OSError as e:
        raise JournalError(f"{path}: cannot remove the journal: {e.strerror}") from None
    return len(records)


class ImageFile:
    """Reads blocks of the image (newest noted contents first) and commits changes to it."""

    def __init__(self, image: str, fd: int, block_size: int, *, writable: bool,
                 commit_interval: float = 5.0, dataless: bool = False):
        self.image = image
        self.fd = fd
        self.bs = block_size
        self.writable = writable
        self.commit_interval = commit_interval
        self.noted: dict[int, bytearray] = {}        # block -> the buffer holding its newest bytes
        self.extra: dict[int, bytes] = {}            # byte offset -> bytes (the superblock)
        self.dataless = dataless
        self.zeroed: set[int] = set()                 # data-less: data blocks to punch after the commit
        self.fresh: set[int] = set()                  # free at the last commit, taken since
        self.reused: set[int] = set()                 # in use at the last commit, freed since
        self.last_commit = time.monotonic()
        self.committed_at = time.time()             # wall clock of the last commit that went out
        self.commits = 0
        self._journal_fd: int | None = None
        self.failure: ImageWriteError | None = None   # why the last commit could not be written

    # reading -----------------------------------------------------------------------------
    def read(self, blkno: int, count: int = 1, kind: str = "") -> list[bytearray]:
        """Blocks blkno.. as separate buffers; a noted block is returned as its own buffer
        (the caller may keep it as the cached copy: it is the newest contents). Data blocks
        of a data-less image are zeros, whatever the file holds."""
        bs = self.bs
        if self.dataless and kind == "data":
            return [bytearray(bs) for _ in range(count)]
        out = [bytearray(bs) for _ in range(count)]
        for i in range(0, count, _IOV_MAX):      # into the buffers; zeros stay past the file's end
            os.preadv(self.fd, out[i:i + _IOV_MAX], (blkno + i) * bs)
        noted = self.noted
        if noted:
            for i in range(count):
                newest = noted.get(blkno + i)
                if newest is not None:
                    out[i] = newest
        return out

    # noting changes ----------------------------------------------------------------------
    def note(self, blkno: int, data: bytearray, kind: str = "") -> None:
        """The block now holds `data` (kind as the cache calls it); a data block of a
        data-less image is only remembered, to be punched."""
        if not self.writable or blkno < 0:
            return
        if self.dataless and kind == "data":
            self.noted.pop(blkno, None)          # was metadata in this commit: no longer
            self.zeroed.add(blkno)
            return
        self.zeroed.discard(blkno)
        self.noted[blkno] = data

    def note_bytes(self, offset: int, data: bytes) -> None:
        """A piece that is not a cached block (the superblock, packed at commit time)."""
        if self.writable:
            self.extra[offset] = bytes(data)

    def allocated(self, blkno: int) -> None:
        """The file system took the block: if it was free at the last commit, the next
        commit writes it in place before the journal instead of through it."""
        if self.writable and blkno not in self.reused:
            self.fresh.add(blkno)

    def freed(self, blkno: int) -> None:
        """The file system freed the block (one still free at the last commit stays fresh)."""
        if self.writable and blkno not in self.fresh:
            self.reused.add(blkno)

    def discard(self, blkno: int) -> None:
        """The block was freed: its contents no longer matter."""
        self.noted.pop(blkno, None)
        self.zeroed.discard(blkno)

    @property
    def drops_data(self) -> bool:
        """Data-less: file data the next commit leaves out (and punches)."""
        return bool(self.zeroed)

    @property
    def noted_bytes(self) -> int:
        return len(self.noted) * self.bs

    def due(self) -> bool:
        """Whether a commit is owed: the interval has passed with changes noted, or too much
        is noted."""
        if not self.noted and not self.extra and not self.zeroed:
            return False
        if self.failure is not None:                   # try again once per interval, not sooner
            return time.monotonic() - self.last_commit >= self.commit_interval
        return (self.noted_bytes >= COMMIT_MAX_BYTES or len(self.zeroed) >= PUNCH_MAX_BLOCKS
                or len(self.fresh) + len(self.reused) >= TRACKED_MAX_BLOCKS
                or time.monotonic() - self.last_commit >= self.commit_interval)

    # committing --------------------------------------------------------------------------
    def commit(self) -> int:
        """Write everything noted: blocks free at the last commit in place, then the rest
        to the journal, then in place; durable when this returns. Returns the number of
        blocks written.

        If the host cannot take the fresh blocks or the journal (full, failing), the journal
        is emptied again (its space back), nothing noted is dropped and ImageWriteError says
        so: the image is as at the last commit (free blocks aside), and a later commit can
        still write everything. If the journal went out whole but the image cannot be
        written in place, ImageWriteError(in_place): a later commit first writes that
        journal in place again (`_finish_in_place`); until it can, the journal stays as it
        is, for the next mount or simfs fsck to replay."""
        if self.failure is not None and self.failure.in_place:   # a whole journal awaits replay
            self._finish_in_place()
        self.last_commit = time.monotonic()
        if not self.writable or (not self.noted and not self.extra):
            self._punch()
            return 0
        blocks = sorted(self.noted)
        fresh = self.fresh
        ordered = self._records([b for b in blocks if b in fresh])
        records = self._records([b for b in blocks if b not in fresh])
        records.extend((off, [data]) for off, data in sorted(self.extra.items()))  # the superblock wins
        jpath = journal_path(self.image)
        target = self.image
        try:
            if ordered:                                # nothing committed points at these yet
                for off, bufs in ordered:
                    _pwritev_all(self.fd, bufs, off)
                os.fsync(self.fd)
            # the journal, without copying the blocks: its pieces in order, their CRC as they
            # go; it starts with the superblock it may be replayed over
            pieces: list = [HEADER + os.pread(self.fd, SB_SIZE, SB_OFFSET) + struct.pack("<I", len(records))]
            for off, bufs in records:
                pieces.append(_REC.pack(off, sum(len(b) for b in bufs)))
                pieces.extend(bufs)
            crc = 0
            for piece in pieces:
                crc = zlib.crc32(piece, crc)
            pieces.append(struct.pack("<I", crc) + TRAILER)
            target = f"the journal {jpath}"
            jfd = self._journal()
            os.ftruncate(jfd, 0)
            _pwritev_all(jfd, pieces, 0)
            os.fsync(jfd)
        except OSError as e:
            if self._journal_fd is not None:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._journal_fd, 0)  # a partial journal is never replayed
            at = time.strftime("%H:%M:%S", time.localtime(self.committed_at))
            self.failure = ImageWriteError(e.errno or errno.EIO, f"cannot write {target}: "
                                           f"{e.strerror or e}; {self.image} is as at its last commit ({at})")
            raise self.failure from None
        try:
            for off, bufs in records:
                _pwritev_all(self.fd, bufs, off)
            os.fsync(self.fd)
        except OSError as e:
            self.failure = ImageWriteError(
                e.errno or errno.EIO, f"cannot write {self.image}: {e.strerror or e}; its journal "
                f"{jpath} holds the last commit, which the next mount or simfs fsck replays",
                in_place=True)
            raise self.failure from None
        with contextlib.suppress(OSError):     # left whole, it is replayed once more: harmless
            os.ftruncate(jfd, 0)
        self.noted.clear()
        self.extra.clear()
        self.fresh.clear()
        self.reused.clear()
        self.failure = None
        self.committed_at = time.time()
        self.commits += 1
        self._punch()
        return len(blocks)

    def _finish_in_place(self) -> None:
        """Write the journal that went out whole, whose in-place writes failed, in place again
        (the host may have room now); ImageWriteError(in_place) again if it still cannot.
        Then the image is that commit: the blocks taken before it are in use there, so none
        of them may skip the journal any more (they count as reused)."""
        jfd = self._journal_fd
        try:
            parsed = _parse(os.pread(jfd, os.fstat(jfd).st_size, 0))
            if parsed is None:
                raise OSError(errno.EIO, "its journal no longer reads back whole")
            for off, data in parsed[1]:
                _pwritev_all(self.fd, [data], off)
            os.fsync(self.fd)
            os.ftruncate(jfd, 0)
        except OSError:
            raise self.failure from None
        self.failure = None
        self.reused |= self.fresh
        self.fresh.clear()

    def _records(self, blocks: list[int]) -> list[tuple[int, list]]:
        """(byte offset, the buffers written there) for sorted blocks: contiguous blocks
        become one record (up to 256 blocks)."""
        records, i = [], 0
        while i < len(blocks):
            j = i + 1
            while j < len(blocks) and blocks[j] == blocks[j - 1] + 1 and j - i < 256:
                j += 1
            records.append((blocks[i] * self.bs, [self.noted[b] for b in blocks[i:j]]))
            i = j
        return records

    def _punch(self) -> None:
        """Data-less: make the data blocks noted since the last commit holes, in runs."""
        if not self.zeroed:
            return
        blocks, bs = sorted(self.zeroed), self.bs
        self.zeroed.clear()
        i = 0
        while i < len(blocks):
            j = i + 1
            while j < len(blocks) and blocks[j] == blocks[j - 1] + 1:
                j += 1
            punch(self.fd, blocks[i] * bs, (j - i) * bs)
            i = j

    def _journal(self) -> int:
        if self._journal_fd is None:
            path = journal_path(self.image)
            self._journal_fd = outfile.open_private(path, 0o600)    # (never through a link)
            dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
            try:
                os.fsync(dfd)                          # the journal's name is durable too
            finally:
                os.close(dfd)
        return self._journal_fd

    def close(self) -> None:
        """After a final commit: the journal is empty and goes (kept if it awaits replay)."""
        if self._journal_fd is not None:
            os.close(self._journal_fd)
            self._journal_fd = None
            if self.failure is not None and self.failure.in_place:
                return
            try:
                os.unlink(journal_path(self.image))
            except FileNotFoundError:
                pass
