"""experiments.aging without a mount: the generated history is deterministic, and free-space
fragmentation is counted from a used-block map as runs of free blocks; `simfs experiment run
git-aging` reaches it."""

from __future__ import annotations

import os

import numpy as np
import pytest

from experiments.aging.history import make_quick, need_bytes, select
from experiments.aging.measure import free_extents


def test_quick_history_is_deterministic(tmp_path):
    a = make_quick(str(tmp_path / "a"), commits=30, seed=7)
    b = make_quick(str(tmp_path / "b"), commits=30, seed=7)
    c = make_quick(str(tmp_path / "c"), commits=30, seed=8)
    assert a.commits == b.commits and len(a.commits) == 30
    assert c.commits != a.commits
    assert select(str(tmp_path / "a"), pulls=10).commits == a.commits[:11]
    assert need_bytes(a) > 29 * 32 << 10


def test_free_extents():
    used = np.array([1, 0, 0, 1, 0, 1, 1, 0, 0, 0], dtype=bool)
    assert free_extents(used) == {"free_extents": 3, "mean_free_extent_blocks": 2.0, "free_blocks": 6}
    assert free_extents(np.ones(5, dtype=bool))["free_extents"] == 0
    assert free_extents(np.zeros(4, dtype=bool))["free_extents"] == 1


def test_simfs_experiment_runs_git_aging(tmp_path):
    """`simfs experiment` lists git-aging and hands it to experiments.aging: a directory that
    is no git repository is one line, exit status 2, nothing made."""
    import subprocess
    import sys
    listed = subprocess.run([sys.executable, "-m", "simfs.cli", "experiment", "list"], capture_output=True, text=True)
    assert any(line.startswith("git-aging ") for line in listed.stdout.splitlines())
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "simfs.cli", "experiment", "run", "git-aging", "--source",
                        str(tmp_path), "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "not a git repository" in r.stderr
    assert not out.exists()


