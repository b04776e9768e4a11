"""How every simfs command prints a table: one renderer, two looks, chosen in one place.

    on a terminal             rich's table (the boxes `simfs run` draws), fitted to the window
    anywhere else             a Markdown pipe table as GitHub and pandoc write one: plain ASCII,
    (pipe, file, --markdown)  no box characters, one row per line, `| ` between cells

The second is what `simfs stats > x.txt`, `| grep` and a test see: it does not depend on the
window's width or colours, `grep '| find | sim |'` finds one row, `awk -F'|'` splits it even
where a cell holds blanks ("alloc=ext2 block=1K"), which blank-separated columns (df's) cannot
promise, and pasted into an issue or a README it renders as a table (as the table.md files the
runs write do). `--markdown` asks for it on a terminal too. `--json` is each command's own
document and does not come here. Where the text mimics another tool's, it stays that tool's (simfs frag is
filefrag's, simfs mkfs mke2fs's): those are compared line by line with the originals.

rich is imported only when a table is drawn for a terminal (the CLI starts without it).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

MARKDOWN = "markdown"
RICH = "rich"


@dataclass
class Table:
    """A titled table of cells (strings). `right[i]`: column i right-aligned; by default the
    first column is left-aligned and every other right-aligned (figures)."""
    title: str
    columns: list
    rows: list
    right: list | None = field(default=None)

    def alignment(self) -> list[bool]:
        return list(self.right) if self.right is not None else [i > 0 for i in range(len(self.columns))]


def style(markdown: bool = False, file=None) -> str:
    """RICH when `file` (default stdout) is a terminal and Markdown was not asked for, else MARKDOWN."""
    if markdown:
        return MARKDOWN
    f = file if file is not None else sys.stdout
    try:
        return RICH if f.isatty() else MARKDOWN
    except (AttributeError, ValueError):        # no isatty, or closed
        return MARKDOWN


def add_markdown_option(parser) -> None:
    """The `--markdown` option every table-printing command has."""
    parser.add_argument("--markdown", action="store_true",
                        help="print the tables as Markdown even on a terminal (they are Markdown "
                             "whenever stdout is not a terminal)")


def _cells(t: Table) -> list[list[str]]:
    rows = [[str(x) for x in r] for r in t.rows]
    return rows or [["(none)"] + [""] * (len(t.columns) - 1)]


def to_markdown(t: Table) -> str:
    """The title, a blank line and a Markdown pipe table as GitHub and pandoc write one: a space
    each side of a cell, no padding (so `grep '| find | sim |'` finds a row), ':--' / '--:' for
    the alignment; a '|' inside a cell is escaped."""
    def line(cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"
    rule = "|" + "|".join("--:" if right else ":--" for right in t.alignment()) + "|"
    body = [line(t.columns), rule, *(line(r) for r in _cells(t))]
    return "\n".join(([t.title, ""] if t.title else []) + body)


def rich_text(t: Table, file=None) -> str:
    """The table as rich draws it for the terminal `file` (default stdout), escape codes and all."""
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text
    console = Console(file=file if file is not None else sys.stdout, highlight=False)
    rt = RichTable()                # the title above, not in it: a long title is not wrapped to the table's width
    for c, right in zip(t.columns, t.alignment()):
        rt.add_column(str(c), justify="right" if right else "left", overflow="fold")
    for r in _cells(t):
        rt.add_row(*(Text(c) for c in r))          # as written: no [markup] in a cell
    with console.capture() as cap:
        if t.title:
            console.print(Text(t.title, style="table.title"), soft_wrap=True)
        console.print(rt)
    return cap.get().rstrip("\n")


def render(t: Table, how: str | None = None) -> str:
    """One table as text in the look `how` (MARKDOWN or RICH; None: style() for stdout)."""
    how = how or style()
    return rich_text(t) if how == RICH else to_markdown(t)


def render_all(tables: list, how: str | None = None) -> str:
    """Tables (or ready text) one after another, a blank line between them."""
    how = how or style()
    return "\n\n".join(render(t, how) if isinstance(t, Table) else str(t) for t in tables)


def echo(tables, markdown: bool = False, file=None) -> None:
    """Print a table or a list of them on `file` (default stdout) in the look style() picks."""
    f = file if file is not None else sys.stdout
    tables = [tables] if isinstance(tables, Table) else list(tables)
    how = style(markdown, f)
    f.write("\n\n".join((rich_text(t, f) if how == RICH else to_markdown(t)) if isinstance(t, Table)
                         else str(t) for t in tables) + "\n")


# figures ------------------------------------------------------------------------------------------
def number(x, significant: int = 3) -> str:
    """A figure as people read one (fio prints IOPS=1528, not 1.53e+03): whole and thousands
    separated from 10**(significant-1) up, else `significant` digits less trailing zeros, never
    an exponent ('1,234', '12.3', '0.0123'); '—' for None, NaN or infinity."""
    if x is None or isinstance(x, bool) or not math.isfinite(x):
        return "—"
    if x == 0:
        return "0"
    if isinstance(x, int) or abs(x) >= 10 ** (significant - 1):
        return f"{x:,.0f}"
    digits = min(12, significant - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text      # as %g: 12.0 is 12


def ms(seconds) -> str:
    """Simulated seconds as milliseconds with three decimals (the unit of every latency simfs
    prints: stats, trace, the run's latency table); '—' for None."""
    return "—" if seconds is None else f"{1000 * seconds:.3f}"
