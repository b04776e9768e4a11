"""Write-back modes: which blocks an operation writes before it returns, and in what order
delayed blocks go out - and the contract a write-back plug-in follows.

The buffer cache (simfs.blockio.cache) is handed one `WritebackPolicy` object per mount
(``-o writeback=NAME``) and asks it two things; everything else about write-back (the
30-second syncer, the dirty thresholds, clustering into requests of at most ``maxio``,
eviction, sync/fsync/unmount) is the cache's and is the same for every mode.

Registry: `WRITEBACK` (built-ins, installed packages' entry points in group
``simfs.writeback`` whose name is the class's ``name``, or
``-o writeback=package.module:Class``). One instance per mounted volume (``cls()``).

Contract (`WritebackPolicy`)
----------------------------
  name      the ``-o writeback=`` name; ``summary`` one line for ``simfs policies``
  sync_kinds(op) -> tuple of block kinds
            The kinds of block that operation `op` must write synchronously before it
            returns: every block of those kinds the operation dirties is written at the end
            of the operation and the operation waits for it. `op` is the name of the
            volume operation (the ``@operation`` methods of simfs.fs: ``create``, ``mkdir``,
            ``mknod``, ``symlink``, ``link``, ``unlink``, ``rmdir``, ``rename``, ``write``,
            ``setattr``, ``setxattr``, ``removexattr``, ``fsync``, ``read``, ``lookup``,
            ``getattr``, ``readlink``, ``readdir``, ``statfs``, ``getxattr``,
            ``listxattr``). Block kinds: ``data``, ``inode``, ``dir``,
            ``indirect``, ``xattr``, ``symlink``, ``bitmap``, ``gdt``, ``super``. Called at the
            start of every operation; the answer must depend on `op` only.
  passes    A tuple of tuples of block kinds: when the syncer or a sync writes dirty blocks
            back, it first writes the blocks of the kinds in passes[0] (in block order,
            clustered), then those in passes[1], ..., then everything left. () = one pass in
            block order. (Eviction and the dirty thresholds write the oldest blocks in block
            order, whatever the passes say.)

What a mode may read: the operation name. What it must not do: touch the cache, the blocks
or the clock, keep state that changes its answers (they must be the same for the whole
mount), I/O.

The built-in modes (seed 002: FFS sync vs async vs soft updates):
  sync     FFS's default mount: namespace operations write the inode, directory, indirect,
           xattr and symlink blocks they change synchronously (bwrite), and a write that
           adds an indirect block writes that block synchronously; data, bitmaps and
           descriptors are delayed
  async    everything delayed (an async mount)
  softdep  everything delayed, written back in soft-updates order: bitmaps and descriptors,
           then inode blocks, then directory blocks, then the rest, each pass in elevator order
"""

from simfs.plugins import Registry

#: the block kinds the cache knows (what `Buffer.kind` may be)
BLOCK_KINDS = ("data", "inode", "dir", "indirect", "xattr", "symlink", "bitmap", "gdt", "super")
#: metadata a namespace change writes under FFS's synchronous mount
NAMESPACE_METADATA = ("inode", "dir", "indirect", "xattr", "symlink")


class WritebackPolicy:
    """Base class of write-back modes (the contract is the module docstring)."""

    name = ""
    summary = ""
    passes: tuple = ()

    def sync_kinds(self, op: str) -> tuple:
        """Block kinds operation `op` writes synchronously before it returns. Default: none."""
        return ()


class Sync(WritebackPolicy):
    name = "sync"
    summary = ("FFS's default mount: inodes, directory and new indirect blocks written synchronously "
               "when an operation changes them; data, bitmaps and descriptors delayed")
    #: operation -> the kinds it writes synchronously (FFS: bwrite of the inode and directory
    #: block on namespace changes, of a new indirect block on write)
    SYNC_KINDS = {"create": NAMESPACE_METADATA, "mkdir": NAMESPACE_METADATA, "mknod": NAMESPACE_METADATA,
                  "symlink": NAMESPACE_METADATA, "link": NAMESPACE_METADATA, "unlink": NAMESPACE_METADATA,
                  "rmdir": NAMESPACE_METADATA, "rename": NAMESPACE_METADATA, "write": ("indirect",)}

    def sync_kinds(self, op: str) -> tuple:
        return self.SYNC_KINDS.get(op, ())


class Async(WritebackPolicy):
    name = "async"
    summary = ("everything delayed (an async mount): written by the syncer, on memory pressure, "
               "sync, fsync and unmount")


class Softdep(WritebackPolicy):
    name = "softdep"
    summary = ("everything delayed, written back in soft-updates order: bitmaps and descriptors, "
               "then inode blocks, then directory blocks, then the rest")
    passes = (("bitmap", "gdt"), ("inode",), ("dir",))


def _check(cls) -> None:
    from simfs.plugins import PluginError
    passes = cls.passes
    if not isinstance(passes, tuple) or not all(isinstance(p, tuple) for p in passes):
        raise PluginError(f"{cls.__qualname__}.passes must be a tuple of tuples of block kinds")


#: name -> class: the built-ins and installed packages' entry points (group simfs.writeback)
WRITEBACK = Registry("write-back policy", "writeback", "simfs.writeback", WritebackPolicy,
                     (Sync, Async, Softdep), check=_check)


def make_writeback(name: str) -> WritebackPolicy:
    """A new write-back mode for ``-o writeback=NAME`` (a registered name or package.module:Class)."""
    return WRITEBACK.create(name)


__all__ = ["BLOCK_KINDS", "NAMESPACE_METADATA", "WRITEBACK", "Async", "Softdep", "Sync", "WritebackPolicy",
           "make_writeback"]
