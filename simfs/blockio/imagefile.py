"""The image file as real storage: blocks reach it in whole, consistent commits.

The buffer cache is a *model* of when the simulated system writes a block; it never writes
the image itself. Every block an operation changes is noted here (a reference to the
buffer's bytes, so a commit writes the newest contents), and `commit()` writes everything
noted since the last commit, between two operations, so the image on disk is always the file
system as it stood at the end of some operation. A commit first goes to a journal beside the
image (`IMAGE.journal`: the records, then a checksum), is made durable, and only then is
written in place; a crash half-way through the in-place writes is finished at the next open
by replaying the journal, and a torn journal is ignored (the image is then the previous
commit, intact). Commits cost no simulated time: real durability and the modelled write-back
are separate.

Journal format, little-endian: header `SIMFSJ1\\0`, u32 record count; per record u64 byte
offset, u32 length, the bytes; trailer u32 CRC-32 of everything before it, `COMMIT\\0\\0`.
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
import zlib

HEADER = b"SIMFSJ1\0"
TRAILER = b"COMMIT\0\0"
_REC = struct.Struct("<QI")
# Above this much noted data a commit is made at the next operation boundary, so memory held
# for the image stays bounded whatever the model keeps dirty.
COMMIT_MAX_BYTES = 64 << 20


def journal_path(image: str) -> str:
    """IMAGE.journal beside the image; for a name too long for that, a hidden name made
    from its hash (same directory, so a rename of the pair keeps them together)."""
    head, base = os.path.split(image)
    if len(os.fsencode(base)) + len(".journal") <= 255:
        return image + ".journal"
    digest = hashlib.sha256(os.fsencode(base)).hexdigest()[:32]
    return os.path.join(head, f".{digest}.journal")


class JournalError(Exception):
    """The journal cannot be replayed or removed (its message is one line for the user)."""


def _parse(raw: bytes) -> list[tuple[int, bytes]] | None:
    """The records of a complete journal, or None if it is torn or foreign."""
    if len(raw) < len(HEADER) + 4 + 4 + len(TRAILER) or not raw.startswith(HEADER):
        return None
    if not raw.endswith(TRAILER):
        return None
    body, crc = raw[:-len(TRAILER) - 4], raw[-len(TRAILER) - 4:-len(TRAILER)]
    if zlib.crc32(body) != struct.unpack("<I", crc)[0]:
        return None
    (count,) = struct.unpack_from("<I", body, len(HEADER))
    pos, out = len(HEADER) + 4, []
    for _ in range(count):
        off, n = _REC.unpack_from(body, pos)
        pos += _REC.size
        out.append((off, body[pos:pos + n]))
        pos += n
    return out if pos == len(body) else None


def pending_journal(image: str) -> str | None:
    """'complete' if IMAGE.journal holds a commit to finish, 'torn' if it holds a partial one
    (nothing to do but remove it), None if there is none."""
    try:
        with open(journal_path(image), "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    if not raw:
        return None
    return "complete" if _parse(raw) is not None else "torn"


def recover(image: str, fd: int) -> int:
    """Finish an interrupted commit on the image open read-write as fd; remove the journal.
    Returns how many records were replayed (0: none, or a torn journal was discarded)."""
    path = journal_path(image)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return 0
    except OSError as e:
        raise JournalError(f"{path}: cannot read the journal: {e.strerror}") from None
    records = _parse(raw) if raw else None
    for off, data in records or ():
        os.pwrite(fd, data, off)
    if records:
        os.fsync(fd)
    try:
        os.unlink(path)
    except OSError as e:
        raise JournalError(f"{path}: cannot remove the journal: {e.strerror}") from None
    return len(records or ())


class ImageFile:
    """Reads blocks of the image (newest noted contents first) and commits changes to it."""

    def __init__(self, image: str, fd: int, block_size: int, *, writable: bool,
                 commit_interval: float = 5.0):
        self.image = image
        self.fd = fd
        self.bs = block_size
        self.writable = writable
        self.commit_interval = commit_interval
        self.noted: dict[int, bytearray] = {}        # block -> the buffer holding its newest bytes
        self.extra: dict[int, bytes] = {}            # byte offset -> bytes (the superblock)
        self.last_commit = time.monotonic()
        self.commits = 0
        self._journal_fd: int | None = None

    # reading -----------------------------------------------------------------------------
    def read(self, blkno: int, count: int = 1) -> list[bytearray]:
        """Blocks blkno.. as separate buffers; a noted block is returned as its own buffer
        (the caller may keep it as the cached copy: it is the newest contents)."""
        bs = self.bs
        raw = os.pread(self.fd, count * bs, blkno * bs)
        out = []
        for i in range(count):
            noted = self.noted.get(blkno + i)
            out.append(noted if noted is not None else bytearray(raw[i * bs:(i + 1) * bs].ljust(bs, b"\0")))
        return out

    # noting changes ----------------------------------------------------------------------
    def note(self, blkno: int, data: bytearray) -> None:
        if self.writable and blkno >= 0:
            self.noted[blkno] = data

    def note_bytes(self, offset: int, data: bytes) -> None:
        """A piece that is not a cached block (the superblock, packed at commit time)."""
        if self.writable:
            self.extra[offset] = bytes(data)

    def discard(self, blkno: int) -> None:
        """The block was freed: its contents no longer matter."""
        self.noted.pop(blkno, None)

    @property
    def noted_bytes(self) -> int:
        return len(self.noted) * self.bs

    def due(self) -> bool:
        """Whether a commit is owed: the interval has passed with changes noted, or too much
        is noted."""
        if not self.noted and not self.extra:
            return False
        return (self.noted_bytes >= COMMIT_MAX_BYTES
                or time.monotonic() - self.last_commit >= self.commit_interval)

    # committing --------------------------------------------------------------------------
    def commit(self) -> int:
        """Write everything noted: journal, then in place; durable when this returns.
        Returns the number of blocks written."""
        self.last_commit = time.monotonic()
        if not self.writable or (not self.noted and not self.extra):
            return 0
        bs = self.bs
        blocks = sorted(self.noted)
        records: list[tuple[int, bytes]] = []
        i = 0
        while i < len(blocks):                         # contiguous blocks become one record
            j = i + 1
            while j < len(blocks) and blocks[j] == blocks[j - 1] + 1 and j - i < 256:
                j += 1
            records.append((blocks[i] * bs, b"".join(bytes(self.noted[b]) for b in blocks[i:j])))
            i = j
        records.extend(sorted(self.extra.items()))     # after the blocks: the superblock wins
        body = bytearray(HEADER + struct.pack("<I", len(records)))
        for off, data in records:
            body += _REC.pack(off, len(data))
            body += data
        journal = bytes(body) + struct.pack("<I", zlib.crc32(body)) + TRAILER
        jfd = self._journal()
        os.ftruncate(jfd, 0)
        os.pwrite(jfd, journal, 0)
        os.fsync(jfd)
        for off, data in records:
            os.pwrite(self.fd, data, off)
        os.fsync(self.fd)
        os.ftruncate(jfd, 0)
        self.noted.clear()
        self.extra.clear()
        self.commits += 1
        return len(blocks)

    def _journal(self) -> int:
        if self._journal_fd is None:
            path = journal_path(self.image)
            self._journal_fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
            try:
                os.fsync(dfd)                          # the journal's name is durable too
            finally:
                os.close(dfd)
        return self._journal_fd

    def close(self) -> None:
        """After a final commit: the journal is empty and goes."""
        if self._journal_fd is not None:
            os.close(self._journal_fd)
            self._journal_fd = None
            try:
                os.unlink(journal_path(self.image))
            except FileNotFoundError:
                pass
