"""`simfs stats MNT`: the /.simfs/stats document as tables people can paste.

Tables go through simfs/cli/tables.py: rich's on a terminal, Markdown pipe tables anywhere
else or with --markdown (grep and awk -F'|' read them; rendered as tables when pasted into an
issue or a README). The `time` section (Volume.stats_snapshot, see simfs/blockio/stats.py)
becomes:

  simulated time      the clock, the disk model and policies, dirty and cached blocks now
  phases              one column per phase (`all`, then each mark) and the total: elapsed and
                      waited simulated seconds, disk busy time, operations, disk requests,
                      sectors, seeks, drive-cache hits, buffer-cache hits and misses, ...
  disk time           where the disk's time went, per phase (queue, overhead, seek, rotation,
                      transfer, interface, rmw; busy = their sum over requests less queueing)
  disk requests       requests by the kind of block that caused them, per phase
  operations          count and simulated seconds of each operation type, per phase
  latency             per phase: count, mean, p50, p90, p99, p99.9 and max of each operation's
                      and each disk request kind's simulated latency, and the rotational misses

Any other section is one name/value table (nested mappings flattened as a.b).

`--diff A B` shows the same figures for one phase of two runs: each row's A, B, B - A and B / A,
for the phases table (with the drive's own work), the disk time, the disk requests by cause,
the operations and the latency percentiles.
"""

from __future__ import annotations

import json
import math
import os
import sys

from simfs.cli import tables
from simfs.cli.common import Fmt, fail
from simfs.units import format_size


def register(sub) -> None:
    s = sub.add_parser("stats", help="print a mount's counters, or compare two runs", formatter_class=Fmt,
                       description="Print MNT/.simfs/stats: FUSE requests by type, errors, and the "
                                   "volume's counters (bytes and blocks read and written, blocks "
                                   "and inodes allocated and freed, cache hits and misses). Given a "
                                   "file instead (IMAGE.stats.json written at unmount, or saved "
                                   "`--json` output), print that. --diff A B compares two runs "
                                   "(files or mount points), phase by phase: A, B, B-A and B/A.",
                       epilog="examples:\n  simfs stats /mnt/sim\n  simfs stats --json /mnt/sim | jq .counters\n"
                              "  simfs stats disk.img.stats.json   # the final statistics of the last mount\n"
                              "  simfs stats --diff first.stats.json second.stats.json\n"
                              "  simfs stats --diff a.json b.json --phase readback")
    s.add_argument("mountpoint", metavar="MNT|FILE", nargs="?")
    s.add_argument("--json", action="store_true", help="print the raw JSON (with --diff: the comparison)")
    s.add_argument("--diff", nargs=2, metavar=("A", "B"), help="compare two runs (stats files or mounts)")
    s.add_argument("--phase", metavar="NAME",
                   help="with --diff: the phase to compare (default: total)")
    tables.add_markdown_option(s)
    s.set_defaults(func=cmd_stats)


def load_stats(path: str) -> dict:
    """A statistics document from a mount point (its /.simfs/stats) or a JSON file (the final
    statistics, or saved `--json` output); ValueError with a one-line reason."""
    src = os.path.join(path, ".simfs", "stats") if os.path.isdir(path) else path
    try:
        with open(src, "rb") as f:
            doc = json.loads(f.read())
    except FileNotFoundError:
        raise ValueError(f"{path} is not a simfs mount (no .simfs/stats)" if os.path.isdir(path)
                         else f"{path} does not exist") from None
    except OSError as e:
        raise ValueError(f"cannot read {src}: {e.strerror}") from None
    except ValueError:
        raise ValueError(f"{src} is not simfs statistics (not JSON)") from None
    if not isinstance(doc, dict) or not isinstance(time_of(doc).get("phases"), list):
        raise ValueError(f"{src} is not simfs statistics (no phases)")
    why = time_problem(time_of(doc))
    if why:
        raise ValueError(f"{src} is not simfs statistics as simfs writes them: {why}")
    return doc


