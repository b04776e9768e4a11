"""Allocation and directory-order policies, looked up by name."""

from .base import BlockAllocator, BlockRequest, InodePlacer, NoSpace
from .delayed import Delayed
from .ffs_alloc import Cg, Cg2010, Cg2013
from .ffs_dirpref import FfsDirpref
from .firstfree import FirstFree, ParentGroup
from .freebsd_ext2fs import Ext2fs2010, Ext2fs2010Fixed, Ext2fsDirpref
from .linux_ext2 import Ext2
from .linux_ialloc import Orlov
from .sequential import Sequential, SequentialInodes

ALLOCATORS = {cls.name: cls for cls in (FirstFree, Sequential, Cg2010, Cg2013, Cg, Ext2,
                                        Ext2fs2010, Ext2fs2010Fixed, Delayed)}
INODE_PLACERS = {cls.name: cls for cls in (ParentGroup, SequentialInodes, FfsDirpref, Orlov,
                                           Ext2fsDirpref)}


def unknown(kind: str, name: str, known) -> ValueError:
    return ValueError(f"unknown {kind} '{name}'; choose one of: {', '.join(sorted(known))}")


def make_allocator(name: str) -> BlockAllocator:
    if name not in ALLOCATORS:
        raise unknown("allocator", name, ALLOCATORS)
    return ALLOCATORS[name]()


def make_inode_placer(name: str) -> InodePlacer:
    if name not in INODE_PLACERS:
        raise unknown("inode placement", name, INODE_PLACERS)
    return INODE_PLACERS[name]()


__all__ = ["ALLOCATORS", "INODE_PLACERS", "BlockAllocator", "BlockRequest", "InodePlacer", "NoSpace",
           "make_allocator", "make_inode_placer"]
