"""A verb job on images aged by a synthetic profile (issue 55 item 1): in-process throughout
(the aging and the verbs), so no mount. Checked: both repetitions give the same figures (the
aged image is cached by recipe), the figures are not the fresh run's, each configuration's
cached image is e2fsck-clean at the fullness asked, and a second run ages nothing again."""

from __future__ import annotations

import json

import pytest

from tests.conftest import e2fsck
from tests.helpers import run_job_sims, tree_ab_job

pytestmark = pytest.mark.long
JOB = tree_ab_job("synthetic-ab", "32M", ("ext2", "mballoc"))


def test_a_job_on_synthetic_aged_images(tmp_path):
    fresh, aged = tmp_path / "fresh.toml", tmp_path / "aged.toml"
    fresh.write_text(JOB)
    aged.write_text(JOB + '\n[aged]\nhistory = "synthetic"\nprofile = "agrawal"\nfull = 60\nchurn = 0.5\n')
    cache = tmp_path / "cache"
    f, a = run_job_sims(fresh, tmp_path / "fresh", cache), run_job_sims(aged, tmp_path / "aged", cache)
    assert {k: v for k, v in a.items() if k[1] == 0} == {(c, 0, p): v for (c, r, p), v in a.items() if r == 1}
    assert any(a[k] != f[k] for k in f if k[2] == "unpack")
    entries = sorted(cache.glob("syn-*.img"))
    assert len(entries) == 2                                   # one per configuration
    for img in entries:
        reached = json.loads(img.with_suffix(".json").read_text())["reached"]
        assert abs(reached["used_pct"] - 60) <= 0.5 and reached["deleted"] > 0
        rc, out = e2fsck(img)
        assert rc == 0, out
    mtimes = [p.stat().st_mtime_ns for p in entries]
    run_job_sims(aged, tmp_path / "again", cache)
    assert [p.stat().st_mtime_ns for p in sorted(cache.glob("syn-*.img"))] == mtimes
