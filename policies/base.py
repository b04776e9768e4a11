"""The contract between the volume and its block allocators and inode placers.

This module is the whole contract: a plug-in that follows it works with every simfs operation,
write-back mode and disk model. The other kinds have theirs in their base module: directory
orders in `policies.dirorder.DirOrder`, write-back modes in `policies.writeback.WritebackPolicy`,
disk models in `disk_models.base.DiskModel`.

Registries
----------
`policies.ALLOCATORS` and `policies.INODE_PLACERS` (see `plugin_registry.Registry`) map names
to classes: the built-ins, then installed packages' entry points in the groups
``simfs.allocators`` and ``simfs.inode_placers`` (entry-point name = the class's `name`), and
any ``package.module:Class`` given directly (``-o alloc=mypkg.alloc:LastFit``). A plug-in
subclasses `BlockAllocator` or `InodePlacer`. One instance is made per mounted volume
(``cls()``, no arguments), so attributes set in ``__init__`` are per-volume state (a rotor, a
cursor, a reservation tree); they start afresh at every mount, like a kernel's in-core state.

What a policy may read
----------------------
* the `SpaceView` it is handed: the free-space maps, the group descriptors and the geometry,
  **read-only** - never assign to ``block_used``/``inode_used`` or a descriptor, not even
  temporarily: the volume changes them, and keeps the bitmaps and descriptors on the image in
  step, when it takes the block or inode the policy chose;
* the `BlockRequest` (what the volume knows about the block wanted);
* its own per-volume attributes and the per-inode state it created (`new_inode_state`).

What a policy must not do
-------------------------
* no I/O (no files, no image, no network), no clock (neither the wall clock nor simfs's
  simulated clock), no unseeded randomness: the same image, options and operations must give
  the same decisions, bit for bit (seed a `random.Random` in ``__init__`` if it needs one);
* no calls into the volume, the cache or the FUSE layer; no keeping references to the space
  view between calls (it is handed again each time);
* never hand out a block or an inode that is not free: the volume checks every answer and
  raises AssertionError for a block that is in use, or is file-system metadata (superblock
  and descriptor copies, bitmaps, inode tables), or is outside the data area;
* raise `NoSpace` (never return -1 or None from `allocate`) when there is no room where the
  policy may look; the volume turns it into ENOSPC.

Block allocators (`BlockAllocator`)
-----------------------------------
Class attributes:

  name        the ``-o alloc=`` name (must equal the entry-point name)
  summary     one line for ``simfs policies``; the module's docstring is what
              ``simfs policies show NAME`` prints as the description of the algorithm
  decides     when the volume asks for data blocks: "write" (immediate allocation: in
              write(), as ext2/ext3/FFS do) or "flush" (delayed allocation: dirty data waits in
              the buffer cache unplaced and `allocate_run` places it at write-back, as ext4
              does). Directory, symlink, indirect and xattr blocks are always placed at write
              time with `allocate`, whatever `decides` says.
  placer      the name of the inode placer that belongs with this allocator (FFS dirpref with
              FFS, Orlov with Linux ext2); used unless the mount says ``-o inode_placement=``.
              It must name a registered inode placer.
  max_run     decides="flush" only: the longest run of logically consecutive blocks handed to
              one `allocate_run` call (ext4's MAX_WRITEPAGES_EXTENT_LEN is 2048). Default 1.

Methods (the volume calls them through `simfs.fs.placement`, the only place it does):

  new_inode_state() -> state
      Per-inode state the allocator keeps (last block, reservation window, extents so far),
      created on the inode's first allocation and kept while the inode is in core (it may be
      dropped when the inode leaves the inode cache; an allocator must then work from the
      request alone). Default None.
  allocate(space, req, state) -> block
      One free data block for `req` (a data, dir, symlink, indirect or xattr block).
  allocate_run(space, req, state, count) -> [block, ...]     (decides="flush" only)
      `count` free blocks for the logical blocks req.lblk .. req.lblk + count - 1, in that
      order; they need not be contiguous, but must be distinct. `space` does not yet show
      any of them as used: the allocator must not hand out the same block twice in one
      call (track what it took in a local set or on a local copy of the part of the map it
      searches). After the call the volume takes each block and then calls
      ``state.add(lblk, block, 1)`` for each, in logical order: so for a delayed allocator
      `new_inode_state` must return an object with an ``add(lblk, phys, n)`` method (the
      file's extents as placed so far; see `policies.delayed.DelayedState`).
  reallocate(space, req, state, cluster) -> [block, ...] | None
      Cluster reallocation (FFS ffs_reallocblks), immediate allocators only: the volume
      offers a run of a file's still-dirty blocks ``[(lblk, phys), ...]`` (logically
      consecutive, physically not) that the last write extended, with `req` describing its
      first block. Return one block per element - a contiguous free run, or the old block
      where it stays - or None to leave the cluster as it is. The allocator changes
      nothing itself: the volume takes the new blocks, rewrites the pointers and frees the
      old ones. Default: None (never reallocate).
  release(state)
      The file was truncated, or its last writer closed it: drop what the allocator holds
      for it (ext2_discard_reservation). Default: nothing.

Inode placers (`InodePlacer`)
-----------------------------
  name, summary   as for allocators (``-o inode_placement=NAME``, group simfs.inode_placers)
  choose(space, parent_ino, is_dir) -> ino
      The number (1-based) of a free inode for a new file (is_dir False) or directory in
      directory `parent_ino`. Inode numbers below the superblock's first inode (11) are
      reserved. `space.inode_used[ino - 1]` says whether inode ino is in use. Raise
      `NoSpace` when no inode is free.
"""

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np


