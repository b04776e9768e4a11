"""The aging run's written results carry the tree's file count at each measurement (issue 55
item 3): the files of the measured commit's tree, as `git ls-tree -r` lists them."""

from __future__ import annotations

import json
import subprocess

from experiments.aging.history import make_quick
from experiments.aging.results import tree_files, write


def _row(pulls, commit):
    return {"config": "ext2", "engine": "mounted", "pulls": pulls, "commit": commit, "aged_grep_s": 2.0,
            "clean_grep_s": 1.0, "ratio": 2.0, "aged_layout": 0.5, "clean_layout": 0.9, "free_extents": 3,
            "mean_free_extent_blocks": 10.0, "free_blocks": 30, "used_pct": 1.0, "filled_pct": None}


def test_file_counts_are_the_measured_commits(tmp_path):
    h = make_quick(str(tmp_path / "h"), commits=5)
    want = [len(subprocess.run(["git", "-C", h.repo, "ls-tree", "-r", "--name-only", c], capture_output=True,
                               text=True, check=True).stdout.split()) for c in h.commits]
    assert [tree_files(h.repo, c) for c in h.commits] == want and len(set(want)) > 1
    run = {"repo": h.repo, "history": "quick", "pulls": 4, "every": 2, "mounted": "ext2", "disk": "sata7200",
           "size": 64 << 20, "block_size": 4096}
    (tmp_path / "out").mkdir()
    write(str(tmp_path / "out"), run, [_row(2, h.commits[2]), _row(4, h.commits[4])])
    rows = json.loads((tmp_path / "out" / "results.json").read_text())["measurements"]
    assert [r["files"] for r in rows] == [want[2], want[4]]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| files |" in summary and f"| 4 | {want[4]} |" in summary
    assert tree_files(h.repo, "") is None


def test_a_segmented_runs_summary_gives_each_mounts_rates(tmp_path):
    """A --segment run's summary.md has a row per mount: its pulls, the tree's files after them
    (git ls-tree of its last commit), the recording's and each replay's seconds and per pull,
    the load average, the inodes the host evicted (a log not yet given stand-ins: unknown); a
    log not yet replayed shows a dash."""
    from experiments.aging.results import rates
    h = make_quick(str(tmp_path / "repo"), 11)
    run = {"pulls": 10, "every": 5, "history": "h", "repo": h.repo, "commits": h.commits, "mounted": "ext2",
           "disk": "sata7200", "size": 64 << 20, "block_size": 4096, "segment": 5, "wall": {},
           "segments": [{"first": 0, "last": 5, "wall": 12.0, "load": [1.0, 2.5], "canon_s": 0.4,
                         "ops": 600, "daemon_cpu": 3.0, "tools_cpu": 1.2, "evictions": 0},
                        {"first": 6, "last": 10, "wall": 10.0, "load": [2.0, 2.0]}],
           "replayed": {"cg": {"0": 3.0}}, "replayed_cpu": {"cg": {"0": 2.4}}}
    got = rates(run)
    assert [(r["first"], r["last"], r["pulls"], r["files"]) for r in got] == [
        (0, 5, 6, tree_files(h.repo, h.commits[5])), (6, 10, 5, tree_files(h.repo, h.commits[10]))]
    assert got[0]["record_s_per_pull"] == 2.0 and got[0]["replay cg_s_per_pull"] == 0.5
    assert "replay cg_s" not in got[1]
    write(str(tmp_path), run, [])
    text = (tmp_path / "summary.md").read_text()
    assert text.startswith("# Aging: 10 pulls of h") and "Real time per mount: below." in text
    write(str(tmp_path), {**run, "pulls": 20}, [])
    assert (tmp_path / "summary.md").read_text().startswith("# Aging: 10 of 20 pulls (recorded so far) of h")
    write(str(tmp_path), run, [])
    text = (tmp_path / "summary.md").read_text()
    assert "| 0..5 |" in text and "| 100 | 12.0 |" in text
    assert "| 12.0 | 2.00 | 0.500 | 0.200 | 1.0, 2.5 | 0.4 | 0 | 3.0 | 0.500 | 0.400 |" in text
    assert text.rstrip().endswith("| — | 10.0 | 2.00 | — | — | 2.0, 2.0 | — | — | — | — | — |")
