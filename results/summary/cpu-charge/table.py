"""How each seed figure moves from the flat CPU charge (cpu_op_us=10) to the kernel's per-kind
table (cpu=kernel): the tables of results/summary/cpu-charge/README.md, from two sets of quick runs.

    python results/summary/cpu-charge/table.py FLAT_DIR KERNEL_DIR JOB... > tables.md
    python results/summary/cpu-charge/table.py --labels="root table,loop table" OLD NEW JOB...

FLAT_DIR/JOB and KERNEL_DIR/JOB are `simfs run ... --quick --out` directories (results.json).
"""

import json
import sys
from pathlib import Path


def load(d: Path) -> dict:
    return json.loads((d / "results.json").read_text())


def ratios(job: str, flat: dict, kern: dict) -> list[str]:
    out = []
    fk = {c["label"]: c for c in kern["comparisons"]}
    for c in flat["comparisons"]:
        k = fk.get(c["label"])
        if k is None or c["measured"] is None or k["measured"] is None:
            continue
        move = k["measured"] / c["measured"] - 1 if c["measured"] else float("nan")
        seed = f"{c['published']:.2f}" if c.get("published") is not None else "-"
        out.append(f"| {job} | {c['label']} ({c['metric']}) | {seed} | {c['measured']:.3f} | "
                   f"{k['measured']:.3f} | {move:+.1%} |")
    return out


def phases(job: str, flat: dict, kern: dict) -> list[str]:
    out = []
    fk = {(r["config"], r["phase"]): r for r in kern["summary"]}
    for r in flat["summary"]:
        k = fk.get((r["config"], r["phase"]))
        if k is None:
            continue
        a, b = r["sim"]["mean"], k["sim"]["mean"]
        out.append(f"| {job} | {r['config']} | {r['phase']} | {a:.4f} | {b:.4f} | "
                   f"{(b / a - 1) if a else 0:+.1%} |")
    return out


def main(argv) -> int:
    labels = ("flat 10 µs", "kernel")
    if argv and argv[0].startswith("--labels="):           # e.g. --labels="root table,loop table"
        labels = tuple(argv.pop(0).split("=", 1)[1].split(","))
    flat_dir, kern_dir, jobs = Path(argv[0]), Path(argv[1]), argv[2:]
    runs = {j: (load(flat_dir / j), load(kern_dir / j)) for j in jobs}
    print(f"| experiment | ratio | seed | {labels[0]} | {labels[1]} | change |")
    print("|---|---|--:|--:|--:|--:|")
    for j, (f, k) in runs.items():
        print("\n".join(ratios(j, f, k)))
    print()
    print(f"| experiment | configuration | phase | {labels[0]} (s) | {labels[1]} (s) | change |")
    print("|---|---|---|--:|--:|--:|")
    for j, (f, k) in runs.items():
        print("\n".join(phases(j, f, k)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
