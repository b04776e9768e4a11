"""Where a run's measurements go: measurements.jsonl as they are made (a run that stops keeps
them; --resume reads them back), then results.json, results.csv, summary.md and the pictures.
"""

from __future__ import annotations

import csv
import json
import os

from experiments.report import fmt_ratio, fmt_s, markdown

from .measure import FIELDS

MEASUREMENTS = "measurements.jsonl"


class Sink:
    """Appends each measurement to OUT/measurements.jsonl (flushed and fsynced) and keeps it."""

    def __init__(self, out: str):
        self.path = os.path.join(out, MEASUREMENTS)
        self.rows = load(out)
        with open(self.path, "w") as f:        # without a last line a crash cut short
            f.writelines(json.dumps(r, sort_keys=True) + "\n" for r in self.rows)

    def __call__(self, row: dict) -> None:
        row = {k: (float(v) if hasattr(v, "dtype") else v) for k, v in row.items()}
        with open(self.path, "a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.rows.append(row)
        print(f"  {row['engine']:8} {row['config']:18} pulls {row['pulls']:5}: grep aged "
              f"{fmt_s(row['aged_grep_s'])} s, clean {fmt_s(row['clean_grep_s'])} s "
              f"({fmt_ratio(row['ratio'])}), layout {row['aged_layout']:.3f} vs {row['clean_layout']:.3f}",
              flush=True)

    def done(self, config: str, engine: str) -> set[int]:
        return {r["pulls"] for r in self.rows if r["config"] == config and r["engine"] == engine}


def load(out: str) -> list[dict]:
    """The measurements made so far (a last line cut short by a crash is left out)."""
    path = os.path.join(out, MEASUREMENTS)
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    break
    return rows


_FILES: dict[tuple[str, str], int | None] = {}


def tree_files(repo: str, commit: str) -> int | None:
    """The files (blobs and symlinks) in COMMIT's tree: what the aged tree holds after that
    pull (None when the repository cannot say)."""
    _seen = _FILES
    if (repo, commit) not in _seen:
        import subprocess
        r = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", commit], capture_output=True)
        _seen[repo, commit] = r.stdout.count(b"\n") if r.returncode == 0 and commit else None
    return _seen[repo, commit]


def write(out: str, run: dict, rows: list[dict]) -> None:
    """results.json (the run and every measurement, with the tree's file count), results.csv,
    summary.md."""
    rows = sorted(rows, key=lambda r: (r["engine"] != "mounted", r["config"], r["pulls"]))
    for r in rows:
        if "files" not in r and run.get("repo"):
            r["files"] = tree_files(run["repo"], r.get("commit", ""))
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"run": run, "measurements": rows}, f, indent=1)
    with open(os.path.join(out, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS + ("files",), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    table = markdown(["configuration", "engine", "pulls", "files", "grep aged (s)", "grep clean (s)",
                      "aged/clean", "layout aged", "layout clean", "free extents",
                      "mean free extent (blocks)", "blocks in use"],
                     [[r["config"], r["engine"], str(r["pulls"]), _count(r.get("files")), fmt_s(r["aged_grep_s"]),
                       fmt_s(r["clean_grep_s"]), fmt_ratio(r["ratio"]), _score(r["aged_layout"]),
                       _score(r["clean_layout"]), str(r["free_extents"]),
                       f"{r['mean_free_extent_blocks']:,.1f}", _pct(r.get("used_pct"))] for r in rows])
    with open(os.path.join(out, "summary.md"), "w") as f:
        segs = run.get("segments") or []
        done = segs[-1]["last"] if segs else run["pulls"]
        pulls = f"{run['pulls']} pulls" if done >= run["pulls"] else f"{done} of {run['pulls']} pulls (recorded so far)"
        f.write(f"# Aging: {pulls} of {run['history']}\n\n{_about(run, rows)}\n\n{table}\n"
                + _rates_section(run))


def rates(run: dict) -> list[dict]:
    """Each mount of a --segment recording: its pulls, the tree's files after them, the real
    seconds the recording took (mounted measurements included) and the CPU seconds of its daemon
    and of the tools it ran, the operations its log holds,
    per pull, the seconds giving its log stand-ins took
    (canon) and each replay of its log took, per pull, and the load average at the mount's start
    and end (how busy the machine was: the times are wall-clock)."""
    out = []
    replayed = run.get("replayed", {})
    for j, seg in enumerate(run.get("segments", [])):
        n = seg["last"] - seg["first"] + 1
        commits = run.get("commits", [])
        r = {"log": j, "first": seg["first"], "last": seg["last"], "pulls": n,
             "files": tree_files(run["repo"], commits[seg["last"]]) if run.get("repo") and seg["last"] < len(commits) else None,
             "record_s": seg["wall"], "record_s_per_pull": seg["wall"] / n, "load": seg.get("load"),
             "canon_s": seg.get("canon_s"), "ops_per_pull": seg["ops"] / n if seg.get("ops") else None,
             "daemon_cpu_per_pull": seg["daemon_cpu"] / n if seg.get("daemon_cpu") is not None else None,
             "tools_cpu_per_pull": seg["tools_cpu"] / n if seg.get("tools_cpu") is not None else None,
             "evictions": seg.get("evictions")}
        for alloc, walls in replayed.items():
            if str(j) in walls:
                r[f"replay {alloc}_s"] = walls[str(j)]
                r[f"replay {alloc}_s_per_pull"] = walls[str(j)] / n
                cpu = run.get("replayed_cpu", {}).get(alloc, {}).get(str(j))
                r[f"replay {alloc}_cpu_per_pull"] = None if cpu is None else cpu / n
        out.append(r)
    return out


def _per(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def _rates_section(run: dict) -> str:
    rs = rates(run)
    if not run.get("segment") or not rs:
        return ""
    allocs = sorted(run.get("replayed", {}))
    head = ["pulls", "files after", "operations per pull", "recording (s)", "s/pull", "daemon CPU s/pull",
            "git etc. CPU s/pull", "load (start, end)", "stand-ins (s)", "host evictions"]
    head += [x for a in allocs for x in (f"replay {a} (s)", "s/pull", "CPU s/pull")]
    body = []
    for r in rs:
        line = [f"{r['first']}..{r['last']}", _count(r["files"]),
                "—" if r["ops_per_pull"] is None else f"{r['ops_per_pull']:,.0f}", f"{r['record_s']:,.1f}",
                f"{r['record_s_per_pull']:.2f}", _per(r["daemon_cpu_per_pull"]), _per(r["tools_cpu_per_pull"]),
                ", ".join(f"{x:.1f}" for x in r["load"] or ()),
                "—" if r["canon_s"] is None else f"{r['canon_s']:,.1f}",
                "—" if r["evictions"] is None else f"{r['evictions']:,}"]
        for a in allocs:
            w = r.get(f"replay {a}_s")
            line += (["—", "—", "—"] if w is None else
                     [f"{w:,.1f}", f"{r[f'replay {a}_s_per_pull']:.3f}", _per(r.get(f"replay {a}_cpu_per_pull"))])
        body.append(line)
    return (f"\n## Real time per mount (--segment {run['segment']})\n\nWall-clock seconds on the machine "
            f"as it was (the load average says how busy); each mount's measurements are in its "
            f"recording time, each replayed clean copy in its replay time. CPU: the mount's daemon "
            f"(from /proc), git and the other tools the recording ran (not the clean copies' "
            f"daemons), the replay's process: what the wall-clock figures cost on an idle core. "
            f"Stand-ins: giving the "
            f"log git's random names' stand-ins (experiments.aging.canon), once. Host evictions: inodes the "
            f"host's reclaim made the kernel forget and then ask for again (0 on a quiet host; otherwise "
            f"the log's FORGETs and LOOKUPs depend on the host too).\n\n{markdown(head, body)}\n")


def _count(x) -> str:
    return "—" if x is None else f"{x:,}"


def _score(x) -> str:
    return "—" if x is None else f"{x:.3f}"


def _pct(x) -> str:
    return "—" if x is None else f"{x:.1f}%"


def _fill(run: dict, rows: list[dict]) -> str:
    """The nearly-full variant's sentence (empty without --fill)."""
    if not run.get("fill"):
        return ""
    got = sorted({f"{r['filled_pct']:.2f}%" for r in rows if r.get("filled_pct") is not None})
    reached = f" (reached: {', '.join(got)})" if got else ""
    return (f" Nearly full: before the first pull the image was filled to {run['fill']:g}% of its "
            f"blocks with static filler files that stayed{reached}; the clean copies are not filled.")


def _about(run: dict, rows: list[dict] = ()) -> str:
    stopped = "".join(f" The replay under {k} stopped: {v}." for k, v in run.get("stopped", {}).items())
    return (f"Every {run['every']} pulls, each cold: `grep -r` of the aged tree, and of a clean "
            f"copy (`cp -a` onto a fresh image of the same configuration). The pulls ran as real "
            f"git on a simfs mount with alloc={run['mounted']}; the other configurations replayed "
            f"its op log in-process. Profile {run.get('profile', 'ext2')}, disk {run['disk']}, "
            f"image {run['size'] >> 20} MiB, block size {run['block_size']}.{_fill(run, rows)}{stopped}"
            + (" Real time: " + ", ".join(f"{k} {v:,.0f} s" for k, v in run["wall"].items()) + "."
               if run.get("wall") else "")
            + (" Real time per mount: below." if run.get("segment") else ""))
