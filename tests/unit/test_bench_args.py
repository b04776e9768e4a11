"""The experiments' and benchmarks' own commands (`python -m ...`, in benchmarks/README.md) refuse a bad
argument with argparse's one line and exit status 2 before any work: they used to start (a
tarball of a missing tree, a run over an unknown verb) and stop half-way with a traceback."""

from __future__ import annotations

import pytest

from benchmarks import bench_seed001_scale, bench_verbs
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
