"""Write-back modes: which blocks an operation writes before it returns, and in what order
delayed blocks go out - and the contract a write-back plug-in follows.

The buffer cache (simfs.blockio.cache) is handed one `WritebackPolicy` object per mount
(``-o writeback=NAME``) and asks it two things; everything else about write-back (the
30-second syncer, the dirty thresholds, clustering into bios of at most ``maxio``, which the
host's request queue may merge up to ``max_sectors_kb`` - simfs.blockio.hostqueue -,
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
            ``setattr``, ``setxattr``, ``removexattr``, ``fsync``, ``writepages`` (a page
            cache writing pages back: allocates as ``write`` does), ``read``, ``lookup``,
            ``getattr``, ``readlink``, ``readdir``, ``statfs``, ``getxattr``,
            ``listxattr``). Block kinds: ``data``, ``inode``, ``dir``,
            ``indirect``, ``xattr``, ``symlink``, ``bitmap``, ``gdt``, ``super``. The answer must
            depend on `op` only: the cache asks once per operation name and keeps it (and
            `dependencies(op)` likewise).
  passes    A tuple of tuples of block kinds: when the syncer or a sync writes dirty blocks
            back, it first writes the blocks of the kinds in passes[0] (in block order,
            clustered), then those in passes[1], ..., then everything left. () = one pass in
            block order. (Eviction and the dirty thresholds write the oldest blocks in block
            order, whatever the passes say; with dependencies, those without first.)

  dependencies(op) -> tuple of (tag, must_follow_tag) pairs
            Soft-updates ordering (default: none): every block the operation dirties whose
            tag is `tag` may reach the disk only after every block of `must_follow_tag` it
            dirtied has. A tag is a block kind, or ``"new KIND"`` for a block the operation
            took fresh (a newly allocated block). A block written while it waits is written
            *rolled back*: the write is charged and the block stays dirty
            (simfs.blockio.softdeps). The pairs of one operation must not form a cycle
            (tags compared exactly: ``"new dir"`` is not ``"dir"``).
  syncer    None (the cache's syncer: every sync_interval, blocks older than it), or
            {"period": s, "delays": {kind: s}, "default": s}: wake every period, write the
            blocks older than their kind's delay.
  throttle  None, or {"per_page": r, "wait": s, "bufdaemon_sleep": s2}: when more than r x the
            cache's 4 KiB pages updates wait to reach the disk, the writer pauses `wait` seconds
            while the blocks others wait for are pushed out; when the dirty thresholds find only
            buffers with dependencies, they write half as many and a writer waiting at the hard
            limit sleeps `bufdaemon_sleep` seconds (FreeBSD's buf_daemon).

What a mode may read: the operation name. What it must not do: touch the cache, the blocks
or the clock, keep state that changes its answers (they must be the same for the whole
mount), I/O.

The built-in modes (seed 002: FFS sync vs async vs soft updates):
  sync     FFS's default mount: namespace operations write the inode, directory, indirect,
           xattr and symlink blocks they change synchronously (bwrite), and a write that
           adds an indirect block writes that block synchronously; data, bitmaps and
           descriptors are delayed
  async    everything delayed (an async mount)
  softdep  FFS soft updates (McKusick & Ganger 1999; Ganger et al. 2000; FreeBSD 5/6
           ffs_softdep.c): everything delayed, but with the ordering rules of soft updates -
           on create/mkdir/link/symlink/mknod the bitmap before the initialised inode before
           the directory entry (and a new directory's first block before its inode); on a
           block allocation the bitmap and the new block itself before the pointer in the
           inode or indirect block; on remove/truncate the entry (or cleared pointers) before
           the freed bits in the bitmap. A block written early goes out rolled back and is
           written again; bufdaemon (the dirty thresholds) first writes buffers without
           pending dependencies and then, if that is not enough, those with them; the syncer
           wakes each second with filedelay 30 / dirdelay 29 / metadelay 28 s; past
           max_softdeps pending updates the writer sleeps tickdelay ticks. Sources and what is
           left out: docs/reference/soft-updates.md. Placement is not affected (the seed's
           read-back effect is not modelled).
"""

import graphlib

from plugin_registry import Registry

#: the block kinds the cache knows (what `Buffer.kind` may be)
BLOCK_KINDS = ("data", "inode", "dir", "indirect", "xattr", "symlink", "bitmap", "gdt", "super")
#: metadata a namespace change writes under FFS's synchronous mount
NAMESPACE_METADATA = ("inode", "dir", "indirect", "xattr", "symlink")


class WritebackPolicy:
    """Base class of write-back modes (the contract is the module docstring)."""

    name = ""
    summary = ""
    passes: tuple = ()
    syncer: dict | None = None
    throttle: dict | None = None

    def sync_kinds(self, op: str) -> tuple:
        """Block kinds operation `op` writes synchronously before it returns. Default: none."""
        return ()

    def dependencies(self, op: str) -> tuple:
        """(tag, must_follow_tag) ordering rules of operation `op`. Default: none."""
        return ()


