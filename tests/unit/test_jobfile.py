"""Job files (experiments/jobfile/): the experiments are their job files (experiments/jobs/,
experiments/catalog.py), the matrix expands as documented, and bad input is one line naming
the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments import catalog, jobfile, runner
from experiments.phases import PhaseContext
from experiments.spec import Config

REPO = Path(__file__).resolve().parents[2]
JOBS = REPO / "experiments" / "jobs"


def _ctx(cfg: Config, params: dict) -> PhaseContext:
    base = Path("/var/tmp/simfs-x/00-cfg-r0")
    return PhaseContext(mnt=base / "mnt", image=base / "disk.img", work=base, config=cfg,
                        source=Path("/var/tmp/simfs-x/src"), tarball=Path("/var/tmp/simfs-x/src.tar"),
                        params=params)


def _words(cmd):
    return jobfile.shell_words(cmd)


def _fields(exp) -> tuple:
    """What an Experiment is, comparable: its fields, configurations (and -o strings), ratios,
    panels, and phases with their commands as the words they run in one context."""
    cfg = exp.configs[0]
    phases = [(p.name, p.description, p.kind, p.drain, p.writes, p.trace, p.setup, p.metrics, p.cold,
               _words(p.command(_ctx(cfg, exp.params))) if p.kind == "mount" else p.command.__code__)
              for p in exp.phases]
    return (exp.name, exp.seed, exp.title, exp.description, exp.repetitions, exp.blockmap, exp.blockmap_files,
            exp.notes, exp.params, exp.quick, exp.workload,
            [(c.name, c.mount, c.mkfs, c.params, c.mount_string()) for c in exp.configs], exp.compares,
            [(p.title, p.phase, p.configs) for p in exp.panels], phases)


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
@pytest.mark.parametrize("name", catalog.names())
def test_each_experiment_is_its_job_file(name, quick):
    """`simfs experiment run NAME` is experiments/jobs/NAME.toml: named after its [job] name,
    every ratio between its configurations and phases, the checked ones with a direction, and
    some with the seed's published figure."""
    job = catalog.load(name, quick=quick)
    assert job.name == name and catalog.path(name) == JOBS / f"{name}.toml"
    kind = job.workload_spec()["kind"]
    exp = catalog.build(name, quick, runner.Workload(kind, bytes=50 << 20 if kind == "tree" else 0))
    assert exp.name == name and exp.configs and exp.phases and exp.quick == quick
    names = {c.name for c in exp.configs}
    assert len(names) == len(exp.configs)
    for c in exp.compares:
        assert c.num in names and c.den in names, c
        assert c.phase in {p.name for p in exp.phases}, c
    checked = [c for c in exp.compares if c.check]
    assert checked and all(c.expect for c in checked)
    assert any(c.published for c in exp.compares)


def test_the_experiments_in_seed_order_and_unknown_names():
    assert catalog.names() == ["ext2fs-2010", "readdir-order", "writeback", "alignment", "mmap-fragmentation"]
    assert sorted(p.stem for p in JOBS.glob("*.toml")) == sorted(catalog.names())
    for bad in ("no-such", "../jobs/ext2fs-2010", "seed000"):
        with pytest.raises(KeyError, match="unknown experiment .*choose one of: ext2fs-2010, readdir-order"):
            catalog.path(bad)


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
def test_size_hook_says_what_the_job_file_says_at_its_size(quick):
    """mmap-fragmentation's --size tables (experiments/builtins/mmap_fragmentation.py) at the
    job file's own size (1G, 64M with --quick) give the job file's experiment, field for field."""
    wl = runner.Workload("none", bytes=0)
    size = (64 << 20) if quick else (1 << 30)
    assert catalog.takes_size("mmap-fragmentation") and not catalog.takes_size("ext2fs-2010")
    assert _fields(catalog.build("mmap-fragmentation", quick, wl, size)) == \
        _fields(catalog.build("mmap-fragmentation", quick, wl))


