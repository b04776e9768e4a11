"""The request trace (`-o trace=PATH`): one CSV row per disk request, for `simfs plot`."""

import csv

FIELDS = ("issue", "start", "finish", "op", "lba", "sectors", "queue", "overhead", "seek", "rotation",
          "transfer", "interface", "rmw", "cache_hit", "cause", "ino", "phase")


class TraceWriter:
    def __init__(self, path):
        self.f = open(path, "w", newline="")
        self.w = csv.writer(self.f)
        self.w.writerow(FIELDS)

    def record(self, op, lba, sectors, r, cause, ino, phase) -> None:
        self.w.writerow((f"{r.issue:.9f}", f"{r.start:.9f}", f"{r.finish:.9f}", op, lba, sectors,
                         f"{r.queue:.9f}", f"{r.overhead:.9f}", f"{r.seek:.9f}", f"{r.rotation:.9f}",
                         f"{r.transfer:.9f}", f"{r.interface:.9f}", f"{r.rmw:.9f}", int(r.cache_hit), cause,
                         ino, phase))

    def close(self) -> None:
        self.f.close()


def read_trace(path) -> dict:
    """Columns of a trace file as lists (numbers converted)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    missing = set(FIELDS) - set(rows[0] if rows else FIELDS)
    if missing:
        raise ValueError(f"{path}: not a simfs trace (missing columns: {', '.join(sorted(missing))})")
    cols = {k: [r[k] for r in rows] for k in FIELDS}
    for k in FIELDS:
        if k in ("op", "cause", "phase"):
            continue
        conv = int if k in ("lba", "sectors", "cache_hit", "ino") else float
        cols[k] = [conv(v) for v in cols[k]]
    return cols