def test_simfs_experiment_passes_fill_and_profile_to_git_aging_only(tmp_path):
    """--fill reaches experiments.aging's own check (a full image is refused there); another
    experiment refuses --fill and --profile: each one line, exit status 2."""
    import subprocess
    import sys
    run = lambda *args: subprocess.run([sys.executable, "-m", "simfs.cli", "experiment", "run", *args],
                                       capture_output=True, text=True)
    r = run("git-aging", "--source", str(tmp_path), "--fill", "100")
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--fill 100" in r.stderr
    r = run("readdir-order", "--quick", "--profile", "ext4", "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "git-aging's" in r.stderr
    r = run("readdir-order", "--quick", "--workers", "2", "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "simfs run" in r.stderr
    r = run("git-aging", "--source", str(tmp_path), "--workers", "0")              # handed on
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--workers 0" in r.stderr
    assert not (tmp_path / "out").exists()


def test_aging_job_file_runs_through_simfs_run(tmp_path):
    """examples/jobs/git-aging.toml (an [aging] table) is handed by `simfs run` to
    experiments.aging: with --source a folder that is no git repository, that is its one-line
    refusal, exit status 2, nothing made; a key it does not know, another table beside [aging]
    and a job-runner option are refused in one line too."""
    import subprocess
    import sys
    from pathlib import Path
    example = Path(__file__).resolve().parents[2] / "examples" / "jobs" / "git-aging.toml"
    run = lambda job, *args: subprocess.run([sys.executable, "-m", "simfs.cli", "run", str(job), *args],
                                            capture_output=True, text=True)
    out = tmp_path / "out"
    r = run(example, "--source", str(tmp_path), "--out", str(out))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "not a git repository" in r.stderr
    assert not out.exists()
    bad = tmp_path / "bad.toml"
    for text, words in (('[aging]\nevry = 10\n', "no key 'evry'"),
                        ('[aging]\npulls = "ten"\n', "pulls = 'ten'"),
                        ('[aging]\npulls = 10\n[workload]\nkind = "none"\n', "only an [aging] table")):
        bad.write_text(text)
        r = run(bad, "--out", str(out))
        assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and words in r.stderr, (text, r.stderr)
    r = run(example, "--keep", "--source", str(tmp_path))
    assert r.returncode == 2 and "--keep" in r.stderr and r.stderr.strip().count("\n") == 0
    r = run(example, "--workers", "0", "--source", str(tmp_path), "--out", str(out))   # handed on
    assert r.returncode == 2 and "--workers 0: give 1 or more" in r.stderr and r.stderr.strip().count("\n") == 0
    assert not out.exists()


def test_every_git_process_gets_the_repeatable_settings(tmp_path):
    """experiments.aging.gitenv: the settings reach git through the environment (so the
    processes a fetch starts, pack-objects on the mirror's side included, inherit them), a
    user's global configuration does not, and commits and reflogs carry the fixed identity."""
    import os
    import subprocess
    from experiments.aging import gitenv
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[pack]\n\tthreads = 8\n[user]\n\tname = someone\n")
    env = gitenv.env({"PATH": os.environ["PATH"], "HOME": str(home)})
    get = lambda key: subprocess.run(["git", "config", "--get", key], env=env, capture_output=True,
                                     text=True).stdout.strip()
    assert get("pack.threads") == "1" and get("core.preloadIndex") == "false" and get("index.threads") == "1"
    assert get("user.name") == ""                          # ~/.gitconfig is not read
    ident = subprocess.run(["git", "var", "GIT_COMMITTER_IDENT"], env=env, capture_output=True,
                           text=True).stdout.strip()
    assert ident == f"{gitenv.NAME} <{gitenv.EMAIL}> {gitenv.DATE}"


def test_the_index_is_dated_at_the_epoch(tmp_path):
    import os
    from experiments.aging.gitenv import settle_index
    (tmp_path / "index").write_bytes(b"DIRC")
    settle_index(str(tmp_path))
    assert os.stat(tmp_path / "index").st_mtime_ns == 0
    settle_index(str(tmp_path / "none"))                   # no index yet: nothing to do


def test_canon_gives_gits_random_names_and_times_stand_ins(tmp_path):
    """experiments.aging.canon: two logs that differ only in git's temporary names (each its
    own, reused consistently within a log), utime(NULL) times and where a FORGET fell come out
    the same; other names, a 7-character name outside the repository and the header's other
    fields stay."""
    import gzip
    import json
    from experiments.aging.canon import canonicalize

    def log(names, when, path, drop_late, release_late=0):
        ops = [["mkdir", 1, 0, "git", 16877, 0, 0], ["symlink", 2, 1, names[0], "testing", 0, 0],
               ["unlink", None, 1, names[0]], ["create", 3, 1, names[1], 33060, 0, 0],
               ["link", 4, 3, 1, "8a6d40d47b64b5e3cdd4849317e1fbfd863519"],
               ["unlink", None, 1, names[1]], ["create", 5, 0, "tracing", 33188, 0, 0],
               ["setattr", None, 4, {"atime_ns": when, "mtime_ns": when}],
               ["setattr", None, 5, {"mtime_ns": 0}], ["lookup", "ENOENT", 1, names[1]],
               ["getattr", None, 0], ["getattr", None, 1]]
        ops.insert(len(ops) - drop_late, ["drop", None, 4, 1])      # the FORGET of 4, late
        ops.insert(ops.index(["setattr", None, 5, {"mtime_ns": 0}]) + 1 + release_late,
                   ["release", None, 5, True])                     # 5's RELEASE, late too
        head = {"format": "simfs-oplog", "version": 2, "options": {"stats": f"{path}.stats.json", "alloc": "ext2"}}
        with gzip.open(path, "wt") as f:
            f.write("\n".join(json.dumps(x, separators=(",", ":")) for x in [head] + ops) + "\n")
        assert canonicalize(str(path)) == 2
        return gzip.decompress(path.read_bytes()).decode()

    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    a = log(["tY7tdG9", "tmp_obj_atdCaO"], 1796650975914674256, tmp_path / "one" / "aged.oplog.gz", 0)
    b = log(["t1l3hX9", "tmp_obj_ywN9bH"], 1796651176810682730, tmp_path / "two" / "aged.oplog.gz", 3, 2)
    assert a == b
    lines = a.splitlines()                       # the drop right after 4's last mention
    assert lines[lines.index('["drop",null,4,1]') - 1].startswith('["setattr",null,4,')
    assert lines[lines.index('["release",null,5,true]') - 1] == '["setattr",null,5,{"mtime_ns":0}]'
    assert "tmp_obj_000001" in a and '"t000000"' in a and '"tracing"' in a and '"mtime_ns":0' in a
    assert json.loads(a.splitlines()[0])["options"] == {"stats": "aged.oplog.gz.stats.json", "alloc": "ext2"}


def test_evictions_count_inodes_the_host_forgot_and_git_needed_again(tmp_path):
    """experiments.aging.canon.Evictions: an inode whose holds a FORGET took to zero and that a
    later LOOKUP returned is one the host evicted (reclaim: a quiet host keeps a mount's inodes);
    a FORGET of an inode not asked for again, or one that leaves a hold, is not; canonicalize
    counts what a scan of the log counts, before and after its rewrite."""
    import gzip
    import json
    from experiments.aging.canon import Evictions, canonicalize
    ops = [["lookup", 1, 0, "tree"], ["hold", None, 1, 1], ["lookup", 2, 1, "a.c"], ["hold", None, 2, 1],
           ["lookup", 3, 1, "b.c"], ["hold", None, 3, 2], ["lookup", 4, 1, "tmp_obj_atdCaO"], ["hold", None, 4, 1],
           ["drop", None, 2, 1],                 # evicted...
           ["drop", None, 3, 1],                 # one of two lookups forgotten: still held
           ["drop", None, 4, 1],                 # forgotten, never asked for again
           ["getattr", None, 1], ["lookup", 2, 1, "a.c"], ["hold", None, 2, 1],     # ...and needed again
           ["getattr", None, 2], ["getattr", None, 2], ["lookup", 3, 1, "b.c"], ["hold", None, 3, 1]]
    path = tmp_path / "aged.oplog.gz"
    with gzip.open(path, "wt") as f:
        f.write("\n".join(json.dumps(x, separators=(",", ":")) for x in [{"format": "simfs-oplog"}] + ops) + "\n")
    assert Evictions.scan(str(path)) == 1
    ev = Evictions()
    canonicalize(str(path), ev)
    assert ev.count == 1 and Evictions.scan(str(path)) == 1


def test_aging_draws_a_progress_bar_for_the_pulls_and_each_replay(tmp_path, monkeypatch):
    """issue 51, item 15: the mounted run counts its pulls, each replay its operations, on
    simfs.cli.progress.Bar (rich's, as `simfs run` draws it; only on a terminal), while the
    measurements still print one line each (in-process, the mount and replays stand-ins)."""
    import json
    from experiments.aging import cli
    from experiments.aging.measure import row
    bars = []

    class Bar:
        def __init__(self, description, total=None, **kw):
            self.description, self.total, self.calls = description, total, []
            bars.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def __call__(self, label=None):
            self.calls.append(label)

    phase = {"elapsed": 1.0, "layout_score": 0.5}
    free = {"free_extents": 1, "mean_free_extent_blocks": 1.0, "free_blocks": 1, "used_pct": 5.0}

    def age(h, cfg, work, every, sink, *, log, done, progress, first=0, last=None, filled=None, times=None):
        for i in range(first, last + 1):
            progress(f"pull {i}")
            progress(None)
        sink(row(cfg.alloc, "mounted", 2, "c", phase, phase, free))

    def replay(log, pristine, cfg, work, sink, *, progress, **kw):
        progress(None)
        sink(row(cfg.alloc, "replayed", 2, "c", phase, phase, free))

    monkeypatch.setattr(cli, "Bar", Bar)
    monkeypatch.setattr(cli, "age", age)
    monkeypatch.setattr(cli, "replay", replay)
    monkeypatch.setattr(cli, "canonicalize", lambda log, evictions=None: 0)
    monkeypatch.setattr(cli, "replay_steps", lambda log: 7)
    plan = {"out": str(tmp_path), "history": "h", "repo": str(tmp_path), "commits": ["a", "b", "c"],
            "pulls": 2, "every": 2, "mounted": "ext2", "replay": ["cg", "ext2"], "disk": "sata7200",
            "size": 64 << 20, "block_size": 4096, "dataless": False, "profile": "ext2", "fill": 0,
            "pictures": False, "wall": {}}
    (tmp_path / "work").mkdir()
    cli.run(plan)
    assert [(b.description, b.total) for b in bars] == [("mounted alloc=ext2", 3), ("replay alloc=cg", 7),
                                                        ("replay alloc=ext2", 7)]
    assert bars[0].calls == ["pull 0", None, "pull 1", None, "pull 2", None] and bars[1].calls == [None]
    assert len(json.loads((tmp_path / "results.json").read_text())["measurements"]) == 3


def test_the_replayed_clean_copy_walks_as_cp_would_on_the_replayed_volume():
    """cp -a copies each directory's entries by inode number; a replay under another allocator
    numbers them otherwise than the recording did (cg puts a directory's files in another order
    than ext2), so the clean copy follows the replayed volume's numbers, directories pre-order."""
    from experiments.aging.replayed import cp_order
    from simfs.inprocess.treedesc import Entry
    recorded = [Entry([b"src"], "dir"), Entry([b"src", b"fs"], "dir"), Entry([b"src", b"fs", b"a.c"], "file"),
                Entry([b"src", b"b.c"], "file"), Entry([b"doc"], "dir"), Entry([b"doc", b"x"], "file")]
    inos = [20, 31, 32, 25, 12, 13]        # the replayed volume's numbers
    got = [b"/".join(e.path).decode() for e in cp_order(recorded, inos)]
    assert got == ["doc", "doc/x", "src", "src/b.c", "src/fs", "src/fs/a.c"]
    assert cp_order(recorded, [1, 2, 3, 4, 5, 6]) == recorded      # the recording's own order


def test_a_segmented_recording_mounts_per_segment_stops_for_a_slice_and_extends(tmp_path, monkeypatch):
    """--segment N: one mount per N pulls (the clone with the first N), each with its own op log;
    --slice stops at a segment's end (cli.Sliced) and --resume goes on from the next pull; a
    run extended (--resume OUT --pulls M) goes on with the same boundaries as a run of M
    pulls; a mount interrupted inside a segment cannot go on; the replays get every log in
    order (in-process, the mount and replays stand-ins)."""
    import json
    from experiments.aging import cli
    from experiments.aging.history import AgingError
    mounts, replays = [], []

    def age(h, cfg, work, every, sink, *, log, done, progress, first, last, filled=None, times=None):
        mounts.append((first, last, os.path.basename(log)))
        if last == 30:
            raise KeyboardInterrupt                          # killed inside a mount
        return 70.0 if first == 0 else filled

    def replay(logs, pristine, cfg, work, sink, **kw):
        replays.append([os.path.basename(lg) for lg in logs])

    monkeypatch.setattr(cli, "age", age)
    monkeypatch.setattr(cli, "replay", replay)
    monkeypatch.setattr(cli, "canonicalize", lambda log, evictions=None: 0)
    monkeypatch.setattr(cli, "replay_steps", lambda log: 1)
    monkeypatch.setattr(cli, "first_parent", lambda repo: [f"c{i}" for i in range(41)])
    plan = {"out": str(tmp_path), "history": "h", "repo": str(tmp_path), "commits": [f"c{i}" for i in range(13)],
            "pulls": 12, "every": 5, "mounted": "ext2", "replay": ["cg"], "disk": "sata7200",
            "size": 64 << 20, "block_size": 4096, "dataless": False, "profile": "ext2", "fill": 0,
            "pictures": False, "wall": {}, "segment": 5}
    (tmp_path / "work").mkdir()
    with pytest.raises(cli.Sliced, match="recorded 5 of 12"):
        cli.run(plan, slice_s=0, record_only=True)
    cli.run(plan, replay_only=True)                          # what is recorded so far, no mount
    assert mounts == [(0, 5, "aged-0000.oplog.gz")] and replays == [["aged-0000.oplog.gz"]]
    cli.run(plan, record_only=True)
    assert mounts[1:] == [(6, 10, "aged-0001.oplog.gz"), (11, 12, "aged-0002.oplog.gz")]
    assert plan["filled"] == 70.0 and "mounted" in plan["wall"]
    cli.extend(plan, 40)
    assert plan["pulls"] == 40 and len(plan["commits"]) == 41 and "mounted" not in plan["wall"]
    with pytest.raises(KeyboardInterrupt):
        cli.run(plan)
    assert mounts[3:] == [(13, 15, "aged-0003.oplog.gz"), (16, 20, "aged-0004.oplog.gz"),
                          (21, 25, "aged-0005.oplog.gz"), (26, 30, "aged-0006.oplog.gz")]
    with pytest.raises(AgingError, match="inside its mount of pulls 26..30"):
        cli.run(json.loads((tmp_path / "run.json").read_text()))
    with pytest.raises(AgingError, match="10 pulls are recorded"):      # not below what is recorded
        cli.extend({**plan, "segments": plan["segments"][:2]}, 6)
    assert cli.segments({"pulls": 3, "wall": {"mounted": 9.0}}) == [{"first": 0, "last": 3, "wall": 9.0,
                                                                      "canon": True}]
    assert cli.log_path({"out": "o", "pulls": 3}, 0) == os.path.join("o", "work", "aged.oplog.gz")


@pytest.mark.parametrize("args, words", [
    (["--quick", "--slice", "60"], "give --segment N too"),
    (["--quick", "--segment", "0"], "--segment 0: give at least 1"),
    (["--quick", "--segment", "5", "--slice", "-1"], "--slice -1: give seconds"),
    (["--quick", "--replay-only"], "give --resume OUT"),
])
def test_segment_options_refused_with_one_line(tmp_path, capsys, args, words):
    """Bad --segment/--slice/--replay-only input: one line, exit status 2, nothing made."""
    from experiments.aging import cli
    out = tmp_path / "out"
    assert cli.main(args + ["--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and not out.exists()


def test_resume_refuses_a_slice_or_an_extension_of_a_one_mount_recording(tmp_path, capsys):
    import json
    from experiments.aging import cli
    (tmp_path / "run.json").write_text(json.dumps({"out": str(tmp_path), "pulls": 3, "wall": {"mounted": 1.0}}))
    for extra, words in ((["--slice", "60"], "records in one mount"), (["--pulls", "9"], "recorded in one mount")):
        assert cli.main(["--resume", str(tmp_path), *extra]) == 2
        assert words in capsys.readouterr().err


def test_pullprofile_refuses_what_it_cannot_sample(tmp_path, capsys):
    """python -m experiments.aging.pullprofile: a directory that is no aging run, a run recorded in
    one mount, one stopped inside a mount, one fully recorded, and --pulls 0 are one line each and
    exit status 2, nothing mounted."""
    import json
    from experiments.aging.pullprofile import main
    assert main([str(tmp_path)]) == 2
    assert "not an aging run" in capsys.readouterr().err
    plan = {"pulls": 10, "segment": 5, "segments": [{"first": 0, "last": 5}], "wall": {}}
    for change, words in (({"segment": None}, "--segment run"), ({"recording": {"first": 6, "last": 10}}, "--segment run"),
                          ({"pulls": 5}, "every pull is recorded"), ({}, "--pulls 0")):
        (tmp_path / "run.json").write_text(json.dumps({**plan, **change}))
        assert main([str(tmp_path)] + (["--pulls", "0"] if not change else [])) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and words in err, err
