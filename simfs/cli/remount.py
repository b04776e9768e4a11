"""`mount -o remount,ro MNT` (and rw) on a simfs mount: what `simfs mount -o remount` and the
mount helper (mount.fuse.simfs) both do, kept below them both."""

from __future__ import annotations

import errno
import os

from simfs.cli.common import fail

# What a remount can change: the kernel's flags of the mount (the superblock's ro/rw and the
# mount's nosuid, nodev, noexec, atime flags); simfs's own options are fixed while mounted.
REMOUNT_FLAGS = {"ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec", "noatime",
                 "atime", "strictatime", "relatime", "nodiratime", "diratime", "lazytime",
                 "nolazytime", "sync", "async", "dirsync"}


def remount(mnt: str, optstr: str) -> int:
    """`mount -o remount,ro MNT` (and rw): the kernel makes the mount read-only (writes get
    EROFS; it refuses while a file is open for writing, EBUSY) or writable again. FUSE does
    not tell the daemon, so going read-only first writes every dirty block back through
    /.simfs/sync, as the kernel's ext2 syncs when remounted read-only (and the daemon syncs
    again once it sees the flag in its mountinfo). Options other than the kernel's flags
    cannot change while mounted: they are left as they are, as mount(8) passes the fstab
    line's options along."""
    from simfs.fuse.daemon import read_info
    mnt = os.path.abspath(mnt)
    info = read_info(mnt)
    if info is None:
        return fail(f"{mnt} is not a simfs mount (no .simfs/info)", "remount")
    items = [o for o in optstr.split(",") if o and o != "remount"]
    flags = [o for o in items if o in REMOUNT_FLAGS]
    ro = next((o == "ro" for o in reversed(flags) if o in ("ro", "rw")), None)
    if ro is False and (info.get("options") or {}).get("read_only"):
        return fail(f"{mnt} was mounted with -o ro, so simfs opened {info.get('image')} "
                    "read-only: unmount it and mount it again to write", "remount")
    if ro:
        try:
            with open(os.path.join(mnt, ".simfs", "sync"), "w") as f:
                f.write("remount,ro\n")
        except OSError as e:          # already read-only (EROFS): nothing written since
            if e.errno != errno.EROFS:
                return fail(f"cannot sync {mnt} before remounting it read-only: {e.strerror}",
                            "remount")
    import subprocess
    r = subprocess.run(["mount", "-i", "-o", ",".join(["remount"] + flags), "--", mnt],
                       capture_output=True, text=True)
    if r.returncode != 0:
        detail = " ".join(r.stderr.split()) or f"mount exit {r.returncode}"
        return fail(f"cannot remount {mnt}: {detail}", "remount")
    return 0