def test_size_scales_the_file_the_ram_and_the_caches():
    exp = catalog.build("mmap-fragmentation", False, runner.Workload("none", bytes=0), 256 << 20)
    assert exp.params == {"size": 256 << 20, "ram": 1536 << 20}
    assert exp.description.startswith("a 256 MiB file: ") and "1536 MiB of RAM" in exp.description
    assert {c.mkfs["size_bytes"] for c in exp.configs} == {1 << 30}
    assert exp.config("ext2 mmap").params["pagecache"] == "linux-2.6.29,ram=1536M"
    assert exp.config("ext2 mmap, dirty_ratio=90").params["pagecache"] == "linux-2.6.29,ram=1536M,dirty_ratio=90"
    assert exp.config("delayed pwrite").mount["cache"] == 3 << 30
    quick = catalog.build("mmap-fragmentation", True, runner.Workload("none", bytes=0), 256 << 20)
    assert [c.name for c in quick.configs] == ["ext2 mmap", "delayed mmap", "ext2 pwrite", "delayed pwrite"]


def test_a_size_no_image_takes_is_one_line_naming_the_option():
    with pytest.raises(jobfile.JobError) as e:
        catalog.load("mmap-fragmentation", quick=True, size=1 << 50)
    msg = str(e.value)
    assert "\n" not in msg and "mmap-fragmentation.toml: with --size 1024T: " in msg   # no line: not in the file


# the format --------------------------------------------------------------------------------------
BASE = """\
[job]
name = "t"

[workload]
kind = "none"

[mkfs]
size = "256M"

[mount]
disk = "sata7200"

[matrix]
alloc = ["ext2", "cg"]
block = [{label = "1K", block_size = 1024}, {label = "4K", block_size = 4096, inode_size = 128}]
writeback = "async"
{extra_matrix}
[[phase]]
name = "find"
verb = "find"
path = "tree"
{extra}"""


def _job(tmp_path, extra="", extra_matrix="", text=None, quick=False):
    p = tmp_path / "job.toml"
    p.write_text(text if text is not None else BASE.replace("{extra}", extra).replace("{extra_matrix}", extra_matrix))
    return jobfile.load(p, quick=quick)


def _compile(job, nbytes=64 << 20):
    return jobfile.compile_job(job, runner.Workload("tree", bytes=nbytes))


def test_matrix_product_labels_exclude_add(tmp_path):
    job = _job(tmp_path, extra_matrix='[[matrix.exclude]]\nalloc = "cg"\nblock = "1K"\n\n'
                                      '[[matrix.add]]\nname = "big cache"\nalloc = "cg"\nblock = "1K"\n'
                                      'cache = "64M"\n')
    exp = _compile(job)
    assert [c.name for c in exp.configs] == ["alloc=ext2 block=1K", "alloc=ext2 block=4K", "alloc=cg block=4K",
                                             "big cache"]
    c = exp.config("alloc=cg block=4K")
    assert c.mkfs == {"size_bytes": 256 << 20, "block_size": 4096, "inode_size": 128}
    assert c.mount == {"disk": "sata7200", "alloc": "cg", "writeback": "async"}
    assert c.params == {"alloc": "cg", "block": "4K", "writeback": "async"}
    assert exp.config("big cache").mount["cache"] == 64 << 20
    assert exp.config("big cache").mkfs["block_size"] == 1024


def test_sizes_follow_the_workload_and_quick_merges(tmp_path):
    text = BASE.replace("{extra}", "").replace("{extra_matrix}", "").replace(
        'size = "256M"', 'size = {workload = 16, min = "512M"}') + \
        '\n[quick]\nmatrix = {alloc = ["ext2"]}\n'
    job = _job(tmp_path, text=text)
    exp = _compile(job, nbytes=100 << 20)
    assert exp.configs[0].mkfs["size_bytes"] == 1600 << 20
    assert _compile(job, nbytes=1 << 20).configs[0].mkfs["size_bytes"] == 512 << 20
    quick = _compile(_job(tmp_path, text=text, quick=True))
    assert [c.params["alloc"] for c in quick.configs] == ["ext2", "ext2"]


