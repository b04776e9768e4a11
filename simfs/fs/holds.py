"""Holds: the kernel's references to inodes and the open files, and when an unlinked inode
is freed.

Kernel lookups are "holds" (`hold(ino)` / `drop(ino, n)`); an open file is a hold and a
handle (`open_file(ino)` / `release_file`). An inode whose last name goes is freed when the
operation ends unless a handle is open (then at its last release): the host kernel evicts an
unlinked inode nobody uses at the unlink, as the modelled ext2 frees it there, but tells
simfs so (FORGET) only asynchronously, so freeing at the FORGET would make a mounted run's
timing depend on when the host's message came. The references the kernel still held are
kept as "stale" and its FORGETs are counted off them first; until they are gone the number
is not handed out again (unless nothing else is free: then the kernel tells the two apart by
the generation number), and a GETATTR through them (a removed working directory, an O_PATH
descriptor) sees the last attributes.
"""


class Holds:
    """Holds and open files of `simfs.fs.volume.Volume` (a mixin)."""

    def hold(self, ino: int, n: int = 1) -> None:
        if ino not in self.holds:
            self.inodes.pin(ino)
        self.holds[ino] = self.holds.get(ino, 0) + n

    def open_file(self, ino: int) -> None:
        """A file is opened (FUSE OPEN or CREATE): a hold, and a handle that keeps the inode
        if its last name goes."""
        self.hold(ino)
        self.handles[ino] = self.handles.get(ino, 0) + 1

    def release_file(self, ino: int, writer: bool) -> None:
        """An open file is released (FUSE RELEASE). Linux's ext2_release_file drops the file's
        block reservation whenever a file open for writing is closed, however many lookups
        still hold the inode; then the handle's hold goes, and an unlinked file's last close
        frees it (the kernel evicts it then)."""
        left = self.handles.get(ino, 0) - 1
        if left > 0:
            self.handles[ino] = left
        else:
            self.handles.pop(ino, None)
        if writer and ino in self.holds and not self.options.read_only and self.space.inode_in_use[ino - 1]:
            self.placement.release(self.inodes.get(ino))
        self.drop(ino)
        if left <= 0 and not self.options.read_only:
            self._evict_one(ino)            # the last close of an unlinked file evicts it

    def drop(self, ino: int, n: int = 1) -> None:
        if ino in self.stale:               # references to the freed inode go first
            refs, attr = self.stale[ino]
            taken = min(refs, n)
            if refs > taken:
                self.stale[ino] = (refs - taken, attr)
            else:
                del self.stale[ino]
            n -= taken
            if not n:
                return
        if ino not in self.holds:           # nothing held (a forget of an unknown node)
            return
        left = self.holds.get(ino, 0) - n
        if left > 0:
            self.holds[ino] = left
            return
        self.holds.pop(ino, None)
        if self.options.read_only or not self.space.inode_in_use[ino - 1]:
            self.inodes.forget(ino)
            return
        inode = self.inodes.in_core(ino)
        self.inodes.unpin(ino)
        if inode is None:                 # never read while held (a readdirplus entry): no
            return                        # allocator state, and not unlinked here
        self.placement.release(inode)     # last close: ext2_discard_reservation and the like
        if inode.links == 0 and ino in self.orphans:    # (not one the image had at 0 links:
            self._free_inode(inode)                      # a damaged inode is e2fsck's to free)

    def evict_unlinked(self) -> None:
        """After an operation: free the inodes it unlinked that no open file holds."""
        pending, self.ops.evict = self.ops.evict, []
        for ino in pending:
            self._evict_one(ino)

    def _evict_one(self, ino: int) -> None:
        """Free an unlinked inode the kernel has evicted (no name, no open file), keeping its
        references as stale. What still reaches it without opening it (fstat of an O_PATH
        descriptor, stat of a removed working directory) gets its last attributes, as from
        ext2's orphan, until those references go."""
        held = self.holds.get(ino)
        if not held or self.handles.get(ino) or not self.space.inode_in_use[ino - 1]:
            return
        inode = self.inodes.get(ino)
        if inode.links:
            return
        attr = self._attr(inode)
        self.holds[ino] = 1
        self.drop(ino)
        self.stale[ino] = (self.stale[ino][0] + held if ino in self.stale else held, attr)
