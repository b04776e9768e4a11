"""experiments.seed001_full at a small size: every order and phase runs in-process on a
data-less image, find sees every directory the unpack made, and the table has the seed's
ratios beside simfs's; the unpack it shares between orders is the same in every order."""

from __future__ import annotations

import json
import subprocess

import pytest

from experiments import seed001_full
from experiments.workload.describe import describe
from simfs.inprocess import verbs


def test_small_run(tmp_path):
    out = tmp_path / "out"
    assert seed001_full.main(["--files", "150", "--orders", "hash,inode", "--out", str(out),
                              "--work", str(tmp_path)]) == 0
    doc = json.loads((out / "results.json").read_text())
    rows = {(r["order"], r["phase"]): r for r in doc["rows"]}
    assert set(rows) == {("all", "unpack")} | {(o, p) for o in ("hash", "inode")
                                                for p in seed001_full.PHASES[1:]}
    tree = doc["tree"]
    for o in ("hash", "inode"):
        assert rows[(o, "find-d")]["result"]["dirs"] == tree["dir"] + 1     # and the top
        assert rows[(o, "cp-a")]["result"]["files"] == tree["file"]
    assert all(r["sim"] > 0 and r["sim_umount"] >= r["sim"] for r in doc["rows"])
    table = (out / "table.md").read_text()
    assert "| find-d |" in table and "4.82" in table          # the seed's ext4/btrfs ratio
    assert not list(tmp_path.glob("*.img")), "images are removed"


def test_the_unpack_does_not_depend_on_the_order(tmp_path):
    """Why one unpack serves every order: the same bitmaps, counters and simulated time."""
    seen = []
    for order in ("hash", "linear", "inode"):
        img = tmp_path / f"{order}.img"
        seed001_full.make_image(img, 300 * seed001_full.BYTES_PER_FILE)
        r = verbs.run(str(img), seed001_full.options(order), "unpack", "tree", mkdir=True,
                      source=describe(seed=1, files=300, svn=True))
        dump = subprocess.run(["dumpe2fs", str(img)], capture_output=True, text=True).stdout
        free = [line for line in dump.splitlines() if "Free blocks:" in line or "Free inodes:" in line]
        seen.append((r["time"]["now"], r["time"]["total"]["counters"], free))
    assert seen[0] == seen[1] == seen[2]


def test_more_orders_from_a_kept_unpack(tmp_path):
    out = tmp_path / "out"
    args = ["--files", "100", "--out", str(out), "--work", str(tmp_path)]
    assert seed001_full.main(args + ["--orders", "hash", "--phases", "unpack,find-d", "--keep"]) == 0
    base = tmp_path / "seed001-full-base.img"
    assert base.exists()
    assert seed001_full.main(args + ["--orders", "inode", "--phases", "find-d", "--base", str(base)]) == 0
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert [(r["order"], r["phase"]) for r in rows] == [("all", "unpack"), ("hash", "find-d"),
                                                         ("inode", "find-d")]
    assert "| find-d |" in (out / "table.md").read_text()


@pytest.mark.parametrize("args, says", [
    (["--orders", "hash,hsh"], "unknown directory order 'hsh'"),
    (["--fanout", "9,2"], "not LO,HI"),
    (["--files", "0"], "at least 1"),
    (["--phases", "find-d"], "unpack first"),
    (["--phases", "find-d", "--base", "/no/such.img"], "no such image"),
])
def test_bad_arguments_are_one_line(tmp_path, capsys, args, says):
    with pytest.raises(SystemExit) as e:
        seed001_full.main(args + ["--out", str(tmp_path / "out"), "--work", str(tmp_path)])
    assert e.value.code == 2
    assert says in capsys.readouterr().err
    assert not list(tmp_path.glob("*.img"))


def test_a_failed_run_is_one_line_and_leaves_no_image(tmp_path, capsys):
    """The tree cannot hold --total-size: the generator says so half-way through the unpack;
    one line, exit status 2, the half-made image gone (it is 8 times the tree, sparse)."""
    work = tmp_path / "new" / "work"                  # made, as --out is
    assert seed001_full.main(["--files", "50", "--total-size", "100G", "--orders", "hash",
                              "--out", str(tmp_path / "out"), "--work", str(work)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("seed001_full: total_size") and "impossible" in err[0]
    assert work.is_dir() and not list(work.iterdir())


def test_an_unmakeable_work_directory_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert seed001_full.main(["--files", "50", "--out", str(tmp_path / "out"),
                              "--work", str(blocker / "work")]) == 2
    assert capsys.readouterr().err.strip() == f"seed001_full: {blocker / 'work'}: Not a directory"
