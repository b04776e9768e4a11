"""The pure half of the kernel oracle's seed rows (benchmarks/kernel_oracle_seeds.py): the figures
of a request stream (counts, histograms, read-ahead share) and the Markdown tables of a run. No
mount, no root: tests/unit/test_kernel_oracle_table.py checks them on hand-made streams."""

from __future__ import annotations

import math

SIZE_EDGES = (4, 8, 16, 32, 64, 128)                     # KiB: <=4, <=8, ... , >128
SEEK_EDGES = (0, 64, 1024, 16384, 262144)                # KiB of |jump|: 0, <=64K, <=1M, <=16M, <=256M, more
#: a phase differs when simfs's time or request count is more than this far from the kernel's
GOAL = 0.10


def _bucket(x: float, edges) -> int:
    for i, e in enumerate(edges):
        if x <= e:
            return i
    return len(edges)


def figures(cols: dict) -> dict:
    """Requests, MiB, reads, read-ahead share, and the two histograms of a trace's rows (in
    their issue order; a seek is the jump from the end of the previous request)."""
    ops, lba, n, wait = cols["op"], cols["lba"], cols["sectors"], cols["wait"]
    size = [0] * (len(SIZE_EDGES) + 1)
    seek = [0] * (len(SEEK_EDGES) + 1)
    prev = None
    for a, s in zip(lba, n):
        size[_bucket(s / 2, SIZE_EDGES)] += 1
        if prev is not None:
            seek[_bucket(abs(a - prev) / 2, SEEK_EDGES)] += 1
        prev = a + s
    reads = ops.count("R")
    ra = sum(1 for o, w in zip(ops, wait) if o == "R" and not w)
    return {"requests": len(ops), "reads": reads, "mib": sum(n) * 512 / 2**20,
            "readahead_share": ra / reads if reads else 0.0, "size_hist": size, "seek_hist": seek,
            "aligned_4k": aligned_share(lba, n)}


def aligned_share(lba, sectors, offset: int = 0) -> float:
    """The share of requests whose start and length fall on 4 KiB (8-sector) boundaries of the
    volume (`offset`: sectors before it, the partition's start on the drive)."""
    if not lba:
        return 1.0
    return sum(1 for a, s in zip(lba, sectors) if (a + offset) % 8 == 0 and s % 8 == 0) / len(lba)


def differ(k: float, s: float) -> float:
    """simfs / kernel - 1 (nan when the kernel's figure is 0)."""
    return s / k - 1 if k else (0.0 if not s else math.nan)


def misses(row: dict) -> list[str]:
    """What of a row is more than GOAL from the kernel's: "time", "requests" (none for a row
    without a kernel side)."""
    k, s = row.get("kernel"), row.get("simfs")
    if not k or not s:
        return []
    out = []
    for key, name in (("seconds", "time"), ("requests", "requests")):
        d = differ(k[key], s[key])
        if math.isnan(d) or abs(d) > GOAL + 1e-9:        # 110 / 100 - 1 is 0.1000...09
            out.append(name)
    return out


def _pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:+.0%}"


def render(res: dict) -> str:
    """A run's rows as two Markdown tables (figures, histograms) and the rows' notes."""
    head = ["config", "phase", "kind", "requests k/s", "MiB k/s", "RA share k/s", "sim s k/s", "time diff", "note"]
    body, hist, notes = [], [], []
    for r in res["rows"]:
        k, s = r.get("kernel"), r.get("simfs") or {}
        note = ""
        if r.get("note"):                 # one footnote per distinct text
            if r["note"] not in notes:
                notes.append(r["note"])
            note = f"[{notes.index(r['note']) + 1}]"
        if not k:
            body.append([r["config"], r["phase"], r["kind"].split()[0], "— / " + _n(s.get("requests")), "—", "—",
                         "— / " + (f"{s['seconds']:.3f}" if "seconds" in s else "—"), "—", note])
            continue
        if not s:                         # the kernel alone (git-aging's kernel-aged rows)
            s = {"requests": None, "mib": math.nan, "readahead_share": math.nan, "seconds": math.nan,
                 "size_hist": "—", "seek_hist": "—"}
        body.append([r["config"], r["phase"], r["kind"].split()[0], f"{k['requests']:,} / {_n(s['requests'])}",
                     f"{k['mib']:.1f} / {_f(s['mib'], '.1f')}",
                     f"{k['readahead_share']:.0%} / {_f(s['readahead_share'], '.0%')}",
                     f"{k['seconds']:.3f} / {_f(s['seconds'], '.3f')}", _pct(differ(k['seconds'], s['seconds'])), note])
        hist.append(f"| {r['config']} | {r['phase']} | {k['size_hist']} / {s['size_hist']} | "
                    f"{k['seek_hist']} / {s['seek_hist']} | {_share(k)} / {_share(s)} |")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(b) + " |" for b in body]
    hist = ["", "| config | phase | sizes KiB <=4,8,16,32,64,128,more k / s | seeks KiB 0,64,1M,16M,256M,more k / s | 4K-aligned k / s |",
            "|---|---|---|---|---|"] + hist
    opts = f", simfs -o {res['simfs_options']}" if res.get("simfs_options") else ""
    vs = render_verdicts(res.get("verdicts", [])) + render_ratios(res.get("ratios", {}))
    size = "quick" if res.get("quick", True) else f"--files {res.get('files')}"
    return (f"{res['experiment']} ({size}) on kernel {res['kernel']}{opts}, k = the kernel's stream replayed, "
            f"s = simfs\n\n" + "\n".join(lines + hist) + "\n" + ("\n" + "\n".join(f"[{i}] {n}" for i, n in enumerate(notes, 1)) + "\n" if notes else "")
            + ("\n" + vs if vs else ""))


