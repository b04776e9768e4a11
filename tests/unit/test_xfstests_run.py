"""tests/xfstests/run.py without xfstests: the build folder's path, and the per-test watchdog.

`make xfstests` passes `--dir .xfstests`; the tree built there is both ./check's working
directory and a `cd` target in its script, so it must come back absolute (a fresh clone failed
with `cd: can't cd to .xfstests/src` after 23 minutes of set-up). The watchdog keyed tests by
pid and never forgot one: a later test given a finished one's pid was killed a second after
starting, logged "killed after 300 s".

Issue 51 item 18: a sized scratch file system for FSTYP=fuse (fuse-mkfs.patch + the simfs mkfs
hook), the kernel's ext4 with simfs's ext4 profile as a second baseline, and one copy of each
failure artefact (results/xfstests held four identical copies of generic/020.full)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RUN_PY = Path(__file__).resolve().parents[1] / "xfstests" / "run.py"


@pytest.fixture
def run_mod():
    spec = importlib.util.spec_from_file_location("xfstests_run", RUN_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_relative_dir_gives_an_absolute_tree_that_cd_finds(run_mod, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = str(tmp_path / "no-such-source")          # (no commit: the stamp is the path)
    (tmp_path / ".xfstests" / "src" / "ltp").mkdir(parents=True)
    (tmp_path / ".xfstests" / "src" / "ltp" / "fsx").write_text("")
    (tmp_path / ".xfstests" / ".built").write_text(f"{source} patch {run_mod.patch_digest()}\n")
    src = run_mod.build(source, ".xfstests", 1)        # built already: nothing cloned
    assert os.path.isabs(src) and src == str(tmp_path / ".xfstests" / "src")
    # as run() uses it: the working directory and the script's `cd` target at once
    r = subprocess.run(["sh", "-c", f"cd {src} && pwd"], cwd=src, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == src, r.stderr


def test_the_watchdog_never_kills_a_new_test_given_an_old_ones_pid(run_mod, monkeypatch):
    """generic/221 runs as pid 4242 and ends; much later generic/222 gets pid 4242 again
    (a new start time): it must run its full LIMIT, not be killed at once."""
    src, root, limit = "/x/src", 100, 300
    script = f"{src}/tests/generic/"

    def snap(test: str | None) -> dict:
        procs = {root: (1, ["unshare"]), 200: (root, ["bash", "./check"])}
        if test:
            procs[4242] = (200, ["bash", script + test])
        return procs

    # (fake time, what /proc shows, the start time of pid 4242 then)
    timeline = [(0, snap("221"), 1000), (10, snap(None), None),
                (400, snap("222"), 41000), (402, snap("222"), 41000),
                (500, snap("222"), 41000)]
    state = {"i": -1}
    kills: list[tuple[int, int]] = []

    class Stop:
        def wait(self, _):
            state["i"] += 1
            return state["i"] >= len(timeline)

    monkeypatch.setattr(run_mod, "_procs", lambda: timeline[state["i"]][1])
    monkeypatch.setattr(run_mod, "_start_time", lambda pid: timeline[state["i"]][2], raising=False)
    monkeypatch.setattr(run_mod.time, "monotonic", lambda: float(timeline[state["i"]][0]))
    monkeypatch.setattr(run_mod.os, "kill", lambda pid, sig: kills.append((pid, sig)))
    monkeypatch.setattr(run_mod, "log", lambda msg: None)
    killed: list[str] = []
    run_mod.watchdog(root, src, limit, Stop(), killed)
    assert killed == [] and kills == []                 # 222 has run 100 s of its 300

    # ... and one that does run LIMIT seconds is killed, with everything under it
    timeline[:] = [(0, snap("222"), 41000), (301, snap("222"), 41000)]
    state["i"] = -1
    run_mod.watchdog(root, src, limit, Stop(), killed)
    assert killed == ["generic/222"] and [p for p, _ in kills] == [4242]


def test_start_time_names_this_process(run_mod):
    me = run_mod._start_time(os.getpid())
    assert isinstance(me, int) and me == run_mod._start_time(os.getpid()) > 0
    assert run_mod._start_time(2 ** 22 + 1) is None


# a sized scratch file system ----------------------------------------------------------------
def test_the_build_stamp_names_the_patch(run_mod, tmp_path, monkeypatch):
    """A tree built without today's patch is built again (here: the source is gone, so the
    rebuild is refused), not used as it is."""
    source = str(tmp_path / "no-such-source")
    (tmp_path / "x" / "src" / "ltp").mkdir(parents=True)
    (tmp_path / "x" / "src" / "ltp" / "fsx").write_text("")
    (tmp_path / "x" / ".built").write_text(source + "\n")        # built before the patch
    with pytest.raises(SystemExit, match="not found"):
        run_mod.build(source, str(tmp_path / "x"), 1)


def _common_rc(run_mod, tmp_path: Path) -> str | None:
    """xfstests' own common/rc: the built tree's with the patch taken out (make test builds it
    first), else the bundle's in ../shared (slower: a fetch); None without either."""
    import tempfile
    built = Path(run_mod.DEFAULT_DIR) / "src" / "common" / "rc"
    if built.exists():
        rc = tmp_path / "rc-built"
        shutil.copy(built, rc)
        subprocess.run(["patch", "-s", "-R", str(rc), run_mod.PATCH], check=True)
        return rc.read_text()
    bundle = Path(__file__).resolve().parents[3] / "shared" / "third_party" / "xfstests-history.bundle"
    if not bundle.exists():
        return None
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(["git", "init", "-q", d], check=True)
        subprocess.run(["git", "-C", d, "fetch", "-q", str(bundle), "HEAD"], check=True)
        subprocess.run(["git", "-C", d, "checkout", "-q", "FETCH_HEAD", "--", "common/rc"], check=True)
        return (Path(d) / "common" / "rc").read_text()


