"""experiments.seed001_full at a small size: every order and phase runs in-process on a
data-less image, find sees every directory the unpack made, and the table has the seed's
ratios beside simfs's."""

from __future__ import annotations

import json

from experiments import seed001_full


def test_small_run(tmp_path, capsys):
    out = tmp_path / "out"
    assert seed001_full.main(["--files", "150", "--orders", "hash,inode", "--out", str(out),
                              "--work", str(tmp_path)]) == 0
    doc = json.loads((out / "results.json").read_text())
    rows = {(r["order"], r["phase"]): r for r in doc["rows"]}
    assert set(rows) == {(o, p) for o in ("hash", "inode") for p in seed001_full.PHASES}
    tree = doc["tree"]
    for o in ("hash", "inode"):
        assert rows[(o, "find-d")]["result"]["dirs"] == tree["dir"] + 1     # and the top
        assert rows[(o, "cp-a")]["result"]["files"] == tree["file"]
        assert all(r["sim"] > 0 and r["sim_umount"] >= r["sim"] for r in doc["rows"])
    # hash and inode both stand for indexed directories: the unpack is the same
    assert rows[("hash", "unpack")]["counters"] == rows[("inode", "unpack")]["counters"]
    table = (out / "table.md").read_text()
    assert "| find-d |" in table and "4.82" in table          # the seed's ext4/btrfs ratio
    assert not list(tmp_path.glob("*.img")), "images are removed after each order"
