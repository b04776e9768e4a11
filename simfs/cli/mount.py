"""`simfs mount IMAGE MNT [-o ...]` and `simfs umount MNT`: the daemon's front end."""

from __future__ import annotations

import sys

from simfs.cli.common import Fmt, fail


def register(sub) -> None:
    s = sub.add_parser("mount", help="mount an image (background daemon)", formatter_class=Fmt,
                       description="Mount IMAGE on the empty directory MNT. Returns once the file "
                                   "system is ready; the daemon keeps running in the background and "
                                   "logs to IMAGE.log (or -o log=FILE). At unmount the final "
                                   "statistics are written to IMAGE.stats.json (or -o stats=PATH; "
                                   "-o nostats: none). `mount -t fuse.simfs IMAGE MNT -o ...` and "
                                   "fstab lines work too once `simfs install-helper` has run.",
                       epilog="examples:\n  simfs mount disk.img /mnt/sim\n"
                              "  simfs mount disk.img /mnt/sim -o alloc=cg,disk=wd1200jb,cache=16M\n"
                              "  simfs mount disk.img /mnt/sim -o stats=run1.json   # final statistics there\n"
                              "  simfs mount disk.img /mnt/sim -o ro,log=/tmp/simfs.log\n"
                              "  simfs mount disk.img /mnt/sim --foreground   # Ctrl-C unmounts\n\n")
    s.epilog_more = _option_help        # the option list, made when the help is shown (it imports the volume)
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
                                   "image back and exited; then print a summary: simulated time, "
                                   "disk requests and seeks per phase, the final write-back at "
                                   "unmount apart (from the final statistics, IMAGE.stats.json "
                                   "unless the mount said otherwise).",
                       epilog="examples:\n  simfs umount /mnt/sim\n  simfs umount -q /mnt/sim   # no summary\n"
                              "  simfs umount --lazy /mnt/sim   # detach now, even if busy")
    s.add_argument("mountpoint", metavar="MNT")
    s.add_argument("--lazy", "-z", action="store_true",
                   help="detach now even if busy and return at once; the daemon writes the image "
                        "back and exits when the last file is closed (with --timeout: wait that long)")
    s.add_argument("--quiet", "-q", action="store_true", help="print no summary")
    s.add_argument("--json", action="store_true",
                   help="print the final statistics as JSON instead of the summary "
                        "({\"mountpoint\", \"stats_file\", \"stats\"}: as `simfs stats --json` gives them)")
    s.add_argument("--timeout", type=float, default=None,
                   help="give up waiting for the daemon after this many seconds (default 600, "
                        "and 10 once a copy of the mount in another mount namespace is seen keeping "
                        "the daemon alive: then exit status 2, naming the process that holds it)")
    s.set_defaults(func=cmd_umount)


def _option_help() -> str:
    from simfs.fuse import mountopts
    try:
        return mountopts.describe()
    except Exception as e:   # the volume may not be importable yet
        return f"(option list unavailable: {e})"


# what a mount with none of these options models, said at mount (README's quick tour too)
MODEL_KEYS = {"alloc", "inode_placement", "writeback", "dirorder"}
MODELLED = ("simfs: modelling Linux ext2 (alloc=ext2 with Orlov inode placement, writeback=async, "
            "dirorder=linear); -o alloc=...,writeback=... to change")


def cmd_mount(a) -> int:
    from simfs.fuse import daemon, mountopts
    from simfs.fuse.checks import UsageError
    if "remount" in ",".join(a.options).split(","):      # mount -o remount,ro IMAGE MNT
        from simfs.cli.remount import remount
        return remount(a.mountpoint, ",".join(a.options))
    try:
        mopts = mountopts.parse(a.options)
    except mountopts.OptionError as e:
        return fail(str(e), "mount")
    try:
        rc = daemon.mount(a.image, a.mountpoint, mopts, foreground=a.foreground,
                          recorder=_recorder, report=_report_file)
        given = {kv.split("=", 1)[0].strip() for o in a.options for kv in o.split(",")}
        if rc == 0 and not a.foreground and not getattr(a, "quiet", False) and not given & MODEL_KEYS:
            print(MODELLED, file=sys.stderr)      # once mounted: a refusal stays one line
        return rc
    except UsageError as e:
        return fail(str(e), "mount")


def _report_file(path: str | None, as_json: str | None = None) -> None:
    """The last word at unmount: a short summary of the final statistics file, if any; with
    `as_json` (the mount point), the statistics themselves as one JSON object."""
    import json

    from simfs.cli.stats import load_stats, unmount_summary
    doc, why = None, None
    if path:
        try:
            doc = _load_own_stats(path, load_stats)
        except ValueError as e:
            why = str(e)
    if as_json is not None:
        print(json.dumps({"mountpoint": as_json, "stats_file": path, "stats": doc}, indent=1), flush=True)
    if why:
        print(f"simfs: no summary: {why}", file=sys.stderr)
    elif doc is not None and as_json is None:
        print(unmount_summary(doc, path), flush=True)


#: the largest final statistics file `simfs umount` reads back for its summary
STATS_READ_LIMIT = 256 << 20


def _load_own_stats(path: str, load_stats) -> dict:
    """The final statistics the daemon wrote, read back as simfs.outfile reads a file beside
    an image: a FIFO, a link (to /dev/zero...) or another user's file planted there since the
    daemon wrote it is refused, never read (root's `simfs umount` would hang or fill memory).
    A device named by -o stats= (/dev/null) has nothing to summarise."""
    import os
    import stat

    import simfs.outfile as outfile
    try:
        if stat.S_ISCHR(os.lstat(path).st_mode):
            raise ValueError(f"{path} is a device, not a file")
    except FileNotFoundError:
        pass
    try:
        fd = outfile.open_read(path, STATS_READ_LIMIT)
    except outfile.Refused as e:
        raise ValueError(f"refusing to read {path}: {e.strerror}") from None
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None
    if fd is None:
        raise ValueError(f"{path} does not exist")
    try:               # the checked descriptor, by its /proc name: the file, whatever `path` is now
        return load_stats(f"/proc/self/fd/{fd}")
    except ValueError as e:
        raise ValueError(str(e).replace(f"/proc/self/fd/{fd}", path)) from None
    finally:
        os.close(fd)


def _recorder(vol, path: str):
    """-o oplog=PATH: the volume, recording its operations into PATH (simfs.inprocess.oplog);
    with -o clocks=process also which process each ran for (the mount's RequestClocks asks
    the volume for its recorder)."""
    from simfs import __version__
    from simfs.inprocess.oplog import RecordingVolume
    return RecordingVolume.start(vol, path, __version__,
                                 processes=getattr(vol.options, "clocks", "mount") == "process")


def cmd_umount(a) -> int:
    from simfs.fuse import daemon
    from simfs.fuse.checks import UsageError
    try:
        return daemon.umount(a.mountpoint, lazy=a.lazy, timeout=a.timeout,
                             report=None if a.quiet and not a.json else
                             lambda info: _report_file(info.get("stats"), a.mountpoint if a.json else None))
    except UsageError as e:
        return fail(str(e), "umount")