def test_ratio_without_phase_is_one_per_phase(tmp_path):
    job = _job(tmp_path, extra='\n[[phase]]\nname = "rm"\nverb = "rm-rf"\npath = "tree"\n\n'
                               '[[ratio]]\nnum = "alloc=cg block=4K"\nden = "alloc=ext2 block=4K"\n')
    exp = _compile(job)
    assert [(c.label, c.phase, c.expect, c.check) for c in exp.compares] == [
        ("find: alloc=cg block=4K / alloc=ext2 block=4K", "find", "", False),
        ("rm: alloc=cg block=4K / alloc=ext2 block=4K", "rm", "", False)]


def test_run_phase_renders_quoted_paths_cold_and_drain(tmp_path):
    job = _job(tmp_path, extra='\n[[phase]]\nname = "ls"\nrun = "ls {mnt}"\n'
                               '\n[[phase]]\nname = "cp"\nprepare = "mkdir {mnt}/x"\n'
                               'run = "cp -a {source} {mnt}/x"\ncold = false\ndrain = true\n')
    exp = _compile(job)
    p = exp.phase("cp")
    ctx = _ctx(exp.configs[0], {})
    ctx.source = Path("/var/tmp/my tree")
    assert p.kind == "mount" and p.cold is False and p.drain is True
    assert p.command(ctx) == "cp -a '/var/tmp/my tree' /var/tmp/simfs-x/00-cfg-r0/mnt/x"
    assert p.prepare(ctx) == "mkdir /var/tmp/simfs-x/00-cfg-r0/mnt/x"
    assert jobfile.needs_mount(exp) and not jobfile.needs_mount(_compile(_job(tmp_path)))


BAD = [
    # (what to change, expected line, words in the message)
    (("[job]\n", "[job]\ncolour = 1\n"), 2, "unknown key 'colour' in [job]"),
    (('path = "tree"\n', 'path = "tree"\nflavour = "x"\n'), 22, "unknown key 'flavour' in [[phase]]"),
    (('alloc = ["ext2", "cg"]', 'alloc = ["ext2", "nope"]'), 14, "alloc"),
    (('disk = "sata7200"', 'disk = "floppy"'), 11, "disk"),
    (('disk = "sata7200"', 'colour = "blue"'), 11, "unknown mount option 'colour'"),
    (('verb = "find"\n', ''), 19, "has no command"),
    (('verb = "find"\n', 'verb = "fnd"\n'), 20, "unknown verb 'fnd'"),
    (('alloc = ["ext2", "cg"]', 'alloc = []'), 14, "no values: the matrix is empty"),
    (('writeback = "async"', 'writeback = "async"\n[[matrix.exclude]]\nwriteback = "async"'), 13,
     "expands to no configuration"),
    (('[mkfs]\nsize = "256M"', '[mkfs]\nsize = "256M"\nblocksize = 4096'), 9, "unknown key 'blocksize' in [mkfs]"),
    (('kind = "none"', 'kind = "directory"'), 5, "unknown workload kind"),
    (('[matrix]\n', '[matrix]\ncolour = ["red"]\n'), 14, "unknown key 'colour' in [matrix]"),
    (('writeback = "async"', 'writeback = "asap"'), 16, "writeback"),
]


@pytest.mark.parametrize("change,line,words", BAD, ids=[b[2][:30] for b in BAD])
def test_bad_input_is_one_line_with_the_position(tmp_path, change, line, words):
    text = BASE.replace("{extra}", "").replace("{extra_matrix}", "")
    assert change[0] in text
    text = text.replace(change[0], change[1], 1)
    with pytest.raises(jobfile.JobError) as e:
        _job(tmp_path, text=text)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith(f"{tmp_path / 'job.toml'}:{line}: "), msg
    assert words in msg


def test_every_example_and_seed_job_loads():
    from experiments.aging.jobtable import aging_table, argv
    for p in sorted((REPO / "examples" / "jobs").glob("*.toml")) + sorted(JOBS.glob("*.toml")):
        table = aging_table(p)
        if table is not None:                   # an aging job: every key one of experiments.aging's
            assert argv(p, table), p
            continue
        for quick in (False, True):
            exp = _compile(jobfile.load(p, quick=quick))
            assert exp.configs and exp.phases, p


