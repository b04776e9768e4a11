"""The git-aging rows of the kernel oracle (benchmarks/kernel_oracle_aging.py): its SEEDS entry's
refusals and configuration (one line, exit status 2, before anything is made), simfs's mount
options, the grep that succeeds on no match, the aged/clean ratio and its table. Nothing is
mounted."""

from __future__ import annotations

import subprocess

import pytest

from benchmarks import kernel_oracle, kernel_oracle_aging as aging, kernel_oracle_seeds as seeds
from benchmarks.kernel_oracle_report import compares_of
from benchmarks.kernel_oracle_table import render

PLAN = {"mounted": "ext2", "disk": "sata7200", "size": 64 << 20, "block_size": 4096, "dataless": False,
        "profile": "ext2", "dirorder": "linear", "fill": 0}


def refused(capsys, argv, words):
    assert kernel_oracle.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("kernel_oracle: ") and all(w in err for w in words), err


@pytest.mark.parametrize("argv, words", [
    (["--experiment", "git-aging", "--files", "100"], ["--files 100", "generated history"]),
    (["--experiment", "git-aging", "--phases", "aged-grep,find-d"], ["--phases aged-grep,find-d",
                                                                      "pulls, aged-grep, clean-grep"]),
    (["--experiment", "git-aging", "--config", "ext4"], ["--config ext4", "(they are: ext2, kernel-aged)"]),
])
def test_git_aging_bad_arguments(monkeypatch, capsys, argv, words):
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: pytest.fail("went past the argument checks"))
    refused(capsys, argv, words)


def test_git_aging_needs_git(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(seeds, "CGROUP", tmp_path)
    (tmp_path / "memory.limit_in_bytes").write_text("0")
    monkeypatch.setattr(seeds.shutil, "which", lambda tool: None if tool == "git" else "/bin/" + tool)
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: pytest.fail("went past the git check"))
    refused(capsys, ["--experiment", "git-aging"], ["git is not installed", "git-aging"])


def test_git_aging_is_a_seed_with_its_own_runner(monkeypatch, tmp_path):
    """run_seed hands git-aging (no job file) to its runner with the arguments as given; the
    other seeds' verdicts have no ratio of it to recompute."""
    seen = {}
    monkeypatch.setattr(seeds.SEEDS["git-aging"], "runner", lambda *a: seen.setdefault("args", a) and {"rows": []})
    seeds.run_seed("git-aging", tmp_path, None, config="ext2", simfs_options="x=1", phases=["clean-grep"])
    assert seen["args"][0] == "git-aging" and seen["args"][5:] == ("ext2", "x=1", None, ["clean-grep"])
    monkeypatch.setattr(seeds, "CGROUP", tmp_path)
    (tmp_path / "memory.limit_in_bytes").write_text("0")
    monkeypatch.setattr(seeds.shutil, "which", lambda tool: "/bin/" + tool)
    assert seeds.refusal("git-aging", "ext*", None, "pulls,aged-grep") is None
    assert compares_of("git-aging") == []
    from experiments.aging.cli import DEFAULT_ALLOC   # the configuration is the recording's mounted one
    assert seeds.SEEDS["git-aging"].configs == (DEFAULT_ALLOC["ext2"], "kernel-aged")


def test_a_failed_recording_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(seeds, "refusal", lambda *a: None)
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: None)
    monkeypatch.setattr(kernel_oracle.Tracefs, "available", lambda self: None)
    monkeypatch.setattr(aging.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(
        a[0], 2, "", "aging: the pulls run on a simfs mount: run as root\n"))
    assert kernel_oracle.main(["--experiment", "git-aging"]) == 2
    out, err = capsys.readouterr()             # the progress line, then the refusal's one line
    assert out == "" and err.strip().splitlines()[-1] == (
        "kernel_oracle: the git-aging recording (experiments.aging --quick): the pulls run on a simfs mount: "
        "run as root"), err


def test_simfs_options_are_the_recordings_with_no_cpu_and_the_drive():
    got = aging.simfs_options(PLAN, "sas10k", "inode_readahead_blks=32").split(",")
    assert got[:2] == ["alloc=ext2", "dirorder=linear"]
    assert "cpu_op_us=0" in got and [o for o in got if o.startswith("disk=")] == ["disk=sas10k"]
    assert got[-1] == "inode_readahead_blks=32"          # --simfs-options last: they win


def test_grep_succeeds_on_no_match_only(tmp_path):
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.c").write_text("int x;\n")
    assert subprocess.run(aging.grep_command(tmp_path), shell=True).returncode == 0
    (tmp_path / "tree" / "b.c").write_text(aging.grep_command(tmp_path))       # a match: still 0
    assert subprocess.run(aging.grep_command(tmp_path), shell=True, capture_output=True).returncode == 0
    assert subprocess.run(aging.grep_command(tmp_path / "none"), shell=True, capture_output=True).returncode != 0


def test_ratio_and_its_table():
    rows = [{"config": "ext2", "phase": "pulls", "kind": "simfs only", "kernel": None, "simfs": {}},
            {"phase": "aged-grep", "kernel": {"seconds": 0.3}, "simfs": {"seconds": 0.4}},
            {"phase": "clean-grep", "kernel": {"seconds": 0.03}, "simfs": {"seconds": 0.025}}]
    assert aging.ratio(rows, "kernel") == pytest.approx(10.0)
    assert aging.ratio(rows, "simfs") == pytest.approx(16.0)
    assert aging.ratio(rows[:2], "kernel") is None
    res = {"experiment": "git-aging", "kernel": "6.x", "rows": rows[:1], "verdicts": [],
           "ratios": {"aged/clean grep": {"kernel": 10.0, "simfs": 16.0, "recording": None}}}
    assert "| aged/clean grep | 10.00x | 16.00x | — |" in render(res)


def test_a_kernel_only_row_renders_and_stays_out_of_the_compact_table():
    """kernel-aged rows have no simfs side: "—" in its columns, no time diff, not in the section's table."""
    from benchmarks.kernel_oracle_report import compact
    k = {"requests": 40, "reads": 40, "mib": 1.0, "readahead_share": 0.5, "seconds": 0.2, "size_hist": [1],
         "seek_hist": [2], "aligned_4k": 1.0}
    row = {"config": "kernel-aged", "phase": "aged-grep", "kind": "read (the kernel's own image)",
           "kernel": k, "simfs": {}}
    out = render({"experiment": "git-aging", "kernel": "6.x", "rows": [row]})
    assert "| kernel-aged | aged-grep | read | 40 / — | 1.0 / — | 50% / — | 0.200 / — | — |" in out, out
    assert "kernel-aged" not in compact({"git-aging": {"experiment": "git-aging", "rows": [row]}})