def _shown(v) -> str:
    """A value as the JSON file has it (null, "many"), cut short."""
    text = json.dumps(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _number(v) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return isinstance(v, int) or math.isfinite(v)


def time_problem(t: dict) -> str | None:
    """Why the simulated-time section cannot be shown (a counter that is no number, a phase
    name that is no string, ...), or None. Checks what the tables read: each phase's, the
    total's and the unmount's name, times, counters, disk time and operations."""
    parts = [(f"phases[{i}]", p) for i, p in enumerate(t.get("phases") or [])]
    parts += [(k, t[k]) for k in ("total", "unmount") if t.get(k) is not None]
    for where, p in parts:
        if not isinstance(p, dict):
            return f"{where} is {_shown(p)}, not a table"
        if "name" in p and not isinstance(p["name"], str):
            return f"{where}.name is {_shown(p['name'])}, not a string"
        for k in ("start", "elapsed", "waited"):
            if k in p and not _number(p[k]):
                return f"{where}.{k} is {_shown(p[k])}, not a number"
        for sect in ("counters", "disk_time", "operations"):
            v = p.get(sect, {})
            if not isinstance(v, dict):
                return f"{where}.{sect} is {_shown(v)}, not a table"
            for k, x in v.items():
                if sect == "operations":
                    if not isinstance(x, dict):
                        return f"{where}.operations.{k} is {_shown(x)}, not a table"
                    bad = next((f for f in ("count", "time") if f in x and not _number(x[f])), None)
                    if bad:
                        return f"{where}.operations.{k}.{bad} is {_shown(x[bad])}, not a number"
                elif not _number(x):
                    return f"{where}.{sect}.{k} is {_shown(x)}, not a number"
    return None


def time_of(doc: dict) -> dict:
    """The simulated-time section: a /.simfs/stats document's `time`, or a final statistics
    file (-o stats=, IMAGE.stats.json) itself."""
    t = doc.get("time") if isinstance(doc, dict) else None
    return t if isinstance(t, dict) else doc


def _phase(t: dict, name: str) -> dict | None:
    if name == "total":
        return t.get("total")
    return next((p for p in reversed(t.get("phases", [])) if p.get("name") == name), None)


def _change(label: str, x, y, kind: str) -> tuple:
    """(label, A, B, B-A, B/A, kind); a figure one side lacks (None) has no difference."""
    if x is None or y is None:
        return (label, x, y, None, "-" if x is None and y is None else ("new" if x is None else "gone"), kind)
    ratio = f"{y / x:.2f}x" if x else ("-" if not y else "new")
    return (label, x, y, y - x, ratio, kind)


def diff_rows(a: dict, b: dict) -> list[tuple]:
    """(label, A, B, B-A, B/A, kind) for every row of the phases table and of the drive's own work."""
    return [_change(label, get(a), get(b), kind) for label, get, kind in PHASE_ROWS + tuple(drive_rows([a, b]))]


def diff_sections(a: dict, b: dict) -> list[tuple[str, list[tuple]]]:
    """The other tables of `simfs stats` for two phases, as (title, rows like diff_rows'):
    the disk time, the disk requests by cause, the operations and the latency (seconds; shown
    in ms) with the rotational misses. A table neither phase has anything for is left out."""
    both = (a, b)
    out = [("disk time (simulated seconds, summed over requests)",
            [_change(k, a.get("disk_time", {}).get(k, 0.0), b.get("disk_time", {}).get(k, 0.0), "s")
             for k in DISK_COMPONENTS])]
    causes = sorted({k[len("disk_requests_"):] for p in both for k in p.get("counters", {})
                     if k.startswith("disk_requests_")})
    out.append(("disk requests by cause",
                [_change(k, *(p.get("counters", {}).get("disk_requests_" + k, 0) for p in both), "n")
                 for k in causes]))
    ops = []
    for op in sorted({k for p in both for k in p.get("operations", {})}):
        oa, ob = (p.get("operations", {}).get(op, {}) for p in both)
        ops += [_change(f"{op}: count", oa.get("count", 0), ob.get("count", 0), "n"),
                _change(f"{op}: simulated s", oa.get("time", 0.0), ob.get("time", 0.0), "s"),
                _change(f"{op}: mean ms", *(o["time"] / o["count"] if o.get("count") else None
                                            for o in (oa, ob)), "ms")]
    out.append(("operations (count, simulated seconds, mean)", ops))
    lats = [p.get("latency") if isinstance(p.get("latency"), dict) else None for p in both]
    if any(lats):
        la, lb = (x or {} for x in lats)

        def kinds(lat):
            return {**{f"op {k}": v for k, v in (lat.get("operations") or {}).items()},
                    **{f"disk {k}": v for k, v in (lat.get("disk") or {}).items()}}
        ka, kb = kinds(la), kinds(lb)
        rows = []
        for kind in [*ka, *(k for k in kb if k not in ka)]:
            sa, sb = ka.get(kind), kb.get(kind)
            for c in LATENCY_COLUMNS:
                rows.append(_change(f"{kind} {c}", *(s.get(c, 0) if isinstance(s, dict) else None
                                                     for s in (sa, sb)), "n" if c == "count" else "ms"))
        rows.append(_change("rotational misses", la.get("rotational_misses"), lb.get("rotational_misses"), "n"))
        out.append(("latency (simulated ms)", rows))
    return [(title, rows) for title, rows in out if rows]


def _diff_json(rows: list[tuple]) -> list[dict]:
    return [dict(name=r[0], a=r[1], b=r[2], diff=r[3], ratio=r[4]) for r in rows]


def _diff_table(title: str, rows: list[tuple]) -> tables.Table:
    return tables.Table(title, ["", "A", "B", "B - A", "B / A"],
                        [(r[0], _fmt(r[1], r[5]), _fmt(r[2], r[5]), _fmt(r[3], r[5], sign=True), r[4])
                         for r in rows])


def cmd_diff(a) -> int:
    a.phase = a.phase or "total"
    docs = []
    for path in a.diff:
        try:
            docs.append(time_of(load_stats(path)))
        except ValueError as e:
            return fail(str(e), "stats")
    phases = []
    for path, t in zip(a.diff, docs):
        p = _phase(t, a.phase)
        if p is None:
            names = ", ".join((["total"] if isinstance(t.get("total"), dict) else [])
                              + [str(q.get("name", "?")) for q in t.get("phases", [])])
            return fail(f"{path} has no phase {a.phase!r}; it has: {names}", "stats")
        phases.append(p)
    rows, sections = diff_rows(*phases), diff_sections(*phases)
    if a.json:
        print(json.dumps({"a": a.diff[0], "b": a.diff[1], "phase": a.phase, "rows": _diff_json(rows),
                          "sections": [{"title": t, "rows": _diff_json(r)} for t, r in sections]},
                         indent=1))
        return 0
    settings = [(k, human(k, docs[0].get(k, "")), human(k, docs[1].get(k, "")))
                for k in ("disk", "alloc", "dirorder", "writeback", "block_size")
                if docs[0].get(k) is not None or docs[1].get(k) is not None]
    tables.echo([tables.Table(f"A = {a.diff[0]}, B = {a.diff[1]}", ["setting", "A", "B"], settings,
                              right=[False, False, False]),
                 _diff_table(f"phase {a.phase}: A, B, B - A and B / A", rows),
                 *(_diff_table(f"phase {a.phase}, {title}", r) for title, r in sections)], a.markdown)
    return 0


def unmount_summary(doc: dict, path: str = "", how: str | None = None) -> str:
    """The last word at unmount: simulated time, disk requests and seeks per phase, with the
    final write-back (recorded in the last phase) as a row of its own; totals last."""
    t = time_of(doc)
    phases = [dict(p) for p in t.get("phases", [])]
    um = t.get("unmount") or {}

    def req(p):
        return _c("disk_reads")(p) + _c("disk_writes")(p)
    rows = []
    for i, p in enumerate(phases):
        el, n, sk = p.get("elapsed", 0.0), req(p), _c("seeks")(p)
        if i == len(phases) - 1 and um:
            el, n, sk = el - um.get("elapsed", 0.0), n - req(um), sk - _c("seeks")(um)
        rows.append((p.get("name", "?"), f"{el:.6f}", f"{n:,}", f"{sk:,}"))
    if um:
        rows.append(("write-back at unmount", f"{um.get('elapsed', 0.0):.6f}", f"{req(um):,}",
                     f"{_c('seeks')(um):,}"))
    tot = t.get("total") or {}
    rows.append(("total", f"{tot.get('elapsed', 0.0):.6f}", f"{req(tot):,}", f"{_c('seeks')(tot):,}"))
    title = f"simulated time on {t.get('disk', '?')} (alloc={t.get('alloc', '?')}, " \
            f"writeback={t.get('writeback', '?')}, dirorder={t.get('dirorder', '?')})"
    out = table(title, ["phase", "simulated s", "disk requests", "seeks"], rows, how)
    return out + (f"\nfinal statistics: {path} (simfs stats {path})" if path else "")


def cmd_stats(a) -> int:
    if a.diff:
        if a.mountpoint:
            return fail("give either MNT|FILE or --diff A B, not both", "stats")
        return cmd_diff(a)
    if not a.mountpoint:
        return fail("give a mount point or a statistics file (or --diff A B)", "stats")
    if a.phase is not None:
        return fail("--phase chooses what --diff compares; without --diff every phase is shown", "stats")
    if not os.path.isdir(a.mountpoint):
        try:
            doc = load_stats(a.mountpoint)
        except ValueError as e:
            return fail(str(e), "stats")
        how = tables.style(a.markdown)
        if a.json:
            show_stats(doc, True)
        elif "time" in doc:
            print_stats(doc, how=how)
        else:
            sys.stdout.write("\n\n".join(time_tables(doc, how)) + "\n")
        if time_of(doc).get("unmount") and not a.json:       # a final statistics file
            print("\n" + unmount_summary(doc, how=how))
        return 0
    path = os.path.join(a.mountpoint, ".simfs", "stats")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return fail(f"{a.mountpoint} is not a simfs mount (no .simfs/stats)", "stats")
    except OSError as e:
        return fail(f"cannot read {path}: {e.strerror}", "stats")
    try:
        doc = json.loads(raw)
    except ValueError:
        return fail(f"{path} is not simfs statistics (not JSON): is {a.mountpoint} a simfs mount?", "stats")
    if a.json:
        sys.stdout.write(raw.decode())
        return 0
    print_stats(doc, how=tables.style(a.markdown))
    return 0


# rows of the phases table: (label, how to get it from a phase dict, format)
_MIB = 512 / 2**20


def _c(key):
    return lambda p: p.get("counters", {}).get(key, 0)


def _hit_ratio(p) -> float | None:
    """Buffer-cache hits in % of lookups; None without a lookup."""
    c = p.get("counters", {})
    hits, misses = c.get("cache_hits", 0), c.get("cache_misses", 0)
    return 100 * hits / (hits + misses) if hits + misses else None


def _score(p) -> float | None:
    return p.get("layout_score")


PHASE_ROWS = (
    ("start (s)", lambda p: p.get("start", 0.0), "s"),
    ("elapsed (s)", lambda p: p.get("elapsed", 0.0), "s"),
    ("waited by tools (s)", lambda p: p.get("waited", 0.0), "s"),
    ("disk busy (s)", lambda p: p.get("disk_time", {}).get("busy", 0.0), "s"),
    ("operations", lambda p: sum(o.get("count", 0) for o in p.get("operations", {}).values()), "n"),
    ("disk reads", _c("disk_reads"), "n"),
    ("disk writes", _c("disk_writes"), "n"),
    ("sectors read", _c("sectors_read"), "n"),
    ("sectors written", _c("sectors_written"), "n"),
    ("MiB read", lambda p: _c("sectors_read")(p) * _MIB, "mib"),
    ("MiB written", lambda p: _c("sectors_written")(p) * _MIB, "mib"),
    ("seeks (>128 sectors)", _c("seeks"), "n"),
    ("layout score (Conway: 1 - jumps/4K read)", _score, "score"),
    ("drive-cache hits", _c("drive_cache_hits"), "n"),
    ("buffer-cache hits", _c("cache_hits"), "n"),
    ("buffer-cache misses", _c("cache_misses"), "n"),
    ("buffer-cache hit ratio", _hit_ratio, "pct"),
    ("read-ahead blocks", _c("readahead_blocks"), "n"),
    ("blocks written back", _c("blocks_written"), "n"),
    ("write-back throttled", _c("writeback_throttled"), "n"),
)

DISK_COMPONENTS = ("queue", "overhead", "seek", "rotation", "transfer", "interface", "rmw", "busy")

# rows of the drive's-own-work table: (label, section, key, format)
DRIVE_ROWS = (
    ("FLUSH CACHE commands", "counters", "drive_flushes", "n"),
    ("host waited on them (s)", "disk_time", "flush", "s"),
    ("destage operations", "counters", "drive_destages", "n"),
    ("sectors destaged", "counters", "sectors_destaged", "n"),
    ("sectors pre-read (read-modify-write)", "counters", "sectors_preread", "n"),
    ("destage seek (s)", "disk_time", "destage_seek", "s"),
    ("destage rotation (s)", "disk_time", "destage_rotation", "s"),
    ("destage transfer (s)", "disk_time", "destage_transfer", "s"),
    ("destage pre-reads, read-modify-write (s)", "disk_time", "destage_rmw", "s"),
)


def drive_rows(cols: list[dict]) -> list[tuple]:
    """The drive's own work as (label, how to get it from a phase dict, format), for the rows
    some column has: FLUSH CACHE waits and write-cache destaging; time names a plug-in model
    adds come last."""
    def has(sect, key):
        return any(key in p.get(sect, {}) for p in cols)
    rows = [(label, sect, key, kind) for label, sect, key, kind in DRIVE_ROWS if has(sect, key)]
    known = set(DISK_COMPONENTS) | {key for _, sect, key, _ in DRIVE_ROWS if sect == "disk_time"}
    rows += [(f"{k} (s)", "disk_time", k, "s")
             for k in sorted({k for p in cols for k in p.get("disk_time", {})} - known)]
    return [(label, lambda p, sect=sect, key=key: p.get(sect, {}).get(key, 0), kind)
            for label, sect, key, kind in rows]


def human(key: str, v):
    if isinstance(v, int) and not isinstance(v, bool) and key.startswith("bytes") and v >= 1024:
        return f"{v:,} ({format_size(v)})"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.6g}"
    return str(v)