@pytest.mark.parametrize("doc, heading", [
    ("README.md", "## Compare two policies on your own workload"),
    ("docs/getting-started.md", "## 5. Your own A/B"),
    ("docs/experiments.md", "## Job files")])
def test_the_documented_job_file_loads(tmp_path, doc, heading):
    """The A/B job file of README and of the manual (getting started, job files) is a valid one."""
    text = (REPO / doc).read_text()
    start = text.index("```toml\n", text.index(heading)) + len("```toml\n")
    job = tmp_path / "ab.toml"
    job.write_text(text[start:text.index("```", start)])
    exp = _compile(jobfile.load(job))
    assert [c.name for c in exp.configs] == ["alloc=ext2", "alloc=cg"]
    assert [(p.name, p.cold, p.drain) for p in exp.phases] == [("untar", True, True), ("tar", True, False),
                                                              ("find", True, False)]
    assert len(exp.compares) == 3


def test_warm_phase_needs_a_mounted_phase_before_it(tmp_path):
    with pytest.raises(jobfile.JobError, match=r"job.toml:\d+: phase 'du': cold = false continues"):
        _job(tmp_path, extra='\n[[phase]]\nname = "du"\nrun = "du -s {mnt}"\ncold = false\n')


# wrong types, unknown placeholders and names that match nothing: refused up front (QA) -----------
def _refused(tmp_path, text, line, words, quick=False):
    with pytest.raises(jobfile.JobError) as e:
        _job(tmp_path, text=text, quick=quick)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{tmp_path / 'job.toml'}:{line}: "), msg
    for w in words:
        assert w in msg, msg
    return msg


RUN = '\n[[phase]]\nname = "ls"\nrun = "ls {mnt}"\n'       # lines 23-25 after BASE


TYPES = [
    # (extra text after BASE, expected line, words)
    (RUN + "prepare = 3\n", 26, ["[[phase]] prepare = 3: must be a string"]),
    (RUN.replace("{mnt}", "{mount}"), 25, ["unknown placeholder {mount}", "{mnt}, {source}, {tarball}, {work}, "
                                           "{image}", "did you mean {mnt}?"]),
    (RUN + 'prepare = "mkdir {mnt}/{dir}"\n', 26, ["phase 'ls', prepare: unknown placeholder {dir}"]),
    (RUN + "description = 5\n", 26, ["[[phase]] description = 5: must be a string"]),
    (RUN + 'metrics = "mb_s"\n', 26, ['[[phase]] metrics = "mb_s": must be a list of strings']),
    ('\n[[phase]]\nname = "b"\nbuiltin = ["mkfs"]\n', 25, ['[[phase]] builtin = ["mkfs"]: must be a string']),
    ('\n[[phase]]\nname = "v"\nverb = 3\npath = "tree"\n', 25, ["[[phase]] verb = 3: must be a string"]),
    ('\n[[ratio]]\nnum = "alloc=cg block=4K"\nden = "alloc=ext2 block=4K"\npublished = "2x"\n', 26,
     ['[[ratio]] published = "2x": must be a number']),
    ('\n[[ratio]]\nnum = "alloc=cg block=4K"\nden = "alloc=ext2 block=4K"\nheadline = 1\n', 26,
     ["[[ratio]] headline = 1: must be true or false"]),
    ('\n[[panel]]\nphase = "find"\ntitle = 3\n', 25, ["[[panel]] title = 3: must be a string"]),
    ('\n[plots]\nblockmap = "*"\n', 24, ['[plots] blockmap = "*": must be a list of strings']),
    ('\n[params]\nsize = [1]\n', 24, ["[params] size = [1]: must be a string, a number or true/false"]),
]


@pytest.mark.parametrize("extra,line,words", TYPES, ids=[t[2][0][:40] for t in TYPES])
def test_wrong_types_and_placeholders_refused_at_their_line(tmp_path, extra, line, words):
    """Every documented key's type, and run = / prepare = placeholders, checked before anything
    runs (they failed only after mounting, exit status 1)."""
    _refused(tmp_path, BASE.replace("{extra}", extra).replace("{extra_matrix}", ""), line, words)


