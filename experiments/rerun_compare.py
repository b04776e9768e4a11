"""Compare a rerun's results.json with another, record by record (simulated seconds of command,
drain and unmount; every disk counter; extra figures) and ratio by ratio:

    python -m experiments.rerun_compare results/summary/ext2fs-2010/results.json NEW/results.json
"""

import json
import sys

FIELDS = ("sim", "sim_cmd", "sim_drain", "sim_umount")


def records(doc: dict) -> dict:
    """(config, rep, phase, n-th of that key) -> record."""
    out, seen = {}, {}
    for r in doc["records"]:
        k = (r["config"], r["rep"], r["phase"])
        seen[k] = seen.get(k, -1) + 1
        out[k + (seen[k],)] = r
    return out


def main(argv=None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    old, new = (json.load(open(p)) for p in args)
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
    for c in old["comparisons"]:
        m = [x for x in new["comparisons"] if x["label"] == c["label"]]
        if m and m[0]["measured"] != c["measured"]:
            print(f"ratio {c['label']}: {c['measured']:.4g} -> {m[0]['measured']:.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
