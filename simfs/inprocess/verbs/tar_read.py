"""`tar -cf /dev/zero -C MNT DIR` (GNU tar 1.34, default GNU format, blocking factor 20).

Read off `strace -f` of tar on a local copy and the op log of the mounted run:

- tar opens MNT (-C: openat(AT_FDCWD, MNT, O_DIRECTORY)) and keeps that descriptor;
- every member: fstatat(parent, name, AT_SYMLINK_NOFOLLOW);
- a directory: openat(parent, name), fstat twice, getdents64 (32 KiB) until it returns nothing
  (tar reads the whole directory before dumping it; the order is readdir's: --sort=none), the
  header, the entries in readdir order (the directory stays open), fstat, close;
- a regular file: an empty file readable by all is not opened (file_dumpable_p) but stat'ed
  again at the end (fstatat); any other is opened and fstat'ed; a second link to an inode
  already archived is then a hard-link header (close, no read, no final fstat); otherwise
  reads, fstat, close. The reads are tar's record buffer: each
  read asks for the space left in the current 10240-byte record (or the rest of the file), so
  the read sizes depend on the archive's position - the headers (one 512-byte block, plus a
  ././@LongLink header and the name's blocks for names over 100 bytes) and the data blocks
  before it. No read at end of file (tar reads st_size bytes);
- a symlink: readlinkat (a long target adds a @LongLink like a long name).

/dev/zero is not /dev/null, so tar does read the data (with -f /dev/null it would not).
"""

from __future__ import annotations

import stat

BLOCK = 512
NAME_FIELD = 100


class _Archive:
    """Where tar is in its output: the block count (records of `record` bytes)."""

    def __init__(self, record: int):
        self.record = record
        self.pos = 0                                # bytes written (a multiple of BLOCK)

    def blocks(self, nbytes: int) -> None:
        self.pos += (nbytes + BLOCK - 1) // BLOCK * BLOCK

    def header(self, name: bytes, link: bytes = b"") -> None:
        if len(name) > NAME_FIELD:                  # GNU ././@LongLink 'L': header + name + NUL
            self.blocks(BLOCK)
            self.blocks(len(name) + 1)
        if len(link) > NAME_FIELD:                  # 'K' for a long link target
            self.blocks(BLOCK)
            self.blocks(len(link) + 1)
        self.blocks(BLOCK)

    def room(self) -> int:
        """available_space_after(find_next_block()): the bytes left in the current record."""
        return self.record - self.pos % self.record


def run(k, where: list[bytes], record: int = 10240, **_) -> dict:
    counts = {"dirs": 0, "files": 0, "links": 0, "other": 0, "bytes": 0, "reads": 0}
    arc = _Archive(record)
    seen: set[int] = set()
    base = k.open(k.root, [], directory=True)       # -C MNT
    _dump(k, base.ino, where, b"/".join(where), arc, seen, counts)
    k.close(base)
    return counts


def _dump(k, parent: int, path: list[bytes], name: bytes, arc: _Archive, seen: set[int],
          counts: dict) -> None:
    a = k.stat(parent, path)                        # fstatat(parent, name, AT_SYMLINK_NOFOLLOW)
    mode = a.st_mode
    if stat.S_ISDIR(mode):
        counts["dirs"] += 1
        f = k.open(parent, path)
        k.fstat(f)
        k.fstat(f)
        entries = k.listdir(f)
        arc.header(name + b"/")
        for ent, _ino, _kind in entries:
            _dump(k, f.ino, [ent], name + b"/" + ent, arc, seen, counts)
        k.fstat(f)
        k.close(f)
    elif stat.S_ISREG(mode):
        counts["files"] += 1
        dumpable = not (a.st_size == 0 and mode & 0o444 == 0o444)
        f = None
        if dumpable:
            f = k.open(parent, path)
            a = k.fstat(f)
        if a.st_nlink > 1:                          # dump_hard_link, after the open and fstat
            if a.st_ino in seen:
                counts["links"] += 1
                arc.header(name)
                if f is not None:
                    k.close(f)
                return
            seen.add(a.st_ino)
        if f is None:
            arc.header(name)
            k.stat(parent, path)                    # the final fstatat (no descriptor)
            return
        st = a
        arc.header(name)
        size, off = st.st_size, 0
        while size > 0:
            want = min(arc.room(), size)
            got = k.read(f, off, want)
            counts["reads"] += 1
            arc.blocks(want)
            off += got
            size -= want
            if got < want:                          # the file shrank: tar pads with zeros
                break
        counts["bytes"] += off
        k.fstat(f)
        k.close(f)
    elif stat.S_ISLNK(mode):
        counts["other"] += 1
        target = k.readlink(parent, path)
        arc.header(name, target)
    else:
        counts["other"] += 1
        arc.header(name)
