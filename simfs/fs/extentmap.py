"""An extent-mapped file's map (EXTENTS_FL): the ext4 extent tree, kept as fs/ext4/extents.c keeps it.

The same questions as simfs.fs.filemap answers for block-mapped files (map, map for write,
re-point, truncate, list), which hands extent-mapped inodes here. Lookups walk the tree from
the root in i_block, reading index and leaf blocks through the cache (charged like indirect
blocks); a new block extends the extent before it or after it when contiguous, else a new
extent is inserted, in the next leaf if this one is full and the next has room, else after
splitting (ext4_ext_split: the entries right of the insertion point move to a new leaf, new
index blocks up to the first level with a free slot) or growing the tree one level
(ext4_ext_grow_indepth: the root's entries move to a new block). The goal for a new block is
ext4_ext_find_goal's: the nearest extent's block extrapolated to the logical block, handed
to the allocator as `prev_phys` (goal - 1). Truncate frees extents, then leaves and index
blocks left empty (ext4_ext_remove_space), and an emptied tree goes back to depth 0.

Every node read from the image is checked (simfs.ondisk.extent.check_node: magic, eh_max,
entries, depth, block numbers, logical order): a bad one is EUCLEAN, reported, and marks the
inode damaged; truncate and listing skip it, so freeing a damaged file ends.
"""

import bisect
import errno

from simfs.errors import FSError
from simfs.ondisk.constants import EXTENTS_FL
from simfs.ondisk.extent import (
    MAX_DEPTH, MAX_LEN, Node, block_max, check_node, root_max, root_of, root_words, unpack,
)

_NODE_CACHE = 8192           # decoded nodes kept (the buffers themselves are the cache's)
ZEROOUT_KB = 32              # s_extent_max_zeroout_kb's default (fs/ext4/super.c)
CONVERTED = 2                # map_for_write's "new" for a converted block of an unwritten extent


class _Step:
    """One level of a lookup: the node, its block (0: the root in the inode), the entry."""

    __slots__ = ("node", "blk", "pos")

    def __init__(self, node: Node, blk: int, pos: int):
        self.node, self.blk, self.pos = node, blk, pos


def _length(n: int) -> int:
    return n - MAX_LEN if n > MAX_LEN else n


def _search(entries, lblk: int) -> int:
    """ext4_ext_binsearch(_idx): the last entry starting at or before lblk, else the first;
    -1 for no entries."""
    if len(entries) < 2:                # none, or the one (a small file's, a directory's)
        return len(entries) - 1
    return max(0, bisect.bisect_right(entries, (lblk, 1 << 20, 1 << 64)) - 1)


