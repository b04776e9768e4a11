"""`simfs verb VERB IMAGE PATH [...] [-o OPTIONS]`: run a tool's work in-process, without FUSE.

The verbs (simfs.inprocess.verbs) are the seeds' tools written as the system calls they make, sent
through a model of the kernel's FUSE client: the image sees the operations a mount of the real
tool would send, in a tenth of the time or less. Each run is one cold mount: the volume opens
with empty caches and closes as an unmount does.
"""

from __future__ import annotations

import argparse
import os
import sys
import tarfile

from simfs.cli.common import Fmt, fail

def _size(text: str) -> int:
    from simfs.cli.common import size_type
    return size_type(text)


# argparse types for dd's numbers: GNU dd 9.1 refuses bs=0, count=-1, skip=-5 ("invalid number")
def _block_size(text: str) -> int:
    n = _size(text)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r} (a block size of 1 byte or "
                                         "more, e.g. 4K, 1M)")
    return n


def _blocks(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r} (a count of blocks, 0 or more)")
    return n


def nonempty_path(text: str) -> str:
    """An argparse type for an output file: an empty one would silently write nothing."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path (give a file name, or leave the option out)")
    return text


# per verb: (summary, the real command it stands for, its own arguments)
VERBS = {
    "unpack": ("unpack a tarball or a directory of this machine into PATH, as GNU tar does",
               "mkdir -p MNT/PATH && tar -xpf ARCHIVE -C MNT/PATH",
               [("--from", dict(dest="source", required=True, metavar="ARCHIVE|DIR",
                                help="a tar archive (any compression tarfile reads), or a "
                                     "directory, taken as `tar --sort=name -cf - -C DIR .` "
                                     "would archive it; its data are written (or charged only, "
                                     "with -o dataless)"))]),
    "find": ("walk a tree as GNU find does", "find MNT/PATH -type d (or f)",
             [("--type", dict(choices=("d", "f"), default="d",
                              help="-type d or f: the same system calls (d_type), kept for the record"))]),
    "cp-a": ("copy a tree within the image as GNU cp -a does", "cp -a MNT/PATH MNT/DEST",
             [("--to", dict(dest="dst", required=True, metavar="DEST",
                            help="the copy's path in the image (must not exist)"))]),
    "rm-rf": ("remove a tree as GNU rm -rf does", "rm -rf MNT/PATH", []),
    "tar-read": ("read every file of a tree as GNU tar does (archive to /dev/zero)",
                 "tar -cf /dev/zero -C MNT PATH", []),
    "du": ("stat every entry of a tree as GNU du does", "du -s MNT/PATH", []),
    "grep": ("read every file of a tree as GNU grep -r does", "grep -r PATTERN MNT/PATH",
             [("--pattern", dict(default="zzzqqq", help="kept for the record: grep reads every "
                                 "byte of every file whatever it looks for, as long as nothing matches"))]),
    "dd": ("read one file as dd does", "dd if=MNT/PATH of=/dev/null bs=BS",
           [("--bs", dict(type=_block_size, default=1 << 20, help="block size (default 1M)")),
            ("--count", dict(type=_blocks, default=0, help="blocks to read (0: all)")),
            ("--skip", dict(type=_blocks, default=0, help="blocks to skip first"))]),
    "cat": ("read one file as cat does", "cat MNT/PATH > /dev/null", []),
    "mmap-fill": ("fill a new file page by page in seed 004's alloctest order: 4 KiB pwrites "
                  "(--writes pwrite, as mmap_writer.py --pwrite), or stores through a shared mapping "
                  "written back by the modelled system's page cache (--writes mmap, --pagecache)",
                  "python3 tests/tools/mmap_writer.py MNT/PATH SIZE --pwrite",
                  [("--size", dict(type=_size, default=64 << 20, help="file size (default 64M)")),
                   ("--order", dict(choices=("alloctest", "shuffled", "sequential"), default="alloctest",
                                    help="page order: alloctest's (i + 23) * 1000000007 mod pages, "
                                         "a seeded shuffle, or sequential")),
                   ("--seed", dict(type=int, default=0, help="the shuffle's seed")),
                   ("--writes", dict(choices=("pwrite", "mmap"), default="pwrite",
                                     help="pwrite (default), or mmap: MAP_SHARED stores + msync, the "
                                          "pages written back as the modelled kernel would")),
                   ("--pagecache", dict(default=None, metavar="MODEL[,key=value...]",
                                        help="with --writes mmap: the page-cache model (default "
                                             "linux-2.6.29) and overrides "
                                             "(ram=6G, dirty_ratio=10, dirty_background_ratio=5, ...; "
                                             "docs/replay-and-verbs.md: Page-cache write-back)"))]),
}

# per verb: its --help examples, on an image made by `simfs mkfs disk.img 256M` holding src/ (the
# files of src.tar), tree/ and big.iso (tests/mount/test_help_examples.py runs them in that world)
EXAMPLES = {
    "unpack": ["simfs verb unpack disk.img usr/src --from src.tar -o alloc=cg,disk=sas10k",
               "simfs verb unpack disk.img linux --from ~/src/linux -o dataless   # data charged, not stored"],
    "find": ["simfs verb find disk.img src --type f",
             "simfs verb find disk.img / -o dirorder=hash --json > hash.json"],
    "cp-a": ["simfs verb cp-a disk.img src --to src.copy",
             "simfs verb cp-a disk.img tree --to tree.2 -o alloc=ext2,writeback=softdep --stats cp.json"],
    "rm-rf": ["simfs verb rm-rf disk.img tree",
              "simfs verb rm-rf disk.img src -o writeback=softdep,disk=wd-ears"],
    "tar-read": ["simfs verb tar-read disk.img src",
                 "simfs verb tar-read disk.img / -o read_batch,cache=16M --json > tar.json"],
    "du": ["simfs verb du disk.img /",
           "simfs verb du disk.img src -o dirorder=inode,disk=x25-m"],
    "grep": ["simfs verb grep disk.img src --pattern TODO",
             "simfs verb grep disk.img / -o disk=wd1200jb,cache=32M --stats grep.json"],
    "dd": ["simfs verb dd disk.img big.iso --bs 4K",
           "simfs verb dd disk.img big.iso --bs 1M --skip 1 --count 1 -o disk=wd-ears"],
    "cat": ["simfs verb cat disk.img big.iso",
            "simfs verb cat disk.img src/Makefile -o disk=x25-m --json"],
    "mmap-fill": ["simfs verb mmap-fill disk.img alloctest.dat --size 64M -o alloc=ext2   # seed 004's pwrites",
                  "simfs verb mmap-fill disk.img mapped.dat --size 16M --writes mmap \\\n"
                  "      --pagecache linux-2.6.29,ram=1G"],
}


def register(sub) -> None:
    s = sub.add_parser(
        "verb", help="run a tool's work (tar, find, cp -a, rm -rf, ...) in-process, without FUSE",
        formatter_class=Fmt,
        description="Run one of the seeds' tools on IMAGE in-process: the tool's system calls go "
                    "through a model of the kernel's FUSE client, so the volume receives what a "
                    "mount of the real tool receives (the figures agree within 3%: docs/replay-and-verbs.md, "
                    "In-process verbs), seven to ten times faster on /usr/include. Each run is a cold mount: empty "
                    "caches at the start, the unmount's write-back at the end. Prints the "
                    "statistics (those -o stats= writes at unmount).",
        epilog="examples:\n"
               "  simfs verb unpack disk.img usr/src --from src.tar -o disk=sas10k\n"
               "  simfs verb find disk.img tree -o dirorder=hash,disk=sas10k\n"
               "  simfs verb find disk.img tree -o dirorder=inode --json > inode.json\n"
               "  simfs verb rm-rf disk.img usr/src --stats rm.json\n"
               "  simfs verb mmap-fill disk.img data.bin --size 64M --writes mmap\n\n"
               "'simfs verb VERB --help' shows a verb's own options and examples. "
               "Bad input (a missing image, an unknown option or value, a path that does not "
               "exist in the image) is one line on stderr and exit status 2; the image is "
               "closed cleanly.")
    verbs = s.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name, (summary, real, own) in VERBS.items():
        v = verbs.add_parser(name, help=summary, formatter_class=Fmt,
                             description=f"{summary}; stands for `{real}` on a mount.",
                             epilog="examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[name]))
        v.add_argument("image", metavar="IMAGE", help="an ext2 image made by simfs mkfs")
        v.add_argument("path", metavar="PATH", help="where in the image (from its root) the tool works")
        for flag, kw in own:
            v.add_argument(flag, **kw)
        v.add_argument("-o", dest="options", action="append", default=[], metavar="KEY=VAL,...",
                       help="volume options, as for `simfs mount` (alloc, dirorder, disk, writeback, ...)")
        v.add_argument("--stats", metavar="PATH", type=nonempty_path,
                       help="also write the statistics (JSON) here")
        v.add_argument("--json", action="store_true", help="print the statistics as JSON")
        v.set_defaults(func=cmd_verb, own=[kw.get("dest") or flag.lstrip("-").replace("-", "_") for flag, kw in own])


def cmd_verb(a) -> int:
    from simfs import __version__
    from simfs.cli.stats import show_stats
    from simfs.inprocess import verbs
    from simfs.errors import FSError, ImageError, ImageWriteError, OutputError, VerbRefused
    from simfs.fs.operation import Interrupted, deferred_signals, recorded_error
    from simfs.fuse import mountopts
    from simfs.fuse.checks import UsageError, check_distinct, check_image, check_output
    try:
        if getattr(a, "pagecache", None) is not None and a.writes != "mmap":
            raise UsageError("--pagecache is the page-cache model that writes back --writes mmap's "
                             "stores: it needs --writes mmap (pwrites go to the volume directly)")
        check_image(a.image)
        parsed = mountopts.parse(a.options)
        front = [k for k in parsed.given if k in mountopts.FRONTEND]
        if front:
            raise UsageError(f"option {front[0]!r} is a mount front-end option; verbs take "
                             "volume options only")
        vopts = parsed.volume
        if a.stats:
            vopts.stats = os.path.abspath(a.stats)
        outputs = {what: getattr(vopts, what) for what in ("stats", "trace") if getattr(vopts, what)}
        sources = {"source": a.source} if a.verb == "unpack" else {}   # read while they are written
        check_distinct(a.image, **sources, **outputs)
        for what, path in outputs.items():
            check_output(path, what)
        params = {k: getattr(a, k) for k in a.own}
        if a.verb == "mmap-fill" and params.get("pagecache") is None:
            del params["pagecache"]             # the verb's default model
        watch = _Watch()
        if a.verb == "unpack":
            params.update(source=watch.counted(_source(a.source)), mkdir=True)
        from simfs.cli.progress import Bar
        # a signal stops between two operations; the bar is on stderr, on a terminal only
        with deferred_signals(), Bar(f"{a.verb} {a.path}", live=watch.status):
            out = verbs.run(a.image, vopts, a.verb, a.path, watch=watch, **params)
    except (UsageError, mountopts.OptionError, ImageError, VerbRefused) as e:
        return fail(str(e), "verb")
    except Interrupted as e:
        print(f"simfs verb: {e}: stopped between two operations; {a.image} closed clean",
              file=sys.stderr)
        return 128 + e.signum
    except (ValueError, KeyError) as e:
        if not recorded_error(e):               # not inside an operation: a policy or disk refused
            return fail(f"bad option value: {e}", "verb")
        return _stopped(a, e)
    except FSError as e:
        return fail(f"{a.verb} {a.path}: {e.strerror}", "verb")
    except tarfile.TarError as e:
        return fail(f"cannot read {a.source}: {e}", "verb")
    except EOFError:                    # a compressed archive cut short
        return fail(f"cannot read {a.source}: the archive ends early (cut short?)", "verb")
    except ImageWriteError as e:     # at close: the host of the image is full or failing
        return fail(e.at_close, "verb")
    except OutputError as e:         # the statistics or the trace, at close
        return fail(e.strerror, "verb")
    except OSError as e:
        return fail(f"{e.filename or a.image}: {e.strerror or e}", "verb")
    except Exception as e:
        return _stopped(a, e)
    for w in out["warnings"]:
        print(f"simfs verb: warning: {w}", file=sys.stderr)
    show_stats({"simfs": __version__, "image": os.path.abspath(a.image), "verb": a.verb,
                "path": a.path, "result": out["result"], "counters": out["counters"],
                "time": out["time"]}, a.json)
    return 0


class _Watch:
    """What the progress bar says of a running verb: its simulated clock (read from the bar's
    thread: a float, changed by nothing here) and, for unpack, the entries taken so far."""

    def __init__(self):
        self.vol = None
        self.entries = None

    def __call__(self, vol) -> None:
        self.vol = vol

    def counted(self, source):
        self.entries = 0
        for e in source:
            self.entries += 1
            yield e

    def status(self) -> str:
        if self.vol is None:
            return "opening the image"
        done = f"{self.entries:,} entries, " if self.entries is not None else ""
        return f"{done}simulated {self.vol.clock.now:.2f} s"


def _stopped(a, e: Exception) -> int:
    """An operation stopped half-way (a policy's bug, say): one line, with what the image
    recorded (the operation wrapper notes it on the exception)."""
    from simfs.fs.operation import recorded_error
    note = recorded_error(e)
    return fail(f"{a.verb} {a.path} stopped: {type(e).__name__}: {e}" + (f"; {note}" if note else ""), "verb")


def _source(path: str):
    """The tree description of ARCHIVE|DIR (checked now: a bad one is an error before the run)."""
    from simfs.inprocess.treedesc import from_directory, from_tarball
    from simfs.fuse.checks import UsageError
    if os.path.isdir(path):
        return from_directory(path, with_data=True)
    if not os.path.exists(path):
        raise UsageError(f"{path} does not exist")
    try:
        with tarfile.open(path, "r|*") as tf:
            first = tf.next()
    except (tarfile.TarError, EOFError):
        first = None
    if first is None:                   # (zeros read as an empty archive: an image, say)
        raise UsageError(f"{path} is neither a directory nor a tar archive with members")
    return from_tarball(path, with_data=True)
