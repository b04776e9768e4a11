"""`simfs install-helper`: /sbin/mount.fuse.simfs is the whole machine's, so `make` (as root)
installs it only where none works, and the command says which checkout it runs.

A second clone's `make docs` as root used to point the helper at that clone; deleting the
clone then broke `mount -t fuse.simfs` for everyone. These tests write into a temporary
--dir, never /sbin (tests/mount/test_mount_helper.py mounts through the real one)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from simfs.cli.helper import NAME, launcher, this_checkout
from tests.conftest import run_simfs

REPO = Path(__file__).resolve().parents[2]


def other_checkout(tmp_path: Path) -> Path:
    """Another clone's helper: a checkout with simfs/cli/helper.py, run with this Python."""
    clone = tmp_path / "second-clone"
    (clone / "simfs" / "cli").mkdir(parents=True)
    (clone / "simfs" / "cli" / "helper.py").write_text("")
    text = launcher().replace(f"'{this_checkout()}'", f"'{clone}'").replace(
        f"simfs in {this_checkout()}:", f"simfs in {clone}:")
    assert str(clone) in text and sys.executable in text
    (tmp_path / NAME).write_text(text)
    return clone


def test_if_missing_leaves_a_working_helper_of_another_checkout(tmp_path):
    clone = other_checkout(tmp_path)
    before = (tmp_path / NAME).read_text()
    r = run_simfs("install-helper", "--dir", tmp_path, "--if-missing")
    assert (tmp_path / NAME).read_text() == before
    assert f"runs the simfs in {clone}" in r.stdout and "left as it is" in r.stdout, r.stdout


def test_if_missing_replaces_one_whose_checkout_is_gone_and_installs_a_missing_one(tmp_path):
    clone = other_checkout(tmp_path)
    (clone / "simfs" / "cli" / "helper.py").unlink()              # the clone was deleted
    r = run_simfs("install-helper", "--dir", tmp_path, "--if-missing")
    assert (tmp_path / NAME).read_text() == launcher()
    assert f"before, it ran the simfs in {clone}" in r.stdout and "is gone" in r.stdout, r.stdout
    (tmp_path / NAME).unlink()
    run_simfs("install-helper", "--dir", tmp_path, "--if-missing")
    assert (tmp_path / NAME).read_text() == launcher()


def test_an_explicit_install_points_it_here_and_says_what_it_replaced(tmp_path):
    clone = other_checkout(tmp_path)
    r = run_simfs("install-helper", "--dir", tmp_path)
    assert (tmp_path / NAME).read_text() == launcher()
    assert f"now runs the simfs in {this_checkout()}" in r.stdout, r.stdout
    assert f"before, it ran the simfs in {clone}" in r.stdout, r.stdout


def test_status_names_the_checkout_and_whether_it_works(tmp_path):
    r = run_simfs("install-helper", "--dir", tmp_path, "--status", check=False)
    assert r.returncode == 1 and "not installed" in r.stdout
    clone = other_checkout(tmp_path)
    r = run_simfs("install-helper", "--dir", tmp_path, "--status")
    assert f"runs the simfs in {clone} with {sys.executable}" in r.stdout, r.stdout
    assert "broken" not in r.stdout
    (clone / "simfs" / "cli" / "helper.py").unlink()
    r = run_simfs("install-helper", "--dir", tmp_path, "--status", check=False)
    assert r.returncode == 1 and f"broken, its checkout {clone} is gone" in r.stdout, r.stdout
    run_simfs("install-helper", "--dir", tmp_path)
    r = run_simfs("install-helper", "--dir", tmp_path, "--status")
    assert f"runs the simfs in {this_checkout()}" in r.stdout and "(this checkout)" in r.stdout


def test_make_installs_it_only_if_missing_and_on_request():
    """The venv's stamp rule (which any target runs in a fresh clone) must not take the
    machine's helper; `make install-helper` does, on request."""
    text = (REPO / "Makefile").read_text()
    stamp_rule = text.split("$(STAMP):", 1)[1].split("\n\n", 1)[0]
    calls = re.findall(r"simfs\.cli install-helper[^;|\n]*", stamp_rule)
    assert calls and all("--if-missing" in c for c in calls), calls
    target = re.search(r"^install-helper:.*\n\t(.*)", text, re.M)
    assert target and target[1].rstrip().endswith("simfs.cli install-helper"), target
