"""The aging experiment at the quick size (issue 42): a generated history pulled by the real git
onto a simfs mount, measured, and the op log replayed in-process.

* the layout score of the aged tree falls below its clean copy's for at least one allocator;
* mounted and replayed agree: the replay of the ext2 mount's log under ext2 gives the mounted
  figures, and under cg it gives the figures of a second mounted run with alloc=cg (age once,
  replay for every policy);
* e2fsck -fn is clean on the aged images (mounted and replayed);
* the aged tree equals `git checkout` of the last commit in a fresh clone (diff -r);
* --resume continues a run that stopped, with the same figures;
* two recordings of the same history and pull count give byte-identical op logs;
* --segment (long): a recording made in slices and extended from a shorter run gives the op logs
  of one run, byte for byte, and its replay across the remounts the mounted figures;
* the nearly-full variant on the ext4 profile (--fill, --profile ext4): the filler lays the
  image to the stated share of its blocks (dumpe2fs's counts), the mounted mballoc run and its
  replay agree, mballoc-delalloc's replay of the same log runs, e2fsck is clean, and the aged
  tree is the last commit under the kernel's ext4 driver;
* bad input (not a repository, a range past the end, an image too small, a fill that leaves the
  history no room, an unknown profile) is one line and exit status 2 with nothing made.

Budget: about two minutes here (mounted runs of 20, 10, 10 and 5 pulls, replays under six
allocators).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import e2fsck, run
from tests.helpers import kernel_mount

pytestmark = pytest.mark.mount

PULLS, EVERY = "20", "10"
CG_PULLS = "10"          # the second mounted run: its first measurement is compared
FILL, FULL_PULLS = 85, "5"   # the nearly-full ext4 run, on a small image (less filler to write)
FULL_SIZE = "24M"
COMPARED = ("pulls", "commit", "aged_grep_s", "clean_grep_s", "ratio", "aged_layout",
            "clean_layout", "free_extents", "mean_free_extent_blocks", "free_blocks")


def aging(*args, check=True):
    r = subprocess.run([sys.executable, "-m", "experiments.aging", *map(str, args)],
                       capture_output=True, text=True, timeout=600)
    if check and r.returncode != 0:
        pytest.fail(f"aging {args} exited {r.returncode}: {r.stderr[-3000:]}")
    return r


def rows(out, engine=None, config=None) -> list[dict]:
    with open(os.path.join(out, "results.json")) as f:
        doc = json.load(f)
    return [r for r in doc["measurements"] if engine in (None, r["engine"]) and config in (None, r["config"])]


def figures(rs: list[dict]) -> list[tuple]:
    return [tuple(r[k] for k in COMPARED) for r in sorted(rs, key=lambda r: r["pulls"])]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("the pulls run on a simfs mount: root only")
    base = tmp_path_factory.mktemp("aging")
    ext2, cg = base / "ext2", base / "cg"
    aging("--quick", "--pulls", PULLS, "--every", EVERY, "--alloc", "ext2",
          "--replay", "ext2,cg,first-free", "--out", ext2)
    aging("--quick", "--pulls", CG_PULLS, "--every", EVERY, "--alloc", "cg", "--replay", "cg",
          "--no-pictures", "--out", cg)
    return ext2, cg


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """The nearly-full variant on the ext4 profile: mounted with mballoc, replayed under
    mballoc and mballoc-delalloc."""
    if os.geteuid() != 0:
        pytest.skip("the pulls run on a simfs mount: root only")
    out = tmp_path_factory.mktemp("aging-full") / "ext4"
    aging("--quick", "--pulls", FULL_PULLS, "--every", FULL_PULLS, "--profile", "ext4", "--fill", FILL,
          "--size", FULL_SIZE, "--replay", "mballoc,mballoc-delalloc", "--no-pictures", "--out", out)
    return out


@pytest.fixture(scope="module")
def again(runs, tmp_path_factory):
    """A second recording of the cg run's history and pull count (issue 51, item 3)."""
    out = tmp_path_factory.mktemp("aging-again") / "cg"
    aging("--quick", "--pulls", CG_PULLS, "--every", EVERY, "--alloc", "cg", "--replay", "cg",
          "--no-pictures", "--out", out)
    return out


