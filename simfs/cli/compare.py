"""`simfs compare A B`: two results, a table of ratios (B / A) per phase and counter.

A and B are both results documents (`simfs run` / `simfs experiment run`: results.json) or
both statistics documents (`simfs stats --json`, `-o stats=PATH`, `simfs verb --json`).
Results rows are matched by configuration and phase (by phase alone when each file holds one
configuration); statistics by phase name (`all` and each mark). Rows of one file the other has
no partner for are named in a note on stderr, one line per file, not dropped silently. The
figures are the simulated seconds and every counter: what differs is shown, the way people put
two fio outputs side by side. Latencies are kept in seconds (JSON) and printed in milliseconds,
as `simfs stats` prints them; the table goes through simfs/cli/tables.py.
Reading a results document needs only JSON: nothing here imports the experiments package.
"""

from __future__ import annotations

import json
import sys

from simfs.blockio.stats import layout_score
from simfs.cli import tables
from simfs.cli.common import Fmt, fail

TIME_METRICS = ("sim", "sim_cmd", "sim_drain")


def register(sub) -> None:
    s = sub.add_parser(
        "compare", help="ratios between two results or statistics files, per phase and counter",
        formatter_class=Fmt,
        description="Compare two results files (results.json of `simfs run` or `simfs experiment run`) "
                    "or two statistics files (`simfs stats --json`, -o stats=PATH, `simfs verb --json`): "
                    "for each phase (and configuration), the simulated seconds and every counter of A "
                    "and B and the ratio B / A, as a table (Markdown when not on a terminal, or JSON).",
        epilog="examples:\n"
               "  simfs compare results/ab-old/results.json results/ab-new/results.json\n"
               "  simfs compare ext2.stats.json cg.stats.json --json | jq '.[] | select(.metric == \"seeks\")'\n"
               "  simfs compare a.json b.json --all          # also the rows where A and B are equal\n\n"
               "Exit status 2 for a missing or unreadable file, files of two kinds, nothing in common, or\n"
               "results of two different workloads (each results.json records its workload's fingerprint;\n"
               "--force compares them anyway, with a warning).")
    s.add_argument("a", metavar="A", help="results.json or statistics JSON (the denominator)")
    s.add_argument("b", metavar="B", help="the same kind of file (the numerator)")
    s.add_argument("--json", action="store_true", help="print the rows as JSON")
    s.add_argument("--force", action="store_true",
                   help="compare results whose workloads differ (their fingerprints: files, directories, "
                        "bytes, listing), with a warning; without it that is refused")
    s.add_argument("--all", action="store_true", help="also rows where A equals B (default: only differences; "
                                                       "simulated seconds are always shown)")
    tables.add_markdown_option(s)
    s.set_defaults(func=cmd_compare)


class CompareError(ValueError):
    pass


def _load(path: str) -> tuple[str, dict]:
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except FileNotFoundError:
        raise CompareError(f"{path}: no such file") from None
    except OSError as e:
        raise CompareError(f"{path}: cannot read: {e.strerror}") from None
    except ValueError:
        raise CompareError(f"{path}: not JSON (give results.json or `simfs stats --json` output)") from None
    if isinstance(doc, dict) and "summary" in doc and "configs" in doc:
        return "results", doc
    if isinstance(doc, dict):
        t = doc.get("time", doc)
        if isinstance(t, dict) and isinstance(t.get("phases"), list):
            return "stats", t
    raise CompareError(f"{path}: neither a results file (results.json) nor simfs statistics")


def _flat_results(doc: dict) -> dict:
    """{(config, phase): {metric: value}} of a results document (means over repetitions)."""
    out = {}
    for r in doc["summary"]:
        m = {"sim": r["sim"]["mean"], "sim_cmd": r.get("sim_cmd"), "sim_drain": r.get("sim_drain")}
        m.update({k: v for k, v in r.get("counters", {}).items()})
        m["layout_score"] = layout_score(r.get("counters", {}))
        m.update({k: v["mean"] for k, v in r.get("extra", {}).items() if isinstance(v, dict) and "mean" in v})
        m.update(_latency_metrics(r.get("latency") or {}, r.get("latency", {}).get("split") or {}))
        out[(r["config"], r["phase"])] = {k: v for k, v in m.items() if isinstance(v, (int, float))}
    return out


