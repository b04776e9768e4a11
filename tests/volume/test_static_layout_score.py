"""The static layout score (Smith and Seltzer 1997): the share of files' blocks, after each
file's first, that lie right after the file's previous block on disk; in `simfs layout`."""

import json
import subprocess
import sys

from simfs.fs.inspection import layout_counts, static_layout_score
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs


def test_counts_of_runs():
    assert layout_counts({"runs": []}) == (0, 0)
    assert layout_counts({"runs": [(0, 100, 1)]}) == (0, 0)                 # one block: nothing to follow
    assert layout_counts({"runs": [(0, 100, 8)]}) == (7, 7)
    assert layout_counts({"runs": [(0, 100, 4), (4, 200, 4)]}) == (6, 7)    # one jump
    assert layout_counts({"runs": [(0, 100, 4), (10, 104, 2)]}) == (5, 5)   # a hole does not break it
    assert static_layout_score(0, 0) is None and static_layout_score(6, 8) == 0.75


def _image(tmp_path, interleave):
    img = tmp_path / "a.img"
    mkfs(img, 64 << 20, block_size=4096)
    with Volume.open(img, VolumeOptions(alloc="first-free", disk="ideal")) as vol:
        a = vol.create(vol.root_ino, b"a", 0o644, 0, 0).st_ino
        b = vol.create(vol.root_ino, b"b", 0o644, 0, 0).st_ino
        for i in range(12):                    # direct blocks only: no indirect block in line
            vol.write(a, i * 4096, b"a" * 4096)
            if interleave:
                vol.write(b, i * 4096, b"b" * 4096)
        if not interleave:
            vol.write(b, 0, b"b" * 12 * 4096)
    return img


def layout_json(img):
    r = subprocess.run([sys.executable, "-m", "simfs.cli", "layout", str(img), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_simfs_layout_reports_the_score(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    contiguous = layout_json(_image(tmp_path / "x", interleave=False))
    interleaved = layout_json(_image(tmp_path / "y", interleave=True))
    assert contiguous["layout_score"] == 1.0
    # first-free with two files written block by block in turn: every block jumps
    assert interleaved["layout_score"] < 0.2