def _call_mkfs_funcs(rc_text: str, tmp_path: Path, hook: str) -> subprocess.CompletedProcess:
    """Run common/rc's _try_scratch_mkfs_sized and _scratch_mkfs as xfstests would for
    FSTYP=fuse (its helpers stubbed: _notrun, the size floor, the scratch mount)."""
    rc = tmp_path / "rc"
    rc.write_text(rc_text)
    funcs = tmp_path / "funcs.sh"
    r = subprocess.run(["sh", "-c", f"sed -n -e '/^_try_scratch_mkfs_sized()/,/^}}/p' "
                        f"-e '/^_scratch_mkfs()/,/^}}/p' {rc}"], capture_output=True, text=True)
    funcs.write_text(r.stdout)
    script = f"""
_notrun() {{ echo "notrun: $*"; exit 0; }}
_check_minimal_fs_size() {{ :; }}
_scratch_cleanup_files() {{ echo cleaned; }}
. {funcs}
FSTYP=fuse SCRATCH_DEV={tmp_path}/scratch.img FUSE_MKFS_PROG={hook}
_try_scratch_mkfs_sized $((256 * 1024 * 1024)) && echo "sized: $(stat -c %s $SCRATCH_DEV)"
_scratch_mkfs && echo "full: $(stat -c %s $SCRATCH_DEV)"
"""
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)


