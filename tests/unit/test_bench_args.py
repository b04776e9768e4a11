"""The experiments' and benchmarks' own commands (`python -m ...`, in benchmarks/README.md) refuse a bad
argument with argparse's one line and exit status 2 before any work: they used to start (a
tarball of a missing tree, a run over an unknown verb) and stop half-way with a traceback."""

from __future__ import annotations

import pytest

from benchmarks import bench_profiles, bench_seed001_scale, bench_verbs
from experiments import verbcheck


@pytest.mark.parametrize("main, args, says", [
    (verbcheck.main, ["--tree", "/no/such/tree"], "argument --tree: /no/such/tree: no such directory"),
    (verbcheck.main, ["--verbs", "find,nope"], "unknown verb 'nope'; choose from unpack, find"),
    (verbcheck.main, ["--orders", "hsh"], "unknown directory order 'hsh'"),
    (verbcheck.main, ["--allocs", "ext2,ext3"], "unknown allocator 'ext3'"),
    (verbcheck.main, ["--disk", "floppy"], "unknown disk preset 'floppy'"),
    (verbcheck.main, ["--writeback", "later"], "unknown write-back policy 'later'"),
    (verbcheck.main, ["--files", "-3"], "not a whole number of at least 1: '-3'"),
    (bench_verbs.main, ["--tree", "/no/such/tree"], "no such directory"),
    (bench_verbs.main, ["--host", "idle,sleepy"], "unknown host condition 'sleepy'; choose from idle, busy"),
    (bench_verbs.main, ["--repeat", "0"], "argument --repeat: not a whole number of at least 1"),
    (bench_seed001_scale.main, ["--files", "10000", "0"], "argument --files: not a whole number"),
    (bench_seed001_scale.main, ["--first-runs", "0"], "argument --first-runs: not a whole number"),
    (bench_seed001_scale.main, ["--dir", "/no/such/dir"], "argument --dir: /no/such/dir: no such directory"),
    (bench_profiles.main, ["--pairs", "0"], "argument --pairs: not a whole number of at least 1"),
])
def test_a_bad_argument_is_one_line_before_any_work(capsys, main, args, says):
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert says in err.splitlines()[-1]


def test_good_names_are_passed_on_as_lists():
    """The checked values are what the commands iterate over (names, not one string)."""
    from experiments import argtypes
    from policies import ALLOCATORS
    assert argtypes.listed(ALLOCATORS.resolve)("ext2,cg") == ["ext2", "cg"]
    assert argtypes.positive("12") == 12


def test_bench_profiles_prints_both_profiles_and_their_ratios(capsys):
    """One small pair: a Markdown row per measure with both medians and ratios that follow
    from them (the runs are real bench_volume processes)."""
    assert bench_profiles.main(["--pairs", "1", "--files", "50", "--big-mib", "1"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert lines[0].startswith("| measure | ext2 | ext4 |")
    rows = [line.split("|")[1:-1] for line in lines[2:]]
    assert [r[0].strip() for r in rows][:3] == ["50 small files, s", "1 MiB written in 128 KiB calls, s",
                                                 "1 MiB read, s"]
    for _, ext2, ext4, ratio, pair, _ in rows:
        assert abs(float(ext4) / float(ext2) - float(ratio)) < 0.02 * float(ratio) + 0.01
        assert ratio.strip() == pair.strip()            # one pair: its ratio is the median