def _fmt(v, kind: str, sign: bool = False) -> str:
    """A figure of a row of `kind`: s (seconds, 6 decimals), ms (seconds shown in ms), mib, n
    (a count), score (3 decimals), pct; '-' for None. `sign`: a difference, '+' when above 0."""
    if v is None:
        return "-"
    if kind == "s":
        text = f"{v:.6f}"
    elif kind == "ms":
        text = tables.ms(v)
    elif kind == "mib":
        text = f"{v:.2f}"
    elif kind == "n":
        text = f"{int(v):,}"
    elif kind == "score":
        text = f"{v:.3f}"
    elif kind == "pct":
        text = f"{v:.1f}%"
    else:
        return str(v)
    return "+" + text if sign and v > 0 and text.strip("0.,%") else text


def table(title, columns, rows, how: str | None = None) -> str:
    """A titled table (first column left-aligned, the rest right) in the look `how`
    (tables.MARKDOWN or tables.RICH; None: tables.style() for stdout)."""
    return tables.render(tables.Table(title, list(columns), list(rows)), how)


def _columns(sect: dict) -> list[dict]:
    """The phases, then the total when there is more than one phase."""
    phases = [p for p in sect.get("phases") or [] if isinstance(p, dict)]
    total = sect.get("total")
    if isinstance(total, dict) and len(phases) != 1:
        phases = phases + [total]
    return phases


