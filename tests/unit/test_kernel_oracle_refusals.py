"""benchmarks/kernel_oracle.py refuses in one line (exit status 2) where it cannot run: no
loop devices, no tracefs, a tree that is not there. Nothing is mounted."""

from __future__ import annotations

import pytest

from benchmarks import kernel_oracle


def refused(capsys, argv, words):
    assert kernel_oracle.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith("kernel_oracle: ") and all(w in err for w in words), err


def test_no_loop_devices(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(kernel_oracle, "LOOP_CONTROL", str(tmp_path / "loop-control"))
    monkeypatch.setattr(kernel_oracle.os, "geteuid", lambda: 0)
    refused(capsys, ["--tree", str(tmp_path)], ["no loop devices", "loop-control"])


def test_no_tracefs(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: None)
    monkeypatch.setattr(kernel_oracle, "TRACING", tmp_path / "tracing")
    monkeypatch.setattr(kernel_oracle, "run", lambda a, work: pytest.fail("ran without tracefs"))
    refused(capsys, ["--tree", str(tmp_path)], ["tracefs unavailable"])


def test_not_root(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(kernel_oracle.os, "geteuid", lambda: 1000)
    refused(capsys, ["--tree", str(tmp_path)], ["needs root"])


@pytest.mark.parametrize("argv, words", [(["--tree", "/no/such/tree"], ["no such directory"]),
                                         (["--disk", "nosuchdrive"], ["--disk", "unknown disk preset"])])
def test_bad_arguments(monkeypatch, capsys, argv, words):
    monkeypatch.setattr(kernel_oracle, "LOOP_CONTROL", "/")      # exists: past the loop check
    monkeypatch.setattr(kernel_oracle.os, "geteuid", lambda: 0)
    refused(capsys, argv, words)


# --experiment: the seeds' phases (benchmarks/kernel_oracle_seeds.py) -------------------------------
from benchmarks import kernel_oracle_seeds as seeds  # noqa: E402


@pytest.mark.parametrize("argv, words", [
    (["--experiment", "nosuch"], ["--experiment nosuch", "not an experiment"]),
    (["--experiment", "alignment", "--config", "offset 99"], ["--config offset 99", "offset 34, offset 40"]),
    (["--experiment", "readdir-order", "--config", "linear*"], ["--config linear*", "dirorder=hash"]),
    (["--config", "*"], ["--config needs --experiment"]),
    (["--files", "5000"], ["--files needs --experiment"]),
    (["--experiment", "readdir-order", "--files", "0"], ["--files 0", "at least 1"]),
    (["--experiment", "readdir-order", "--phases", "unpack,find"], ["--phases unpack,find", "unpack, find-d"]),
    (["--experiment", "readdir-order-ext4", "--phases", ""], ["--phases ", "unpack, find-d"]),
])
def test_experiment_mode_bad_arguments(monkeypatch, capsys, argv, words):
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: pytest.fail("went past the argument checks"))
    refused(capsys, argv, words)


def test_experiment_mode_without_a_memory_cgroup(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(seeds, "CGROUP", tmp_path / "memory")
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: pytest.fail("went past the cgroup check"))
    refused(capsys, ["--experiment", "ext2fs-2010"], ["no cgroup v1 memory controller"])


def test_experiment_mode_inode_order_needs_spd_readdir(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(seeds, "CGROUP", tmp_path)
    (tmp_path / "memory.limit_in_bytes").write_text("0")
    monkeypatch.setattr(seeds, "spd_source", lambda: None)
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: pytest.fail("went past the spd_readdir check"))
    refused(capsys, ["--experiment", "readdir-order"], ["spd_readdir.c not found"])


def test_experiment_mode_fsck_needs_e2fsck(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(seeds, "CGROUP", tmp_path)
    (tmp_path / "memory.limit_in_bytes").write_text("0")
    monkeypatch.setattr(seeds.shutil, "which", lambda tool: None if tool == "e2fsck" else "/bin/" + tool)
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: pytest.fail("went past the e2fsck check"))
    refused(capsys, ["--experiment", "alignment"], ["e2fsck is not installed"])


def test_experiment_mode_mmap_needs_bdi(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(seeds, "CGROUP", tmp_path)
    (tmp_path / "memory.limit_in_bytes").write_text("0")
    monkeypatch.setattr(seeds, "BDI", tmp_path / "bdi")
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: pytest.fail("went past the bdi check"))
    refused(capsys, ["--experiment", "mmap-fragmentation"], ["no ", "bdi"])


def test_experiment_mode_no_tracefs(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(seeds, "refusal", lambda *a: None)
    monkeypatch.setattr(kernel_oracle, "preflight", lambda a: None)
    monkeypatch.setattr(kernel_oracle, "TRACING", tmp_path / "tracing")
    monkeypatch.setattr(seeds, "run_seed", lambda *a, **k: pytest.fail("ran without tracefs"))
    refused(capsys, ["--experiment", "readdir-order"], ["tracefs unavailable"])


def test_stream_figures_histograms():
    cols = {"op": ["R", "R", "W", "R"], "lba": [0, 8, 4096, 16], "sectors": [8, 256, 8, 8],
            "wait": [1, 0, 0, 1]}
    f = seeds.figures(cols)
    assert f["requests"] == 4 and f["reads"] == 3 and f["readahead_share"] == pytest.approx(1 / 3)
    assert f["size_hist"] == [3, 0, 0, 0, 0, 1, 0]          # 4 KiB x3, 128 KiB x1
    # jumps from the previous request's end: 0 (8 after 0+8), 1,916 KiB (4096 after 264), 2,042 KiB back
    assert f["seek_hist"] == [1, 0, 0, 2, 0, 0]


# benchmarks/kernel_cpu_per_op.py (issue 50 item 4's measurement) ---------------------------------
from benchmarks import kernel_cpu_per_op as cpu  # noqa: E402


def test_cpu_per_op_needs_root(monkeypatch, capsys):
    monkeypatch.setattr(cpu.os, "geteuid", lambda: 1000)
    assert cpu.main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == "kernel_cpu_per_op: needs root (loop devices, mount, drop_caches)"


def test_strace_summary_total_is_the_calls_column(tmp_path):
    p = tmp_path / "s"
    p.write_text("% time     seconds  usecs/call     calls    errors syscall\n"
                 "------ ----------- ----------- --------- --------- ----------------\n"
                 " 60.00    0.006000           3      2000        12 newfstatat\n"
                 " 40.00    0.004000           2      1456           getdents64\n"
                 "------ ----------- ----------- --------- --------- ----------------\n"
                 "100.00    0.010000           2      3456        12 total\n")
    assert cpu.strace_calls(p) == 3456
    p.write_text("no summary\n")
    with pytest.raises(cpu.Failed):
        cpu.strace_calls(p)
