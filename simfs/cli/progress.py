"""Progress bars for long commands: rich's, on stderr, drawn as `simfs run` draws its own (what
runs, the bar, steps done of all, elapsed time, what it is doing now).

A bar is shown only when stderr is a terminal, so piped or redirected output gets nothing more,
and never on stdout, where --json goes; it appears only once the work has taken DELAY seconds,
so a quick command prints nothing extra, and it is erased when the work ends (the command's own
result follows). rich is imported only when a bar is drawn: the commands start fast.
"""

from __future__ import annotations

import sys
import threading

#: seconds of work before a bar appears
DELAY = 1.0


def stderr_console():
    """rich's console on stderr when stderr is a terminal (rich decides, as for `simfs run`);
    None otherwise, without importing rich."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console
    console = Console(stderr=True)
    return console if console.is_terminal else None


class Bar:
    """`with Bar("seven-free", total=7) as bar:` then `bar("unpacking")` says what runs now and
    `bar(None)` counts one step done: the progress callback experiments.runner's run_config
    calls. `total=None`: no known end (the bar pulses and no count is shown); `live`, a function
    of no argument, gives a status read at every refresh (a verb's simulated clock). `console`:
    where to draw (default: stderr_console(); a console that is no terminal draws nothing)."""

    def __init__(self, description: str, total: int | None = None, *, live=None, console=None,
                 delay: float | None = None):
        self.description, self.total, self.live = description, total, live
        self.console = console if console is not None else stderr_console()
        self.delay = DELAY if delay is None else delay
        self.progress = self.task = self.timer = None
        self.lock = threading.Lock()
        self.started = self.closed = False

    def __enter__(self) -> "Bar":
        if self.console is None or not self.console.is_terminal:
            return self
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        # no known end: a shorter, pulsing bar leaves the status room on one line
        columns = [TextColumn("{task.description}"), BarColumn(bar_width=40 if self.total else 20)]
        if self.total is not None:
            columns.append(MofNCompleteColumn())
        columns += [TimeElapsedColumn(), _status_column(self.live)]
        # four refreshes a second: the bar's thread takes little from an in-process run
        self.progress = Progress(*columns, console=self.console, transient=True, refresh_per_second=4)
        self.task = self.progress.add_task(self.description, total=self.total, status="")
        if self.delay <= 0:
            self._start()
        else:
            self.timer = threading.Timer(self.delay, self._start)
            self.timer.daemon = True
            self.timer.start()
        return self

    def _start(self) -> None:
        with self.lock:
            if not self.closed:
                self.progress.start()
                self.started = True

    def __call__(self, label: str | None = None) -> None:
        if self.progress is None:
            return
        if label is None:
            self.progress.advance(self.task)
        else:
            self.progress.update(self.task, status=label)

    def __exit__(self, *exc) -> None:
        with self.lock:
            self.closed = True
            if self.timer is not None:
                self.timer.cancel()
            if self.started:
                self.progress.stop()


def _status_column(live):
    """The last column: the task's status, then what `live()` says now."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class Status(ProgressColumn):
        def render(self, task):
            now = live() if live is not None else ""
            return Text(" ".join(s for s in (task.fields.get("status", ""), now) if s), no_wrap=True,
                        overflow="ellipsis")

    return Status()
