"""The kernel oracle's pure parts (benchmarks/kernel_oracle_table.py and the seeds' table in
kernel_oracle_seeds.py): stream figures, the 10 % goal, the Markdown tables, the kernel's
mount options and dirty limit per configuration. Nothing is mounted."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import kernel_oracle_seeds as seeds
from benchmarks import kernel_oracle_table as table
from experiments.spec import Config, Phase


def stream(k_req=100, s_req=100, k_s=1.0, s_s=1.0):
    f = table.figures({"op": ["R"], "lba": [0], "sectors": [8], "wait": [1]})
    return {**f, "requests": k_req, "seconds": k_s}, {**f, "requests": s_req, "seconds": s_s}


def test_aligned_share_counts_start_and_length_on_4k():
    assert table.aligned_share([0, 8, 16, 3], [8, 16, 7, 8]) == pytest.approx(2 / 4)
    # a partition starting 2 sectors into the drive: only a request starting at 6 is aligned there
    assert table.aligned_share([6, 0], [8, 8], offset=2) == pytest.approx(1 / 2)
    assert table.aligned_share([], []) == 1.0


def test_figures_of_an_empty_stream():
    f = table.figures({"op": [], "lba": [], "sectors": [], "wait": []})
    assert f["requests"] == 0 and f["readahead_share"] == 0.0 and sum(f["size_hist"]) == 0


@pytest.mark.parametrize("k, s, want", [((100, 1.0), (110, 1.10), []),          # at the goal: not a miss
                                        ((100, 1.0), (111, 1.0), ["requests"]),
                                        ((100, 1.0), (100, 0.85), ["time"]),
                                        ((0, 0.0), (5, 0.1), ["time", "requests"])])
def test_misses_beyond_ten_percent(k, s, want):
    kk, ss = stream(k[0], s[0], k[1], s[1])
    assert table.misses({"kernel": kk, "simfs": ss}) == want


def test_misses_without_a_kernel_side():
    assert table.misses({"kernel": None, "simfs": {"seconds": 1.0}}) == []


def test_differ():
    assert table.differ(2.0, 3.0) == pytest.approx(0.5)
    assert table.differ(0.0, 0.0) == 0.0 and math.isnan(table.differ(0.0, 1.0))


def test_render_rows_notes_and_simfs_only_rows():
    k, s = stream(138, 168, 0.087, 0.085)
    res = {"experiment": "alignment", "kernel": "6.18", "simfs_options": "",
           "rows": [{"config": "offset 34", "phase": "restore", "kind": "write (each side allocates)",
                     "kernel": k, "simfs": s, "note": "allocators differ"},
                    {"config": "offset 34", "phase": "newfs", "kind": "simfs only", "kernel": None,
                     "simfs": {"seconds": 0.312}, "note": "no kernel side"}]}
    out = table.render(res)
    lines = out.splitlines()
    restore = next(x for x in lines if "| restore | write |" in x)
    assert "138 / 168" in restore and "0.087 / 0.085" in restore and "-2%" in restore and "[1]" in restore
    newfs = next(x for x in lines if "| newfs | simfs |" in x)
    assert "— / 0.312" in newfs and "[2]" in newfs
    assert "[1] allocators differ" in out and "[2] no kernel side" in out
    assert sum("| newfs |" in x for x in lines) == 1          # no histogram row without a kernel stream


def cfg(mount, params=None):
    return Config(name="c", mount=mount, mkfs={}, params=params or {})


def test_kernel_mount_options_per_configuration():
    wb, mm = seeds.SEEDS["writeback"], seeds.SEEDS["mmap-fragmentation"]
    assert wb.kernel_options(cfg({"writeback": "sync"})) == "dirsync"
    assert wb.kernel_options(cfg({"writeback": "softdep"})) == ""
    assert mm.kernel_options(cfg({"alloc": "ext2"})) == "nodelalloc"
    assert mm.kernel_options(cfg({"alloc": "delayed"})) == ""
    write = Phase("tarcp", "", writes=True)
    assert "no soft updates" in wb.note(cfg({"writeback": "softdep", "alloc": "cg-2010"}), write)
    assert "cg-2010" in wb.note(cfg({"writeback": "async", "alloc": "cg-2010"}), write)
    assert seeds.SEEDS["alignment"].note(cfg({}), Phase("newfs", "", kind="volume")).startswith("FreeBSD's UFS2")


def test_seed_000_sync_is_dirsync_on_the_kernel_and_async_its_default_mount():
    e2 = seeds.SEEDS["ext2fs-2010"]
    assert e2.kernel_options(cfg({"writeback": "sync", "alloc": "ext2fs-2010"})) == "dirsync"
    assert e2.kernel_options(cfg({"writeback": "async", "alloc": "ext2fs-2010"})) == ""
    assert {c.split()[1] for c in e2.configs} == {"1K", "4K"}
    assert {c.split()[2] for c in e2.configs} == {"sync", "async"}


def test_every_seed_configuration_is_in_its_quick_job():
    """(seed 000's quick job has only sync mounts: the seed's `over` brings the async ones back)"""
    from experiments.jobfile.expand import expand
    for name, seed in seeds.SEEDS.items():
        if seed.runner is not None:     # no job file (git-aging): tests/unit/test_kernel_oracle_aging.py
            continue
        names = {c[0] for c in expand(seeds.quick_job(name))}
        assert set(seed.configs) <= names, (name, set(seed.configs) - names)
    assert len({c[0] for c in expand(seeds.quick_job("readdir-order", files=999))}) == 3
    assert seeds.quick_job("readdir-order", files=999).doc["workload"]["files"] == 999


def test_dirty_limit_is_the_modelled_dirty_ratio_of_ram():
    assert seeds.dirty_limit(cfg({}, {"pagecache": "linux-2.6.29,ram=384M"})) == 384 * 2**20 * 10 // 100
    assert seeds.dirty_limit(cfg({}, {"pagecache": "linux-2.6.29,ram=400M,dirty_ratio=2,dirty_background_ratio=1"})) == 400 * 2**20 * 5 // 100
    assert seeds.dirty_limit(cfg({}, {})) is None


def test_every_built_in_experiment_has_kernel_rows():
    from experiments import catalog
    assert set(catalog.names()) <= set(seeds.SEEDS)
    assert seeds.refusal("writeback") in (None,) or "cgroup" in seeds.refusal("writeback")


def test_verdicts_from_rows_and_the_seed_ratios():
    from experiments.spec import Compare
    rows = [{"config": c, "phase": "find-d", "kernel": {"seconds": k}, "simfs": {"seconds": s}}
            for c, k, s in (("hash", 0.48, 0.09), ("inode", 0.10, 0.06), ("linear", 0.2, None))]
    compares = [Compare("find-d: hash / inode", "find-d", "hash", "inode", 4.82),
                Compare("find-d: hash / inode, no figure", "find-d", "hash", "inode", None),
                Compare("extents", "find-d", "hash", "inode", 9.0, metric="data_extents"),
                Compare("find-d: linear / inode", "find-d", "linear", "inode", 0.5),
                Compare("other phase", "tar", "hash", "inode", 2.0)]
    vs = table.verdicts(rows, compares)
    assert [v["label"] for v in vs] == ["find-d: hash / inode", "find-d: linear / inode"]
    first, second = vs
    assert first["kernel"] == pytest.approx(4.8) and first["simfs"] == pytest.approx(1.5)
    assert first["verdict"] == "reaches" and first["simfs_misses"]
    assert second["simfs"] is None and second["kernel"] == pytest.approx(2.0) and second["verdict"] == "misses too"
    out = table.render_verdicts(vs)
    assert "| find-d: hash / inode | 4.82x | 1.50x | 4.80x | reaches |" in out


def test_verdict_within_the_goal():
    assert table.verdict(2.0, 1.0, 2.2) == "reaches" and table.verdict(2.0, 1.0, 2.21) == "misses too"
    assert table.verdict(2.0, 1.0, None) == "—"


def test_a_write_phase_the_kernel_runs_alike_has_no_verdict():
    from experiments.spec import Compare
    rows = [{"config": c, "phase": "tarcp", "kind": "write (each side allocates)", "kernel_setup": ks,
             "kernel": {"seconds": k}, "simfs": {"seconds": s}}
            for c, ks, k, s in (("sync", "dirsync", 2.0, 1.5), ("async", "", 1.0, 1.0), ("softdep", "", 1.03, 1.3))]
    vs = table.verdicts(rows, [Compare("sync / async", "tarcp", "sync", "async", 1.93),
                               Compare("softdep / async", "tarcp", "softdep", "async", 2.79)])
    assert [v["verdict"] for v in vs] == ["reaches", "kernel runs both alike"]
    cfg_inode = cfg({"dirorder": "inode"})
    assert seeds.kernel_setup(seeds.SEEDS["readdir-order"], cfg_inode, Phase("cp-a", "", writes=True)) == "spd_readdir"
    assert seeds.kernel_setup(seeds.SEEDS["writeback"], cfg({"writeback": "sync"}), Phase("t", "")) == "dirsync"


def test_report_recomputes_verdicts_from_saved_rows(tmp_path, capsys):
    from benchmarks import kernel_oracle_report as report
    k, s = stream(138, 138, 0.087, 0.080)
    k2, s2 = stream(138, 138, 0.048, 0.040)
    rows = [{"config": "dirorder=hash", "phase": "find-d", "kind": "read", "kernel": k, "simfs": s},
            {"config": "dirorder=inode", "phase": "find-d", "kind": "read", "kernel": k2, "simfs": s2}]
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"run": {"experiment": "readdir-order", "kernel": "6.18", "rows": rows},
                             "cpu": {"rows": []}}))
    assert report.main([str(p), "--verdicts"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### run") and "| find-d: hash / inode | 4.82x | 2.00x | 1.81x | misses too |" in out
    p.write_text("{}")
    assert report.main([str(p)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no kernel-oracle run" in err


def test_report_compact_table_of_chosen_runs(tmp_path, capsys):
    from benchmarks import kernel_oracle_report as report
    k, s = stream(138, 150, 0.100, 0.080)
    rows = [{"config": "dirorder=hash", "phase": "find-d", "kind": "read (copies)", "kernel": k, "simfs": s},
            {"config": "dirorder=hash", "phase": "mkfs", "kind": "simfs only", "kernel": None, "simfs": {"seconds": 1}}]
    p = tmp_path / "r.json"
    p.write_text(json.dumps({"a": {"experiment": "readdir-order", "kernel": "6.18", "rows": rows},
                             "b": {"experiment": "ext2fs-2010", "kernel": "6.18", "rows": rows}}))
    assert report.main([str(p), "--compact", "--runs", "a"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:] == ["| 001 dirorder=hash | find-d | read | 138 / 150 | 0.0 / 0.0 | 0% / 0% | 0.100 / 0.080 | −20% |"]
    assert report.main([str(p), "--compact"]) == 0
    assert sum(x.startswith("| 000 ") for x in capsys.readouterr().out.splitlines()) == 1
    for argv, words in (([str(p), "--compact", "--runs", "c"], "no run titled 'c'"), ([str(p), "--runs", "a"], "--runs goes with")):
        assert report.main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and words in err, err


def test_offsets_of_one_drive_are_not_alike():
    """Seed 003's configurations differ in the drive alone: the kernel's one stream replayed on
    each offset is the drive's ratio, a verdict."""
    rows = [{"config": c, "phase": "restore", "kind": "write", "kernel_setup": "dirsync", "disk": d,
             "kernel": {"seconds": k}, "simfs": {"seconds": k}}
            for c, d, k in (("34", "wd-ears,partition_offset=34", 1.3), ("40", "wd-ears,partition_offset=40", 1.0))]
    assert not table.alike(rows, "restore", "34", "40")
    rows[1]["disk"] = rows[0]["disk"]
    assert table.alike(rows, "restore", "34", "40")


