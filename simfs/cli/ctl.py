"""`simfs ctl MNT mark NAME | drop-caches | sync | reset`: steer a mount without magic files.

Each action writes to the mount's control file (`MNT/.simfs/mark`, `drop_caches`, `sync`,
`reset`; see simfs/fuse/control.py), which stays the interface underneath (`echo x >
MNT/.simfs/mark` keeps working); this is the s3qlctrl-style front end with one-line errors.
"""

from __future__ import annotations

import errno
import os
import sys

from simfs.cli.common import Fmt, fail
from simfs.fs.types import MAX_PHASE_NAME

# action -> (control file, help)
ACTIONS = {
    "mark": ("mark", "start a phase: statistics from here on are kept under NAME"),
    "drop-caches": ("drop_caches", "write back, then empty simfs's caches and the drive's buffer "
                                   "(the next phase starts cold everywhere)"),
    "sync": ("sync", "write every dirty block back (in the model) and commit the image"),
    "reset": ("reset", "zero the request counts and simulated-time statistics"),
}


def register(sub) -> None:
    s = sub.add_parser("ctl", help="mark a phase, drop caches, sync or reset a mount", formatter_class=Fmt,
                       description="Steer a mounted simfs: " + "; ".join(
                           f"{k}: {h}" for k, (_, h) in ACTIONS.items()) + ".",
                       epilog="examples:\n  simfs ctl /mnt/sim mark unpack\n"
                              "  simfs ctl /mnt/sim sync\n  simfs ctl /mnt/sim drop-caches\n"
                              "  simfs ctl /mnt/sim mark readback\n  simfs ctl /mnt/sim reset")
    s.add_argument("mountpoint", metavar="MNT")
    s.add_argument("action", choices=list(ACTIONS), metavar="ACTION",
                   help="one of: " + ", ".join(ACTIONS))
    s.add_argument("name", nargs="?", metavar="NAME", help="the phase name (mark)")
    s.set_defaults(func=cmd_ctl)


def cmd_ctl(a) -> int:
    if a.action == "mark":
        if not a.name or not a.name.strip():
            return fail("mark needs a phase name: simfs ctl MNT mark NAME", "ctl")
        data = a.name.strip().encode(errors="surrogateescape")
        if "\n" in a.name or len(data) > MAX_PHASE_NAME:
            return fail(f"a phase name is one line of at most {MAX_PHASE_NAME} bytes", "ctl")
    elif a.name is not None:
        return fail(f"{a.action} takes no argument (got {a.name!r})", "ctl")
    else:
        data = b"1"
    ctl_dir = os.path.join(a.mountpoint, ".simfs")
    if not os.path.isdir(a.mountpoint):
        return fail(f"{a.mountpoint} is not a directory", "ctl")
    if not os.path.isdir(ctl_dir):
        return fail(f"{a.mountpoint} is not a simfs mount (no .simfs/)", "ctl")
    path = os.path.join(ctl_dir, ACTIONS[a.action][0])
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except FileNotFoundError:
        return fail(f"this mount does not offer {a.action} (no {path})", "ctl")
    except OSError as e:
        if e.errno == errno.EIO:
            print(f"simfs ctl: {a.action} failed inside the daemon (see its log)", file=sys.stderr)
            return 1
        if e.errno == errno.EROFS:
            return fail(f"{a.action}: {a.mountpoint} is mounted read-only, and the kernel refuses "
                        "writes to its control files too; every mount starts cold, and phases need "
                        "a read-write mount", "ctl")
        return fail(f"{a.action}: {e.strerror}", "ctl")
    return 0
