"""`simfs fsck [--repair] IMAGE`: e2fsck -fn summarised, or finish an interrupted commit and
repair with e2fsck -fy."""

from __future__ import annotations

import os
import subprocess
import sys

from simfs.cli.common import Fmt, fail


def register(sub) -> None:
    s = sub.add_parser("fsck", help="check an (unmounted) image with e2fsck -fn, or repair it",
                       formatter_class=Fmt,
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
    from simfs.fuse.checks import UsageError, check_image
    try:
        check_image(a.image)          # missing, a symlink loop, a directory, unreadable
    except UsageError as e:
        return fail(str(e), "fsck")
    if shutil.which("e2fsck") is None:
        return fail("e2fsck not found (apt-get install e2fsprogs)", "fsck")
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
