"""The `simfs` command: mkfs, mount, umount, fsck, stats (and subcommands others register).

Bad input (missing or unusable image or mount point, unknown option or value) is one line on
stderr and exit status 2, like argparse's own usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

from simfs import __version__

EXIT_USAGE = 2

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtpe]?)(i?b?)\s*$", re.I)


def parse_size(text: str) -> int:
    """'64M', '1G', '512KiB', '4096' -> bytes (binary multiples)."""
    m = _SIZE_RE.match(str(text))
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 64M, 1G, 4096)")
    num, unit = float(m.group(1)), m.group(2).lower()
    mult = 1024 ** ("kmgtpe".index(unit) + 1) if unit else 1
    return int(num * mult)


class _Fmt(argparse.RawDescriptionHelpFormatter):
    pass


def _fail(msg: str, cmd: str = "") -> int:
    """One-line error for bad input; exit status 2."""
    print(f"simfs{' ' + cmd if cmd else ''}: {msg}", file=sys.stderr)
    return EXIT_USAGE


# mkfs -----------------------------------------------------------------------------------------
def cmd_mkfs(a) -> int:
    from simfs.fuse.daemon import image_locked, path_problem, shown
    from simfs.errors import ImageError
    from simfs.ondisk.mkfs import mkfs, plan
    image = os.path.abspath(a.image)
    problem = path_problem(image)
    if problem:
        return _fail(f"{shown(a.image)}: {problem}", "mkfs")
    if os.path.exists(image) and not a.force:
        return _fail(f"{a.image} exists; use --force to overwrite it", "mkfs")
    if os.path.isdir(image):
        return _fail(f"{a.image} is a directory", "mkfs")
    if not os.path.isdir(os.path.dirname(image)):
        return _fail(f"directory {os.path.dirname(image)} does not exist", "mkfs")
    kw = dict(block_size=a.block_size, inode_size=a.inode_size, bytes_per_inode=a.bytes_per_inode,
              blocks_per_group=a.blocks_per_group, inodes_per_group=a.inodes_per_group,
              reserved_ratio=a.reserved_ratio / 100.0, label=a.label.encode())
    try:                       # every argument checked before the image is touched
        blocks = plan(a.size, **kw)[0]
    except ImageError as e:
        return _fail(str(e), "mkfs")
    if os.path.exists(image) and image_locked(image):
        return _fail(f"{a.image} is in use (mounted?)", "mkfs")
    import uuid as _uuid
    for opt, value in (("uuid", a.uuid), ("hash_seed", a.hash_seed)):
        if value:
            try:
                kw[opt] = str(_uuid.UUID(value))
            except ValueError:
                return _fail(f"--{opt.replace('_', '-')} {value!r} is not a UUID "
                             f"(e.g. 01234567-89ab-cdef-0123-456789abcdef)", "mkfs")
    if a.disk:
        import disk_models
        from simfs.fuse.mountopts import RANGES, format_size
        try:
            sectors = disk_models.make_disk(a.disk).sectors
        except ValueError as e:
            return _fail(f"--disk: {e}", "mkfs")
        if blocks * a.block_size // 512 > sectors:
            return _fail(f"the file system ({blocks * a.block_size} bytes) does not fit the disk "
                         f"{a.disk} ({sectors * 512} bytes)", "mkfs")
        low, high = RANGES["maxio"]
        if not low <= a.maxio <= high:
            return _fail(f"--maxio must be from {format_size(low)} to {format_size(high)}, "
                         f"not {a.maxio}", "mkfs")
    existed = os.path.exists(image)
    try:
        if a.disk:
            from simfs.engine.timed_mkfs import timed_mkfs
            sb, seconds, st = timed_mkfs(image, a.size, a.disk, maxio=a.maxio, **kw)
        else:
            sb = mkfs(image, a.size, **kw)
    except ImageError as e:
        if a.disk and not existed:     # timed_mkfs creates the file before mkfs checks the plan
            os.unlink(image)
        return _fail(str(e), "mkfs")
    except OSError as e:
        return _fail(f"{a.image}: {e.strerror}", "mkfs")
    if not a.quiet:
        nb, ni = getattr(sb, "blocks_count", None), getattr(sb, "inodes_count", None)
        detail = f"{nb} blocks of {a.block_size} bytes, {ni} inodes" if nb and ni else f"{a.size} bytes"
        print(f"simfs: made an ext2 file system in {a.image}: {detail}")
    if a.disk:
        c = st.totals()
        n = c.get("disk_writes", 0) + c.get("disk_reads", 0)
        mib = c.get("sectors_written", 0) * 512 / 2**20
        print(f"mkfs on {a.disk}: {seconds:.3f} s simulated ({n:,} requests, {mib:.1f} MiB written)")
    return 0


# mount / umount ------------------------------------------------------------------------------
def cmd_mount(a) -> int:
    from simfs.fuse import daemon, mountopts
    try:
        mopts = mountopts.parse(a.options)
    except mountopts.OptionError as e:
        return _fail(str(e), "mount")
    try:
        return daemon.mount(a.image, a.mountpoint, mopts, foreground=a.foreground)
    except daemon.UsageError as e:
        return _fail(str(e), "mount")


def cmd_umount(a) -> int:
    from simfs.fuse import daemon
    try:
        return daemon.umount(a.mountpoint, lazy=a.lazy, timeout=a.timeout)
    except daemon.UsageError as e:
        return _fail(str(e), "umount")


# fsck -----------------------------------------------------------------------------------------
def _e2fsck(image: str, mode: str) -> tuple[int, list[str], list[str], str]:
    """Run `e2fsck -f{mode} IMAGE`: (exit status, its output lines, the lines other than pass
    headers and the summary, the summary line)."""
    r = subprocess.run(["e2fsck", "-f" + mode, image], capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip()
    summary = next((ln for ln in reversed(out.splitlines()) if " files (" in ln and "blocks" in ln), "")
    problems = [ln for ln in out.splitlines()
                if ln.strip() and not ln.startswith(("Pass ", "e2fsck ")) and ln != summary]
    return r.returncode, out.splitlines(), problems, summary


def _print_lines(lines: list[str], verbose: bool) -> None:
    for ln in lines if verbose else lines[:40]:
        print("  " + ln)
    if not verbose and len(lines) > 40:
        print(f"  ... {len(lines) - 40} more lines (use -v)")


def cmd_fsck(a) -> int:
    from simfs.fuse.daemon import image_locked
    from simfs.blockio.imagefile import JournalError, journal_path, pending_journal, recover
    import fcntl
    import shutil
    if not os.path.exists(a.image):
        return _fail(f"image {a.image} does not exist", "fsck")
    if shutil.which("e2fsck") is None:
        return _fail("e2fsck not found (apt-get install e2fsprogs)", "fsck")
    if a.repair:
        try:
            fd = os.open(a.image, os.O_RDWR)
        except OSError as e:
            return _fail(f"cannot open {a.image} for repair: {e.strerror}", "fsck")
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return _fail(f"{a.image} is mounted: unmount it before repairing", "fsck")
            try:
                n = recover(a.image, fd)
            except JournalError as e:
                return _fail(str(e), "fsck")
            if n:
                print(f"finished an interrupted commit: {n} records from {journal_path(a.image)}")
            rc, _, lines, summary = _e2fsck(a.image, "y")
        finally:
            os.close(fd)
        if rc in (0, 1, 2):
            rc2, _, _, summary = _e2fsck(a.image, "n")
            what = ("nothing to repair" if rc == 0 else f"fixed: {len(lines)} lines of e2fsck output"
                    if lines else "marked clean")
            print(f"{'clean' if rc2 == 0 else 'NOT clean'} after e2fsck -fy ({what}): {summary or a.image}")
            _print_lines(lines, a.verbose)
            return rc if rc2 == 0 else 4
        print(f"NOT repaired (e2fsck -fy exit status {rc}): {summary}")
        _print_lines(lines, a.verbose)
        return rc
    if image_locked(a.image):
        print(f"simfs fsck: warning: {a.image} is mounted; results may be inconsistent",
              file=sys.stderr)
    if pending_journal(a.image) == "complete":
        print(f"simfs fsck: warning: a commit was interrupted ({journal_path(a.image)}); e2fsck "
              f"sees the image without it: `simfs fsck --repair` finishes it first", file=sys.stderr)
    rc, output, lines, summary = _e2fsck(a.image, "n")
    if a.verbose:
        print("\n".join(output))
    if rc == 0:
        print(f"clean: {summary or a.image}")
    else:
        print(f"NOT clean (e2fsck -fn exit status {rc}): {summary}")
        if not a.verbose:
            _print_lines(lines, False)
    return rc


# stats ----------------------------------------------------------------------------------------
from simfs.cli.stats import print_stats  # noqa: E402  (the renderer; re-exported for tests)


def cmd_stats(a) -> int:
    path = os.path.join(a.mountpoint, ".simfs", "stats")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return _fail(f"{a.mountpoint} is not a simfs mount (no .simfs/stats)", "stats")
    except OSError as e:
        return _fail(f"cannot read {path}: {e.strerror}", "stats")
    if a.json:
        sys.stdout.write(raw.decode())
        return 0
    print_stats(json.loads(raw))
    return 0


# parser ---------------------------------------------------------------------------------------
def _option_help() -> str:
    from simfs.fuse import mountopts
    try:
        return mountopts.describe()
    except Exception as e:   # the volume may not be importable yet
        return f"(option list unavailable: {e})"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="simfs", formatter_class=_Fmt,
        description="simfs: an ext2 file system in an image file, mounted with FUSE, whose block "
                    "I/O is charged to a modelled disk.",
        epilog="examples:\n"
               "  simfs mkfs disk.img --size 256M\n"
               "  simfs mount disk.img /mnt/sim\n"
               "  tar xf src.tar -C /mnt/sim && simfs stats /mnt/sim\n"
               "  simfs umount /mnt/sim && simfs fsck disk.img\n"
               "\n'simfs COMMAND --help' explains each command.")
    p.add_argument("--version", action="version", version=f"simfs {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("mkfs", help="make an ext2 image file", formatter_class=_Fmt,
                       description="Make an ext2 revision-1 file system (filetype, sparse_super, "
                                   "large_file, ext_attr) in IMAGE.",
                       epilog="examples:\n  simfs mkfs disk.img --size 256M\n"
                              "  simfs mkfs small.img --size 64M --block-size 1024 --bytes-per-inode 4096\n"
                              "  simfs mkfs disk.img --size 1G --force   # overwrite an existing image\n"
                              "  simfs mkfs disk.img --size 1G --disk wd-ears   # how long newfs takes there\n"
                              "  simfs mkfs disk.img --size 1G --uuid 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0 \\\n"
                              "      --hash-seed 00000000-0000-0000-0000-000000000001   # reproducible")
    s.add_argument("image", metavar="IMAGE")
    s.add_argument("--size", type=parse_size, required=True, help="image size, e.g. 64M, 1G")
    s.add_argument("--block-size", "-b", type=parse_size, default=4096, help="1024 or 4096 (default 4096)")
    s.add_argument("--inode-size", "-I", type=int, default=256, help="128 or 256 (default 256)")
    s.add_argument("--bytes-per-inode", "-i", type=parse_size, default=None,
                   help="one inode per this many bytes, 1K to 64M (mke2fs default rules if omitted)")
    s.add_argument("--blocks-per-group", type=int, default=None,
                   help="a multiple of 8 from 256 to 8 x block size (the default)")
    s.add_argument("--inodes-per-group", type=int, default=None,
                   help="16 or more; at most what one bitmap block and the first group hold")
    s.add_argument("--reserved-percent", "-m", dest="reserved_ratio", type=float, default=5.0,
                   help="blocks reserved for root, percent: 0 to 50 (default 5)")
    s.add_argument("--label", "-L", default="", help="volume label, at most 16 bytes")
    s.add_argument("--uuid", default=None, help="file-system UUID (default: random)")
    s.add_argument("--hash-seed", default=None, metavar="UUID",
                   help="seed of the directory-index hash, a UUID (default: random); with --uuid "
                        "it makes images reproducible")
    s.add_argument("--disk", default=None, metavar="NAME[,k=v...]",
                   help="charge mkfs's writes to this disk model and report how long it took in "
                        "simulated time (see `simfs disks`)")
    s.add_argument("--maxio", type=parse_size, default=128 << 10,
                   help="with --disk: largest write request, bytes (default 128K)")
    s.add_argument("--force", "-F", action="store_true", help="overwrite an existing file")
    s.add_argument("--quiet", "-q", action="store_true")
    s.set_defaults(func=cmd_mkfs)

    s = sub.add_parser("mount", help="mount an image (background daemon)", formatter_class=_Fmt,
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
                       formatter_class=_Fmt,
                       description="Unmount MNT and return only after the daemon has written the "
                                   "image back and exited.",
                       epilog="examples:\n  simfs umount /mnt/sim\n  simfs umount --lazy /mnt/sim")
    s.add_argument("mountpoint", metavar="MNT")
    s.add_argument("--lazy", "-z", action="store_true",
                   help="detach now even if busy; the daemon finishes when the last file is closed")
    s.add_argument("--timeout", type=float, default=None,
                   help="give up waiting for the daemon after this many seconds")
    s.set_defaults(func=cmd_umount)

    s = sub.add_parser("fsck", help="check an (unmounted) image with e2fsck -fn, or repair it",
                       formatter_class=_Fmt,
                       description="Run `e2fsck -fn IMAGE` (read-only, forced) and summarise. Exit "
                                   "status is e2fsck's: 0 clean, 4 errors left uncorrected.\n\n"
                                   "--repair first finishes a commit a crash interrupted (the "
                                   "journal IMAGE.journal beside the image), then runs `e2fsck -fy` "
                                   "(fix everything; marks the image clean, so it mounts read-write "
                                   "again) and checks the result with `e2fsck -fn`. Exit status: 0 "
                                   "nothing to fix, 1 problems fixed and now clean, 4 not clean.",
                       epilog="examples:\n  simfs fsck disk.img\n  simfs fsck -v disk.img\n"
                              "  simfs fsck --repair disk.img     # after a crash: mount refuses until then")
    s.add_argument("image", metavar="IMAGE")
    s.add_argument("--repair", "-y", action="store_true",
                   help="finish an interrupted commit, then repair with e2fsck -fy")
    s.add_argument("--verbose", "-v", action="store_true", help="print e2fsck's full output")
    s.set_defaults(func=cmd_fsck)

    s = sub.add_parser("stats", help="print a mount's counters", formatter_class=_Fmt,
                       description="Print MNT/.simfs/stats: FUSE requests by type, errors, and the "
                                   "volume's counters (bytes and blocks read and written, blocks "
                                   "and inodes allocated and freed, cache hits and misses).",
                       epilog="examples:\n  simfs stats /mnt/sim\n  simfs stats --json /mnt/sim | jq .counters")
    s.add_argument("mountpoint", metavar="MNT")
    s.add_argument("--json", action="store_true", help="print the raw JSON")
    s.set_defaults(func=cmd_stats)

    from simfs.cli import disks as cli_disks, policies as cli_policies
    cli_disks.register(sub)
    cli_policies.register(sub)
    try:
        from experiments import cli as cli_experiments
    except ImportError:
        cli_experiments = None
    if cli_experiments is not None:
        cli_experiments.register(sub)
    from simfs.cli import plot as cli_plot
    cli_plot.register(sub)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    a = parser.parse_args(argv)
    if not getattr(a, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return a.func(a) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:       # `simfs ... | head`: the reader left, as with any Unix tool
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
