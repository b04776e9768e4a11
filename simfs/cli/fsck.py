"""`simfs fsck [--repair] IMAGE`: e2fsck -fn summarised, or finish an interrupted commit and
repair with e2fsck -fy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from simfs.cli.common import Fmt, fail


EXIT_STATUS = """exit status:
  0    clean (--repair: there was nothing to fix)
  1    --repair fixed problems or marked the image clean, and it is clean now
  2    bad input: no such image, a directory, not an ext2 file system, an image shorter
       than its file system, e2fsck not installed, --repair on a mounted image
  4    problems left uncorrected, or the image was not cleanly unmounted or has errors
       recorded (--repair: still not clean)
  8    e2fsck could not check (or repair) the image, or the image is mounted (e2fsck reads it
       while simfs writes it: the verdict is not reliable; e2fsck itself refuses a mounted
       file system with 8, "operational error"; 8 is added to what e2fsck found); e2fsck's 16 (usage error), 32
       (cancelled) and 128 (shared-library error), or sums of these, are passed on too
  130  interrupted"""


def register(sub) -> None:
    s = sub.add_parser("fsck", help="check an (unmounted) image with e2fsck -fn, or repair it",
                       formatter_class=Fmt,
                       description="Run `e2fsck -fn IMAGE` (read-only, forced) and summarise. An "
                                   "image that e2fsck finds consistent but that was not cleanly "
                                   "unmounted (a crash) or has errors recorded is not clean: simfs "
                                   "mount and verb refuse it until `simfs fsck --repair`.\n\n"
                                   "--repair first finishes a commit a crash interrupted (the "
                                   "journal IMAGE.journal beside the image), then runs `e2fsck -fy` "
                                   "(fix everything; marks the image clean, so it mounts read-write "
                                   "again) and checks the result with `e2fsck -fn`.",
                       epilog="examples:\n  simfs fsck disk.img\n  simfs fsck -v disk.img\n"
                              "  simfs fsck --repair disk.img     # after a crash: mount refuses until then\n\n"
                              + EXIT_STATUS)
    s.add_argument("image", metavar="IMAGE")
    s.add_argument("--repair", "-y", action="store_true",
                   help="finish an interrupted commit, then repair with e2fsck -fy")
    s.add_argument("--verbose", "-v", action="store_true", help="print e2fsck's full output")
    s.add_argument("--json", action="store_true",
                   help="print the verdict as JSON: clean, status, e2fsck_status, mounted, state, summary, "
                        "problems (the check only; not with --repair)")
    s.set_defaults(func=cmd_fsck)


def _e2fsck(image: str, mode: str) -> tuple[int, list[str], list[str], str]:
    """Run `e2fsck -f{mode} IMAGE`: (exit status, its output lines, the lines other than pass
    headers and the summary, the summary line)."""
    r = subprocess.run(["e2fsck", "-f" + mode, image], capture_output=True, text=True)
    out = (r.stdout + r.stderr).strip()
    summary = next((ln for ln in reversed(out.splitlines()) if " files (" in ln and "blocks" in ln), "")
    problems = [ln for ln in out.splitlines()
                if ln.strip() and not ln.startswith(("Pass ", "e2fsck ")) and ln != summary]
    return r.returncode, out.splitlines(), problems, summary


def not_ext2(image: str) -> str | None:
    """Why IMAGE is no ext2 file system e2fsck could check (too short for a superblock, no
    ext2 magic, shorter than the file system its superblock describes), as Volume.open says
    it; None if it is one."""
    from simfs.ondisk.constants import EXT2_MAGIC, SUPERBLOCK_OFFSET
    from simfs.ondisk.superblock import Superblock
    try:
        with open(image, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            raw = os.pread(f.fileno(), 1024, SUPERBLOCK_OFFSET)
    except OSError as e:
        return f"cannot read {image}: {e.strerror}"
    if len(raw) < 1024:
        return f"{image}: not an ext2 file system (file is only {size} bytes)"
    sb = Superblock(raw)
    if sb.magic != EXT2_MAGIC:
        return f"{image}: not an ext2 file system (bad magic 0x{sb.magic:04x})"
    if sb.log_block_size <= 6 and sb.blocks_count * sb.block_size > size:
        return (f"{image}: image is shorter ({size} bytes) than its file system ({sb.blocks_count} "
                f"blocks of {sb.block_size}): a truncated copy?")
    return None


def unclean(image: str) -> str | None:
    """Why the superblock's state says IMAGE is not clean (a crash, errors recorded), in the
    words simfs mount refuses it with; None if it is clean."""
    from simfs.fs.volume import _is_clean, _unclean_reason
    from simfs.ondisk.constants import SUPERBLOCK_OFFSET
    from simfs.ondisk.superblock import Superblock
    with open(image, "rb") as f:
        sb = Superblock(os.pread(f.fileno(), 1024, SUPERBLOCK_OFFSET))
    return None if _is_clean(sb) else _unclean_reason(sb)


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
    from simfs.fuse.checks import UsageError, check_image
    try:
        check_image(a.image)          # missing, a symlink loop, a directory, unreadable
    except UsageError as e:
        return fail(str(e), "fsck")
    why = not_ext2(a.image)
    if why:
        return fail(why, "fsck")
    if shutil.which("e2fsck") is None:
        return fail("e2fsck not found (apt-get install e2fsprogs)", "fsck")
    if a.repair and a.json:
        return fail("--json is for the check; --repair prints what it did", "fsck")
    if a.repair:
        try:
            fd = os.open(a.image, os.O_RDWR)
        except OSError as e:
            return fail(f"cannot open {a.image} for repair: {e.strerror}", "fsck")
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return fail(f"{a.image} is mounted: unmount it before repairing", "fsck")
            try:
                n = recover(a.image, fd)
            except JournalError as e:
                return fail(str(e), "fsck")
            if n:
                print(f"finished an interrupted commit: {n} records from {journal_path(a.image)}")
            was = unclean(a.image)
            rc, _, lines, summary = _e2fsck(a.image, "y")
        finally:
            os.close(fd)
        if rc == 0 and was:             # e2fsck clears recorded errors and still says 0
            rc = 1
        if rc in (0, 1, 2):
            rc2, _, _, summary = _e2fsck(a.image, "n")
            what = ("nothing to repair" if rc == 0 else f"fixed: {len(lines)} lines of e2fsck output"
                    if lines else "marked clean")
            print(f"{'clean' if rc2 == 0 else 'NOT clean'} after e2fsck -fy ({what}): {summary or a.image}")
            _print_lines(lines, a.verbose)
            return min(rc, 1) if rc2 == 0 else 4        # (e2fsck's 2, "reboot", is 1 here: 2 is bad input)
        print(f"NOT repaired (e2fsck -fy exit status {rc}): {summary}")
        _print_lines(lines, a.verbose)
        return rc
    mounted = image_locked(a.image)
    if mounted:
        print(f"simfs fsck: {a.image} is mounted: checked anyway, but the result is not reliable "
              "(exit status 8 added); unmount it first", file=sys.stderr)
    try:
        pending = pending_journal(a.image)
    except JournalError as e:                 # (a link or a FIFO planted as the journal)
        return fail(str(e), "fsck")
    if pending == "complete":
        print(f"simfs fsck: warning: a commit was interrupted ({journal_path(a.image)}); e2fsck "
              f"sees the image without it: `simfs fsck --repair` finishes it first", file=sys.stderr)
    rc, output, lines, summary = _e2fsck(a.image, "n")
    rc = _report(a, rc, output, lines, summary, mounted)
    return rc | 8 if mounted else rc


def _report(a, rc: int, output: list[str], lines: list[str], summary: str, mounted: bool) -> int:
    """Print e2fsck -fn's verdict (or, with --json, one JSON object); the exit status."""
    if a.json:
        state = None if mounted else unclean(a.image)
        status = 4 if rc == 0 and state else rc
        doc = {"image": a.image, "clean": status == 0 and not mounted, "status": status | (8 if mounted else 0),
               "e2fsck_status": rc, "mounted": bool(mounted), "state": state, "summary": summary,
               "problems": lines}
        print(json.dumps(doc, indent=1))
        return status
    if a.verbose:
        print("\n".join(output))
    state = None if mounted else unclean(a.image)     # (mounted read-write: not clean meanwhile)
    if rc == 0 and state:
        print(f"NOT clean: {state}; e2fsck -fn finds nothing else ({summary or a.image}): "
              f"`simfs fsck --repair {a.image}` marks it clean")
        return 4
    if rc == 0 and mounted:
        print(f"no verdict ({a.image} is mounted): e2fsck -fn saw nothing wrong: {summary or a.image}")
    elif rc == 0:
        print(f"clean: {summary or a.image}")
    else:
        if state:
            print(f"{a.image}: {state}")
        print(f"NOT clean (e2fsck -fn exit status {rc}): {summary}")
        if not a.verbose:
            _print_lines(lines, False)
    return rc
