"""`--json` on the commands that print a result a script would parse, beyond those tested with
their command (mkfs, umount, fsck, stats, compare, replay, verb, disks, policies, frag, layout,
plot): each output parses and says what the text output says."""

import json
import subprocess
import sys

from experiments import catalog
from experiments.lessons import LESSONS
from simfs.blockio.blktrace import own_figures
from simfs.blockio.trace import read_trace
from tests.unit.test_trace_export import make_trace


def simfs(*args):
    return subprocess.run([sys.executable, "-m", "simfs.cli", *map(str, args)], capture_output=True, text=True)


def test_experiment_list_json_names_every_experiment_as_the_table_does():
    rows = json.loads(simfs("experiment", "list", "--json").stdout)
    assert [r["name"] for r in rows] == [*catalog.names(), "git-aging"]
    text = simfs("experiment", "list").stdout.splitlines()
    for r, line in zip(rows, text):
        assert line.startswith(r["name"]) and line.endswith(r["title"])
        assert (r["seed"] is None) == ("seed" not in line.split(r["title"])[0])
    refused = simfs("experiment", "run", "git-aging", "--json")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1


def test_lesson_list_json():
    rows = json.loads(simfs("lesson", "list", "--json").stdout)
    assert [(r["name"], r["seed"], r["title"]) for r in rows] == [(n, m.SEED, m.TITLE) for n, m in LESSONS.items()]


def test_trace_export_and_latency_json(tmp_path):
    trace = tmp_path / "t.trace"
    make_trace(trace, n=120)
    cols = read_trace(trace)
    out = json.loads(simfs("trace", "export", trace, "--format", "blktrace", tmp_path / "o", "--json").stdout)
    assert out["files"] == [f"{tmp_path / 'o'}.blktrace.0"] and out["requests"] == 120
    assert out["events"] == 5 * 120 and out["simfs"] == own_figures(cols)
    lat = json.loads(simfs("trace", "latency", trace, "--json").stdout)
    phase = lat[cols["phase"][0]]
    assert phase["all"]["count"] == 120
    assert sum(s["count"] for k, s in phase.items() if k != "all") == 120
    assert phase["all"]["max"] >= max(f - q for f, q in zip(cols["finish"], cols["issue"])) * (1 - 1e-9)