def test_simfs_side_starts_as_cold_as_the_kernel_side(monkeypatch, tmp_path):
    """After the mount and the untimed preparation, simfs's caches and the drive's buffer are
    dropped (the kernel side drops its caches after its mount), then the phase is marked with
    no path walk in between (a walk would have simfs read the root's inode before the phase):
    through a descriptor opened before the drop."""
    import os
    from pathlib import Path
    from subprocess import CompletedProcess
    from benchmarks import kernel_oracle, kernel_oracle_sides as sides
    mnt = tmp_path / "mnt"
    (mnt / ".simfs").mkdir(parents=True)
    (mnt / ".simfs" / "stats").write_text(json.dumps({"time": {"phases": [{"name": "find", "start": 1.0}], "now": 3.0}}))
    (mnt / ".simfs" / "mark").write_text("")
    order = []
    write_text, os_open, os_write = Path.write_text, os.open, os.write
    monkeypatch.setattr(Path, "write_text", lambda self, data, *a, **k: (order.append(("walk", self.name)),
                                                                         write_text(self, data, *a, **k))[1])
    monkeypatch.setattr(kernel_oracle.os, "open", lambda path, *a: (order.append(("walk", Path(path).name)),
                                                                    os_open(path, *a))[1])
    monkeypatch.setattr(kernel_oracle.os, "write", lambda fd, data: (order.append(("fd", data)), os_write(fd, data))[1])
    monkeypatch.setattr(sides, "sh", lambda argv: "")
    monkeypatch.setattr(sides.subprocess, "run", lambda cmd, *a, **k: (order.append(("run", cmd)), CompletedProcess(cmd, 0))[1])
    monkeypatch.setattr(sides, "phase_rows", lambda *a, **k: {})
    _, seconds = sides.simfs_phase(tmp_path / "img", mnt, "find", "find .", False, "disk=sas10k",
                                   tmp_path / "t", tmp_path / "s", prepare="mkdir x")
    assert order[:5] == [("run", "mkdir x"), ("walk", "mark"), ("walk", "drop_caches"), ("fd", b"find"),
                         ("run", "find .")], order
    assert (mnt / ".simfs" / "drop_caches").read_text() == "1" and (mnt / ".simfs" / "mark").read_text() == "find"
    assert seconds == 2.0


def test_render_names_the_size():
    res = {"experiment": "readdir-order", "kernel": "6.18", "rows": []}
    assert table.render(res).startswith("readdir-order (quick) on kernel")
    assert table.render({**res, "quick": False, "files": 10000}).startswith("readdir-order (--files 10000) on kernel")
