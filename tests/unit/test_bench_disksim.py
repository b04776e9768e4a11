"""benchmarks/bench_disksim.py finds DiskSim's tarball beside the checkout (never on a developer's
machine) and says in one line when it cannot; benchmarks/disksim_requests.py's per-request
comparison sorts differences into whole revolutions, the rest, and pairs that cancel."""

import os
import shutil
import subprocess
import sys

import numpy as np

from benchmarks import bench_disksim
from benchmarks.disksim_requests import compare

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_tarball_is_looked_for_beside_the_checkout_only(tmp_path):
    """A checkout with no ../shared/third_party/ beside it: exit 2, one line naming where it
    looked (the checkout's ../shared/third_party/), not a fall-back to another machine's path."""
    clone = tmp_path / "clone"
    (clone / "benchmarks").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "benchmarks", "bench_disksim.py"), clone / "benchmarks")
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, str(clone / "benchmarks" / "bench_disksim.py"), "--drives", "cheetah9LP"],
                       capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert str(tmp_path / "shared" / "third_party" / "disksim-wd-2.01.016.tar.gz") in r.stderr
    assert "--disksim-src" in r.stderr


def test_the_default_tarball_is_the_third_party_readmes():
    assert bench_disksim.DEFAULT_TARBALL == os.path.normpath(
        os.path.join(ROOT, "..", "shared", "third_party", "disksim-wd-2.01.016.tar.gz"))


def test_per_request_comparison_sorts_the_differences():
    rev = 10.0
    disksim = np.array([5.0, 6.0, 7.0, 8.0, 9.0, 4.0, 3.0])
    simfs = disksim + np.array([0.0, -10.0, 0.02, 0.07, -0.07, -10.06, 0.3])
    c = compare(simfs, disksim, rev, 0.05)
    assert c["requests"] == 7
    assert list(c["differ"]) == [1, 3, 4, 5, 6]
    assert list(c["revolution"]) == [1, 5]          # -10.06: a revolution and a little
    assert list(c["other"]) == [3, 4, 6] and np.allclose(c["other_range"], (0.07, 0.3))
    assert c["pairs"] == [3]                          # +0.07 then -0.07: the clocks agree again
