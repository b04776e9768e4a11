"""Allocation and directory-order policies, looked up by name."""

from .base import BlockAllocator, BlockRequest, InodePlacer, NoSpace
from .firstfree import FirstFree, ParentGroup

ALLOCATORS = {cls.name: cls for cls in (FirstFree,)}
INODE_PLACERS = {cls.name: cls for cls in (ParentGroup,)}


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
