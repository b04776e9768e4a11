"""[aged] and --aged (issue 55 item 1) without a mount: the syntax, the job file's table, and
bad input - an unknown history, a pull count past its end, an unknown synthetic profile - is
one line and exit status 2 with nothing made."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.aging.aged import AgedError, check_table, describe, history, parse

REPO = Path(__file__).resolve().parents[2]


def test_parse_and_describe():
    assert parse("synthetic:agrawal") == {"history": "synthetic", "profile": "agrawal"}
    t = parse("synthetic:agrawal,full=70,churn=0.5,seed=3,frag=20")
    assert t == {"history": "synthetic", "profile": "agrawal", "full": 70.0, "churn": 0.5, "seed": 3, "frag": 20.0}
    assert describe(t) == "synthetic:agrawal,full=70,churn=0.5,seed=3,frag=20" and parse(describe(t)) == t
    assert parse("git:100") == {"history": "git", "pulls": 100}
    assert parse("git:5@~/src/x") == {"history": "git", "pulls": 5, "repo": "~/src/x"}
    assert describe(parse("git:5@/r")) == "git:5@/r" and describe(parse("git:7")) == "git:7"


@pytest.mark.parametrize("text, words", [
    ("git", "give git:N"), ("git:", "give git:N"), ("git:x", "give git:N"), ("git:-3", "give git:N"),
    ("svn:10", "give git:N"), ("synthetic:", "give a profile"), ("synthetic:agrawal,full", "not KEY=VALUE"),
    ("synthetic:agrawal,fill=80", "not KEY=VALUE"), ("synthetic:agrawal,full=x", "not a number"),
    ("synthetic:agrawal,full=99", "full = 99"), ("synthetic:agrawal,seed=1.5", "not a number")])
def test_parse_refuses(text, words):
    with pytest.raises(AgedError, match=words):
        parse(text)


@pytest.mark.parametrize("table, words", [
    ({"pulls": 0}, "pulls = 0"), ({"pulls": True}, "pulls = True"), ({"pulls": 3, "pull": 3}, "no key 'pull'"),
    ({"history": "synthetic", "pulls": 3}, "no key 'pulls'"), ({"pulls": 3, "repo": ""}, "repo = ''"),
    ({"history": "tar", "pulls": 3}, "choose \"git\" or \"synthetic\""), ({"pulls": 3, "profile": "agrawal"}, "no key 'profile'"),
    ({"history": "synthetic", "profile": "agrawal", "churn": -1}, "churn = -1"),
    ({"history": "synthetic", "profile": "agrawal", "frag": 0}, "frag = 0"),
    ({"history": "synthetic"}, "profile = None")])
def test_table_refuses(table, words):
    with pytest.raises(AgedError, match=words):
        check_table(table)


@pytest.fixture(scope="module")
def small_repo(tmp_path_factory):
    from experiments.aging.history import make_quick
    return make_quick(str(tmp_path_factory.mktemp("aged") / "h"), commits=4).repo


def test_history_of_a_repository(small_repo, tmp_path):
    assert history({"history": "git", "pulls": 3, "repo": small_repo}).pulls == 3
    with pytest.raises(AgedError, match=r"past the end"):
        history({"pulls": 4, "repo": small_repo})
    with pytest.raises(AgedError, match="not a git repository"):
        history({"pulls": 1, "repo": str(tmp_path)})
    with pytest.raises(AgedError, match="no such repository"):
        history({"pulls": 1, "repo": str(tmp_path / "none")})


def _experiment(*args, tmp_path):
    env = dict(os.environ, SIMFS_AGED_CACHE=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, "-m", "simfs.cli", "experiment", "run", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=REPO)


@pytest.mark.parametrize("aged, words", [
    ("git:x", "give git:N"), ("synthetic:g", "neither a built-in profile"), ("synthetic:agrawal,full=0", "full = 0"),
    ("git:1@{tmp}/none", "no such repository"),
    ("git:99@{repo}", "past the end"), ("git:1@{tmp}", "not a git repository")])
def test_simfs_experiment_refuses_bad_aged(tmp_path, small_repo, aged, words):
    out = tmp_path / "out"
    r = _experiment("readdir-order", "--quick", "--aged", aged.format(tmp=tmp_path, repo=small_repo),
                    "--out", out, tmp_path=tmp_path)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and words in r.stderr, r.stderr
    assert not out.exists()


def test_aged_table_in_a_job_file(tmp_path, small_repo):
    """[aged] is checked with the job (its line named), and the history before anything runs."""
    from experiments import jobfile
    text = (REPO / "examples" / "jobs" / "dirorder-ab.toml").read_text()
    job = tmp_path / "j.toml"
    job.write_text(text + f'\n[aged]\npulls = 2\nrepo = "{small_repo}"\n')
    j = jobfile.load(job, quick=True)
    jobfile.check_paths(j)
    from experiments import runner
    exp = jobfile.compile_job(j, runner.Workload("none", bytes=1 << 20))
    assert exp.aged == {"pulls": 2, "repo": small_repo} and any("git:2@" in n for n in exp.notes)
    for extra, words in (("pulls = 0", "pulls = 0"), ("pulls = 2\nrepos = 'x'", "no key 'repos'")):
        job.write_text(text + f"\n[aged]\n{extra}\n")
        with pytest.raises(jobfile.JobError, match=words) as e:
            jobfile.load(job)
        assert str(e.value).startswith(f"{job}:") and "\n" not in str(e.value)
    job.write_text(text + f'\n[aged]\npulls = 9\nrepo = "{small_repo}"\n')
    with pytest.raises(jobfile.JobError, match="past the end"):
        jobfile.check_paths(jobfile.load(job))
    env = dict(os.environ, PYTHONPATH=str(REPO), SIMFS_AGED_CACHE=str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-m", "experiments.jobcli", str(job), "--quick", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=env, cwd=REPO)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "past the end" in r.stderr, r.stderr
    assert not (tmp_path / "o").exists()


def test_git_aging_refuses_aged(tmp_path):
    r = _experiment("git-aging", "--quick", "--aged", "git:1", "--out", tmp_path / "out", tmp_path=tmp_path)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "ages its own images" in r.stderr
    assert not (tmp_path / "out").exists()


def test_synthetic_aged_table_in_a_job_file(tmp_path):
    """A synthetic [aged] table: checked with the job, its profile loaded by check_paths, the
    note names the spec."""
    from experiments import jobfile, runner
    text = (REPO / "examples" / "jobs" / "dirorder-ab.toml").read_text()
    job = tmp_path / "j.toml"
    job.write_text(text + '\n[aged]\nhistory = "synthetic"\nprofile = "agrawal"\nfull = 70\n')
    j = jobfile.load(job, quick=True)
    jobfile.check_paths(j)
    exp = jobfile.compile_job(j, runner.Workload("none", bytes=1 << 20))
    assert any("synthetic:agrawal,full=70 (files created and deleted" in n for n in exp.notes), exp.notes
    for extra, words in (('profile = "agrawal"\npulls = 3', "no key 'pulls'"), ('profile = "agrawal"\nfull = 0', "full = 0")):
        job.write_text(text + f'\n[aged]\nhistory = "synthetic"\n{extra}\n')
        with pytest.raises(jobfile.JobError, match=words) as e:
            jobfile.load(job)
        assert str(e.value).startswith(f"{job}:") and "\n" not in str(e.value)
    job.write_text(text + '\n[aged]\nhistory = "synthetic"\nprofile = "nosuch"\n')
    with pytest.raises(jobfile.JobError, match="neither a built-in profile"):
        jobfile.check_paths(jobfile.load(job))
