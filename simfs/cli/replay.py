"""`simfs replay LOG IMAGE [-o OPTIONS] [--stats PATH] [--json]`: ask an image again for the
operations a mount recorded with -o oplog=LOG, in-process, and print the statistics."""

from __future__ import annotations

import dataclasses
import os
import sys

from simfs.cli.common import Fmt, fail
from simfs.cli.verb import nonempty_path

# header options replay never takes over: outputs of the recorded mount, and its -o force
NOT_INHERITED = ("trace", "stats", "force")


def register(sub) -> None:
    s = sub.add_parser(
        "replay", help="replay an op log (-o oplog=) on an image, in-process", formatter_class=Fmt,
        description="Replay the operations a mount recorded with -o oplog=LOG on IMAGE, without "
                    "FUSE, and print the final statistics (those -o stats= writes at unmount). "
                    "The volume options are the recorded mount's unless -o changes them. On an "
                    "identical copy of the recorded image with the same options the statistics "
                    "are the recorded run's, field for field; with another allocator, write-back "
                    "mode or disk they are that configuration's for the same operations. A log "
                    "recorded with -o clocks=process replays each operation on its process's "
                    "clock, as the mount timed it (-o clocks=mount: on one clock). File "
                    "data is not recorded: replay writes zeros of the recorded lengths.",
        epilog="examples:\n"
               "  cp --sparse=always disk.img copy.img; cp --sparse=always disk.img copy2.img\n"
               "  simfs mount disk.img /mnt/sim -o oplog=run.log.gz,stats=run.json\n"
               "  tar xf src.tar -C /mnt/sim; simfs umount /mnt/sim\n"
               "  simfs replay run.log.gz copy.img --stats again.json    # = run.json\n"
               "  simfs replay run.log.gz copy2.img -o alloc=cg,writeback=async\n\n"
               "Bad input (a missing, foreign or cut-short log, a log of another image, an "
               "unknown option) and a replay that stops (out of space, or a run that diverges "
               "from the recording) are one line on stderr and exit status 2.")
    s.add_argument("log", metavar="LOG", help="the op log a mount wrote with -o oplog=LOG (.gz or plain)")
    s.add_argument("image", metavar="IMAGE",
                   help="an image to replay it on: a copy of the recorded one as it was before that mount")
    s.add_argument("-o", dest="options", action="append", default=[], metavar="KEY=VAL,...",
                   help="volume options (as for `simfs mount`), over the recorded ones")
    s.add_argument("--stats", metavar="PATH", type=nonempty_path,
                   help="also write the statistics (JSON) here")
    s.add_argument("--json", action="store_true", help="print the statistics as JSON")
    from simfs.cli.tables import add_markdown_option
    add_markdown_option(s)
    s.add_argument("--force", action="store_true",
                   help="replay on an image other than the recorded one (another UUID or size)")
    s.add_argument("--partial", action="store_true",
                   help="replay a log cut short (a crash while recording) up to its last whole line")
    s.set_defaults(func=cmd_replay)


def inherited_spec(options: dict, volume_cls) -> str:
    """The recorded VolumeOptions as an -o string (parsed first, so the user's -o wins)."""
    fields = {f.name for f in dataclasses.fields(volume_cls)}
    items = []
    for key, val in options.items():
        if key not in fields or key in NOT_INHERITED or val is None or val == "":
            continue
        items.append(f"{key}={'yes' if val is True else 'no' if val is False else val}")
    return ",".join(items)


def parse_options(header: dict, user: list[str]):
    """VolumeOptions: the header's, then the user's -o; OptionError for a bad one."""
    from simfs.fuse import mountopts
    from simfs.fs.volume import VolumeOptions
    mine = mountopts.parse(user)                # the user's alone: refuse front-end keys
    front = [k for k in mine.given if k in mountopts.FRONTEND]
    if front:
        raise mountopts.OptionError(f"option {front[0]!r} is a mount front-end option; replay "
                                    f"takes volume options only")
    return mountopts.parse([inherited_spec(header.get("options", {}), VolumeOptions)] + user).volume


def cmd_replay(a) -> int:
    from simfs import __version__
    from simfs.cli.stats import show_stats
    from simfs.inprocess import replay as rp
    from simfs.fuse import mountopts
    from simfs.fs.operation import Interrupted, deferred_signals
    from simfs.fuse.checks import UsageError, check_distinct, check_image, check_output
    bar = _Bar()
    try:
        check_image(a.image)
        checked = rp.check(a.log, a.image, force=a.force, partial=a.partial)
        header = checked[0]
        vopts = parse_options(header, a.options)
        recorded = header["options"].get("dirorder")
        if recorded is not None and vopts.dirorder != recorded:
            raise UsageError(f"the log was recorded with dirorder={recorded}: readdir order "
                             "changes what tools do next, so a replay cannot change it")
        if a.stats:
            vopts.stats = os.path.abspath(a.stats)
        outputs = {what: getattr(vopts, what) for what in ("stats", "trace") if getattr(vopts, what)}
        check_distinct(a.image, log=a.log, **outputs)
        for what, path in outputs.items():
            check_output(path, what)
        with deferred_signals():
            result = rp.replay(a.log, a.image, vopts, checked=checked, progress=bar())
    except (UsageError, rp.ReplayError, mountopts.OptionError) as e:
        bar.done()
        return fail(str(e), "replay")
    except Interrupted as e:
        bar.done()
        print(f"simfs replay: {e}: stopped between two operations; {a.image} closed clean",
              file=sys.stderr)
        return 128 + e.signum
    bar.done()
    show_stats({"simfs": __version__, "image": os.path.abspath(a.image), "log": os.path.abspath(a.log),
                "operations_replayed": result["operations"], "counters": result["counters"],
                "time": result["time"]}, a.json, a.markdown)
    return 0


class _Bar:
    """A rich progress bar on stderr for long logs (only on a terminal)."""

    def __init__(self):
        self.progress = None
        self.task = None

    def __call__(self):
        return self.update if sys.stderr.isatty() else None

    def update(self, done: int, total: int) -> None:
        if self.progress is None:
            if total < 50_000:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
            self.progress = Progress("replaying", BarColumn(), MofNCompleteColumn(),
                                     TimeRemainingColumn(), console=Console(stderr=True),
                                     transient=True)
            self.progress.start()
            self.task = self.progress.add_task("replay", total=total)
        self.progress.update(self.task, completed=done)

    def done(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

