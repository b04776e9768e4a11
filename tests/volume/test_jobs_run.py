"""`simfs run` end to end on in-process (verb) jobs, which need no mount: the same results
serially and on a 2-worker Dask LocalCluster, failures and interrupts kept and resumed, bad
input and an unreachable scheduler as one line with exit status 2, and `simfs compare`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from experiments.report import without_wall

import pytest

from tests.conftest import run_simfs

REPO = Path(__file__).resolve().parents[2]
DIRORDER = REPO / "examples" / "jobs" / "dirorder-ab.toml"


def simfs_run(*args, timeout=300, **kw) -> subprocess.CompletedProcess:
    """`simfs run` (python -m experiments.jobcli: the console script gets `run` at the next
    `pip install -e .`)."""
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "experiments.jobcli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=REPO, env=env, **kw)




@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial") / "r"
    r = simfs_run(DIRORDER, "--quick", "--out", out, "--no-plots")
    assert r.returncode == 0, r.stderr
    return out


def test_serial_equals_two_dask_workers(serial, tmp_path):
    out = tmp_path / "dask"
    r = simfs_run(DIRORDER, "--quick", "--out", out, "--no-plots", "--workers", "2")
    assert r.returncode == 0, r.stderr
    assert "on 2 Dask workers" in r.stderr
    a = json.loads((serial / "results.json").read_text())
    b = json.loads((out / "results.json").read_text())
    assert len(a["records"]) == 2 * 5 and a["job"]["finished"] == 2
    fa, fb = without_wall(a), without_wall(b)
    for key in fa:                       # field by field, to name the one that differs
        assert fa[key] == fb[key], key
    assert fa == fb
    # each configuration was written as it finished, with its records
    assert sorted(p.name for p in (out / "configs").glob("*.json")) == \
        ["00-dirorder_hash-r0.json", "01-dirorder_inode-r0.json"]


def test_table_and_ratios(serial):
    doc = json.loads((serial / "results.json").read_text())
    assert [c["label"] for c in doc["comparisons"]] == [
        "find: dirorder=hash / dirorder=inode", "cp-a: dirorder=hash / dirorder=inode",
        "rm-rf: dirorder=hash / dirorder=inode"]
    assert all(c["measured"] and c["measured"] > 0 for c in doc["comparisons"])
    table = (serial / "table.md").read_text()
    assert f"`simfs run {DIRORDER} --quick`" in table or "simfs run" in table
    assert "| dirorder=hash |" in table and "## Ratios" in table


FAILING = """\
[job]
name = "fails"
[workload]
kind = "tree"
seed = 1
files = 40
[mkfs]
size = "256M"
[matrix]
alloc = ["ext2", "cg"]
[[matrix.add]]
name = "tiny"
alloc = "ext2"
size = "1M"
inodes_per_group = 16
[[phase]]
name = "unpack"
verb = "unpack"
path = "tree"
[[phase]]
name = "find"
verb = "find"
path = "tree"
"""


def test_json_prints_the_results_document(serial, tmp_path):
    """`--json`: the results document on stdout instead of the tables, the one results.json
    holds; run twice, the simulated figures equal the first run's."""
    out = tmp_path / "j"
    r = simfs_run(DIRORDER, "--quick", "--out", out, "--no-plots", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc == json.loads((out / "results.json").read_text())
    first = json.loads((serial / "results.json").read_text())
    assert [c["measured"] for c in doc["comparisons"]] == [c["measured"] for c in first["comparisons"]]


def test_a_failing_configuration_keeps_the_others_and_resume_runs_the_rest(tmp_path):
    job = tmp_path / "fails.toml"
    job.write_text(FAILING)
    out = tmp_path / "r"
    r = simfs_run(job, "--out", out, "--no-plots")
    assert r.returncode == 1, r.stderr
    assert "2 of 3 tasks finished; failed: 1" in r.stderr
    assert "tiny: unpack tree: No space left on device" in r.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["job"]["failed"] == [{"config": "tiny", "rep": 0, "error": "unpack tree: No space left on device"}]
    assert {r["config"] for r in doc["records"]} == {"alloc=ext2", "alloc=cg"}
    # --resume runs only the missing task (which fails again: a full image is no passing accident)
    r = simfs_run(job, "--resume", out, "--no-plots")
    assert r.returncode == 1 and "resume: 2 of 3 tasks already" in r.stderr, r.stderr
    assert "1 tasks" in r.stderr or "configurations (alloc=ext2, alloc=cg, tiny): 1 tasks" in r.stderr
    # another job (or other options) in the same directory is refused
    job.write_text(FAILING.replace('size = "1M"\ninodes_per_group = 16\n', 'size = "256M"\n'))
    r = simfs_run(job, "--resume", out, "--no-plots")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "another job or other options" in r.stderr


@pytest.mark.serial                 # a real SIGINT, timed against the run
def test_interrupt_then_resume_gives_the_uninterrupted_results(serial, tmp_path):
    out = tmp_path / "r"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.Popen([sys.executable, "-m", "experiments.jobcli", str(DIRORDER), "--quick", "--out", str(out),
                          "--no-plots"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                         env=env)
    first = out / "configs" / "00-dirorder_hash-r0.json"
    deadline = time.time() + 120
    while not first.exists() and p.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    if p.returncode == 0:
        pytest.skip("the run finished before the interrupt arrived")
    assert p.returncode == 130, err
    assert "--resume" in err
    assert first.exists()
    r = simfs_run(DIRORDER, "--quick", "--resume", out, "--no-plots")
    assert r.returncode == 0, r.stderr
    assert "resume: 1 of 2 tasks already" in r.stderr
    assert without_wall(json.loads((out / "results.json").read_text())) == \
        without_wall(json.loads((serial / "results.json").read_text()))


def test_bad_job_is_one_line_exit_2_and_nothing_runs(tmp_path):
    job = tmp_path / "bad.toml"
    job.write_text(DIRORDER.read_text().replace('dirorder = ["hash", "inode"]', 'dirorder = ["hash", "random"]'))
    work = tmp_path / "work"
    work.mkdir()
    r = simfs_run(job, "--work-dir", work, "--out", tmp_path / "out")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"{job}:")
    assert "dirorder" in r.stderr and "random" in r.stderr
    assert not list(work.iterdir()) and not (tmp_path / "out").exists()


def test_unreachable_scheduler_is_one_line_exit_2(tmp_path):
    r = simfs_run(DIRORDER, "--quick", "--scheduler", "tcp://127.0.0.1:9", "--timeout", "1",
                  "--out", tmp_path / "out")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "cannot reach the Dask scheduler tcp://127.0.0.1:9" in r.stderr
    assert not (tmp_path / "out").exists()


# simfs compare ------------------------------------------------------------------------------------
def test_compare_results_files(serial, tmp_path):
    other = json.loads((serial / "results.json").read_text())
    for row in other["summary"]:
        if row["phase"] == "find":
            row["sim"]["mean"] *= 2
            row["counters"]["seeks"] += 10
    (tmp_path / "b.json").write_text(json.dumps(other))
    r = run_simfs("compare", serial / "results.json", tmp_path / "b.json")
    lines = r.stdout.splitlines()
    assert "| configuration | phase | metric | A | B | B / A |" in lines
    find = [ln for ln in lines if "| find | sim |" in ln]
    assert len(find) == 2 and all(ln.endswith("| 2.000 |") for ln in find)
    assert any("| find | seeks |" in ln for ln in lines)
    assert not any("| unpack | seeks |" in ln for ln in lines)        # equal counters left out
    js = json.loads(run_simfs("compare", serial / "results.json", tmp_path / "b.json", "--json").stdout)
    seeks = [x for x in js if x["phase"] == "find" and x["metric"] == "seeks"]
    assert len(seeks) == 2 and all(x["b"] == x["a"] + 10 for x in seeks)


def test_compare_refuses_two_workloads_unless_forced(serial, tmp_path):
    """Each results.json records its workload's fingerprint; compare refuses (one line, exit 2)
    when they differ, and with --force compares with a warning on stderr and above the table."""
    doc = json.loads((serial / "results.json").read_text())
    fp = doc["workload"]["fingerprint"]
    assert fp["files"] == doc["workload"]["entries"] > 0 and fp["bytes"] == doc["workload"]["bytes"]
    assert len(fp["listing_sha256"]) == 64
    same = run_simfs("compare", serial / "results.json", serial / "results.json", "--all")
    assert "WARNING" not in same.stdout + same.stderr
    doc["workload"]["fingerprint"] = dict(fp, files=fp["files"] + 1, listing_sha256="0" * 64)
    (tmp_path / "b.json").write_text(json.dumps(doc))
    r = run_simfs("compare", serial / "results.json", tmp_path / "b.json", check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "different workloads" in r.stderr and f"{fp['files'] + 1:,} files" in r.stderr and not r.stdout
    r = run_simfs("compare", serial / "results.json", tmp_path / "b.json", "--force")
    assert "WARNING: A and B ran on different workloads" in r.stderr
    assert r.stdout.startswith("**WARNING: A and B ran on different workloads")
    del doc["workload"]["fingerprint"]
    (tmp_path / "old.json").write_text(json.dumps(doc))
    r = run_simfs("compare", tmp_path / "old.json", serial / "results.json")
    assert "A records no workload fingerprint" in r.stderr


def test_tarball_workload_keep_and_a_new_work_dir(tmp_path):
    """kind = "tarball": the archive unpacked is the workload (its fingerprint is the tree's, as
    kind = "dir" of the same tree gives); --work-dir is made if missing; --keep keeps the images."""
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "d" / "a.c").write_text("int a;\n" * 300)
    (tree / "b.txt").write_text("b" * 5000)
    subprocess.run(["tar", "-cf", tmp_path / "t.tar", "-C", tree, "."], check=True)
    base = DIRORDER.read_text().split("[mkfs]")[1].split("[quick]")[0]
    fps = []
    for kind in ("tarball", "dir"):
        path = tmp_path / ("t.tar" if kind == "tarball" else "tree")
        job = tmp_path / f"{kind}.toml"
        job.write_text(f'[job]\nname = "{kind}"\n\n[workload]\nkind = "{kind}"\npath = "{path}"\n\n[mkfs]' + base)
        work = tmp_path / f"work-{kind}"
        r = simfs_run(job, "--only", "dirorder=hash", "--out", tmp_path / f"out-{kind}", "--no-plots",
                      "--work-dir", work, *(["--keep"] if kind == "tarball" else []))
        assert r.returncode == 0, r.stderr
        doc = json.loads((tmp_path / f"out-{kind}" / "results.json").read_text())
        fps.append(doc["workload"]["fingerprint"])
        assert work.is_dir()
        images = list(work.rglob("disk.img"))
        assert len(images) == (1 if kind == "tarball" else 0), images
    assert fps[0] == fps[1] and fps[0]["files"] == 2 and fps[0]["directories"] == 1
    assert fps[0]["bytes"] == 300 * 7 + 5000


def test_compare_stats_files_and_bad_input(tmp_path):
    run_simfs("mkfs", tmp_path / "a.img", "--size", "64M")
    run_simfs("mkfs", tmp_path / "b.img", "--size", "64M")
    src = REPO / "simfs" / "cli"
    ja = run_simfs("verb", "unpack", tmp_path / "a.img", "t", "--from", src, "-o", "alloc=ext2", "--json").stdout
    jb = run_simfs("verb", "unpack", tmp_path / "b.img", "t", "--from", src, "-o", "alloc=cg", "--json").stdout
    (tmp_path / "a.json").write_text(ja)
    (tmp_path / "b.json").write_text(jb)
    js = json.loads(run_simfs("compare", tmp_path / "a.json", tmp_path / "b.json", "--json").stdout)
    sa = json.loads(ja)["time"]["phases"][0]
    ela = next(x for x in js if x["phase"] == sa["name"] and x["metric"] == "elapsed")
    assert ela["a"] == sa["elapsed"] and ela["ratio"] == pytest.approx(ela["b"] / ela["a"])
    for args, words in [((tmp_path / "a.json", tmp_path / "nope.json"), "no such file"),
                        ((tmp_path / "a.json", tmp_path / "a.img"), "not JSON"),
                        ((tmp_path / "a.json", REPO / "setup.cfg"), "not JSON")]:
        r = run_simfs("compare", *args, check=False)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and words in r.stderr, r.stderr


def test_a_results_directory_is_not_mixed_with_another_run(serial):
    r = simfs_run(DIRORDER, "--quick", "--out", serial, "--no-plots")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and f"--resume {serial}" in r.stderr