class NoSpace(Exception):
    """No block (or inode) is free where the policy may look."""


@dataclass(slots=True)
class BlockRequest:
    """What the volume knows when it needs a block (read it; do not keep it).

    ino         the inode the block is for
    inode_group group of that inode
    lblk        logical block of the file the block is for (for an indirect block: the
                data block whose mapping needed it; 0 for an xattr block)
    kind        "data", "dir", "symlink", "indirect" or "xattr"
    level       0 for a data block, 1/2/3 for single/double/triple indirect blocks
    slot        index of the pointer in its map (i_block[] or the indirect block): FFS's indx
    map_prev    nearest non-zero pointer before `slot` in the same map (0 if none): bap[indx-1..0]
    map_block   physical block of the indirect block holding the pointer (0: the inode)
    prev_phys   physical block of lblk-1, if mapped (0 otherwise)
    is_dir      the inode is a directory
    size        the file's size in bytes (i_size) when the request is made; 0 if unknown
    writing     the file is open for writing when the request is made (the kernel's
                inode_is_open_for_write); False only for delayed blocks placed at write-back
                after the writer's last close
    """

    ino: int
    inode_group: int
    lblk: int
    kind: str = "data"
    level: int = 0
    slot: int = 0
    map_prev: int = 0
    map_block: int = 0
    prev_phys: int = 0
    is_dir: bool = False
    size: int = 0
    writing: bool = True


class SpaceView(Protocol):
    """The free-space maps as policies see them (simfs.fs.freespace.FreeSpace): read-only.

    geometry    the volume's shape (simfs.ondisk.superblock.Geometry): block_size,
                blocks_count, first_data_block, blocks_per_group, inodes_per_group,
                inodes_count, groups, inode_table_blocks, ptrs_per_block, groups_per_flex
                (1 without flex_bg; the tables' places are in descs); group_start(g),
                group_blocks(g), group_of_block(b), group_of_inode(ino), has_super(g),
                super_and_gdt_blocks(g)
    descs       group descriptors (block_bitmap, inode_bitmap, inode_table, free_blocks,
                free_inodes, used_dirs): where each group's metadata lies
    block_used  numpy bool per block, True = in use (metadata included)
    inode_used  numpy bool per inode (index ino - 1)
    free_blocks free blocks on the volume
    free_inodes free inodes on the volume
    used_dirs   directories on the volume
    (the three totals are the sums of the groups' counts, kept as they change)
    """

    geometry: Any
    descs: list
    block_used: np.ndarray
    inode_used: np.ndarray
    free_blocks: int
    free_inodes: int
    used_dirs: int

    def group_free_blocks(self, g: int) -> int: ...
    def group_free_inodes(self, g: int) -> int: ...
    def group_used_dirs(self, g: int) -> int: ...
    def first_free_block(self, start: int, end: int) -> int:
        """Lowest free block in [start, end), or -1."""
    def first_free_inode(self, g: int) -> int:
        """Lowest free inode number of group g, or -1."""


class BlockAllocator:
    """Base class of block allocators: subclasses set `name`/`summary` and implement
    `allocate` (and `allocate_run` when decides = "flush"). The contract is the module
    docstring."""

    name = ""
    summary = ""
    decides = "write"           # "write" (immediate) or "flush" (delayed)
    placer = "parent-group"     # the inode placer that belongs with this allocator
    max_run = 1                 # decides="flush": the longest run one allocate_run call places

    def new_inode_state(self) -> Any:
        return None

    def allocate(self, space: SpaceView, req: BlockRequest, state: Any) -> int:
        raise NotImplementedError

    def allocate_run(self, space: SpaceView, req: BlockRequest, state: Any, count: int) -> list[int]:
        """Delayed allocation: blocks for lblk req.lblk .. req.lblk+count-1 (see the module doc)."""
        raise NotImplementedError(f"allocator {self.name!r} decides at {self.decides!r}, "
                                  "and has no allocate_run")

    def release(self, state: Any) -> None:
        """The file was truncated or its last writer closed it: drop what the allocator holds
        for it (ext2_discard_reservation). Default: nothing is held."""

    def reallocate(self, space: SpaceView, req: BlockRequest, state: Any,
                   cluster: list[tuple[int, int]]) -> list[int] | None:
        """Cluster reallocation (ffs_reallocblks): given [(lblk, phys), ...] of a delayed-write
        cluster about to be extended and `req` describing its first block, return new free,
        contiguous physical blocks for the whole cluster, or None to leave it as it is. The
        allocator changes nothing; the volume takes the new blocks, rewrites the pointers and
        frees the old ones. Default: refuse."""
        return None


class InodePlacer:
    """Base class of inode placers: subclasses set `name`/`summary` and implement `choose`."""

    name = ""
    summary = ""

    def choose(self, space: SpaceView, parent_ino: int, is_dir: bool) -> int:
        raise NotImplementedError