@pytest.mark.parametrize("old,new,line,words", [
    ('name = "t"', 'name = "t"\nrepetitions = true', 3, ["[job] repetitions = true: must be a whole number"]),
    ('name = "t"', 'name = "t"\ntitle = "cache {cache}"', 3, ["[job] title: unknown placeholder {cache}",
                                                             "did you mean {cache_mib}?"]),
    ('name = "t"', 'name = "t"\nnotes = "n"', 3, ['[job] notes = "n": must be a list of strings']),
    ('kind = "none"', 'kind = ["none"]', 5, ['[workload] kind = ["none"]: must be a string']),
    ('disk = "sata7200"', 'disk = "sata7200"\nalloc = ["ext2"]', 12, ['[mount] alloc = ["ext2"]: must be a string']),
    ('disk = "sata7200"', 'maxio = {workload = 1}', 11, ["{workload = ...} is for mkfs size and mount cache"]),
    ('size = "256M"', 'size = "256M"\nblock_size = {workload = 1}', 9, ["[mkfs] block_size = {workload = 1}"]),
    ('alloc = ["ext2", "cg"]', 'alloc = [["ext2"], "cg"]', 14, ['[matrix] alloc = ["ext2"]: must be a string']),
    ('{label = "1K"', '{label = ["1K"]', 15, ["label = [\"1K\"]: must be a string or a number"]),
    ('[matrix]', '[matrix]\nname = "{alloc} {blok}"', 14, ["[matrix] name: unknown placeholder {blok}",
                                                          "did you mean {block}?"]),
])
def test_wrong_types_in_tables_refused_at_their_line(tmp_path, old, new, line, words):
    text = BASE.replace("{extra}", "").replace("{extra_matrix}", "")
    assert old in text
    _refused(tmp_path, text.replace(old, new, 1), line, words)


def test_shell_braces_are_not_placeholders(tmp_path):
    """${VAR}, find's {} and {params.KEY} stay allowed in run = commands: the command run has
    {mnt} and {params.n} replaced and the shell's braces as written."""
    from types import SimpleNamespace
    job = _job(tmp_path, extra='\n[params]\nn = 3\n' + RUN.replace("ls {mnt}", 'find {mnt} -exec ls {} + ; echo ${HOME} '
                                                                   '{params.n}'))
    ls = next(p for p in _compile(job).phases if p.name == "ls")
    ctx = SimpleNamespace(mnt="/mnt/x", source=None, tarball=None, work=None, image=None, params={"n": 3})
    assert ls.command(ctx) == "find /mnt/x -exec ls {} + ; echo ${HOME} 3"


NAMES = [
    # a name another table refers to that matches nothing: (extra, extra_matrix, line, words)
    ('\n[[panel]]\nphase = "fnd"\n', "", 24, ["[[panel]]: unknown phase 'fnd'; phases: find", "did you mean 'find'?"]),
    ('\n[[panel]]\nphase = "find"\nconfigs = ["alloc=cg block=8K"]\n', "", 25,
     ["[[panel]] configs: 'alloc=cg block=8K' is no configuration; configurations: alloc=ext2 block=1K,",
      "did you mean 'alloc=cg block=4K'?"]),
    ('\n[[panel]]\ntitle = "x"\n', "", 23, ["[[panel]] needs phase ="]),
    ('\n[[ratio]]\nnum = "alloc=cg block=4k"\nden = "alloc=ext2 block=4K"\n', "", 24,
     ["is no configuration", "did you mean 'alloc=cg block=4K'?"]),
    ("", '[[matrix.exclude]]\nalloc = "cgg"\n', 18, ['[[matrix.exclude]] alloc = "cgg" matches no value of the '
                                                    'axis; its values: "ext2", "cg"', "did you mean 'cg'?"]),
    ("", '[[matrix.exclude]]\nblock = "2K"\n', 18, ['block = "2K" matches no value', 'its values: "1K", "4K"']),
    ("", '[[matrix.exclude]]\nblok = "1K"\n', 18, ["'blok' is not an axis of the matrix"]),
    ('\n[plots]\nblockmap = ["* 8K"]\n', "", 24, ["[plots] blockmap: '* 8K' matches no configuration"]),
]


