"""`simfs mount IMAGE MNT [-o ...]` and `simfs umount MNT`: the daemon's front end."""

from __future__ import annotations

from simfs.cli.common import Fmt, fail


def register(sub) -> None:
    s = sub.add_parser("mount", help="mount an image (background daemon)", formatter_class=Fmt,
                       description="Mount IMAGE on the empty directory MNT. Returns once the file "
                                   "system is ready; the daemon keeps running in the background and "
                                   "logs to IMAGE.log (or -o log=FILE).",
                       epilog="examples:\n  simfs mount disk.img /mnt/sim\n"
                              "  simfs mount disk.img /mnt/sim -o alloc=first-free,cache_blocks=4096\n"
                              "  simfs mount disk.img /mnt/sim -o ro,log=/tmp/simfs.log\n"
                              "  simfs mount disk.img /mnt/sim --foreground   # Ctrl-C unmounts\n\n"
                              + _option_help())
    s.add_argument("image", metavar="IMAGE")
    s.add_argument("mountpoint", metavar="MNT")
    s.add_argument("-o", dest="options", action="append", default=[], metavar="KEY=VAL,...",
                   help="mount options (listed below); may be repeated")
    s.add_argument("--foreground", "-f", action="store_true",
                   help="stay in the foreground, log to stderr, return after unmount")
    s.set_defaults(func=cmd_mount)

    s = sub.add_parser("umount", aliases=["unmount"], help="unmount and wait for the image to be written",
                       formatter_class=Fmt,
                       description="Unmount MNT and return only after the daemon has written the "
                                   "image back and exited.",
                       epilog="examples:\n  simfs umount /mnt/sim\n  simfs umount --lazy /mnt/sim")
    s.add_argument("mountpoint", metavar="MNT")
    s.add_argument("--lazy", "-z", action="store_true",
                   help="detach now even if busy; the daemon finishes when the last file is closed")
    s.add_argument("--timeout", type=float, default=None,
                   help="give up waiting for the daemon after this many seconds")
    s.set_defaults(func=cmd_umount)


def _option_help() -> str:
    from simfs.fuse import mountopts
    try:
        return mountopts.describe()
    except Exception as e:   # the volume may not be importable yet
        return f"(option list unavailable: {e})"


def cmd_mount(a) -> int:
    from simfs.fuse import daemon, mountopts
    from simfs.fuse.checks import UsageError
    try:
        mopts = mountopts.parse(a.options)
    except mountopts.OptionError as e:
        return fail(str(e), "mount")
    try:
        return daemon.mount(a.image, a.mountpoint, mopts, foreground=a.foreground,
                            recorder=_recorder)
    except UsageError as e:
        return fail(str(e), "mount")


def _recorder(vol, path: str):
    """-o oplog=PATH: the volume, recording its operations into PATH (simfs.engine.oplog)."""
    from simfs import __version__
    from simfs.engine.oplog import RecordingVolume
    return RecordingVolume.start(vol, path, __version__)


def cmd_umount(a) -> int:
    from simfs.fuse import daemon
    from simfs.fuse.checks import UsageError
    try:
        return daemon.umount(a.mountpoint, lazy=a.lazy, timeout=a.timeout)
    except UsageError as e:
        return fail(str(e), "umount")