class ExtentMap:
    def __init__(self, filemap):
        self.fm = filemap                   # block accounting and the allocator (simfs.fs.filemap)
        self.geo = filemap.geo
        self.cache = filemap.cache
        self.space = filemap.space
        self.placement = filemap.placement
        self.inodes = filemap.inodes
        self.checks = filemap.checks
        self.max = block_max(self.geo.block_size)
        self.nodes: dict[int, Node] = {}    # block -> decoded, checked node (as in its buffer)
        self.roots: dict[tuple, Node] = {}  # i_block words -> decoded, checked root

    # reading -----------------------------------------------------------------------------
    def init(self, inode) -> None:
        """A new inode of an extent file system: EXTENTS_FL and an empty root (ext4_ext_tree_init)."""
        inode.flags |= EXTENTS_FL
        inode.block = root_words(Node(0, root_max()))

    def _corrupt(self, inode, what: str, blk: int = 0):
        return self.fm._damaged(inode, self.checks.corrupt(f"inode {inode.ino}: extent tree: {what}",
                                                           inode.ino, blk, "ext4_ext_check"))

    def _shared_root(self, inode) -> Node:
        """The root in i_block, checked (once per content: kept by its words), as the cached
        node itself: read it, never change it (it stands for these words)."""
        words = tuple(inode.block)
        node = self.roots.get(words)
        if node is None:
            why = self.checks.extent_root_problem(inode.block)
            if why:
                raise self._corrupt(inode, f"root: {why}")
            node = root_of(inode.block)[0]
            if len(self.roots) >= _NODE_CACHE:
                self.roots.clear()
            self.roots[words] = node
        return node

    def _root(self, inode) -> Node:
        """The root in i_block, checked, as a copy the caller may change."""
        node = self._shared_root(inode)
        return Node(node.depth, node.max, list(node.entries), node.generation)

    def _read(self, inode, blk: int, depth: int, first: int, peek: bool = False) -> Node:
        """The checked node in block blk (read through the cache, charged; with `peek`
        uncharged, for inspection)."""
        buf = self.cache.peek(blk) if peek else self.cache.bread(blk, "indirect", inode.ino)
        node = self.nodes.get(blk)
        if node is not None:
            return node
        node, why = unpack(buf, self.geo.block_size)
        if not why:
            why = check_node(node, depth, self.max, first, self.checks.bad_range)
        if why:
            raise self._corrupt(inode, f"block {blk}: {why}", blk)
        if len(self.nodes) >= _NODE_CACHE:
            self.nodes.clear()
        self.nodes[blk] = node
        return node

    def _find(self, inode, lblk: int) -> list[_Step]:
        """ext4_find_extent: the path from the root to the leaf that holds (or would hold) lblk."""
        node = self._root(inode)
        path = [_Step(node, 0, _search(node.entries, lblk))]
        while node.depth:
            step = path[-1]
            first, _, child = node.entries[step.pos]
            node = self._read(inode, child, node.depth - 1, first)
            path.append(_Step(node, child, _search(node.entries, lblk)))
        return path

    def _leaf(self, inode, lblk: int) -> tuple[Node, int, int]:
        """(leaf, its block or 0 for the inode, entry index) for lblk: _find's walk, charged
        alike, for readers only: no path kept and the root not copied (a lookup of a small
        file or directory is mostly this)."""
        node = self._shared_root(inode)
        blk = 0
        pos = _search(node.entries, lblk)
        while node.depth:
            first, _, blk = node.entries[pos]
            node = self._read(inode, blk, node.depth - 1, first)
            pos = _search(node.entries, lblk)
        return node, blk, pos

    def bmap(self, inode, lblk: int, unwritten: bool = False) -> int:
        """Physical block of lblk, 0 for a hole or a block of an unwritten extent (it reads
        as zeros, as ext4_map_blocks answers a reader); with `unwritten` that block too (it
        is allocated: a write converts it, never delays it)."""
        node, _, pos = self._leaf(inode, lblk)
        if pos < 0:
            return 0
        s, n, p = node.entries[pos]
        if not s <= lblk < s + _length(n):
            return 0
        return p + lblk - s if n <= MAX_LEN or unwritten else 0

    def locate(self, inode, lblk: int) -> tuple[int, int]:
        """(entry index in its leaf, the leaf's block or 0 for the inode)."""
        _, blk, pos = self._leaf(inode, lblk)
        return max(pos, 0), blk

    # writing -----------------------------------------------------------------------------
    def _set_root(self, inode, node: Node) -> None:
        """Write the root into i_block (the in-core inode; the caller puts it), known valid."""
        inode.block = words = root_words(node)
        if len(self.roots) >= _NODE_CACHE:
            self.roots.clear()
        self.roots[tuple(words)] = Node(node.depth, node.max, list(node.entries), node.generation)

    def _store(self, inode, step: _Step) -> None:
        if not step.blk:
            self._set_root(inode, step.node)
            self.inodes.put(inode)
            return
        buf = self.cache.bread(step.blk, "indirect", inode.ino)
        step.node.pack_into(buf, self.geo.block_size)
        self.cache.mark_dirty(step.blk, buf, "indirect", inode.ino)
        self.nodes[step.blk] = step.node

    def _new_block(self, inode, lblk: int, goal: int, node: Node) -> int:
        """A tree block for `node` (allocated near goal, counted in i_blocks, written)."""
        fm = self.fm
        if self.space.free_blocks - self.space.reserved <= 0:
            raise FSError(errno.ENOSPC)
        req = self.placement.request(inode, lblk, kind="indirect", level=node.depth + 1,
                                     prev_phys=goal - 1 if goal > self.geo.first_data_block else 0)
        blk = fm._take(inode, self.placement.allocate(inode, req))
        buf = self.cache.getblk(blk, "indirect", inode.ino)
        node.pack_into(buf, self.geo.block_size)
        self.cache.mark_dirty(blk, buf, "indirect", inode.ino)
        self.nodes[blk] = node
        return blk

    def _goal(self, inode, path: list[_Step], lblk: int) -> int:
        """ext4_ext_find_goal: the nearest extent extrapolated to lblk, or the leaf's block."""
        step = path[-1]
        if step.pos >= 0:
            s, _, p = step.node.entries[step.pos]
            return max(p + lblk - s, self.geo.first_data_block)
        return step.blk

    def map_for_write(self, inode, lblk: int, kind: str = "data", phys: int = 0) -> tuple[int, int]:
        """(physical block, newly allocated) for lblk, allocating (or with `phys`, linking the
        block delayed allocation took) what is missing; a block of an unwritten extent is
        converted and answered CONVERTED (new to its writer, who starts from zeros, but not
        allocated now: no cluster reallocation moves it)."""
        path = self._find(inode, lblk)
        step = path[-1]
        if step.pos >= 0:
            s, n, p = step.node.entries[step.pos]
            if s <= lblk < s + _length(n):
                if n <= MAX_LEN:
                    return p + lblk - s, False
                if phys:                    # delayed allocation never delays such a block
                    raise FSError(errno.EIO, f"inode {inode.ino}: block {lblk} delayed inside "
                                             "an unwritten extent")
                self._convert(inode, path, lblk)
                return p + lblk - s, CONVERTED
        fm = self.fm
        if phys:
            fm._own(inode, phys)
            taken = False
        else:
            if self.space.free_blocks - self.space.reserved <= 0:
                raise FSError(errno.ENOSPC)
            goal = self._goal(inode, path, lblk)
            req = self.placement.request(inode, lblk, kind=kind, prev_phys=goal - 1 if goal else 0)
            phys = fm._take(inode, self.placement.allocate(inode, req))
            taken = True
        try:
            self._insert(inode, lblk, 1, phys, path)
        except FSError:
            if taken:
                fm._free(inode, phys)
            else:
                inode.blocks -= fm.spb
            self.inodes.put(inode)
            raise
        self.inodes.put(inode)
        return phys, True

    def _insert(self, inode, lblk: int, n: int, phys: int, path: list[_Step] | None = None) -> None:
        """ext4_ext_insert_extent for (lblk, n, phys), which maps nothing mapped yet."""
        path = path or self._find(inode, lblk)
        while True:
            step = path[-1]
            leaf = step.node
            if self._merge(inode, path, lblk, n, phys):
                return
            if not leaf.full:
                i = bisect.bisect_right(leaf.entries, (lblk, 0, 0))
                leaf.entries.insert(i, (lblk, n, phys))
                self._store(inode, step)
                if i == 0:
                    self._correct_indexes(inode, path)
                self._merge_up(inode, path)
                return
            if leaf.entries and lblk > leaf.entries[-1][0] and len(path) > 1:
                nxt = self._next_leaf(inode, path)
                if nxt is not None and not nxt[-1].node.full:
                    path = nxt
                    continue
            self._make_room(inode, path, lblk)
            path = self._find(inode, lblk)

    def _merge(self, inode, path, lblk: int, n: int, phys: int) -> bool:
        """Extend the extent before (append) or after (prepend) lblk if contiguous with it."""
        step = path[-1]
        entries, pos = step.node.entries, step.pos
        if pos < 0:
            return False
        s, m, p = entries[pos]
        if s + m == lblk and p + m == phys and m + n <= MAX_LEN:
            entries[pos] = (s, m + n, p)
            if pos + 1 < len(entries):
                s2, m2, p2 = entries[pos + 1]
                if s + m + n == s2 and p + m + n == p2 and m + n + m2 <= MAX_LEN:
                    entries[pos] = (s, m + n + m2, p)
                    del entries[pos + 1]
            self._store(inode, step)
            self._merge_up(inode, path)
            return True
        for i in (pos, pos + 1):
            if i < len(entries):
                s, m, p = entries[i]
                if lblk + n == s and phys + n == p and m + n <= MAX_LEN and (i == 0 or
                                                                           entries[i - 1][0] < lblk):
                    entries[i] = (lblk, m + n, phys)
                    self._store(inode, step)
                    if i == 0:
                        self._correct_indexes(inode, path)
                    return True
        return False

    def _merge_up(self, inode, path) -> None:
        """ext4_ext_try_to_merge_up: a depth-1 tree whose one leaf fits the root again goes
        back into the inode, the leaf block freed."""
        if len(path) != 2 or len(path[0].node.entries) != 1:
            return
        leaf = path[1].node
        if len(leaf.entries) > root_max():
            return
        root = Node(0, root_max(), list(leaf.entries))
        self._set_root(inode, root)
        self.nodes.pop(path[1].blk, None)
        self.fm._free(inode, path[1].blk)
        self.inodes.put(inode)
        path[:] = [_Step(root, 0, _search(root.entries, leaf.entries[0][0] if leaf.entries else 0))]

    def _correct_indexes(self, inode, path) -> None:
        """ext4_ext_correct_indexes: a node's first key changed; its parents' keys follow."""
        for k in range(len(path) - 1, 0, -1):
            child, parent = path[k].node, path[k - 1]
            if not child.entries:
                return
            first = child.entries[0][0]
            s, z, blk = parent.node.entries[parent.pos]
            if s == first:
                return
            parent.node.entries[parent.pos] = (first, z, blk)
            self._store(inode, parent)
            if parent.pos != 0:
                return

    def _next_leaf(self, inode, path) -> list[_Step] | None:
        """The path to the leaf after this one (ext4_ext_next_leaf_block), or None."""
        for k in range(len(path) - 2, -1, -1):
            if path[k].pos + 1 < len(path[k].node.entries):
                out = path[:k] + [_Step(path[k].node, path[k].blk, path[k].pos + 1)]
                node = path[k].node
                while node.depth:
                    first, _, child = node.entries[out[-1].pos]
                    node = self._read(inode, child, node.depth - 1, first)
                    out.append(_Step(node, child, 0 if node.entries else -1))
                return out
        return None

    def _make_room(self, inode, path, lblk: int) -> None:
        """ext4_ext_create_new_leaf: split below the deepest level with a free index slot, or
        grow the tree one level when every level is full."""
        at = len(path) - 2
        while at >= 0 and path[at].node.full:
            at -= 1
        if at >= 0:
            self._split(inode, path, lblk, at)
        else:
            self._grow(inode, path, lblk)

    def _grow(self, inode, path, lblk: int) -> None:
        """ext4_ext_grow_indepth: the root's entries to a new block, the root one index above it."""
        root = path[0].node
        if root.depth >= MAX_DEPTH:
            raise FSError(errno.EFBIG)
        goal = root.entries[0][2] - 1 if root.depth else 0
        blk = self._new_block(inode, lblk, goal, Node(root.depth, self.max, list(root.entries)))
        self._set_root(inode, Node(root.depth + 1, root_max(), [(root.entries[0][0], 0, blk)]))
        self.inodes.put(inode)

    def _split(self, inode, path, lblk: int, at: int) -> None:
        """ext4_ext_split: the entries right of the path move to new nodes below level `at`,
        which gets an index entry (border -> the new subtree)."""
        depth = len(path) - 1
        leaf, pos = path[depth].node, path[depth].pos
        border = leaf.entries[pos + 1][0] if pos + 1 < len(leaf.entries) else lblk
        goal = self._goal(inode, path, lblk)
        moved = Node(0, self.max, leaf.entries[pos + 1:])
        del leaf.entries[pos + 1:]
        new_blocks = []
        try:
            child = self._new_block(inode, lblk, goal, moved)
            new_blocks.append(child)
            for k in range(depth - 1, at, -1):
                node, p = path[k].node, path[k].pos
                upper = Node(node.depth, self.max, [(border, 0, child)] + node.entries[p + 1:])
                child = self._new_block(inode, lblk, goal, upper)
                new_blocks.append(child)
                del node.entries[p + 1:]
        except FSError:
            for b in new_blocks:                # the tree as it was: nothing moved on the image
                self.nodes.pop(b, None)
                self.fm._free(inode, b)
            self.nodes.clear()
            self.inodes.put(inode)
            raise
        for k in range(depth, at, -1):
            self._store(inode, path[k])
        top = path[at]
        i = bisect.bisect_right(top.node.entries, (border, 1 << 20, 0))
        top.node.entries.insert(i, (border, 0, child))
        self._store(inode, top)

    def set_pointer(self, inode, lblk: int, phys: int) -> None:
        """Map lblk (mapped) to another block (cluster reallocation)."""
        self._cut(inode, self._find(inode, lblk), lblk, lblk + 1, phys)

    def _convert(self, inode, path: list[_Step], lblk: int) -> None:
        """ext4_ext_convert_to_initialized for the block lblk of the unwritten extent `path`
        ends at. The fast path (lblk at the extent's start or end, its written neighbour
        contiguous) and the plain cut are _cut's. Under write-time allocation (nodelalloc,
        where write_begin converts one block at a time) an extent inside i_size may be zeroed
        instead of cut: the rest of it from lblk if no more than s_extent_max_zeroout_kb
        (32 KiB), then the head if what is written from the extent's start is still under
        that; and when the cut finds no free block for a new leaf, the whole extent
        (ext4_split_extent_at's ENOSPC fallback, EXT4_EXT_MAY_ZEROOUT). The zeros are written
        and waited for (ext4_ext_zeroout). Under delayed allocation the kernel converts at
        write-back (dioread_nolock's end-io path), which cuts and never zeroes."""
        step = path[-1]
        s, n, p = step.node.entries[step.pos]
        n -= MAX_LEN
        lo, hi = lblk, lblk + 1
        bs = self.geo.block_size
        if self._abuts(step, lblk, n):
            self._cut(inode, path, lo, hi, p + lblk - s, room=True)     # needs no new block
            return
        may_zeroout = not self.placement.delayed and s + n <= max(-(-inode.size // bs), hi)
        if may_zeroout:
            most = ZEROOUT_KB * 1024 // bs
            rest = s + n - lblk                     # `allocated`
            if rest > 1:
                if rest <= most:
                    hi = s + n
                if hi - s < most:
                    lo = s
        if may_zeroout and not self._fits(path, lo, hi):
            lo, hi = s, s + n
        zeroed = [p + b - s for b in range(lo, hi) if b != lblk]
        if zeroed:
            for b in zeroed:
                self.cache.write(b, bytes(bs), "data", inode.ino)
            self.cache.flush_blocks(zeroed)
        self._cut(inode, path, lo, hi, p + lo - s)

    @staticmethod
    def _abuts(step: _Step, lblk: int, n: int) -> bool:
        """The fast path's test: lblk at the start (end) of its n-block extent, and the
        written extent before (after) it in the leaf contiguous on disk and in the file, and
        short enough to take one more block (`prev_len < EXT_INIT_MAX_LEN - map_len`)."""
        entries, pos = step.node.entries, step.pos
        s, _, p = entries[pos]
        if n < 2:
            return False
        if lblk == s and pos > 0:
            s2, n2, p2 = entries[pos - 1]
            return n2 + 1 < MAX_LEN and s2 + n2 == s and p2 + n2 == p
        if lblk == s + n - 1 and pos + 1 < len(entries):
            s2, n2, p2 = entries[pos + 1]
            return n2 + 1 < MAX_LEN and s2 == s + n and p2 == p + n
        return False

    def _fits(self, path: list[_Step], lo: int, hi: int) -> bool:
        """[lo, hi) can be cut out of the extent `path` ends at: its leaf has a slot for each
        extent the cut adds, or there are free blocks for two insertions that split every level."""
        node = path[-1].node
        s, n, _ = node.entries[path[-1].pos]
        adds = (lo > s) + (hi < s + _length(n))
        return (len(node.entries) + adds <= node.max
                or self.space.free_blocks - self.space.reserved >= 2 * len(path) + 2)

    def _cut(self, inode, path: list[_Step], lo: int, hi: int, phys: int, room: bool = False) -> None:
        """Take [lo, hi) out of the extent `path` ends at, the parts left keeping their state
        (ext4_split_extent, EXT4_EXT_MARK_UNWRIT1/2), and put it in again written at `phys`,
        merged with a written neighbour where contiguous (the fast path into the extent before
        or after, ext4_ext_try_to_merge). ENOSPC before anything is cut if a split could
        find no block (unless the caller knows there is `room`: the fast path needs none)."""
        step = path[-1]
        entries, pos = step.node.entries, step.pos
        s, n, p = entries[pos]
        flag = MAX_LEN if n > MAX_LEN else 0
        n -= flag
        left = (s, lo - s + flag, p) if lo > s else None
        right = (hi, s + n - hi + flag, p + hi - s) if hi < s + n else None
        if not (room or self._fits(path, lo, hi)):
            raise FSError(errno.ENOSPC)
        if left:
            entries[pos] = left
        elif right:
            entries[pos] = right
        else:
            del entries[pos]          # (an emptied leaf takes [lo, hi) back at once, below)
        self._store(inode, step)
        if left and right:
            self._insert(inode, *right)
        self._insert(inode, lo, hi - lo, phys)

    # freeing -----------------------------------------------------------------------------
    def truncate(self, inode, keep_blocks: int) -> None:
        """Free every block mapping lblk >= keep_blocks, and tree blocks left empty."""
        try:
            root = self._root(inode)
        except FSError:
            return                          # reported; left for e2fsck (nothing is followed)
        self._trim(inode, root, 0, keep_blocks, set())
        if not root.entries:
            root = Node(0, root_max())      # truncated to nothing: depth 0 again
        self._set_root(inode, root)
        self.inodes.put(inode)

    def _trim(self, inode, node: Node, blk: int, keep: int, seen: set) -> None:
        """Free what this node maps at or past `keep`; a node left empty is its parent's to
        free (the root is the caller's)."""
        fm = self.fm
        out = []
        removed = False
        entries = node.entries
        for i, (s, n, p) in enumerate(entries):
            if node.depth == 0:
                length = _length(n)
                if s + length <= keep:
                    out.append((s, n, p))
                    continue
                first = max(keep - s, 0)
                for b in range(p + first, p + length):
                    fm._free(inode, b)
                if first:
                    out.append((s, first + (MAX_LEN if n > MAX_LEN else 0), p))
                removed = True
                continue
            if i + 1 < len(entries) and entries[i + 1][0] <= keep:
                out.append((s, n, p))           # the subtree maps nothing past keep
                continue
            child = self._child(inode, p, node.depth - 1, s, seen)
            if child is not None:
                self._trim(inode, child, p, keep, seen)
                if child.entries:
                    out.append((s, n, p))
                    continue
                self.nodes.pop(p, None)
                fm._free(inode, p)
            elif s < keep:                      # damaged: kept if it maps blocks kept
                out.append((s, n, p))
                continue
            removed = True
        if removed:
            node.entries[:] = out
            if blk and node.entries:
                self._store(inode, _Step(node, blk, 0))

    def _child(self, inode, blk: int, depth: int, first: int, seen: set, peek: bool = False) -> Node | None:
        """A node truncate or listing may follow: checked, in use, met once; else None (reported)."""
        if blk in seen or self.checks.bad_range(blk, 1) or not self.space.block_used[blk]:
            self.checks.report(f"inode {inode.ino}: extent tree block {blk} out of range, free or "
                               "met twice", inode.ino, blk, "ext_remove_space")
            return None
        seen.add(blk)
        try:
            return self._read(inode, blk, depth, first, peek)
        except FSError:
            return None

    # listing -----------------------------------------------------------------------------
    def blocks(self, inode, peek: bool = False, whole: bool = False):
        """Yield ("ETB", phys) for each tree block before what it maps and (lblk, phys) for
        every mapped block, in logical order (debugfs stat's order); with `whole`, a leaf
        extent at a time as (lblk, phys, n, unwritten)."""
        try:
            root = self._root(inode)
        except FSError:
            return
        yield from self._walk(inode, root, set(), peek, whole)

    def _walk(self, inode, node: Node, seen: set, peek: bool, whole: bool = False):
        for s, n, p in node.entries:
            if node.depth == 0:
                if whole:
                    yield s, p, _length(n), n > MAX_LEN
                    continue
                for i in range(_length(n)):
                    yield s + i, p + i
                continue
            child = self._child(inode, p, node.depth - 1, s, seen, peek)
            if child is not None:
                yield "ETB", p
                yield from self._walk(inode, child, seen, peek, whole)

    def runs(self, inode) -> tuple[list[tuple[int, int, int]], list[tuple[str, int]], list[tuple]]:
        """For inspection (uncharged): (runs as (lblk, phys, n), extents merged where
        contiguous in the file and on disk, written or not; tree blocks; the leaves' extents
        as (lblk, phys, n, unwritten), what ext4's FIEMAP reports one by one)."""
        runs, tree, leaves = [], [], []
        for item in self.blocks(inode, peek=True, whole=True):
            if isinstance(item[0], str):
                tree.append(item)
                continue
            leaves.append(item)
            s, p, n, _ = item
            if runs and runs[-1][0] + runs[-1][2] == s and runs[-1][1] + runs[-1][2] == p:
                runs[-1] = (runs[-1][0], runs[-1][1], runs[-1][2] + n)
            else:
                runs.append((s, p, n))
        return runs, tree, leaves