def _flat_stats(t: dict) -> dict:
    out = {}
    for p in t["phases"]:
        m = {"elapsed": p.get("elapsed"), "waited": p.get("waited")}
        m.update(p.get("counters", {}))
        m["layout_score"] = p.get("layout_score")
        m["operations"] = sum(o.get("count", 0) for o in p.get("operations", {}).values())
        m.update(_latency_metrics(p.get("latency") or {}, p.get("disk_time") or {}))
        out[("", p["name"])] = {k: v for k, v in m.items() if isinstance(v, (int, float))}
    return out


SPLIT = ("queue", "overhead", "seek", "rotation", "transfer", "interface", "rmw")


def _latency_metrics(lat: dict, split: dict) -> dict:
    """Latency percentiles (simfs/blockio/stats.py) as compare's metrics: every disk request
    kind's and operation's p50, p99 and max, the disk-time split and the rotational misses."""
    if not isinstance(lat, dict):
        return {}
    out = {}
    for sect, label in (("disk", "disk"), ("operations", "op")):
        for kind, s in sorted((lat.get(sect) or {}).items()):
            if isinstance(s, dict):
                out.update({f"latency {label} {kind} {q}": s.get(q) for q in ("mean", "p50", "p99", "max")})
    if isinstance(split, dict):
        out.update({f"disk time {k}": split[k] for k in SPLIT if k in split})
    if "rotational_misses" in lat:
        out["rotational_misses"] = lat["rotational_misses"]
    return out


def _fingerprint_text(fp: dict) -> str:
    return (f"{fp.get('files', 0):,} files, {fp.get('directories', 0):,} directories, {fp.get('bytes', 0):,} bytes, "
            f"listing {str(fp.get('listing_sha256', ''))[:12]}")


def workload_mismatch(a_path: str, b_path: str) -> tuple[str | None, str | None]:
    """(why A and B ran on different workloads, or None; a note when that cannot be told).
    Results record their workload's fingerprint (experiments/runner.py tree_fingerprint);
    statistics files have none."""
    (ka, a), (kb, b) = _load(a_path), _load(b_path)
    if ka != "results" or kb != "results":
        return None, None
    fa, fb = ((d.get("workload") or {}).get("fingerprint") for d in (a, b))
    if fa is None and fb is None:
        return None, None
    if fa is None or fb is None:
        side = "A" if fa is None else "B"
        return None, (f"note: {side} records no workload fingerprint (an older run): "
                      "whether A and B ran on the same workload is not checked")
    if fa == fb:
        return None, None
    return (f"A and B ran on different workloads (A: {_fingerprint_text(fa)}; B: {_fingerprint_text(fb)}): "
            "their figures differ for that reason too"), None


def rows(a_path: str, b_path: str, show_all: bool = False) -> list[dict]:
    return compare(a_path, b_path, show_all)[0]


def compare(a_path: str, b_path: str, show_all: bool = False) -> tuple[list[dict], list, list]:
    """(rows, A's (config, phase) keys with no partner in B, B's with none in A)."""
    (ka, a), (kb, b) = _load(a_path), _load(b_path)
    if ka != kb:
        raise CompareError(f"{a_path} is a {ka} file and {b_path} a {kb} file: compare two of a kind")
    fa, fb = (_flat_results(a), _flat_results(b)) if ka == "results" else (_flat_stats(a), _flat_stats(b))
    pairs = [(k, k) for k in fa if k in fb]
    if not pairs and ka == "results":
        ca, cb = {c for c, _ in fa}, {c for c, _ in fb}
        if len(ca) == 1 and len(cb) == 1:        # one configuration each: match phases
            pairs = [(k, (next(iter(cb)), k[1])) for k in fa if (next(iter(cb)), k[1]) in fb]
    if not pairs:
        raise CompareError(f"{a_path} and {b_path} have no phase in common")
    paired_a, paired_b = {x for x, _ in pairs}, {y for _, y in pairs}
    return (_rows(pairs, fa, fb, ka, show_all), [k for k in fa if k not in paired_a],
            [k for k in fb if k not in paired_b])