def time_tables(sect: dict, how: str | None = None) -> list:
    """Tables for the simulated-time section (Volume.stats_snapshot), as text in the look `how`."""
    how = how or tables.style()
    out = []

    def tab(title, columns, rows):
        return table(title, columns, rows, how)
    setting = [(k, human(k, v)) for k, v in sect.items() if not isinstance(v, (dict, list))]
    out.append(tab("simulated time", ["name", "value"], setting))
    cols = _columns(sect)
    names = [p.get("name", "?") for p in cols]
    out.append(tab("phases (simulated seconds; one column per phase)", ["", *names],
                   [(label, *(_fmt(get(p), kind) for p in cols)) for label, get, kind in PHASE_ROWS]))
    out.append(tab("disk time (simulated seconds, summed over requests)", ["component", *names],
                   [(k, *(f"{p.get('disk_time', {}).get(k, 0.0):.6f}" for p in cols))
                    for k in DISK_COMPONENTS]))
    drive = drive_rows(cols)
    if drive:
        out.append(tab("the drive's own work (in no request above: FLUSH CACHE, write-cache destaging)",
                       ["", *names], [(label, *(_fmt(get(p), kind) for p in cols))
                                      for label, get, kind in drive]))
    causes = sorted({k[len("disk_requests_"):] for p in cols for k in p.get("counters", {})
                   if k.startswith("disk_requests_")})
    out.append(tab("disk requests by cause", ["cause", *names],
                   [(k, *(f"{p.get('counters', {}).get('disk_requests_' + k, 0):,}" for p in cols))
                    for k in causes]))
    ops = sorted({k for p in cols for k in p.get("operations", {})})
    head, rows = ["op"], []
    for n in names:
        head += [f"{n} count", f"{n} s"]
    head.append("mean ms")
    last = cols[-1] if cols else {}
    for op in ops:
        row = [op]
        for p in cols:
            o = p.get("operations", {}).get(op, {})
            row += [f"{o.get('count', 0):,}", f"{o.get('time', 0.0):.6f}"]
        o = last.get("operations", {}).get(op, {})
        row.append(f"{1000 * o['time'] / o['count']:.3f}" if o.get("count") else "")
        rows.append(row)
    out.append(tab("operations (count and simulated seconds; mean of the last column)", head, rows))
    for p in cols:
        lat = p.get("latency")
        if not isinstance(lat, dict):
            continue                      # statistics written before latencies were kept
        kinds = {**{f"op {k}": v for k, v in (lat.get("operations") or {}).items()},
                 **{f"disk {k}": v for k, v in (lat.get("disk") or {}).items()}}
        out.append(latency_table(f"latency in phase {p.get('name', '?')} (simulated ms; "
                                 f"rotational misses: {lat.get('rotational_misses', 0):,})", kinds, how))
    return out


