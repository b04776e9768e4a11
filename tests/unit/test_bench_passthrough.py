"""benchmarks.bench_passthrough without a mount: the ratios it prints, its refusals, and the
vendored passthrough example being the one its README names."""

import hashlib
import re
from pathlib import Path

from benchmarks import bench_passthrough as bp


def _run(untar, tar, rm, cpu=(1, 1, 1)):
    return {"untar": untar, "cold tar": tar, "rm -rf": rm,
            "daemon_cpu": {"untar": cpu[0], "cold tar": cpu[1], "rm -rf": cpu[2]}}


def test_ratios_are_medians_per_side_and_each_cycles_own():
    runs = {"simfs": [_run(3, 2, 1), _run(30, 2, 1), _run(4, 2, 1)],
            "passthrough": [_run(1, 1, 1), _run(2, 4, 1), _run(20, 1, 2)]}
    rows = {r["phase"]: r for r in bp.summarise(runs)}
    assert rows["untar"]["simfs_s"] == 4 and rows["untar"]["passthrough_s"] == 2
    assert rows["untar"]["ratio"] == 2.0
    assert rows["untar"]["per_cycle"] == [3.0, 15.0, 0.2]
    assert rows["whole cycle"]["simfs_s"] == 7 and rows["whole cycle"]["passthrough_s"] == 7
    assert "| untar | 4.00 | 2.00 | 2.00x | 3.00, 15.00, 0.20 |" in bp.table(bp.summarise(runs))


def test_the_daemons_cpu_is_summarised_the_same_way():
    runs = {"simfs": [_run(9, 9, 9, (3, 1, 1)), _run(9, 9, 9, (5, 1, 1))],
            "passthrough": [_run(1, 1, 1, (2, 2, 2)), _run(1, 1, 1, (2, 2, 2))]}
    rows = {r["phase"]: r for r in bp.summarise(runs, cpu=True)}
    assert rows["untar"]["simfs_s"] == 4 and rows["untar"]["ratio"] == 2.0
    assert rows["untar"]["per_cycle"] == [1.5, 2.5]
    assert rows["whole cycle"]["simfs_s"] == 6 and rows["whole cycle"]["passthrough_s"] == 6


def test_cpu_seconds_of_a_process_and_of_one_gone():
    import os
    import subprocess
    import sys
    spent = bp.cpu_seconds(os.getpid())
    sum(i * i for i in range(3_000_000))
    assert bp.cpu_seconds(os.getpid()) > spent > 0
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    assert bp.cpu_seconds(p.pid) == 0.0


def test_bad_arguments_get_one_line_and_status_2(capsys):
    assert bp.main(["--cycles", "0"]) == 2
    assert bp.main(["--source", "/no/such/dir"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("bench_passthrough: ") for line in err)


def test_the_vendored_example_is_the_one_its_readme_names():
    readme = (bp.PASSTHROUGH.parent / "README.md").read_text()
    want = re.search(r"examples/passthroughfs.py \| `([0-9a-f]{64})`", readme).group(1)
    assert hashlib.sha256(Path(bp.PASSTHROUGH).read_bytes()).hexdigest() == want
    assert "LESSER GENERAL PUBLIC LICENSE" in (bp.PASSTHROUGH.parent / "LICENSE").read_text()