def same_recording(a: bytes, b: bytes, logs) -> bool:
    """Two canonical op logs are the same recording: byte for byte (True), or, when the host
    evicted some of the mount's inodes during either (experiments.aging.canon.Evictions: its
    reclaim, not the history), the same once what reclaim adds is set aside - the FORGETs, and
    the GETATTR the kernel repeats of an inode it made anew (False). Anything else fails."""
    if a == b:
        return True
    from experiments.aging.canon import Evictions
    evicted = [Evictions.scan(str(p)) for p in logs]
    assert any(evicted), f"{logs[0].name}: the logs differ and the host evicted none of the inodes"

    def quiet(log: bytes) -> list[bytes]:
        out = []
        for line in log.split(b"\n")[1:]:
            if not line.startswith(b'["drop"') and not (line.startswith(b'["getattr"') and out and out[-1] == line):
                out.append(line)
        return out
    assert quiet(a) == quiet(b), f"{logs[0].name}: the logs differ beyond the host's evictions ({evicted})"
    return False


def test_two_recordings_of_a_history_are_byte_identical(runs, again):
    """A recording is a function of the history: the same pulls of the same history give the
    same op log, byte for byte (experiments.aging.gitenv: single-threaded packs, a fixed
    identity, no FETCH_HEAD, the index dated at the epoch; canon: git's random temporary names
    and utime times given stand-ins), and so the same figures - on a quiet host: where the
    host's reclaim evicted the mount's inodes, the logs may differ by what that adds, and only
    by that (same_recording)."""
    import gzip
    _, cg = runs
    logs = [d / "work" / "aged.oplog.gz" for d in (cg, again)]
    first, second = (gzip.decompress(p.read_bytes()) for p in logs)
    assert first.count(b"\n") > 1000
    if same_recording(first, second, logs):
        assert figures(rows(cg, "mounted")) == figures(rows(again, "mounted"))