LATENCY_COLUMNS = ("count", "mean", "p50", "p90", "p99", "p99.9", "max")


def latency_table(title: str, kinds: dict, how: str | None = None) -> str:
    """kind -> summary (Histogram.summary: seconds) as a table in milliseconds."""
    return table(title, ["kind", *LATENCY_COLUMNS],
                 [(k, f"{v.get('count', 0):,}", *(tables.ms(v.get(c, 0.0)) for c in LATENCY_COLUMNS[1:]))
                  for k, v in kinds.items() if isinstance(v, dict)], how)


def render_stats(doc: dict, how: str | None = None) -> str:
    """A /.simfs/stats document as text: one or more tables per section, blank lines between."""
    how = how or tables.style()
    scalars = [(k, human(k, v)) for k, v in doc.items() if not isinstance(v, dict)]
    out = [table("simfs", ["name", "value"], scalars, how)]
    for name, sect in doc.items():
        if not isinstance(sect, dict):
            continue
        if name == "time" and "phases" in sect:
            try:
                out += time_tables(sect, how)
                continue
            except Exception:     # an unexpected shape: fall back to the generic table
                pass
        flat = {}
        for k, v in sect.items():
            if isinstance(v, dict):
                for k2, v2 in v.items():
                    flat[f"{k}.{k2}"] = v2
            else:
                flat[k] = v
        out.append(table(name, ["name", "value"],
                         [(str(k), human(str(k).rpartition(".")[2], v)) for k, v in sorted(flat.items())], how))
    return "\n\n".join(out) + "\n"


def show_stats(doc: dict, as_json: bool, markdown: bool = False) -> None:
    """A command's statistics on stdout: raw JSON, or the tables `simfs stats` prints."""
    if as_json:
        json.dump(doc, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print_stats(doc, how=tables.style(markdown))


def print_stats(doc: dict, file=None, how: str | None = None) -> None:
    f = file or sys.stdout
    f.write(render_stats(doc, how or tables.style(file=f)))