def test_patched_common_rc_makes_a_sized_simfs_scratch_and_gives_its_size_back(run_mod, tmp_path,
                                                                               monkeypatch):
    rc_text = _common_rc(run_mod, tmp_path)
    if rc_text is None:
        pytest.skip("no xfstests bundle in ../shared/third_party")
    monkeypatch.setattr(run_mod, "IMAGE_SIZE", "512M")
    hook = run_mod.mkfs_hook(str(tmp_path), "ext2")
    r = _call_mkfs_funcs(rc_text, tmp_path, hook)                     # xfstests as it is
    assert "notrun: Filesystem fuse not supported in _scratch_mkfs_sized" in r.stdout, r
    rc = tmp_path / "rc-patched"
    rc.write_text(rc_text)
    subprocess.run(["patch", "-s", str(rc), str(run_mod.PATCH)], check=True)
    r = _call_mkfs_funcs(rc.read_text(), tmp_path, hook)
    assert r.returncode == 0, r.stderr
    assert f"sized: {256 << 20}" in r.stdout and f"full: {512 << 20}" in r.stdout, r.stdout
    assert "cleaned" in r.stdout
    # the image is simfs's, as e2fsck and dumpe2fs read it
    fsck = subprocess.run(["e2fsck", "-fn", str(tmp_path / "scratch.img")], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stdout


def test_the_mkfs_hook_takes_the_profile_and_block_size(run_mod, tmp_path):
    hook = run_mod.mkfs_hook(str(tmp_path), "ext4")
    img = tmp_path / "s.img"
    subprocess.run([hook, str(img), str(64 << 20), "1024"], check=True, capture_output=True)
    out = subprocess.run(["dumpe2fs", "-h", str(img)], capture_output=True, text=True).stdout
    assert "Block size:               1024" in out and " extent " in out
    assert img.stat().st_size == 64 << 20
    # a block size simfs does not make is refused (xfstests then says the sized mkfs failed)
    assert subprocess.run([hook, str(img), str(64 << 20), "2048"], capture_output=True).returncode


def test_local_config_names_the_hook(run_mod, tmp_path, monkeypatch):
    monkeypatch.setattr(run_mod, "IMAGE_SIZE", "64M")
    config, _ = run_mod.config_simfs(str(tmp_path), "", "ext4")
    line = next(l for l in config.splitlines() if l.startswith("export FUSE_MKFS_PROG="))
    assert os.access(line.split("=", 1)[1], os.X_OK)
    out = subprocess.run(["dumpe2fs", "-h", str(tmp_path / "test.img")], capture_output=True, text=True).stdout
    assert " extent " in out and " flex_bg " in out


# the kernel's ext4 as a second baseline ------------------------------------------------------
def _features(img: Path) -> set[str]:
    out = subprocess.run(["dumpe2fs", "-h", str(img)], capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("Filesystem features:"))
    return set(line.split(":", 1)[1].split())


@pytest.mark.skipif(not shutil.which("mkfs.ext4"), reason="no mkfs.ext4")
def test_kernel_ext4_is_made_with_simfs_ext4_profile_features(run_mod, tmp_path):
    """The ext4 baseline's mkfs options give the features `simfs mkfs --profile ext4` gives."""
    k = tmp_path / "k.img"
    subprocess.run(["truncate", "-s", "256M", str(k)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F"] + run_mod.KERNEL_MKFS["ext4"] + [str(k)], check=True)
    s = tmp_path / "s.img"
    subprocess.run([sys.executable, "-m", "simfs.cli", "mkfs", "--quiet", "--profile", "ext4",
                    str(s), "256M"], check=True, cwd=run_mod.REPO, env=run_mod.simfs_env())
    assert _features(k) == _features(s)
    assert "has_journal" not in _features(k)


def test_run_takes_fs_ext4_and_a_simfs_profile(run_mod, monkeypatch):
    seen = {}
    monkeypatch.setattr(run_mod, "run", lambda a: seen.update(vars(a)) or 0)
    assert run_mod.main(["run", "--fs", "ext4", "--", "generic/001"]) == 0 and seen["fs"] == "ext4"
    assert run_mod.main(["run", "--fs", "simfs", "--profile", "ext4", "--", "generic/001"]) == 0
    assert seen["profile"] == "ext4"


# one copy of each failure artefact -----------------------------------------------------------
def _xfstests_results(root: Path, full: str) -> Path:
    res = root / "results" / "generic"
    res.mkdir(parents=True)
    (res / "020.full").write_text(full)
    (res / "020.out.bad").write_text("bad\n")
    return root / "results"


def test_two_runs_keep_one_copy_of_the_same_artefact(run_mod, tmp_path):
    rows = [{"test": "generic/020", "status": "fail"}, {"test": "generic/001", "status": "pass"}]
    store = tmp_path / "failures"
    kept = []
    for i in (1, 2):
        results = _xfstests_results(tmp_path / f"w{i}", "the same .full\n")
        kept.append(run_mod.keep_failures(str(results), str(tmp_path / f"run{i}"), rows, str(store)))
    files = sorted(p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file())
    assert len(files) == 2, files                          # one .full, one .out.bad
    assert kept[0] == kept[1] and set(kept[0]) == {"generic/020.full", "generic/020.out.bad"}
    assert kept[0]["generic/020.out.bad"].endswith(".out.bad")
    full = (tmp_path / "run1" / kept[0]["generic/020.full"]).resolve()
    assert full.read_text() == "the same .full\n" and full.parent == store
    # a different .full is a second file, beside the first
    results = _xfstests_results(tmp_path / "w3", "another .full\n")
    k3 = run_mod.keep_failures(str(results), str(tmp_path / "run3"), rows, str(store))
    assert k3["generic/020.full"] != kept[0]["generic/020.full"]
    assert len([p for p in store.rglob("*.full")]) == 2


def test_dedupe_moves_old_runs_copies_into_one_store(run_mod, tmp_path):
    store = tmp_path / "failures"
    for i, text in ((1, "same"), (2, "same"), (3, "other")):
        run = tmp_path / f"simfs-{i}"
        (run / "failures" / "generic").mkdir(parents=True)
        (run / "failures" / "generic" / "020.full").write_text(text)
        (run / "results.json").write_text(json.dumps({"fs": "simfs", "counts": {}}))
    runs = [str(tmp_path / f"simfs-{i}") for i in (1, 2, 3)]
    assert run_mod.main(["dedupe", "--store", str(store)] + runs) == 0
    assert sorted(p.read_text() for p in store.rglob("*.full")) == ["other", "same"]
    # the same text from two tests is one file too
    run = tmp_path / "simfs-4"
    (run / "failures" / "generic").mkdir(parents=True)
    (run / "failures" / "generic" / "099.full").write_text("same")
    (run / "results.json").write_text("{}")
    run_mod.dedupe_failures(str(store), [str(run)])
    assert len(list(store.rglob("*.full"))) == 2
    for i, text in ((1, "same"), (2, "same"), (3, "other")):
        run = tmp_path / f"simfs-{i}"
        assert not (run / "failures").exists()
        meta = json.loads((run / "results.json").read_text())
        assert (run / meta["failures"]["generic/020.full"]).read_text() == text
        assert meta["fs"] == "simfs"                      # the rest of the record kept


def test_side_by_side_table(run_mod, tmp_path):
    for name, st in (("k", "pass"), ("s", "notrun")):
        d = tmp_path / name
        others = [{"test": "generic/001", "status": "pass", "seconds": 1, "message": ""}] * (name == "s")
        run_mod.write_results([{"test": "generic/015", "status": st, "seconds": 1, "message": ""}] + others,
                              str(d), {"command": f"run {name}", "seconds": 1, "kernel": "k",
                                       "xfstests": "x"})
    (tmp_path / "why.csv").write_text("test,reason\ngeneric/015,no sized mkfs\n")
    out = tmp_path / "side.md"
    assert run_mod.main(["side", "--run", f"kernel ext4={tmp_path / 'k'}", f"simfs={tmp_path / 's'}",
                         "--reasons", str(tmp_path / "why.csv"), "--out", str(out)]) == 0
    text = out.read_text()
    assert "| generic/015 | pass | notrun | no sized mkfs |" in text
    assert "- kernel ext4: `run k`" in text
    assert "generic/001" not in text and "| pass | 1 | 0 |" in text   # the first run's tests only
    with pytest.raises(SystemExit, match="LABEL=FOLDER"):
        run_mod.main(["side", "--run", "nolabel", "--out", str(out)])
