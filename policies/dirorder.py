"""Directory-order policies: the order readdir returns a directory's entries in, and the
readdir cookies (FUSE ``next_id`` / ``d_off``) that let a reader resume.

Selected with ``-o dirorder=NAME`` (docs/reference/allocation-policies.md §3)::

    linear  on-disk slot order (ext2 without dir_index, FFS, XFS data-block order)
    hash    ext3/ext4 htree order: ascending (hash, minor_hash), "." and ".." first
    inode   ascending inode number, "." and ".." first (spd_readdir; btrfs creation order)
    name    bytewise name order, "." and ".." first

Entries are tuples ``(name: bytes, ino: int, ftype: int, position: int)`` in on-disk order;
``position`` is the entry's byte offset in the directory (unique, a multiple of 4 as ext2
dirents are 4-byte aligned). Policies return the same tuple objects, reordered.

Interface (one instance per mount; ``state`` per open directory handle)::

    policy = make_dir_order("hash")
    state = policy.new_state()                       # at opendir; drop it at releasedir
    for entry, cookie in policy.iterate(entries, after=start_id, hash_ctx=hasher,
                                        state=state, generation=dir_change_counter):
        if not readdir_reply(token, entry[0], attrs, cookie): break
    policy.order(entries, hash_ctx)                  # the whole listing: [(entry, cookie)]

``iterate`` yields, in readdir order, the entries that come after the entry whose cookie is
``after`` (``after=0``: from the start). Cookies are integers in 1 .. 2**63 - 2 (they fit
``off_t`` and never equal ext4's 64-bit EOF, 2**63 - 1).

Cookies and concurrent changes
------------------------------
Every entry has a sort key that does not change while the entry exists (it depends on the
name, the inode number and the slot position only), and a cookie stands for the key of the
entry it was issued for. Resuming from a cookie returns the entries of the *current*
directory whose key is greater, in order. So a reader that resumes after entries were added
or removed gets every surviving entry it had not yet seen exactly once, no removed entry, and
those new entries that sort after its position -- even when the entry the cookie belongs to
was itself removed (``rm -rf`` unlinks what it has read before it reads on). This is stronger
than POSIX asks (added/removed entries: unspecified).

* ``linear``: key = position; cookie = position + 1 (what ext2's f_pos is).
* ``inode``:  key = (ino, position) after "." (cookie 1) and ".." (cookie 2);
  cookie = 3 + ((ino << 30) | (position >> 2)): 32 + 30 bits, since ext2 inode numbers are
  32-bit and a directory is < 4 GiB with 4-byte aligned entries.
* ``hash``:   key = (hash, minor_hash) after "." and ".."; cookie = 3 + hash2pos, where
  ``hash2pos = ((hash >> 1) << 32) | minor`` is ext4's 64-bit readdir position (hash is even,
  so nothing is lost; 63 bits). Exact (hash, minor) collisions -- two names of one directory
  with the same 63-bit value, about n**2 / 2**64 likely for half_md4/TEA -- are emitted
  together, ordered by position; every member but the last gets the cookie of the group
  itself, so resuming inside a group re-emits the group's earlier members: duplicates, never
  skipped entries (ext4 behaves the same way: its telldir position for a chain is the chain's
  hash). For the legacy hash, whose minor hash is always 0 and whose 31-bit hash collides in
  large directories, the position takes the minor's place in key and cookie:
  cookie = 3 + (((hash >> 1) << 32) | position), exact.
* ``name``:   a name cannot be packed into 63 bits in an order-preserving way, so the cookie
  is a ticket: ``state`` remembers the key (name, position) of every entry it issued a cookie
  for (cookie n = the n-th distinct key issued through this state; the same entry always gets
  the same cookie). Resuming needs the same state; cookies are not valid across handles or
  remounts. Memory: one key per distinct entry returned through the handle -- what
  spd_readdir keeps as well. An unknown cookie raises ``BadCookie``.

Cost: building a listing reads and, except for ``linear``, sorts the whole directory (and for
``hash``, hashes every name). Pass ``state`` and a ``generation`` that changes whenever the
directory changes (e.g. a per-directory modification counter) and the sorted listing is kept
in the state and reused across readdir calls; without them every call rebuilds it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Iterable, Iterator

from plugin_registry import Registry

__all__ = ["Entry", "BadCookie", "DirState", "DirOrder", "LinearOrder", "HashOrder",
           "InodeOrder", "NameOrder", "DIR_ORDERS", "make_dir_order"]

Entry = tuple  # (name: bytes, ino: int, ftype: int, position: int)

_DOT = b"."
_DOTDOT = b".."
COOKIE_MAX = (1 << 63) - 2


class BadCookie(ValueError):
    """A readdir cookie this policy/state never issued (or a negative one)."""


class DirState:
    """Per-open-directory state: the cached sorted listing and, for ``name``, the issued
    cookies. Create it with ``policy.new_state()``."""

    __slots__ = ("policy", "generation", "hash_ctx", "listing", "ranks", "cookies", "keys",
                 "issued")

    def __init__(self, policy: "DirOrder"):
        self.policy = policy
        self.generation: Any = None
        self.hash_ctx: Any = None
        self.listing: list | None = None   # entries in readdir order
        self.ranks: list | None = None     # their sort keys (ints, or tuples for name)
        self.cookies: list | None = None   # their cookies (None for name: issued lazily)
        self.keys: list = []               # name order: cookie - 1 -> key
        self.issued: dict = {}             # name order: key -> cookie


class DirOrder:
    """Base class of directory orders, and their contract.

    Registry: `DIR_ORDERS` (built-ins, entry points in group ``simfs.dirorders`` whose name is
    the class's ``name``, or ``-o dirorder=package.module:Class``). One instance per mounted
    volume (``cls()``); ``new_state()`` makes one `DirState` per open directory handle.

    A plug-in subclasses DirOrder, sets the class attributes and implements ``_ranked``:

    name        the ``-o dirorder=`` name; ``summary`` one line for ``simfs policies``
    needs_hash  True if ``_ranked`` uses the hash context (the volume always passes the
                superblock's hasher: ``hash_ctx(name) -> (hash, minor)``, and
                ``hash_ctx.many(names)`` for a list)
    slot_order  True only for the on-disk slot order itself (it changes how the volume
                stores and looks up directories: no index); every other order stands for an
                indexed directory, whose lookups read a root and one leaf block
    _ranked(entries, hash_ctx) -> [(rank, position, entry), ...]
                one tuple per entry, in any order; the listing is sorted by (rank, position).
                ``entries`` are ``(name, ino, ftype, position)`` tuples (see the module doc);
                return the same tuple objects. The rank must be an int in
                0 .. COOKIE_MAX - 1 and depend only on the entry's name, inode number and
                position (so that it does not change while the entry exists): readdir
                cookies are made from it (``rank + 1``, or ``rank`` inside a run of equal
                ranks), and resuming from a cookie continues with the entries of the current
                directory whose rank is greater. "." and ".." should come first (ranks 0
                and 1), as every built-in order has them. An order whose keys are not
                integers overrides ``_cookies`` and ``_emit`` as `NameOrder` does.

    What it may read: the entries and the hash context. What it must not do: I/O, the clock,
    unseeded randomness (the same directory must list the same way every time), keep
    references to the entries between calls except in the ``DirState`` it is handed.
    """

    name = ""
    summary = ""
    needs_hash = False
    # True for the on-disk slot order: readdir then streams entries from the cookie (the
    # slot position) without building a listing, and the directory has no index, so a
    # lookup scans its blocks linearly. Other orders stand for an indexed directory (htree,
    # b-tree): a lookup reads the root and one leaf block.
    slot_order = False

    def new_state(self) -> DirState:
        return DirState(self)

    # -- subclass hook -----------------------------------------------------------------------

    def _ranked(self, entries: list, hash_ctx) -> list[tuple[Any, int, Entry]]:
        """[(rank, position, entry)] in any order; sorted by (rank, position) afterwards.
        For the stateless policies the rank is the integer the cookie is made from."""
        raise NotImplementedError

    # -- public interface --------------------------------------------------------------------

    def order(self, entries: Iterable[Entry], hash_ctx=None,
              state: DirState | None = None) -> list[tuple[Entry, int]]:
        """The whole directory in readdir order: [(entry, cookie)]."""
        return list(self.iterate(entries, 0, hash_ctx, state))

    def iterate(self, entries: Iterable[Entry], after: int = 0, hash_ctx=None,
                state: DirState | None = None, generation: Any = None
                ) -> Iterator[tuple[Entry, int]]:
        """(entry, cookie) for the entries after the one ``after`` was issued for (0: all).

        ``entries`` is read only when the listing is (re)built: when ``state`` is None, when
        ``generation`` is None, or when it differs from the one the state's listing was built
        for. A caller passing an unchanged generation promises the directory is unchanged.
        """
        if after < 0:
            raise BadCookie(f"negative readdir cookie {after}")
        if state is None:
            state = self.new_state()
        elif state.policy is not self:
            raise ValueError("state belongs to another directory-order policy")
        if (state.listing is None or generation is None or state.generation != generation
                or state.hash_ctx is not hash_ctx):
            self._build(state, entries, hash_ctx)
            state.generation = generation
        return self._emit(state, after)

    # -- machinery ---------------------------------------------------------------------------

    def _build(self, state: DirState, entries: Iterable[Entry], hash_ctx) -> None:
        if self.needs_hash and hash_ctx is None:
            raise ValueError(f"directory order '{self.name}' needs a hash context")
        ranked = self._ranked(entries if isinstance(entries, list) else list(entries), hash_ctx)
        ranked.sort(key=_rank_pos)
        state.hash_ctx = hash_ctx
        state.listing = [r[2] for r in ranked]
        ranks = state.ranks = [r[0] for r in ranked]
        state.cookies = self._cookies(ranks)

    @staticmethod
    def _cookies(ranks: list) -> list[int]:
        # resume(c) = entries with rank >= c; the last of a run of equal ranks gets rank + 1
        # (continue after the run), the others rank (restart the run: duplicates, no skips)
        n = len(ranks)
        return [r if i + 1 < n and ranks[i + 1] == r else r + 1 for i, r in enumerate(ranks)]

    def _emit(self, state: DirState, after: int) -> Iterator[tuple[Entry, int]]:
        start = bisect_left(state.ranks, after) if after else 0
        return _from(state.listing, state.cookies, start)

    def __repr__(self) -> str:
        return f"<dirorder {self.name}>"


def _rank_pos(r):
    return r[0], r[1]


def _from(listing: list, cookies: list, start: int) -> Iterator[tuple[Entry, int]]:
    # lazy: a readdir call takes a buffer's worth and stops; no O(n) slice per call
    for i in range(start, len(listing)):
        yield listing[i], cookies[i]


class LinearOrder(DirOrder):
    name = "linear"
    slot_order = True
    summary = ("on-disk slot order, what ext2 without dir_index, FFS and XFS return "
               "(creation order until deletions free slots)")

    def _ranked(self, entries, hash_ctx):
        return [(e[3], e[3], e) for e in entries]


class HashOrder(DirOrder):
    name = "hash"
    summary = ("ext3/ext4 htree order: ascending (hash, minor) of the superblock's hash "
               "and seed, '.' and '..' first (ext4_htree_fill_tree)")
    needs_hash = True

    def _ranked(self, entries, hash_ctx):
        names = [e[0] for e in entries]
        many = getattr(hash_ctx, "many", None)
        hashes = many(names) if many is not None else [hash_ctx(n) for n in names]
        by_position = bool(getattr(hash_ctx, "minor_is_zero", False))
        out = []
        for e, (h, minor) in zip(entries, hashes):
            name = e[0]
            pos = e[3]
            if name == _DOT:
                rank = 0
            elif name == _DOTDOT:
                rank = 1
            elif by_position:
                rank = 2 + (((h >> 1) << 32) | _check_pos(pos))
            else:
                rank = 2 + (((h >> 1) << 32) | minor)
            out.append((rank, pos, e))
        return out


class InodeOrder(DirOrder):
    name = "inode"
    summary = ("ascending inode number, '.' and '..' first: e2fsprogs spd_readdir "
               "(LD_PRELOAD sort by d_ino); about btrfs creation/index order")

    def _ranked(self, entries, hash_ctx):
        out = []
        for e in entries:
            name, ino, _, pos = e
            if name == _DOT:
                rank = 0
            elif name == _DOTDOT:
                rank = 1
            else:
                if not 0 <= ino < 1 << 32:
                    raise ValueError(f"inode number {ino} out of range")
                rank = 2 + ((ino << 30) | (_check_pos(pos) >> 2))
            out.append((rank, pos, e))
        return out


class NameOrder(DirOrder):
    name = "name"
    summary = "bytewise name order, '.' and '..' first (sorted-directory file systems, ls order)"

    def _ranked(self, entries, hash_ctx):
        out = []
        for e in entries:
            name = e[0]
            pos = e[3]
            if name == _DOT:
                key = (0, b"", pos)
            elif name == _DOTDOT:
                key = (1, b"", pos)
            else:
                key = (2, name, pos)
            out.append((key, pos, e))
        return out

    @staticmethod
    def _cookies(ranks):
        return None   # tickets, issued as entries are emitted

    def _emit(self, state: DirState, after: int) -> Iterator[tuple[Entry, int]]:
        if after:
            if after > len(state.keys):
                raise BadCookie(f"readdir cookie {after} was not issued for this directory "
                                f"handle")
            start = bisect_right(state.ranks, state.keys[after - 1])
        else:
            start = 0
        return self._tickets(state, start)

    @staticmethod
    def _tickets(state: DirState, start: int) -> Iterator[tuple[Entry, int]]:
        issued = state.issued
        keys = state.keys
        ranks = state.ranks
        listing = state.listing
        for i in range(start, len(listing)):
            key = ranks[i]
            cookie = issued.get(key)
            if cookie is None:
                keys.append(key)
                cookie = issued[key] = len(keys)
            yield listing[i], cookie


def _check_pos(pos: int) -> int:
    if pos & 3 or not 0 <= pos < 1 << 32:
        raise ValueError(f"directory position {pos} is not a 4-byte aligned offset < 4 GiB")
    return pos


#: name -> class: the built-ins and installed packages' entry points (group simfs.dirorders)
DIR_ORDERS = Registry("directory order", "dirorder", "simfs.dirorders", DirOrder,
                      (LinearOrder, HashOrder, InodeOrder, NameOrder))


def make_dir_order(name: str) -> DirOrder:
    """A new policy object for ``-o dirorder=NAME`` (a registered name or
    package.module:Class); ValueError (PluginError) lists the valid names."""
    return DIR_ORDERS.create(name)
