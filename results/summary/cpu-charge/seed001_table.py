import json, sys
f = json.load(open(sys.argv[1] + "/results.json")); k = json.load(open(sys.argv[2] + "/results.json"))
def sims(d): return {(r["phase"], r["order"]): r["sim"] for r in d["rows"]}
F, K = sims(f), sims(k)
seed = {"find-d": 4.82, "find-f": 4.77, "cp-a": 2.20, "rm-rf": 0.34}
print("| ratio | seed | flat 10 µs | kernel | change |")
print("|---|--:|--:|--:|--:|")
for ph in ("find-d", "find-f", "cp-a", "rm-rf"):
    for num in ("hash", "linear"):
        a, b = F[(ph, num)] / F[(ph, "inode")], K[(ph, num)] / K[(ph, "inode")]
        print(f"| {ph}: {num} / inode | {seed[ph] if num == 'hash' else '-'} | {a:.2f} | {b:.2f} | {b / a - 1:+.1%} |")
print()
print("| phase | order | flat 10 µs (s) | kernel (s) | change |")
print("|---|---|--:|--:|--:|")
for key in F:
    print(f"| {key[0]} | {key[1]} | {F[key]:.3f} | {K[key]:.3f} | {K[key] / F[key] - 1:+.1%} |")
