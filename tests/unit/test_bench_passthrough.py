"""benchmarks.bench_passthrough without a mount: the ratios it prints, its refusals, and the
vendored passthrough example being the one its README names."""

import hashlib
import re
from pathlib import Path

from benchmarks import bench_passthrough as bp


def _run(untar, tar, rm):
    return {"untar": untar, "cold tar": tar, "rm -rf": rm}


def test_ratios_are_medians_per_side_and_each_cycles_own():
    runs = {"simfs": [_run(3, 2, 1), _run(30, 2, 1), _run(4, 2, 1)],
            "passthrough": [_run(1, 1, 1), _run(2, 4, 1), _run(20, 1, 2)]}
    rows = {r["phase"]: r for r in bp.summarise(runs)}
    assert rows["untar"]["simfs_s"] == 4 and rows["untar"]["passthrough_s"] == 2
    assert rows["untar"]["ratio"] == 2.0
    assert rows["untar"]["per_cycle"] == [3.0, 15.0, 0.2]
    assert rows["whole cycle"]["simfs_s"] == 7 and rows["whole cycle"]["passthrough_s"] == 7
    assert "| untar | 4.00 | 2.00 | 2.00x | 3.00, 15.00, 0.20 |" in bp.table(bp.summarise(runs))


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
