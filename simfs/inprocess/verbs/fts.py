"""gnulib fts with FTS_CWDFD|FTS_PHYSICAL, as du and grep -r use it (coreutils 9.1, grep 3.8).

The walk is find's (simfs.inprocess.verbs.find) with the descriptors fts keeps, so that the
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
`entry(fts, dir_file, name, kind)` is called for each entry in fts's order (`batches`: readdir
order, or inode order in a directory of more than 10,000 entries); it calls
`fts.descend(dir_file, name)` for directories it enters.
"""

from __future__ import annotations

import operator

RING = 4                    # gnulib fts: I_RING_SIZE
SORT_THRESHOLD = 10_000     # _FTS_INODE_SORT_DIR_ENTRIES_THRESHOLD
MAX_READDIR = 100_000       # FTS_MAX_READDIR_ENTRIES: entries one fts_build reads (no fts_compar)
_INO = operator.itemgetter(1)


def fs_type(k, counts: dict) -> bool:
    """fts's filesystem_type: an fstatfs the first time it is asked, cached after that
    (counts["statfs"]); asked by the leaf optimisation and dirent_inode_sort_may_be_useful.
    True: sorting by inode may help (a FUSE mount is not CIFS, NFS or tmpfs)."""
    if not counts.get("statfs"):
        counts["statfs"] = True
        k.statfs()
    return True


def batches(k, f, may_sort):
    """The entries of the open directory `f` as gnulib's fts_build hands them over (coreutils
    9.1, findutils 4.9): readdir (getdents64 as glibc calls it) at most MAX_READDIR at a time,
    the rest of a getdents buffer left for the next batch; when a batch's 10,001st entry is read
    fts asks whether sorting by inode number may help (`may_sort()`: the file-system type,
    whose first lookup is an fstatfs, and only CIFS, NFS and tmpfs say no), and if so sorts
    the batch by d_ino (fts_compare_ino) — on any large directory of an ext2 image or a FUSE
    mount. Yields (entries, last): `last` once the end of the directory has been read."""
    pending: list = []
    while True:
        batch: list = []
        sort = False
        last = False
        while len(batch) < MAX_READDIR:
            if not pending:
                pending = k.getdents(f)
                if not pending:
                    if f.eof:
                        last = True
                        break
                    continue                        # a buffer of only "." and ".."
            take = MAX_READDIR - len(batch)
            before = len(batch)
            batch.extend(pending[:take])
            pending = pending[take:]
            if before <= SORT_THRESHOLD < len(batch):
                sort = may_sort()
        if sort:
            batch.sort(key=_INO)
        yield batch, last
        if last:
            return


class Fts:
    def __init__(self, k, entry, counts: dict):
        self.k = k
        self.entry = entry
        self.counts = counts
        self.ring: list = []                        # File, or None for AT_FDCWD
        self.cwd = None                             # AT_FDCWD

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
        if a.st_nlink == 2:
            fs_type(k, self.counts)                 # leaf_optimization
        self.ring.append(self.cwd)                  # cwd_advance_fd(dup, chdir_down_one)
        if len(self.ring) > RING:
            old = self.ring.pop(0)
            if old is not None:
                k.close(old)
        self.cwd = f
        for entries, _ in batches(k, f, lambda: fs_type(k, self.counts)):
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
