"""The request trace (`-o trace=PATH`): one CSV row per disk request, for `simfs plot`,
`simfs trace` (latency percentiles, blktrace export) and the experiments' figures.

A row holds when the request was issued (the host queued it), started (the drive began
it: issue + queue) and finished, and where its time went."""

import csv

import simfs.outfile as outfile

FIELDS = ("issue", "start", "finish", "op", "lba", "sectors", "queue", "overhead", "seek", "rotation",
          "transfer", "interface", "rmw", "cache_hit", "cause", "ino", "phase")
#: columns added later: a trace written before them reads with their default
OPTIONAL = {"wait": 1}     # 1: the host waited for the request; 0: write-back or read-ahead


class TraceWriter:
    """Writes the rows; a trace that cannot be written (its disk full, say) stops there,
    never the file-system operation that made the request: `error` says why, and the
    volume reports it when it closes."""

    def __init__(self, path):
        self.path = path
        self.f = open(outfile.open_stream(path), "w", newline="")    # (never through a link)
        self.w = csv.writer(self.f)
        self.error: str = ""
        self.w.writerow(FIELDS + tuple(OPTIONAL))

    def record(self, op, lba, sectors, r, cause, ino, phase, wait: bool = True) -> None:
        if self.error:
            return
        try:
            self.w.writerow((f"{r.issue:.9f}", f"{r.start:.9f}", f"{r.finish:.9f}", op, lba, sectors,
                             f"{r.queue:.9f}", f"{r.overhead:.9f}", f"{r.seek:.9f}", f"{r.rotation:.9f}",
                             f"{r.transfer:.9f}", f"{r.interface:.9f}", f"{r.rmw:.9f}", int(r.cache_hit),
                             cause, ino, phase, int(wait)))
        except OSError as e:
            self._failed(e, r.issue)

    def _failed(self, e: OSError, at: float | None) -> None:
        self.error = (f"cannot write the trace file {self.path}: {e.strerror or e}; "
                      + (f"it stops at {at:.6f} s" if at is not None else "its last rows are lost"))

    def close(self) -> None:
        try:
            self.f.close()
        except OSError as e:
            if not self.error:
                self._failed(e, None)


_TEXT = ("op", "cause", "phase")
_INTS = ("lba", "sectors", "cache_hit", "ino", "wait")


def read_trace(path) -> dict:
    """Columns of a trace file as lists (numbers converted). A file that is not a trace, or
    has a row cut short (a run stopped while writing it) or a field that does not parse,
    raises ValueError naming the file and line."""
    with open(path, newline="") as f:
        rows = csv.reader(f)
        head = next(rows, [])
        missing = set(FIELDS) - set(head)
        if missing:
            raise ValueError(f"{path}: not a simfs trace (missing columns: {', '.join(sorted(missing))})")
        names = FIELDS + tuple(k for k in OPTIONAL if k in head)
        at = [(k, head.index(k), int if k in _INTS else str if k in _TEXT else float) for k in names]
        cols: dict = {k: [] for k in names}
        for row in rows:
            if len(row) != len(head):
                raise ValueError(f"{path}:{rows.line_num}: {len(row)} fields where the header has "
                                 f"{len(head)} (a trace cut short?)")
            for k, i, conv in at:
                try:
                    cols[k].append(conv(row[i]))
                except ValueError:
                    raise ValueError(f"{path}:{rows.line_num}: {k} is {row[i]!r}, not a number") from None
    for k, default in OPTIONAL.items():
        if k not in cols:
            cols[k] = [default] * len(cols["op"])
    return cols
