"""`mount -t fuse.simfs IMAGE MNT -o ...` and fstab lines: the mount helper and its installer.

mount(8) runs `/sbin/mount.fuse.simfs IMAGE MNT [-sfnv] [-o OPTIONS] [-t fuse.simfs]` for a
file system of type `fuse.simfs` (util-linux looks in /sbin, /sbin/fs.d and /sbin/fs only,
with an empty environment). `main` is that helper: it drops what is mount(8)'s business
(`defaults`, `noauto`, `user`, `_netdev`, `nofail`, `x-*`, `comment=`...), passes the kernel
flags on (`nosuid`, `nodev`, `noexec`, ...), and mounts as `simfs mount` does. mount(8) passes
`nosuid` and `nodev` when asked for (and for `user` mounts) but never their defaults, so a
mount by root without them gets `suid` and `dev`, as `mount -t ext2` would (`simfs mount`
itself keeps FUSE's safer `nosuid,nodev` default). The console
script `mount.fuse.simfs` (setup.cfg) is the same function; `simfs install-helper` writes a
small launcher into /sbin that runs it with this checkout and this Python. The helper is one
for the whole machine, so only an explicit `simfs install-helper` (`make install-helper`)
points it at another checkout; `make venv` as root runs `--if-missing`, which installs one
only where none works (none, or one whose checkout or Python is gone), and `--status` says
which checkout the installed one runs.
"""

from __future__ import annotations

import os
import re
import sys

from simfs.cli.common import Fmt, fail
from simfs.cli.remount import remount

NAME = "mount.fuse.simfs"
DEFAULT_DIR = "/sbin"
MARK = "# written by `simfs install-helper`"

# mount(8)'s own options (fstab, utab): nothing for the file system to do
USERSPACE = {"defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group", "_netdev",
             "nofail", "loop"}
USERSPACE_PREFIXES = ("x-", "X-", "comment=", "helper=", "uhelper=")


def mount_options(optstr: str) -> str:
    """mount(8)'s option string without mount(8)'s own options (kept order, commas kept in
    values such as disk=sata7200,rpm=5400)."""
    keep = [o for o in optstr.split(",")
            if o and o not in USERSPACE and not o.startswith(USERSPACE_PREFIXES)]
    return ",".join(keep)


def kernel_defaults(optstr: str) -> str:
    """mount(8)'s defaults made explicit for a mount by root: `suid` unless `nosuid` was given,
    `dev` unless `nodev` was (mount(8) drops `suid`/`dev` themselves as its defaults)."""
    if os.geteuid() != 0:
        return optstr
    opts = optstr.split(",") if optstr else []
    extra = [flag for flag, off in (("suid", "nosuid"), ("dev", "nodev")) if off not in opts]
    return ",".join(extra + opts)


def parse_helper_args(argv: list[str]):
    """IMAGE MNT [-sfnv] [-o OPTS] [-t TYPE] [-N NS] -> (image, mnt, options, fake); the
    flags may come before or after the two paths, as mount(8) and users write them."""
    pos, opts, fake = [], [], False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-o", "-t", "-N"):
            if i + 1 >= len(argv):
                raise ValueError(f"{arg} needs a value")
            if arg == "-o":
                opts.append(argv[i + 1])
            i += 2
            continue
        if arg.startswith("-o") and len(arg) > 2:
            opts.append(arg[2:])
        elif arg.startswith("-") and len(arg) > 1 and set(arg[1:]) <= set("sfnvi"):
            fake = fake or "f" in arg
        elif arg.startswith("-") and len(arg) > 1:
            raise ValueError(f"unknown flag {arg} (a mount helper takes -s -f -n -v -o -t -N)")
        else:
            pos.append(arg)
        i += 1
    if len(pos) != 2:
        raise ValueError(f"usage: {NAME} IMAGE MNT [-o OPTIONS]")
    return pos[0], pos[1], mount_options(",".join(opts)), fake


def main(argv=None) -> int:
    """The mount helper (`mount.fuse.simfs`, run by mount(8))."""
    argv = sys.argv[1:] if argv is None else argv
    os.environ.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    try:
        image, mnt, optstr, fake = parse_helper_args(argv)
    except ValueError as e:
        print(f"{NAME}: {e}", file=sys.stderr)
        return 2
    if fake:                                 # mount -f: everything but the mount itself
        return 0
    if "remount" in optstr.split(","):
        return remount(mnt, optstr)
    optstr = kernel_defaults(optstr)
    from simfs.cli.mount import cmd_mount
    from types import SimpleNamespace
    # quiet, as mount(8)'s helpers are on success (xfstests compares their output)
    return cmd_mount(SimpleNamespace(image=image, mountpoint=mnt, options=[optstr] if optstr else [],
                                     foreground=False, quiet=True)) or 0


# the installer -------------------------------------------------------------------------------
def this_checkout() -> str:
    import simfs
    return os.path.dirname(os.path.dirname(os.path.abspath(simfs.__file__)))


def launcher() -> str:
    """The helper script: this Python, with this simfs on its path."""
    root = this_checkout()
    return ("#!/bin/sh\n"
            f"{MARK} for the simfs in {root}:\n"
            "# mount(8) runs it for `mount -t fuse.simfs IMAGE MNT -o ...` and fstab lines.\n"
            f"PYTHONPATH='{root}'${{PYTHONPATH:+:$PYTHONPATH}} exec '{sys.executable}' "
            f"-m simfs.cli.helper \"$@\"\n")