class Sync(WritebackPolicy):
    name = "sync"
    summary = ("FFS's default mount: inodes, directory and new indirect blocks written synchronously "
               "when an operation changes them; data, bitmaps and descriptors delayed")
    #: operation -> the kinds it writes synchronously (FFS: bwrite of the inode and directory
    #: block on namespace changes, of a new indirect block on write)
    SYNC_KINDS = {"create": NAMESPACE_METADATA, "mkdir": NAMESPACE_METADATA, "mknod": NAMESPACE_METADATA,
                  "symlink": NAMESPACE_METADATA, "link": NAMESPACE_METADATA, "unlink": NAMESPACE_METADATA,
                  "rmdir": NAMESPACE_METADATA, "rename": NAMESPACE_METADATA, "write": ("indirect",),
                  "writepages": ("indirect",)}

    def sync_kinds(self, op: str) -> tuple:
        return self.SYNC_KINDS.get(op, ())


class Async(WritebackPolicy):
    name = "async"
    summary = ("everything delayed (an async mount): written by the syncer, on memory pressure, "
               "sync, fsync and unmount")


#: soft updates' allocation rule (ffs_softdep.c, "Block allocation dependencies": the new
#: block initialised and the bitmap written before the pointer to it, for every file block
#: and for indirect blocks)
_ALLOC = (("inode", "bitmap"), ("inode", "gdt"), ("inode", "new data"), ("inode", "new indirect"),
          ("inode", "new symlink"), ("indirect", "bitmap"), ("indirect", "gdt"), ("indirect", "new data"))
#: create/mkdir/link: bitmap before the initialised inode (inodedep DEPCOMPLETE) before the
#: entry (diradd); a new directory's block before its inode (allocdirect) - MKDIR_BODY
_NAMEADD = (("inode", "bitmap"), ("inode", "gdt"), ("inode", "new dir"), ("dir", "inode")) + _ALLOC[3:5]
#: remove: entry gone before the link count drops (dirrem), the inode's cleared pointers
#: before the blocks and inode are freed in the bitmap (freeblks, freefile)
_REMOVE = (("inode", "dir"), ("bitmap", "inode"), ("gdt", "inode"), ("bitmap", "indirect"))


class Softdep(WritebackPolicy):
    name = "softdep"
    summary = ("FFS soft updates: everything delayed, written in dependency order (bitmap, inode, "
               "entry; new block before its pointer); early writes go out rolled back and again")
    DEPENDENCIES = {"create": _NAMEADD, "mkdir": _NAMEADD, "mknod": _NAMEADD, "symlink": _NAMEADD,
                    "link": (("dir", "inode"),), "rename": (("dir", "inode"),),
                    "unlink": _REMOVE, "rmdir": _REMOVE, "write": _ALLOC, "writepages": _ALLOC,
                    "setattr": (("bitmap", "inode"), ("gdt", "inode"), ("bitmap", "indirect"))}
    #: FreeBSD's syncer (vfs_subr.c sched_sync): wakes once a second; a vnode's dirty buffers
    #: go after filedelay 30 s (data), dirdelay 29 s (directories), metadelay 28 s (the rest)
    syncer = {"period": 1.0, "delays": {"data": 30.0, "dir": 29.0}, "default": 28.0}
    #: ffs_softdep.c: max_softdeps = desiredvnodes * 8 with desiredvnodes ~ physical pages / 4
    #: (vfs_subr.c vntblinit), i.e. ~2 per page of memory, here per cache block; request_cleanup
    #: sleeps tickdelay = 2 ticks at HZ = 100
    #: buf_daemon (vfs_bio.c, FreeBSD 5/6): when flushbufqueues finds only buffers with
    #: dependencies it writes half a target of them and sleeps hz / 10 ("qsleep")
    throttle = {"per_page": 2.0, "wait": 0.020, "bufdaemon_sleep": 0.100}

    def dependencies(self, op: str) -> tuple:
        return self.DEPENDENCIES.get(op, ())


def _check(cls) -> None:
    from plugin_registry import PluginError
    passes = cls.passes
    if not isinstance(passes, tuple) or not all(isinstance(p, tuple) for p in passes):
        raise PluginError(f"{cls.__qualname__}.passes must be a tuple of tuples of block kinds")
    rules = getattr(cls, "DEPENDENCIES", None)
    if isinstance(rules, dict) and any(rule_cycle(r) for r in rules.values()):
        raise PluginError(f"{cls.__qualname__}.DEPENDENCIES has a cycle")


def rule_cycle(pairs) -> bool:
    """Whether one operation's (tag, must_follow_tag) pairs form a cycle (an update could then
    wait for itself). Tags are exact: "new dir" (the new directory's block) is not "dir"."""
    order = graphlib.TopologicalSorter()
    for tag, before in pairs:
        order.add(tag, before)
    try:
        order.prepare()
    except graphlib.CycleError:
        return True
    return False


#: name -> class: the built-ins and installed packages' entry points (group simfs.writeback)
WRITEBACK = Registry("write-back policy", "writeback", "simfs.writeback", WritebackPolicy,
                     (Sync, Async, Softdep), check=_check)


def make_writeback(name: str) -> WritebackPolicy:
    """A new write-back mode for ``-o writeback=NAME`` (a registered name or package.module:Class)."""
    return WRITEBACK.create(name)


__all__ = ["BLOCK_KINDS", "NAMESPACE_METADATA", "WRITEBACK", "Async", "Softdep", "Sync", "WritebackPolicy",
           "make_writeback", "rule_cycle"]
