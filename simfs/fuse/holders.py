"""Which processes keep a FUSE mount alive from another mount namespace.

A mount copied into another mount namespace (`unshare -m`, a container, a test runner that
made one while the mount was up) is a second reference to the same FUSE connection: after
`simfs umount` detaches ours, the kernel tells the daemon nothing until every copy is gone,
so the daemon goes on serving and the image stays locked. The copies are found in
/proc/PID/mountinfo by the mount's device number (one per FUSE connection), one process read
per mount namespace.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Holder:
    pid: int                # the lowest pid in that mount namespace
    comm: str               # its command name
    where: str              # the copy's mount point there
    others: int             # how many more processes share that namespace

    def __str__(self) -> str:
        more = f", with {self.others} more process{'es' if self.others > 1 else ''} there" if self.others else ""
        return f"pid {self.pid} ({self.comm}{more}) at {self.where}"


def _unescape(s: str) -> str:
    return s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def _fuse_mounts(text: str) -> list[tuple[str, str]]:
    """(device major:minor, mount point) of every FUSE mount in a mountinfo text."""
    out = []
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) >= 5 and rfields and rfields[0].split(".")[0] in ("fuse", "fuseblk"):
            out.append((fields[2], _unescape(fields[4])))
    return out


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def mount_dev(mnt: str, proc: str = "/proc") -> str | None:
    """The device number ("0:57") of the FUSE mount on `mnt` in our namespace, or None."""
    real = os.path.join(os.path.realpath(os.path.dirname(mnt)), os.path.basename(mnt))
    found = None
    for dev, where in _fuse_mounts(_read(f"{proc}/self/mountinfo")):
        if where == real:
            found = dev                          # (the last mount on `mnt` is the one seen)
    return found


def holders(dev: str | None, proc: str = "/proc") -> list[Holder]:
    """The processes (one per mount namespace other than ours) whose namespace still has a
    mount of the FUSE connection `dev`; empty if none (or none we may look at)."""
    if not dev:
        return []
    try:
        ours = os.readlink(f"{proc}/self/ns/mnt")
    except OSError:
        return []
    spaces: dict[str, list[int]] = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            ns = os.readlink(f"{proc}/{name}/ns/mnt")
        except OSError:
            continue                                  # gone, or not ours to look at
        if ns != ours:
            spaces.setdefault(ns, []).append(int(name))
    out = []
    for pids in spaces.values():
        pids.sort()
        for pid in pids:                              # (the first whose mountinfo reads)
            text = _read(f"{proc}/{pid}/mountinfo")
            if text:
                break
        where = [w for d, w in _fuse_mounts(text) if d == dev]
        if where:
            comm = _read(f"{proc}/{pids[0]}/comm").strip() or "?"
            out.append(Holder(pids[0], comm, where[0], len(pids) - 1))
    return sorted(out, key=lambda h: h.pid)
