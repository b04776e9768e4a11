"""Progress bars (simfs.cli.progress): rich's, on stderr, only on a terminal, only for work that
lasts, never in --json output; `simfs verb` draws one on a terminal and its figures do not move.
(`simfs lesson`'s, on a real pseudo-terminal: tests/report/test_lessons.py.)"""

from __future__ import annotations

import io
import json
import os
import re
import shutil

import pytest
from rich.console import Console

from simfs.cli import progress
from simfs.cli.main import main
from simfs.ondisk.mkfs import mkfs


def terminal() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=120)


def test_a_bar_on_a_terminal_counts_its_steps():
    c = terminal()
    with progress.Bar("lesson-x", 3, console=c, delay=0) as bar:
        bar("unpacking")
        for _ in range(3):
            bar(None)
    out = c.file.getvalue()
    assert "lesson-x" in out and "3/3" in out and "unpacking" in out


def test_no_bar_off_a_terminal_nor_for_quick_work():
    c = Console(file=io.StringIO(), force_terminal=False)
    with progress.Bar("x", 2, console=c, delay=0) as bar:
        bar("step")
        bar(None)
    assert c.file.getvalue() == ""
    c = terminal()
    with progress.Bar("x", 2, console=c, delay=30) as bar:     # done before the bar is due
        bar(None)
    assert c.file.getvalue() == ""
    assert progress.stderr_console() is None            # pytest's stderr is no terminal


@pytest.fixture
def image(tmp_path):
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    for i in range(40):
        (src / "d" / f"f{i}").write_bytes(b"x" * (100 * i + 1))
    img = tmp_path / "v.img"
    mkfs(img, 32 << 20, block_size=4096)
    return src, img


def test_verb_draws_a_bar_on_a_terminal_and_keeps_json_clean(image, tmp_path, capsys, monkeypatch):
    """On a (forced) terminal the bar shows the entries taken and the simulated clock, on
    stderr; stdout is the JSON alone; and the figures are those of a run without a bar."""
    from simfs.fs.volume import VolumeOptions
    from simfs.inprocess import verbs
    from simfs.inprocess.treedesc import from_directory
    src, img = image
    twin, piped = tmp_path / "twin.img", tmp_path / "piped.img"
    shutil.copyfile(img, twin)
    shutil.copyfile(img, piped)
    assert main(["verb", "unpack", str(piped), "t", "--from", str(src), "--json"]) == 0
    assert capsys.readouterr().err == ""                # no terminal: nothing on stderr
    plain = verbs.run(str(twin), VolumeOptions(), "unpack", "t", mkdir=True,   # no watch at all
                      source=from_directory(str(src), with_data=True))
    c = terminal()
    monkeypatch.setattr(progress, "stderr_console", lambda: c)
    monkeypatch.setattr(progress, "DELAY", 0)
    assert main(["verb", "unpack", str(img), "t", "--from", str(src), "--json"]) == 0
    shown = capsys.readouterr()
    doc = json.loads(shown.out)                         # stdout holds the JSON and nothing else
    drawn = c.file.getvalue()
    taken = re.findall(r"(\d+) entries, simulated \d+\.\d\d s", drawn)
    assert "unpack t" in drawn and taken and int(taken[-1]) >= doc["result"]["files"] == 40, drawn
    assert "\x1b[" not in shown.out
    assert doc["time"]["now"] == plain["time"]["now"] and doc["counters"] == plain["counters"]
    assert os.path.getsize(img) == os.path.getsize(twin)
