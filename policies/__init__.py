"""Policies, looked up by name: block allocators, inode placers, directory orders, write-back.

Each kind has a registry (`plugin_registry.Registry`, a mapping name -> class) holding the
built-ins, installed packages' entry points and - by `make_*` - classes named directly as
``package.module:Class``; and one contract, in its base module:

  kind              registry                      entry-point group     contract
  block allocator   ALLOCATORS                    simfs.allocators      policies.base
  inode placement   INODE_PLACERS                 simfs.inode_placers   policies.base
  directory order   policies.dirorder.DIR_ORDERS  simfs.dirorders       policies.dirorder.DirOrder
  write-back        policies.writeback.WRITEBACK  simfs.writeback       policies.writeback.WritebackPolicy
"""

from plugin_registry import PluginError, Registry, did_you_mean

from .base import BlockAllocator, BlockRequest, InodePlacer, NoSpace
from .delayed import Delayed
from .ext4_ialloc import OrlovFlex
from .ffs_alloc import Cg, Cg2010, Cg2013
from .ffs_dirpref import FfsDirpref
from .firstfree import FirstFree, ParentGroup
from .freebsd_ext2fs import Ext2fs2010, Ext2fs2010Fixed, Ext2fsDirpref
from .linux_ext2 import Ext2
from .linux_ialloc import Orlov
from .mballoc import Mballoc, MballocDelalloc
from .sequential import Sequential, SequentialInodes


def _check_allocator(cls) -> None:
    if cls.decides not in ("write", "flush"):
        raise PluginError(f"{cls.__qualname__}.decides is {cls.decides!r}, not 'write' or 'flush'")
    if cls.decides == "flush" and (cls.allocate_run is BlockAllocator.allocate_run
                                   or not isinstance(cls.max_run, int) or cls.max_run < 1):
        raise PluginError(f"{cls.__qualname__} decides at 'flush' but has no allocate_run "
                          "or no max_run >= 1")


ALLOCATORS = Registry("allocator", "alloc", "simfs.allocators", BlockAllocator,
                      (FirstFree, Sequential, Cg2010, Cg2013, Cg, Ext2, Ext2fs2010, Ext2fs2010Fixed, Delayed,
                       Mballoc, MballocDelalloc),
                      check=_check_allocator)
INODE_PLACERS = Registry("inode placement", "inode_placement", "simfs.inode_placers", InodePlacer,
                         (ParentGroup, SequentialInodes, FfsDirpref, Orlov, Ext2fsDirpref, OrlovFlex))


def unknown(kind: str, name: str, known) -> ValueError:
    return ValueError(f"unknown {kind} '{name}'; choose one of: {', '.join(sorted(known))}"
                      + did_you_mean(name, known))


def make_allocator(name: str) -> BlockAllocator:
    """A new allocator for ``-o alloc=NAME`` (a registered name or package.module:Class)."""
    return ALLOCATORS.create(name)


def make_inode_placer(name: str) -> InodePlacer:
    """A new inode placer for ``-o inode_placement=NAME`` (or package.module:Class)."""
    return INODE_PLACERS.create(name)


__all__ = ["ALLOCATORS", "INODE_PLACERS", "BlockAllocator", "BlockRequest", "InodePlacer", "NoSpace",
           "PluginError", "make_allocator", "make_inode_placer"]
