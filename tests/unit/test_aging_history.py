"""experiments.aging without a mount: the generated history is deterministic, and free-space
fragmentation is counted from a used-block map as runs of free blocks; `simfs experiment run
git-aging` reaches it."""

from __future__ import annotations

import numpy as np

from experiments.aging.history import make_quick, need_bytes, select
from experiments.aging.measure import free_extents


def test_quick_history_is_deterministic(tmp_path):
    a = make_quick(str(tmp_path / "a"), commits=30, seed=7)
    b = make_quick(str(tmp_path / "b"), commits=30, seed=7)
    c = make_quick(str(tmp_path / "c"), commits=30, seed=8)
    assert a.commits == b.commits and len(a.commits) == 30
    assert c.commits != a.commits
    assert select(str(tmp_path / "a"), pulls=10).commits == a.commits[:11]
    assert need_bytes(a) > 29 * 32 << 10


def test_free_extents():
    used = np.array([1, 0, 0, 1, 0, 1, 1, 0, 0, 0], dtype=bool)
    assert free_extents(used) == {"free_extents": 3, "mean_free_extent_blocks": 2.0, "free_blocks": 6}
    assert free_extents(np.ones(5, dtype=bool))["free_extents"] == 0
    assert free_extents(np.zeros(4, dtype=bool))["free_extents"] == 1


def test_simfs_experiment_runs_git_aging(tmp_path):
    """`simfs experiment` lists git-aging and hands it to experiments.aging: a directory that
    is no git repository is one line, exit status 2, nothing made."""
    import subprocess
    import sys
    listed = subprocess.run([sys.executable, "-m", "simfs.cli", "experiment", "list"], capture_output=True, text=True)
    assert any(line.startswith("git-aging ") for line in listed.stdout.splitlines())
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "simfs.cli", "experiment", "run", "git-aging", "--source",
                        str(tmp_path), "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "not a git repository" in r.stderr
    assert not out.exists()


def test_simfs_experiment_passes_fill_and_profile_to_git_aging_only(tmp_path):
    """--fill reaches experiments.aging's own check (a full image is refused there); another
    experiment refuses --fill and --profile: each one line, exit status 2."""
    import subprocess
    import sys
    run = lambda *args: subprocess.run([sys.executable, "-m", "simfs.cli", "experiment", "run", *args],
                                       capture_output=True, text=True)
    r = run("git-aging", "--source", str(tmp_path), "--fill", "100")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--fill 100" in r.stderr
    r = run("readdir-order", "--quick", "--profile", "ext4", "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "git-aging's" in r.stderr
    assert not (tmp_path / "out").exists()


def test_aging_job_file_runs_through_simfs_run(tmp_path):
    """examples/jobs/git-aging.toml (an [aging] table) is handed by `simfs run` to
    experiments.aging: with --source a folder that is no git repository, that is its one-line
    refusal, exit status 2, nothing made; a key it does not know, another table beside [aging]
    and a job-runner option are refused in one line too."""
    import subprocess
    import sys
    from pathlib import Path
    example = Path(__file__).resolve().parents[2] / "examples" / "jobs" / "git-aging.toml"
    run = lambda job, *args: subprocess.run([sys.executable, "-m", "simfs.cli", "run", str(job), *args],
                                            capture_output=True, text=True)
    out = tmp_path / "out"
    r = run(example, "--source", str(tmp_path), "--out", str(out))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "not a git repository" in r.stderr
    assert not out.exists()
    bad = tmp_path / "bad.toml"
    for text, words in (('[aging]\nevry = 10\n', "no key 'evry'"),
                        ('[aging]\npulls = "ten"\n', "pulls = 'ten'"),
                        ('[aging]\npulls = 10\n[workload]\nkind = "none"\n', "only an [aging] table")):
        bad.write_text(text)
        r = run(bad, "--out", str(out))
        assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and words in r.stderr, (text, r.stderr)
    r = run(example, "--workers", "2", "--source", str(tmp_path))
    assert r.returncode == 2 and "--workers" in r.stderr and r.stderr.strip().count("\n") == 0
    assert not out.exists()