def _share(side: dict) -> str:
    """The 4 KiB-aligned share, "—" for a run saved before it was counted."""
    return f"{side['aligned_4k']:.0%}" if "aligned_4k" in side else "—"


def _f(x: float, spec: str) -> str:
    return "—" if math.isnan(x) else format(x, spec)


def _n(x) -> str:
    return "—" if x is None else f"{x:,}"


def ratio_of(rows: list, side: str, phase: str, num: str, den: str) -> float | None:
    """num's simulated time over den's in `phase` on one side (None where a row or its figure
    is missing, or den's time is 0)."""
    def t(config):
        r = next((x for x in rows if x["config"] == config and x["phase"] == phase), None)
        return (r.get(side) or {}).get("seconds") if r else None
    a, b = t(num), t(den)
    return a / b if a is not None and b else None


def verdict(seed: float, simfs: float | None, kernel: float | None, alike: bool = False) -> str:
    """What the kernel-driven ratio says about a seed ratio: "reaches" (within GOAL of the seed:
    the file system can give it, so simfs has more to model where it misses), "misses too" (the
    seed's difference lies outside what the kernel's file system does here), "kernel runs both
    alike" (a write phase the kernel runs the same way for both configurations: it has no
    counterpart of the difference, so its ratio says nothing), or "—"."""
    if kernel is None or not seed:
        return "—"
    if alike:
        return "kernel runs both alike"
    return "reaches" if abs(kernel / seed - 1) <= GOAL + 1e-9 else "misses too"


def alike(rows: list, phase: str, num: str, den: str) -> bool:
    """Whether the kernel ran `phase` of the two configurations the same way: a write phase
    (each side allocates) with the same kernel set-up (mount options, preload) replayed on the
    same drive (seed 003's offsets differ in the drive alone: its ratio is the drive's)."""
    pick = [next((x for x in rows if x["config"] == c and x["phase"] == phase), None) for c in (num, den)]
    if None in pick or not pick[0].get("kind", "").startswith("write"):
        return False
    return all(pick[0].get(k, "") == pick[1].get(k, "") for k in ("kernel_setup", "disk"))


def verdicts(rows: list, compares: list) -> list[dict]:
    """Each published seed ratio (time ratios only) whose two configurations have rows: the
    seed's figure, simfs's and the kernel's on this run, and the verdict."""
    out = []
    for c in compares:
        if not c.published or getattr(c, "metric", "sim") != "sim":
            continue
        s = ratio_of(rows, "simfs", c.phase, c.num, c.den)
        k = ratio_of(rows, "kernel", c.phase, c.num, c.den)
        if s is None and k is None:
            continue
        out.append({"label": c.label, "seed": c.published, "simfs": s, "kernel": k,
                    "simfs_misses": s is None or abs(s / c.published - 1) > GOAL + 1e-9,
                    "verdict": verdict(c.published, s, k, alike(rows, c.phase, c.num, c.den))})
    return out


def render_verdicts(vs: list) -> str:
    """The verdicts as a Markdown table."""
    if not vs:
        return ""
    f = lambda x: "—" if x is None else f"{x:.2f}x"            # noqa: E731
    lines = ["| seed ratio | seed | simfs (this run) | kernel-driven | kernel vs seed |", "|---|--:|--:|--:|---|"]
    lines += [f"| {v['label']} | {v['seed']:.2f}x | {f(v['simfs'])} | {f(v['kernel'])} | {v['verdict']} |" for v in vs]
    return "\n".join(lines) + "\n"


def render_ratios(ratios: dict) -> str:
    """A run's own ratios (git-aging's aged/clean grep) on each side, as a Markdown table."""
    if not ratios:
        return ""
    f = lambda x: "—" if x is None else f"{x:.2f}x"            # noqa: E731
    lines = ["| ratio | kernel-driven | simfs (cpu_op_us=0) | simfs's recording (its CPU charge) |", "|---|--:|--:|--:|"]
    lines += [f"| {k} | {f(v.get('kernel'))} | {f(v.get('simfs'))} | {f(v.get('recording'))} |" for k, v in ratios.items()]
    return "\n".join(lines) + "\n"
