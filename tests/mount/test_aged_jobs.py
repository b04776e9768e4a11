"""A job on aged images (issue 55 item 1): `[aged]` pulls a small generated history once on a
simfs mount (recorded), then every configuration and repetition of an in-process verb job
starts from its fresh image with that recording replayed onto it. Checked: both repetitions
give the same figures (the same bytes: the aged image is cached by recipe), the aged run's
figures are not the fresh run's, the cached aged images are clean for e2fsck and hold the
pulled tree, and a second run reuses the cache without recording again.
Budget: about a minute (5 pulls mounted, two in-process replays, three short verb runs)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import e2fsck
from tests.helpers import run_job_sims, tree_ab_job

pytestmark = pytest.mark.mount
JOB = tree_ab_job("aged-ab", "64M", ("ext2", "cg"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the pulls are recorded on a simfs mount: root only")
    from experiments.aging.history import make_quick
    base = tmp_path_factory.mktemp("aged-job")
    hist = make_quick(str(base / "history"), commits=6)
    fresh, aged = base / "fresh.toml", base / "aged.toml"
    fresh.write_text(JOB)
    aged.write_text(JOB + f'\n[aged]\npulls = 5\nrepo = "{hist.repo}"\n')
    cache = base / "cache"
    return {"fresh": run_job_sims(fresh, base / "fresh", cache), "aged": run_job_sims(aged, base / "aged", cache),
            "cache": cache, "job": aged, "base": base}


def test_every_repetition_starts_from_the_same_aged_bytes(runs):
    got = runs["aged"]
    for alloc in ("alloc=ext2", "alloc=cg"):
        for ph in ("unpack", "find"):
            assert got[(alloc, 0, ph)] == got[(alloc, 1, ph)], (alloc, ph)


def test_aged_figures_are_not_the_fresh_ones(runs):
    assert runs["aged"] != runs["fresh"]
    assert runs["fresh"][("alloc=ext2", 0, "find")] == runs["fresh"][("alloc=ext2", 1, "find")]


def test_aged_images_are_clean_and_hold_the_pulled_tree(runs):
    images = sorted(runs["cache"].glob("img-*.img"))
    assert len(images) == 2                              # one per configuration, shared by the repetitions
    for img in images:
        rc, out = e2fsck(img)
        assert rc == 0, out
        ls = subprocess.run(["debugfs", "-R", "ls /aged", str(img)], capture_output=True, text=True).stdout
        assert all(d in ls for d in ("include", "src", "tests")), ls


def test_a_second_run_reuses_the_cache(runs):
    recs = sorted(runs["cache"].glob("rec-*/aged.oplog.gz"))
    assert len(recs) == 1
    before = {p: p.stat().st_mtime_ns for p in [*recs, *runs["cache"].glob("img-*.img")]}
    again = run_job_sims(runs["job"], runs["base"] / "again", runs["cache"])
    assert again == runs["aged"]
    assert {p: p.stat().st_mtime_ns for p in before} == before
