"""The blktrace export of a mounted untar and of the cold tar after it, read by the real
blkparse and btt (issue 43): every event parses, no request overlaps one still in flight (a
block written again while its last write is on its way waits for it: the buffer lock), and
btt's Q2C and D2C means and its seek means equal simfs's own within 1%.

The untar runs on a small cache (2 MiB) so that write-back keeps blocks coming back while
their writes are queued: before simfs modelled the buffer lock, this untar had requests
queued behind their own block's write, and btt's Q2C was several percent off.

Budget: about 40 s (a 2,000-file tree unpacked and read back once).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from simfs.blockio.blktrace import own_figures
from simfs.blockio.trace import read_trace
from tests.conftest import run, run_simfs, tree_tarball
from tests.unit.test_trace_export import btt_figures

pytestmark = pytest.mark.skipif(not (shutil.which("blkparse") and shutil.which("btt")),
                                reason="blkparse/btt missing: install the blktrace package (make system-packages)")


def test_btt_reads_an_untar_and_a_cold_tar_with_simfs_figures(simfs_factory, tmp_path):
    tar = tree_tarball(tmp_path / "tree", seed=3, files=2000)
    m = simfs_factory(options=f"alloc=ext2,disk=sata7200,cache=2M,trace={tmp_path / 'untar.csv'}", size="256M")
    run(["tar", "xf", tar, "-C", m.mnt])
    m.umount()
    m.mount(f"alloc=ext2,disk=sata7200,trace={tmp_path / 'tar.csv'}")
    run(["tar", "cf", "/dev/zero", "."], cwd=m.mnt)
    m.umount()
    for phase in ("untar", "tar"):
        cols = read_trace(tmp_path / f"{phase}.csv")
        own = own_figures(cols)
        assert own["requests"] > 500, phase
        base = tmp_path / phase
        r = run_simfs("trace", "export", tmp_path / f"{phase}.csv", "--format", "blktrace", base)
        assert "overlap" not in r.stdout
        p = subprocess.run(["blkparse", "-i", str(base), "-d", f"{base}.bin"], capture_output=True,
                           text=True, check=True)
        n = own["requests"]
        for action in "QGIDC":         # every request's five events
            lines = re.findall(rf"^\s*8,0\s+0\s+\d+\s+\S+\s+1\s+{action}\s+(\S+) (\d+) \+ (\d+)", p.stdout, re.M)
            assert sorted((int(s), int(k)) for _, s, k in lines) == sorted(zip(cols["lba"], cols["sectors"]))
        subprocess.run(["btt", "-i", f"{base}.bin", "-o", str(base)], capture_output=True, check=True,
                       cwd=tmp_path)      # btt writes its *_fp.dat files where it runs
        got = btt_figures((tmp_path / f"{phase}.avg").read_text())
        assert got["Q2C"][1] == got["D2C"][1] == n, phase
        assert got["Q2C"][0] == pytest.approx(own["q2c"], rel=0.01), phase
        assert got["D2C"][0] == pytest.approx(own["d2c"], rel=0.01), phase
        assert got["Q2Q"] == (n, pytest.approx(own["q2q_seek_mean"], rel=0.01)), phase
        assert got["D2D"] == (n, pytest.approx(own["d2d_seek_mean"], rel=0.01)), phase
        assert own["overlapping_in_flight"] == 0, phase
