"""`newest-first`: readdir returns a directory's entries in reverse slot order.

In an ext2 directory, entries sit in creation order until deletions free slots for new names
to reuse; this order returns them the other way round, newest first, with "." and ".."
first. Linux's tmpfs listed directories newest first in the same way (dcache_readdir walked
the dentry's children list, where new entries are added at the head) until it moved to
stable offsets in Linux 6.6. Useful to see how much of a tool's speed comes from reading
files in the order they were written: `tar cf` of a freshly unpacked tree visits every
directory backwards, against the allocator's placement.

Rank (the contract is policies.dirorder.DirOrder): "." 0, ".." 1, any other entry
2 + (2**32 - 1 - position); cookies are rank + 1, so a reader resumes correctly after
entries are added or removed, as with every built-in order.
"""

from policies.dirorder import DirOrder

_DOT, _DOTDOT = b".", b".."
_TOP = (1 << 32) - 1            # directory positions are below 4 GiB


class NewestFirst(DirOrder):
    name = "newest-first"
    summary = ("reverse on-disk slot order (newest entries first), '.' and '..' first: tmpfs "
               "before Linux 6.6; example plug-in")

    def _ranked(self, entries, hash_ctx):
        out = []
        for e in entries:
            name, pos = e[0], e[3]
            if name == _DOT:
                rank = 0
            elif name == _DOTDOT:
                rank = 1
            else:
                rank = 2 + (_TOP - pos)
            out.append((rank, pos, e))
        return out