_RUNS = re.compile(r"^PYTHONPATH='(?P<root>[^']*)'.* exec '(?P<python>[^']*)' -m simfs\.cli\.helper", re.M)


def pointed_at(text: str) -> tuple[str, str] | None:
    """(checkout, Python) a helper written by this command runs, None if it says neither."""
    m = _RUNS.search(text)
    return (m["root"], m["python"]) if m else None


def broken(text: str) -> str | None:
    """Why a helper written by this command cannot work any more, or None if it can: the
    checkout it runs (deleted with its clone) or the Python (a removed venv) is gone."""
    runs = pointed_at(text)
    if runs is None:
        return "it names no checkout and Python (an older format)"
    root, python = runs
    if not os.path.isfile(os.path.join(root, "simfs", "cli", "helper.py")):
        return f"its checkout {root} is gone"
    if not os.access(python, os.X_OK):
        return f"its Python {python} is gone"
    return None


def register(sub) -> None:
    s = sub.add_parser("install-helper", help=f"install /sbin/{NAME} (mount -t fuse.simfs, fstab)",
                       formatter_class=Fmt,
                       description=f"Write {DEFAULT_DIR}/{NAME}, the helper mount(8) runs for file "
                                   "systems of type fuse.simfs, so that `mount -t fuse.simfs IMAGE "
                                   "MNT -o alloc=cg,disk=wd1200jb` and fstab lines work. It runs "
                                   "this simfs (this checkout) with this Python, for every user of "
                                   "the machine: it replaces one that runs another checkout, and says "
                                   "so. mount(8) looks for helpers only in /sbin, /sbin/fs.d and "
                                   "/sbin/fs; writing there needs root.",
                       epilog="examples:\n  simfs install-helper\n  simfs install-helper --status\n"
                              "  simfs install-helper --if-missing   # what make venv does as root\n"
                              "  simfs install-helper --print\n"
                              "  mount -t fuse.simfs disk.img /mnt/sim -o alloc=cg,disk=wd1200jb\n"
                              "  # fstab:  /var/tmp/disk.img  /mnt/sim  fuse.simfs  noauto,alloc=cg  0 0\n"
                              "  simfs install-helper --remove")
    s.add_argument("--dir", default=DEFAULT_DIR, help=f"where to write {NAME} (default {DEFAULT_DIR})")
    s.add_argument("--print", action="store_true", help="print the helper instead of writing it")
    s.add_argument("--remove", action="store_true", help="remove a helper this command wrote")
    s.add_argument("--status", action="store_true",
                   help="say which checkout and Python the installed helper runs, and whether it "
                        "works (exit status 0 if it does, 1 if not, or none is installed)")
    s.add_argument("--if-missing", action="store_true",
                   help="install only where no helper works (none, or its checkout or Python is "
                        "gone); leave a working one, whichever checkout it runs")
    s.set_defaults(func=cmd_install)


def _runs(text: str) -> str:
    runs = pointed_at(text)
    return f"the simfs in {runs[0]} with {runs[1]}" if runs else "an unknown simfs"


def cmd_install(a) -> int:
    text = launcher()
    if a.print:
        sys.stdout.write(text)
        return 0
    if sum(map(bool, (a.status, a.if_missing, a.remove))) > 1:
        return fail("give one of --status, --if-missing, --remove", "install-helper")
    path = os.path.join(a.dir, NAME)
    if not os.path.isdir(a.dir):
        return fail(f"{a.dir} is not a directory", "install-helper")
    try:
        with open(path) as f:
            old = f.read()
    except FileNotFoundError:
        old = None
    except OSError as e:
        return fail(f"cannot read {path}: {e.strerror}", "install-helper")
    if a.status:
        if old is None:
            print(f"{path}: not installed (`simfs install-helper` installs it)")
            return 1
        if MARK not in old:
            print(f"{path}: not written by simfs")
            return 1
        why = broken(old)
        here = " (this checkout)" if old == text else ""
        print(f"{path}: runs {_runs(old)}{here}" + (f": broken, {why}" if why else ""))
        return 1 if why else 0
    if old is not None and MARK not in old:
        return fail(f"{path} exists and was not written by simfs; remove it first", "install-helper")
    was = None if old is None else _runs(old) + (f": broken, {broken(old)}" if broken(old) else "")
    try:
        if a.remove:
            if old is not None:
                os.unlink(path)
                print(f"removed {path} (it ran {was})")
            return 0
        if old == text:
            print(f"{path} is up to date: it runs {_runs(old)}")
            return 0
        if a.if_missing and old is not None and broken(old) is None:
            print(f"{path} runs {_runs(old)}: left as it is (`simfs install-helper` points it here)")
            return 0
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)
    except OSError as e:
        return fail(f"cannot write {path}: {e.strerror} (as root: sudo simfs install-helper)",
                    "install-helper")
    print(f"wrote {path}: mount -t fuse.simfs IMAGE MNT -o ... now runs {_runs(text)}"
          + (f"; before, it ran {was}" if was else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