def unmatched_note(side: str, path: str, keys: list, other: str, most: int = 12) -> str:
    """One line naming the rows of one input that the other has no partner for (they are left
    out of the table, so say so rather than drop them silently)."""
    names = [f"{c} / {p}" if c else p for c, p in keys]
    shown = ", ".join(names[:most]) + (f", ... ({len(names) - most} more)" if len(names) > most else "")
    what = "row" if len(keys) == 1 else "rows"
    return f"note: {len(keys)} {what} of {side} ({path}) not in {other}, left out: {shown}"


def _rows(pairs: list, fa: dict, fb: dict, kind: str, show_all: bool) -> list[dict]:
    timekeys = TIME_METRICS if kind == "results" else ("elapsed", "waited")
    out = []
    for ka_, kb_ in pairs:
        ma, mb = fa[ka_], fb[kb_]
        keys = [k for k in timekeys if k in ma or k in mb] + \
            sorted((set(ma) | set(mb)) - set(timekeys))
        for k in keys:
            va, vb = ma.get(k), mb.get(k)
            if not show_all and k not in timekeys[:1] and va == vb:
                continue
            ratio = (vb / va) if (va and vb is not None) else None
            config = ka_[0] if ka_[0] == kb_[0] else f"{ka_[0]} vs {kb_[0]}"
            out.append({"config": config, "phase": ka_[1], "metric": k, "a": va, "b": vb, "ratio": ratio})
    return out


def _num(x) -> str:
    """Four significant digits (whole numbers whole), never an exponent."""
    if x is None:
        return "—"
    if isinstance(x, int) or float(x).is_integer() and abs(x) >= 1000:
        return f"{int(x):,}"
    return tables.number(x, 4) if abs(x) < 1000 else f"{x:,.1f}"


def _latency(metric: str) -> bool:
    """A latency figure (seconds in the rows, milliseconds in the table)."""
    return metric.startswith("latency ")


def table(rs: list[dict], a: str, b: str) -> tables.Table:
    """The rows as a table: latencies in ms (their metric named '... ms'), other figures as
    they are, the ratio with three decimals."""
    withcfg = any(r["config"] for r in rs)
    head = (["configuration"] if withcfg else []) + ["phase", "metric", "A", "B", "B / A"]
    rows = []
    for r in rs:
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.3f}"
        if _latency(r["metric"]):
            cells = [r["metric"] + " ms", tables.ms(r["a"]), tables.ms(r["b"])]
        else:
            cells = [r["metric"], _num(r["a"]), _num(r["b"])]
        rows.append(([r["config"]] if withcfg else []) + [r["phase"], *cells, ratio])
    return tables.Table(f"A = {a}, B = {b}", head, rows, right=[False] * (len(head) - 3) + [True] * 3)


def cmd_compare(a) -> int:
    try:
        rs, only_a, only_b = compare(a.a, a.b, a.all)
        differ, note = workload_mismatch(a.a, a.b)
    except CompareError as e:
        return fail(str(e), "compare")
    if differ and not a.force:
        return fail(f"{differ}; refusing to compare (--force compares them anyway)", "compare")
    if differ:
        print(f"simfs compare: WARNING: {differ}", file=sys.stderr)
    if note:
        print(f"simfs compare: {note}", file=sys.stderr)
    for side, path, keys, other in (("A", a.a, only_a, "B"), ("B", a.b, only_b, "A")):
        if keys:
            print(f"simfs compare: {unmatched_note(side, path, keys, other)}", file=sys.stderr)
    if a.json:
        json.dump(rs, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        how = tables.style(a.markdown)
        if differ:
            print(f"**WARNING: {differ}.**\n" if how == tables.MARKDOWN else f"WARNING: {differ}.\n")
        tables.echo(table(rs, a.a, a.b), a.markdown)
    return 0
