"""xfstests, the Linux file-system regression suite, on simfs (issue 38): a fixed subset of
`-g quick` (tests/xfstests/subset.txt) run as README.fuse says (FSTYP=fuse, FUSE_SUBTYP=.simfs,
`mount -t fuse.simfs IMAGE DIR`), every test of it required to pass, then e2fsck on both images.

The subset is tests that pass on simfs and on the kernel's ext2 (results/xfstests/README.md has
both whole runs), spread over generic/'s areas and quick; one `./check` runs them all. xfstests is
built by `make test` (Makefile: xfstests-build-if-present) from ../shared/third_party's bundle
beside the checkout, or XFSTESTS_SOURCE; where there is no source these tests skip and say so.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.xfstests import run as xrun

SUBSET = [line.split("#")[0].strip()
          for line in (Path(xrun.__file__).with_name("subset.txt")).read_text().splitlines()
          if line.split("#")[0].strip()]


def _source() -> str:
    return os.environ.get("XFSTESTS_SOURCE") or xrun.default_source()


@pytest.fixture(scope="module")
def subset_run(tmp_path_factory) -> tuple[dict, Path]:
    """One ./check over the subset (built first if `make test` did not): {test: row}, work dir.
    A test running over 120 s is killed and so fails; the whole run stays inside pytest's
    600 s (it takes about 90 s here)."""
    if os.geteuid() != 0:
        pytest.skip("xfstests mounts and makes users: run as root")
    if not xrun.source_present(_source()):
        pytest.skip(f"no xfstests source: {_source()} is absent (make test builds xfstests from "
                    "../shared/third_party/xfstests-history.bundle, or XFSTESTS_SOURCE)")
    work = tmp_path_factory.mktemp("xfstests")
    r = subprocess.run([sys.executable, str(Path(xrun.__file__)), "run", "--source", _source(),
                        "--fs", "simfs", "--work", str(work / "run"), "--timeout", "540",
                        "--test-timeout", "120",
                        "--", *SUBSET], capture_output=True, text=True, timeout=580)
    results = work / "run" / "results.csv"
    assert r.returncode == 0 and results.exists(), f"xfstests did not run:\n{r.stderr[-3000:]}"
    with open(results) as f:
        return {row["test"]: row for row in csv.DictReader(f)}, work / "run"


def test_subset_is_forty_tests_over_generic_areas():
    assert len(SUBSET) >= 40 and len(set(SUBSET)) == len(SUBSET)
    assert all(t.startswith("generic/") for t in SUBSET)


@pytest.mark.mount
@pytest.mark.parametrize("test", SUBSET)
def test_xfstests_passes(subset_run, test):
    rows, work = subset_run
    row = rows.get(test)
    assert row is not None, f"{test} is not in xfstests' report"
    if row["status"] != "pass":
        bad = work / "results" / (test + ".out.bad")
        diff = bad.read_text(errors="replace")[-2000:] if bad.exists() else ""
        pytest.fail(f"{test}: {row['status']}: {row['message']}\n{textwrap.indent(diff, '  ')}")


@pytest.mark.mount
def test_images_clean_after_subset(subset_run):
    """xfstests cannot check a FUSE file system itself; e2fsck can: both images clean."""
    _, work = subset_run
    for img in ("test.img", "scratch.img"):
        r = subprocess.run(["e2fsck", "-fn", str(work / img)], capture_output=True, text=True)
        assert r.returncode == 0, f"e2fsck -fn {img}: {r.returncode}\n{r.stdout[-2000:]}"


def test_report_parsing(tmp_path):
    """pass, failure and skipped testcases in xfstests' xunit report read as pass/fail/notrun."""
    xml = tmp_path / "result.xml"
    xml.write_text(
        '<testsuite name="xfstests" tests="3" failures="1" skipped="1">'
        '<testcase classname="xfstests.global" name="generic/001" time="3"></testcase>'
        '<testcase classname="xfstests.global" name="generic/002" time="1">'
        '<failure message="- output mismatch (see x)" type="TestFail"/></testcase>'
        '<testcase classname="xfstests.global" name="generic/003" time="0">'
        '<skipped message="O_TMPFILE is not supported"/></testcase></testsuite>')
    rows = {r["test"]: r for r in xrun.parse_xunit(str(xml))}
    assert [rows[t]["status"] for t in ("generic/001", "generic/002", "generic/003")] == \
        ["pass", "fail", "notrun"]
    assert rows["generic/003"]["message"] == "O_TMPFILE is not supported"
