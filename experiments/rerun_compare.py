"""Compare a rerun's results.json with another, record by record (simulated seconds of command,
drain and unmount; every disk counter; extra figures) and ratio by ratio:

    python -m experiments.rerun_compare results/summary/ext2fs-2010 NEW
"""

import argparse
import json
import sys
from pathlib import Path

FIELDS = ("sim", "sim_cmd", "sim_drain", "sim_umount")


def records(doc: dict) -> dict:
    """(config, rep, phase, n-th of that key) -> record."""
    out, seen = {}, {}
    for r in doc["records"]:
        k = (r["config"], r["rep"], r["phase"])
        seen[k] = seen.get(k, -1) + 1
        out[k + (seen[k],)] = r
    return out


def load(path: Path) -> dict:
    """A run's results.json, given it or its directory; one line and exit status 2 if unreadable."""
    f = path / "results.json" if path.is_dir() else path
    try:
        doc = json.loads(f.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        doc, why = None, f"not a readable results.json ({e})"
    else:
        why = "not an experiment's results.json (no records)"
    if not isinstance(doc, dict) or not isinstance(doc.get("records"), list):
        print(f"rerun_compare: {f}: {why}", file=sys.stderr)
        sys.exit(2)
    return doc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.rerun_compare",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path, help="a run's directory or its results.json")
    ap.add_argument("new", type=Path, help="the rerun's directory or its results.json")
    a = ap.parse_args(argv)
    old, new = load(a.old), load(a.new)
    o, n = records(old), records(new)
    same, added = 0, set()
    for k in sorted(o):
        a, b = o[k], n.get(k)
        if b is None:
            print("missing in the rerun:", k[:3])
            continue
        fields = {f: (a.get(f), b.get(f)) for f in FIELDS if a.get(f) != b.get(f)}
        added |= set(b["counters"]) - set(a["counters"])     # counters the old run predates
        counters = sorted(c for c in set(a["counters"]) | set(b["counters"])
                          if c in a["counters"] and a["counters"][c] != b["counters"].get(c))
        extra = {c: (a["extra"].get(c), b["extra"].get(c)) for c in set(a["extra"]) | set(b["extra"])
                 if a["extra"].get(c) != b["extra"].get(c)}
        if fields or counters or extra:
            print("differs:", k[:3], fields, "counters:", counters, "extra:", extra)
        else:
            same += 1
    print(f"{same} of {len(o)} records identical")
    if added:
        print("counters only the rerun has (not compared):", ", ".join(sorted(added)))
    for c in old.get("comparisons", []):
        m = [x for x in new.get("comparisons", []) if x["label"] == c["label"]]
        if m and m[0]["measured"] != c["measured"]:
            print(f"ratio {c['label']}: {c['measured']:.4g} -> {m[0]['measured']:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