def test_aged_layout_below_clean(runs):
    ext2, _ = runs
    got = rows(ext2, "replayed")
    assert len(got) == 3 * (int(PULLS) // int(EVERY))
    assert any(r["aged_layout"] < r["clean_layout"] for r in got), got
    assert all(r["aged_grep_s"] > 0 and r["clean_grep_s"] > 0 for r in got)


def test_mounted_and_replayed_agree(runs):
    ext2, cg = runs
    assert figures(rows(ext2, "mounted", "ext2")) == figures(rows(ext2, "replayed", "ext2"))
    assert figures(rows(cg, "mounted", "cg")) == figures(rows(cg, "replayed", "cg"))
    # age once: ext2's recording replayed under cg is what git did on a cg mount
    first = [r for r in rows(ext2, "replayed", "cg") if r["pulls"] <= int(CG_PULLS)]
    assert first and figures(first) == figures(rows(cg, "mounted", "cg"))
    assert figures(rows(ext2, "replayed", "cg")) != figures(rows(ext2, "replayed", "ext2"))


def test_images_clean_after_aging(runs):
    ext2, cg = runs
    for image in [ext2 / "work" / "aged-ext2.img", cg / "work" / "aged-cg.img",
                  ext2 / "work" / "replayed-cg.img", ext2 / "work" / "replayed-first-free.img"]:
        rc, out = e2fsck(image)
        assert rc == 0, f"e2fsck -fn {image}: {out}"


def dumpe2fs_free_extents(image) -> tuple[int, int]:
    """(free extents, free blocks) from dumpe2fs's per-group "Free blocks:" ranges, runs that
    continue across a group boundary joined."""
    out = run(["dumpe2fs", str(image)]).stdout
    ranges = []
    for line in out.splitlines():
        if line.startswith("  Free blocks: "):
            for part in line.split(":", 1)[1].split(","):
                if part.strip():
                    a, _, b = part.strip().partition("-")
                    ranges.append((int(a), int(b or a)))
    extents = sum(1 for i, (a, _) in enumerate(ranges) if i == 0 or ranges[i - 1][1] + 1 != a)
    return extents, sum(b - a + 1 for a, b in ranges)


def test_free_space_figures_match_dumpe2fs(runs):
    """The last measurement is at the last pull: nothing is allocated after it, so its
    free-space figures are those dumpe2fs reads from the unmounted image."""
    ext2, _ = runs
    last = max(rows(ext2, "mounted", "ext2"), key=lambda r: r["pulls"])
    assert last["pulls"] == int(PULLS)
    assert (last["free_extents"], last["free_blocks"]) == dumpe2fs_free_extents(ext2 / "work" / "aged-ext2.img")


def test_full_ext4_mounted_and_replayed_agree(full):
    """--fill and --profile ext4: the run records both, the mounted mballoc run and its replay
    give the same figures, and mballoc-delalloc's replay of the same log measured too."""
    plan = json.loads((full / "run.json").read_text())
    assert (plan["profile"], plan["fill"], plan["mounted"]) == ("ext4", FILL, "mballoc")
    assert plan["dirorder"] == "hash"           # ext4's dir_index order, the profile's default
    mounted = rows(full, "mounted", "mballoc")
    assert len(mounted) == 1 and figures(mounted) == figures(rows(full, "replayed", "mballoc"))
    assert mounted[0]["filled_pct"] == rows(full, "replayed", "mballoc")[0]["filled_pct"]
    delalloc = rows(full, "replayed", "mballoc-delalloc")
    assert len(delalloc) == 1 and figures(delalloc) != figures(mounted)
    assert abs(delalloc[0]["filled_pct"] - FILL) < 0.1, delalloc
    assert f"filled to {FILL}% of its blocks" in (full / "summary.md").read_text()


def test_full_ext4_filled_as_dumpe2fs_counts(full):
    """The filler lays the mounted image to FILL% of its blocks (the least whole number of
    blocks at or over it; one more if the last filler file took an extent leaf), and the share
    in use at the last measurement is what dumpe2fs reads from the unmounted image."""
    image = full / "work" / "aged-mballoc.img"
    head = run(["dumpe2fs", "-h", str(image)]).stdout
    blocks = int(next(ln for ln in head.splitlines() if ln.startswith("Block count:")).split()[-1])
    assert "extent" in head and "flex_bg" in head
    (last,) = rows(full, "mounted", "mballoc")
    target = -(-blocks * FILL // 100)
    assert last["filled_pct"] in (round(100 * target / blocks, 3), round(100 * (target + 1) / blocks, 3))
    _, free = dumpe2fs_free_extents(image)
    assert last["free_blocks"] == free and last["used_pct"] == round(100 * (blocks - free) / blocks, 3)
    assert last["used_pct"] > last["filled_pct"]          # the history went on top of the filler


def test_full_ext4_images_clean(full):
    for image in ("aged-mballoc.img", "replayed-mballoc.img", "replayed-mballoc-delalloc.img"):
        rc, out = e2fsck(full / "work" / image)
        assert rc == 0, f"e2fsck -fn {image}: {out}"


def _last_commit_equals_tree(run_dir, image, tmp_path, fstype="ext2"):
    with open(run_dir / "run.json") as f:
        plan = json.load(f)
    fresh = tmp_path / "fresh"
    run(["git", "clone", "-q", "--no-checkout", plan["repo"], str(fresh)])
    run(["git", "-C", str(fresh), "checkout", "-q", plan["commits"][-1]])
    with kernel_mount(image, tmp_path / "mnt", fstype=fstype) as mnt:
        r = subprocess.run(["diff", "-r", "--no-dereference", "--exclude=.git", str(fresh), str(mnt / "tree")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stdout[-3000:]
        assert len(list((mnt / "tree").rglob("*.c"))) > 10
        return sum(f.stat().st_size for f in (mnt / "filler").rglob("*") if f.is_file()) \
            if (mnt / "filler").exists() else 0


def test_aged_tree_is_the_last_commit(runs, tmp_path):
    ext2, _ = runs
    assert _last_commit_equals_tree(ext2, ext2 / "work" / "aged-ext2.img", tmp_path) == 0


def test_full_aged_tree_is_the_last_commit(full, tmp_path):
    """Under the kernel's ext4 driver: the tree is the last commit, the filler is there."""
    filler = _last_commit_equals_tree(full, full / "work" / "aged-mballoc.img", tmp_path, "ext4")
    assert filler > (FILL - 10) / 100 * json.loads((full / "run.json").read_text())["size"]


def test_resume_continues(runs):
    ext2, _ = runs
    before = figures(rows(ext2, "replayed", "first-free"))
    plan = json.loads((ext2 / "run.json").read_text())
    del plan["wall"]["replay first-free"]
    (ext2 / "run.json").write_text(json.dumps(plan))
    lines = (ext2 / "measurements.jsonl").read_text().splitlines(keepends=True)
    ours = [i for i, ln in enumerate(lines) if '"first-free"' in ln]
    kept = [ln for i, ln in enumerate(lines) if i not in ours[1:]]        # as if it stopped after one
    (ext2 / "measurements.jsonl").write_text("".join(kept) + '{"cut sh')   # and a line cut short
    aging("--resume", ext2)
    assert figures(rows(ext2, "replayed", "first-free")) == before
    assert all(os.path.exists(ext2 / p) for p in ("results.csv", "summary.md", "ratio.png", "layout.png",
                                                  "blockmap.png"))


@pytest.fixture(scope="module")
def small_repo(tmp_path_factory):
    """A history of four commits of 1 MiB each that does not compress (made once: no case
    changes it)."""
    if os.geteuid() != 0:
        pytest.skip("checks run after the root check")
    repo = tmp_path_factory.mktemp("bad-input") / "repo"
    run(["git", "init", "-q", str(repo)])
    for i in range(4):
        (repo / f"f{i}").write_bytes(os.urandom(1 << 20))     # 4 MiB that do not compress
        run(["git", "-C", str(repo), "add", "."])
        run(["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qm", str(i)])
    return repo


@pytest.mark.parametrize("args, words", [
    (["{tmp}"], "not a git repository"),
    (["{repo}", "--pulls", "100000"], "past the end"),
    (["{repo}", "--commits", "HEAD..HEAD~3"], "not a first-parent ancestor"),
    (["{repo}", "--size", "4M"], "too small"),
    (["{repo}", "--fill", "90"], "leaves"),
    (["{repo}", "--fill", "100"], "below 100"),
    (["{repo}", "--fill", "0.01"], "already has"),
    (["{repo}", "--profile", "ext3"], "--profile ext3"),
    (["{repo}", "--dirorder", "bogus"], "--dirorder bogus"),
    (["{repo}", "--workers", "0"], "--workers 0"),
])
def test_bad_input(tmp_path, capsys, small_repo, args, words):
    from experiments.aging.cli import main
    repo = small_repo
    out = tmp_path / "out"
    rc = main([a.format(tmp=tmp_path, repo=repo) for a in args] + ["--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and words in err, err
    assert not out.exists()


def test_every_mount_and_replay_gets_the_plans_dirorder():
    """--dirorder (default: the profile's kernel order) reaches the mounted run, the clean
    copies and the replays alike; a plan written before the option ran with linear."""
    from experiments.aging.cli import config
    plan = {"disk": "sata7200", "size": 64 << 20, "block_size": 4096, "dataless": True,
            "profile": "ext4", "dirorder": "hash"}
    assert config(plan, "mballoc").spec() == "alloc=mballoc,disk=sata7200,dirorder=hash"
    assert config(plan, "cg", True).spec() == "alloc=cg,disk=sata7200,dirorder=hash,dataless=yes"
    del plan["dirorder"]
    assert "dirorder=linear" in config(plan, "mballoc").spec()


def test_a_replay_that_stops_leaves_the_others(tmp_path, monkeypatch):
    """A replay that stops (out of space where the recording was not: a nearly-full image under
    another allocator) keeps its measurements, the next allocator still replays, the summary
    says which stopped and the run ends in an error (in-process, the replays stand-ins)."""
    from experiments.aging import cli
    from experiments.aging.history import AgingError
    from experiments.aging.measure import row
    plan = {"out": str(tmp_path), "history": "h", "repo": str(tmp_path), "commits": ["a", "b", "c"],
            "pulls": 2, "every": 1, "mounted": "ext2", "replay": ["cg", "ext2"], "disk": "sata7200",
            "size": 64 << 20, "block_size": 4096, "dataless": False, "profile": "ext2", "fill": 90,
            "pictures": False, "wall": {"mounted": 1.0}}
    (tmp_path / "work").mkdir()
    phase = {"elapsed": 1.0, "layout_score": 0.5}
    free = {"free_extents": 1, "mean_free_extent_blocks": 1.0, "free_blocks": 1, "used_pct": 95.0}

    def replay(log, pristine, cfg, work, sink, **kw):
        sink(row(cfg.alloc, "replayed", 1, "b", phase, phase, free, 90.0))
        if cfg.alloc == "cg":
            raise AgingError("replay under cg: operation 7 (line 7, write) ran out of space (ENOSPC)")
        sink(row(cfg.alloc, "replayed", 2, "c", phase, phase, free, 90.0))

    monkeypatch.setattr(cli, "replay", replay)
    with pytest.raises(AgingError, match=r"1 replay\(s\) stopped early \(cg\)"):
        cli.run(plan)
    assert [(r["config"], r["pulls"]) for r in rows(tmp_path, "replayed")] == [("cg", 1), ("ext2", 1), ("ext2", 2)]
    assert "ran out of space" in json.loads((tmp_path / "run.json").read_text())["stopped"]["cg"]
    assert "The replay under cg stopped" in (tmp_path / "summary.md").read_text()


def test_replays_as_dask_tasks_give_the_serial_figures(runs, tmp_path):
    """Replays are tasks (issue 55 item 4): the ext2 run's recording replayed under ext2 and cg
    on two Dask workers at once gives, exactly, the figures the serial replays gave; each
    finished replay is saved as it ends, so --resume skips it."""
    import shutil
    from experiments.aging import cli
    ext2, _ = runs
    plan = json.loads((ext2 / "run.json").read_text())
    out = tmp_path / "tasks"
    (out / "work").mkdir(parents=True)
    for f in ("aged.oplog.gz", "pristine.img"):
        shutil.copy(ext2 / "work" / f, out / "work" / f)
    (out / "measurements.jsonl").write_text("".join(
        ln for ln in (ext2 / "measurements.jsonl").read_text().splitlines(keepends=True) if '"mounted"' in ln))
    plan.update(out=str(out), replay=["ext2", "cg"], wall={"mounted": plan["wall"]["mounted"]},
                pictures=False, stopped={})
    cli.run(plan, workers=2)
    for alloc in ("ext2", "cg"):
        assert figures(rows(out, "replayed", alloc)) == figures(rows(ext2, "replayed", alloc)), alloc
        assert rows(out, "replayed", alloc)
    where = json.loads((out / "run.json").read_text())["where"]
    a, b = where["replay ext2"], where["replay cg"]
    assert a["pid"] != b["pid"] and a["start"] < b["end"] and b["start"] < a["end"], where  # at once


SEGMENT = "5"


@pytest.fixture(scope="module")
def segmented(tmp_path_factory):
    """The same 20 pulls recorded with --segment 5 twice: in one go, and in slices (--slice 0:
    one mount a call, exit status 75 until done) of a 10-pull run, replayed there (--replay-only),
    then extended to 20 pulls (--resume --pulls 20) and replayed on from where it stopped."""
    if os.geteuid() != 0:
        pytest.skip("the pulls run on a simfs mount: root only")
    base = tmp_path_factory.mktemp("aging-segments")
    whole, sliced = base / "whole", base / "sliced"
    common = ("--every", EVERY, "--segment", SEGMENT, "--alloc", "ext2", "--replay", "ext2", "--no-pictures")
    aging("--quick", "--pulls", PULLS, *common, "--out", whole)
    calls = [aging("--quick", "--pulls", "10", *common, "--slice", "0", "--out", sliced, check=False)]
    while calls[-1].returncode == 75 and len(calls) < 5:
        calls.append(aging("--resume", sliced, "--slice", "0", "--record-only", check=False))
    assert [c.returncode for c in calls] == [75, 0], [c.stderr[-500:] for c in calls]
    aging("--resume", sliced, "--replay-only")
    halfway = rows(sliced)
    aging("--resume", sliced, "--pulls", PULLS, "--record-only")
    aging("--resume", sliced)
    return whole, sliced, halfway


@pytest.mark.long                       # four more mounted runs of the quick history: about 40 s
def test_a_segmented_recording_goes_on_in_slices_and_extends_to_the_same_logs(segmented):
    """--segment: one mount (and op log) per 5 pulls; recorded in slices and extended from a
    shorter run, the logs are byte for byte those of one run, and so are every figure (on a
    quiet host: same_recording); the
    replay of the remounts (the volume closed and opened at each log's end) gives the mounted
    figures, and a replay resumed after the extension those of the replay in one go."""
    import gzip
    whole, sliced, halfway = segmented
    names = sorted(p.name for p in (whole / "work").glob("aged-*.oplog.gz"))
    assert names == [f"aged-{j:04d}.oplog.gz" for j in range(4)]
    assert sorted(p.name for p in (sliced / "work").glob("aged-*.oplog.gz")) == names
    quiet = True
    for name in names:
        logs = [d / "work" / name for d in (whole, sliced)]
        a, b = (gzip.decompress(p.read_bytes()) for p in logs)
        assert a.count(b"\n") > 100
        quiet &= same_recording(a, b, logs)
    if quiet:                           # (the host's reclaim moves the figures too)
        for engine in ("mounted", "replayed"):
            assert figures(rows(whole, engine)) == figures(rows(sliced, engine))
    for d in (whole, sliced):
        assert figures(rows(d, "mounted")) == figures(rows(d, "replayed"))
    assert [r["pulls"] for r in halfway if r["engine"] == "replayed"] == [10]
    plan = json.loads((sliced / "run.json").read_text())
    assert [(s["first"], s["last"]) for s in plan["segments"]] == [(0, 5), (6, 10), (11, 15), (16, 20)]
    assert sorted(plan["replayed"]["ext2"]) == ["0", "1", "2", "3"]
