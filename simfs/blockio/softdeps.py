"""Soft-updates dependency tracking for the buffer-cache model: which block updates must reach
the disk before which others, and which writes go out rolled back.

The write-back mode declares, per operation, rules ``(tag, must_follow_tag)`` over block tags
(a block kind, or ``"new KIND"`` for a block the operation took fresh with getblk/page): every
block of ``tag`` the operation dirtied then depends on every block of ``must_follow_tag`` it
dirtied (FFS soft updates: bitmap before the initialised inode before the directory entry, a
new block before the pointer to it; docs/reference/soft-updates.md). Each such block gets an
`Update`; an update reaches the disk only with a write of its block that *starts* after every
update it needs has *finished* reaching the disk. A write that starts earlier carries the
block rolled back (softdep_disk_io_initiation): the write is charged, the block stays dirty and
goes out again later. The image is never rolled back: this is timing and counting only.

Rules cannot form a cycle over tags (checked by the mode's registry), so updates form a DAG and
writing every dirty block, waiting, and repeating always finishes.
"""

from __future__ import annotations


class Update:
    """One operation's change to one block, waiting for the updates in `needs`."""

    __slots__ = ("tag", "needs", "done_at")

    def __init__(self, tag: str):
        self.tag = tag
        self.needs: list[Update] = []
        self.done_at: float | None = None   # when the write that carried it finished

    def ready(self, now: float) -> bool:
        """Every update it needs is on the disk at `now` (a write starting now may carry it)."""
        return all(n.done_at is not None and n.done_at <= now for n in self.needs)


class DepTracker:
    """The updates of pending blocks (blkno -> [Update]) and the operation being recorded."""

    def __init__(self):
        self.pending: dict[int, list[Update]] = {}
        self.live = 0                       # updates not yet on the disk (the softdep count)
        self._frames: list[tuple] = []      # (rules, {blkno: kind}, {fresh blknos})

    # recording one operation ------------------------------------------------------------
    def begin(self, rules: tuple) -> None:
        self._frames.append((tuple(rules), {}, set()))

    def fresh(self, blkno: int) -> None:
        """The current operation took block blkno fresh (getblk/page): it is a new block."""
        if self._frames and self._frames[-1][0]:
            self._frames[-1][2].add(blkno)

    def dirtied(self, blkno: int, kind: str) -> None:
        if self._frames and self._frames[-1][0]:
            self._frames[-1][1][blkno] = kind

    def end(self, is_dirty, now: float) -> int:
        """Close the current operation: give its blocks their updates and edges; returns
        how many updates were made. `is_dirty(blkno)` says if the block is still dirty (one
        written back meanwhile, by eviction, counts as on the disk already)."""
        if not self._frames:
            return 0
        rules, dirtied, fresh = self._frames.pop()
        if not rules or not dirtied:
            return 0
        tags = {b: ("new " + k if b in fresh else k) for b, k in dirtied.items()}
        wanted = {t for r in rules for t in r}
        made: dict[int, Update] = {}
        for b, tag in tags.items():
            if tag in wanted:
                u = Update(tag)
                made[b] = u
                if is_dirty(b):
                    self.pending.setdefault(b, []).append(u)
                    self.live += 1
                else:
                    u.done_at = now
        for dep_tag, pre_tag in rules:
            pres = [u for b, u in made.items() if u.tag == pre_tag]
            if not pres:
                continue
            for b, u in made.items():
                if u.tag == dep_tag:
                    u.needs.extend(p for p in pres if p is not u)
        return len(made)

    # asked by the cache ---------------------------------------------------------------
    def blocked(self, blkno: int, now: float) -> bool:
        """A write of blkno starting now would be rolled back (buf_countdeps)."""
        return any(not u.ready(now) for u in self.pending.get(blkno, ()))

    def start_write(self, blkno: int, now: float) -> list[Update] | None:
        """A write of blkno starts now: the updates it carries, or None if none are pending.
        The caller passes them to `finish_write` with the request's finish time."""
        ups = self.pending.get(blkno)
        if not ups:
            return None
        return [u for u in ups if u.ready(now)]

    def finish_write(self, blkno: int, carried: list[Update], finish: float) -> bool:
        """The carried updates are on the disk at `finish`; True if the block is complete
        (nothing rolled back), False if it must be written again."""
        ups = self.pending.get(blkno, [])
        for u in carried:
            u.done_at = finish
        left = [u for u in ups if u.done_at is None]
        self.live -= len(ups) - len(left)
        if left:
            self.pending[blkno] = left
            return False
        self.pending.pop(blkno, None)
        return True

    def prerequisites(self, blknos=None) -> set[int]:
        """Blocks holding updates that pending updates (of `blknos`, or all) still wait for,
        transitively: what clear_inodedeps / softdep_sync_metadata push out."""
        index = {id(u): b for b, ups in self.pending.items() for u in ups}
        todo = [u for b in (self.pending if blknos is None else blknos) for u in self.pending.get(b, ())]
        seen: set[int] = set()
        out: set[int] = set()
        while todo:
            u = todo.pop()
            for n in u.needs:
                if n.done_at is None and id(n) not in seen:
                    seen.add(id(n))
                    b = index.get(id(n))
                    if b is not None:
                        out.add(b)
                    todo.append(n)
        return out

    def cancel(self, blkno: int, now: float) -> None:
        """Block blkno was freed: its updates will never be written; whoever waits on them
        stops waiting (the dependencies are cancelled, as softdep does for freed blocks)."""
        for u in self.pending.pop(blkno, ()):
            u.done_at = now
            self.live -= 1

    def rekey(self, old: int, new: int) -> None:
        ups = self.pending.pop(old, None)
        if ups:
            self.pending[new] = ups