@pytest.mark.parametrize("extra,extra_matrix,line,words", NAMES, ids=[n[3][0][:40] for n in NAMES])
def test_names_that_match_nothing_refused_with_the_valid_ones(tmp_path, extra, extra_matrix, line, words):
    """Typos in configuration names ([[panel]], [[ratio]], [plots]), phase names ([[panel]]) and
    [[matrix.exclude]] values were accepted silently (the panel or exclusion did nothing)."""
    _refused(tmp_path, BASE.replace("{extra}", extra).replace("{extra_matrix}", extra_matrix), line, words)


QUICK = "\n[quick]\nmatrix = {alloc = [\"ext2\"]}\n"     # lines 23-24 after BASE


@pytest.mark.parametrize("quick", [False, True], ids=["full", "quick"])
@pytest.mark.parametrize("extra,line,words", [
    (QUICK + 'workload = {kind = "tree", files = 0}\n', 25, ["in [quick]: [workload] files = 0: must be"]),
    (QUICK.replace('"ext2"', '"ext9"'), 24, ["in [quick]: bad value for mount option alloc"]),
    (QUICK + '\n[[quick.phase]]\nname = "ls"\nrun = "ls {mount}"\n', 28, ["in [quick]: phase 'ls', run: unknown "
                                                                        "placeholder {mount}"]),
    (QUICK + '\n[quick.mount]\ncolour = 1\n', 27, ["in [quick]: unknown mount option 'colour'"]),
    ('\n[quick]\nmkfs = {block_size = 1024}\nmatrix = {block = [{label = "x", size = "1K"}]}\n', 25,
     ["in [quick]: mkfs: image too small"]),
    ('\n[quick]\nphase = 3\n', 24, ["in [quick]: phase = 3: must be a list of tables"]),
])
def test_quick_checked_on_every_run_at_its_own_line(tmp_path, quick, extra, line, words):
    """The job merged with [quick] is checked without --quick too, and its errors name the line
    in [quick] (they named the job's line for the same key, or nothing until --quick)."""
    _refused(tmp_path, BASE.replace("{extra}", extra).replace("{extra_matrix}", ""), line, words, quick=quick)


def test_quick_may_narrow_an_axis_the_job_excludes_on(tmp_path):
    """An exclusion of the job's stays valid when [quick] leaves out the value it names."""
    job = _job(tmp_path, extra=QUICK.replace('"ext2"', '"cg"'),
               extra_matrix='[[matrix.exclude]]\nalloc = "ext2"\nblock = "1K"\n', quick=True)
    assert [c.name for c in _compile(job).configs] == ["block=1K", "block=4K"]


def test_fio_phase_runs_simfs_fio_on_the_job_files_neighbour(tmp_path):
    """fio = "JOB.fio": a mount phase running `simfs fio MNT JOB.fio` (a relative path is the job
    file's neighbour); a missing fio job file or args = is one line at its position."""
    (tmp_path / "w.fio").write_text("[w]\nrw=write\nsize=1m\n")
    job = _job(tmp_path, extra='\n[[phase]]\nname = "f"\nfio = "w.fio"\n')
    jobfile.check_paths(job)
    exp = _compile(job)
    p = exp.phase("f")
    ctx = _ctx(exp.configs[0], {})
    argv = p.command(ctx)
    assert p.kind == "mount" and jobfile.needs_mount(exp) and p.after is not None
    assert argv[-5:] == ["fio", str(ctx.mnt), str(tmp_path / "w.fio"), "--out", str(ctx.work / "fio-f")]
    missing = _job(tmp_path, extra='\n[[phase]]\nname = "f"\nfio = "nope.fio"\n')
    with pytest.raises(jobfile.JobError, match=r"job.toml:25: phase 'f': fio = \"nope.fio\": no such file"):
        jobfile.check_paths(missing)
    with pytest.raises(jobfile.JobError, match="args = is for verb"):
        _job(tmp_path, extra='\n[[phase]]\nname = "f"\nfio = "w.fio"\nargs = {x = 1}\n')
