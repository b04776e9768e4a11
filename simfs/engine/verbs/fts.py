"""gnulib fts with FTS_CWDFD|FTS_PHYSICAL, as du and grep -r use it (coreutils 9.1, grep 3.8).

The walk is find's (simfs.engine.verbs.find) with the descriptors fts keeps, so that the
RELEASEDIRs come when the mount sees them: fts reads a directory through one descriptor and
works in it through a dup (F_DUPFD_CLOEXEC) that becomes its virtual working directory; the
old one goes into a ring of four (I_RING_SIZE) and the one pushed out of the ring is closed.
Climbing back pops the parent's descriptor from the ring (or, the ring empty or holding the
initial AT_FDCWD, openat("..") and fstat) and closes the child's. At the end the root's is
closed, then fts_close pops and closes what the ring still holds.

Per directory: fstatat(parent, name) (the caller's visit), openat(O_DIRECTORY), fstat, fstatat
again (fts checks the directory did not move), the file-system-type cache's single fstatfs on
the first directory with no subdirectories (st_nlink == 2: the leaf optimisation), the dup,
getdents64 until nothing, close of the first descriptor (the dup keeps the directory open).
`entry(fts, dir_file, name, kind)` is called for each entry in readdir order; it calls
`fts.descend(dir_file, name)` for directories it enters.
"""

from __future__ import annotations

RING = 4            # gnulib fts: I_RING_SIZE


class Fts:
    def __init__(self, k, entry, counts: dict):
        self.k = k
        self.entry = entry
        self.counts = counts
        self.ring: list = []                        # File, or None for AT_FDCWD
        self.cwd = None                             # AT_FDCWD
        self.statfs_done = False

    def run(self, where: list[bytes]) -> None:
        k = self.k
        top = k.open(k.root, where, directory=True)
        self._visit(top, k.root, where, 0)
        if self.cwd is not None:                    # RESTORE_INITIAL_CWD: close the root's
            k.close(self.cwd)
        self.cwd = None
        while self.ring:                            # fts_close: fd_ring_clear
            f = self.ring.pop()
            if f is not None:
                k.close(f)

    def descend(self, d, name: bytes) -> None:
        """Enter the subdirectory `name` of the directory open as `d` (fstatat done)."""
        sub = self.k.open(d.ino, [name], directory=True)
        self._visit(sub, d.ino, [name], 1)

    def _visit(self, f, parent: int, path: list[bytes], depth: int) -> None:
        k = self.k
        self.counts["dirs"] = self.counts.get("dirs", 0) + 1
        a = k.fstat(f)
        k.stat(parent, path)
        if not self.statfs_done and a.st_nlink == 2:
            self.statfs_done = True
            self.counts["statfs"] = True
            k.statfs()
        self.ring.append(self.cwd)                  # cwd_advance_fd(dup, chdir_down_one)
        if len(self.ring) > RING:
            old = self.ring.pop(0)
            if old is not None:
                k.close(old)
        self.cwd = f
        entries = k.listdir(f)
        for name, ino, kind in entries:
            self.entry(self, f, name, kind)
        if not depth:
            return
        up = self.ring.pop() if self.ring else None
        if up is None:                              # openat(".."), fstat
            up = k.open_dotdot(f.ino, parent)
            k.fstat(up)
        old, self.cwd = self.cwd, up                # cwd_advance_fd(.., false) closes the old
        k.close(old)                                # cwd: f's, or its ".." reopening
