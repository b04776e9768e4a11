"""Job files: values `simfs verb`, `simfs mount` and the workload generator refuse are refused
by the job-file check too, before anything runs (they were accepted, then failed after the
workload was prepared, or hung preparing it): one line `JOB.toml:LINE: ...`. And `simfs run
--timeout` is a finite number of seconds above 0 (nan, inf and -1 reached Dask)."""

from __future__ import annotations

import pytest

from experiments import jobfile, runner
from simfs.cli.main import main

JOB = """\
[job]
name = "t"

[workload]
kind = "tree"
seed = 1
files = 20

[mkfs]
size = "64M"

[mount]
writeback = "async"

[matrix]
alloc = ["ext2", "cg"]

[[phase]]
name = "unpack"
verb = "unpack"
path = "tree"
setup = true

[[phase]]
name = "p"
verb = "find"
path = "tree"
"""


def _load(tmp_path, text, quick=False):
    p = tmp_path / "job.toml"
    p.write_text(text)
    return jobfile.load(p, quick=quick)


def _refused(tmp_path, text, line, words):
    with pytest.raises(jobfile.JobError) as e:
        _load(tmp_path, text)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{tmp_path / 'job.toml'}:{line}: "), msg
    for w in words:
        assert w in msg, msg


def test_the_job_loads(tmp_path):
    """The job the refusals below alter is a valid one: its two configurations and phases."""
    job = _load(tmp_path, JOB)
    assert job.doc["matrix"] == {"alloc": ["ext2", "cg"]}
    assert [(p["name"], p["verb"]) for p in job.doc["phase"]] == [("unpack", "unpack"), ("p", "find")]


VERBS = [
    # (the last phase's verb and path, its args, line, words): what `simfs verb` refuses
    ('verb = "find"\npath = "tree"', 'args = {type = "x"}', 28, ['type = "x"', "'d', 'f'", "--type"]),
    ('verb = "dd"\npath = "tree"', "args = {bs = -1}", 28, ["bs = -1", "not a size", "--bs"]),
    ('verb = "dd"\npath = "tree"', "args = {count = -1}", 28, ["count = -1", "invalid number"]),
    ('verb = "mmap-fill"\npath = "m"', 'args = {size = "nan"}', 28, ['size = "nan"', "not a size", "--size"]),
    ('verb = "mmap-fill"\npath = "m"', 'args = {order = "random"}', 28, ['order = "random"', "alloctest"]),
    ('verb = "mmap-fill"\npath = "m"', "args = {seed = true}", 28, ["seed = true"]),
    ('verb = "cp-a"\npath = "tree"', "args = {dst = 3}", 28, ["dst = 3: must be a string"]),
    ('verb = "rm-rf"\npath = "/"', "", 27, ['path = "/"', "dangerous to operate recursively on '/'"]),
    ('verb = "rm-rf"\npath = "tree/.."', "", 27, ['path = "tree/.."']),
    ('verb = "cp-a"\npath = "tree"', 'args = {dst = "tree/in"}', 27, ["into itself"]),
    ('verb = "mmap-fill"\npath = "/"', "", 27, ["Is a directory"]),
]


@pytest.mark.parametrize("verb, args, line, words", VERBS, ids=[v[1] or v[0] for v in VERBS])
def test_verb_phases_checked_as_simfs_verb_checks_them(tmp_path, verb, args, line, words):
    _refused(tmp_path, JOB.replace('verb = "find"\npath = "tree"', verb) + args + "\n", line, words)


def test_verb_args_reach_the_verb_as_simfs_verb_parses_them():
    """A size written as on the command line ("1M") reached the verb as a string."""
    assert jobfile.verb_params("mmap-fill", {"size": "1M", "seed": 3, "mkdir": True}) == \
        {"size": 1 << 20, "seed": 3, "mkdir": True}
    assert jobfile.verb_params("dd", {"bs": "4K", "count": 2}) == {"bs": 4096, "count": 2}
    assert jobfile.verb_params("find", {"type": "f"}) == {"type": "f"}


SIZES = [
    ('size = "64M"', 'size = {workload = -1, min = "64M"}', 10, ["size = {workload = -1", "above 0"]),
    ('size = "64M"', 'size = {workload = nan, min = "64M"}', 10, ["workload = nan", "above 0"]),
    ('size = "64M"', 'size = {workload = "64M"}', 10, ['workload = "64M"', "sizes go in min and max"]),
    ('size = "64M"', 'size = {workload = 8, min = "1G", max = "512M"}', 10, ["min is more than max"]),
    ('writeback = "async"', "cache = {workload = nan}", 13, ["cache = {workload = nan}", "above 0"]),
    ('writeback = "async"', "cache = {workload = 0}", 13, ["above 0"]),
    ('writeback = "async"', 'disk = ""', 13, ["mount option disk: empty disk spec"]),
    ("files = 20", "files = 99999999999999", 7,
     ["files = 99999999999999", "more than the 8,192 inodes of the largest image"]),
]


@pytest.mark.parametrize("old, new, line, words", SIZES, ids=[s[1] for s in SIZES])
def test_sizes_options_and_counts_checked(tmp_path, old, new, line, words):
    _refused(tmp_path, JOB.replace(old, new), line, words)


def test_files_bounded_by_the_largest_image_of_any_configuration(tmp_path):
    """A size that follows the workload stops at image_for's cap (or max): its inodes bound the
    files. One configuration too small for the tree is a failure of its own at run time (the
    others run); a count no configuration holds is refused."""
    rel = JOB.replace('size = "64M"', "size = {workload = 16}")
    _refused(tmp_path, rel.replace("files = 20", "files = 99999999999999"), 7, ["4,194,304 inodes"])
    _refused(tmp_path, rel.replace("size = {workload = 16}", 'size = {workload = 16, max = "256M"}')
             .replace("files = 20", "files = 1000000"), 7, ["32,768 inodes of the largest image"])
    exp = jobfile.compile_job(_load(tmp_path, rel.replace("files = 20", "files = 100000")),
                              runner.Workload("tree", bytes=1 << 30))
    assert exp.configs[0].mkfs["size_bytes"] == 16 << 30
    tiny = '[[matrix.add]]\nname = "tiny"\nalloc = "ext2"\nsize = "1M"\ninodes_per_group = 16\n'
    _load(tmp_path, JOB.replace("files = 20", "files = 40").replace("[[phase]]", tiny + "[[phase]]", 1))


def test_files_in_quick_refused_at_its_line(tmp_path):
    with pytest.raises(jobfile.JobError,
                       match=r"job\.toml:30: in \[quick\]: \[workload\] files = 99999999999999"):
        _load(tmp_path, JOB + "\n[quick]\nworkload = {files = 99999999999999}\n")


@pytest.mark.parametrize("timeout", ["nan", "inf", "1e400", "-1", "0", "soon"])
def test_run_timeout_is_a_positive_number_of_seconds(tmp_path, capsys, timeout):
    job = tmp_path / "job.toml"
    job.write_text(JOB)
    with pytest.raises(SystemExit) as e:
        main(["run", str(job), "--timeout", timeout, "--scheduler", "tcp://127.0.0.1:1"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert f"--timeout: invalid number of seconds: '{timeout}'" in err
