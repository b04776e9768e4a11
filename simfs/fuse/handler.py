"""The wrapper every pyfuse3 handler of simfs.fuse.operations goes through, and what it needs.

Every handler is wrapped (`handler`): FSError becomes FUSEError(errno); any other exception
is logged with its traceback and answered EIO, and the mount stays up (pyfuse3 would
otherwise die). Requests are counted by type for /.simfs/stats, except those that touch the
control directory itself (see control.py); a handler armed through /.simfs/fault raises.
With -o clocks=process each request is served on its process's simulated clock
(simfs.fuse.processes); with one clock (the default) the handler is called as it is.

FUSE's root node id is 1, ext2's root inode is 2: node 1 <-> inode 2 (`vino`), every other
number is the ext2 inode number (ext2 inode 1 is the bad-blocks inode and is never reachable).
"""

from __future__ import annotations

import errno
import functools
import logging

import pyfuse3

from simfs.errors import FSError, ImageWriteError
from simfs.fs.operation import recorded_error
from simfs.fuse import control, processes

log = logging.getLogger("simfs.fuse")

FUSE_ROOT = pyfuse3.ROOT_INODE      # 1


class InjectedFault(RuntimeError):
    """Raised by a handler armed through /.simfs/fault (tests only, -o debug_faults)."""


def _errname(e: int) -> str:
    return errno.errorcode.get(e, str(e))


def _ctl_lookup(args: tuple) -> bool:
    parent = args[0]
    return parent >= _CTL_BASE or (parent == FUSE_ROOT and args[1] == _CTL_NAME)


def _ctl_forget(args: tuple) -> bool:
    return bool(args[0]) and all(i >= _CTL_BASE for i, _ in args[0])


def _ctl_none(args: tuple) -> bool:
    return False


#: op -> its control test (see `handler`); every other op's first argument is a node or handle
_CTL_TESTS = {"lookup": _ctl_lookup, "forget": _ctl_forget, "statfs": _ctl_none}
_CTL_BASE = control.BASE
_CTL_NAME = control.NAME


def handler(fn):
    """Wrap a synchronous handler body as a pyfuse3 async handler (see the module docstring).

    The wrapper runs once per request (265,000 for an untar of /usr/include), so it is kept
    short: the op's control test is chosen here, once (most ops: is the first argument a
    control number), and an error answer (FSError: the 35,000 ENODATA and ENOENT of an
    untar) is caught first."""
    op = fn.__name__
    ctl_test = _CTL_TESTS.get(op)
    forget = op == "forget"

    @functools.wraps(fn)
    async def wrapper(self, *args):
        if args[0] >= _CTL_BASE if ctl_test is None else ctl_test(args):
            self.ctl_ops[op] += 1
            ctl = True
        else:
            self.ops[op] += 1
            ctl = False
        try:
            if self.faults and not ctl and self.faults.get(op, 0) > 0:
                self.faults[op] -= 1
                raise InjectedFault(f"simfs: injected fault in {op} (via /.simfs/fault)")
            try:
                clocks = self.process_clocks
            except AttributeError:      # the first request: -o clocks=process or not
                clocks = self.process_clocks = processes.for_operations(self)
            if clocks is None:
                return fn(self, *args)
            return clocks.call(fn, self, op, args, ctl)
        except _FSErrors as e:          # (ImageWriteError: the image's host full, not the fs's fault)
            self.errors[_errname(e.errno)] += 1
            if forget:
                return None
            raise pyfuse3.FUSEError(e.errno or errno.EIO) from None
        except pyfuse3.FUSEError as e:
            self.errors[_errname(e.errno)] += 1
            if forget:
                return None
            raise
        except Exception as e:
            self.errors["EIO"] += 1
            self.unexpected += 1
            log.exception("unexpected exception in %s%r; answering EIO", op, _brief(args))
            if not isinstance(e, InjectedFault) and not recorded_error(e):   # a real one, outside any
                self.vol.fs_error(f"unexpected {type(e).__name__} in {op}")    # operation's own record
            if forget:
                return None
            raise pyfuse3.FUSEError(errno.EIO) from None

    wrapper.simfs_op = op
    return wrapper


_FSErrors = (FSError, ImageWriteError)


def _brief(args: tuple) -> tuple:
    """Arguments for a log line: no contexts, no large buffers."""
    out = []
    for a in args:
        if isinstance(a, (bytes, bytearray)) and len(a) > 64:
            out.append(f"<{len(a)} bytes>")
        elif isinstance(a, (pyfuse3.RequestContext, pyfuse3.ReaddirToken)):
            continue
        elif isinstance(a, (int, bytes, str, float, bool, type(None))):
            out.append(a)
        else:
            out.append(type(a).__name__)
    return tuple(out)


def vino(ino: int) -> int:
    """FUSE node id -> volume inode."""
    return 2 if ino == FUSE_ROOT else ino


def caller_in_group(ctx, gid: int) -> bool:
    """Whether the requesting process is in group `gid` (its own or a supplementary group:
    in_group_p), or is root (taken as holding CAP_FSETID)."""
    if ctx.uid == 0 or ctx.gid == gid:
        return True
    try:
        return gid in set(pyfuse3.get_sup_groups(ctx.pid))
    except Exception:
        return False
