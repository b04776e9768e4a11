"""`simfs lesson NAME --quick`: each of the three lessons runs in-process (no FUSE), writes its
README.md, figures.json and pictures, and its key figure goes the way docs/lessons/NAME.md says.
The direction is recomputed here from the measured times in figures.json (never a stored ratio),
and checked against the sentence the lesson's page states ("... > 1"). Each runs with stderr on a
pseudo-terminal, where its progress bar counts the lesson's STEPS; piped, nothing is added."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from experiments import lessons

REPO = Path(__file__).resolve().parents[2]
PNG, GIF = b"\x89PNG\r\n\x1a\n", b"GIF89a"

# the measured times the key figure is made of, per lesson: (figures key, numerator, denominator)
KEY = {"seven-free": ("tar_read_s", "ext2fs-2010", "ext2fs-2010-fixed"),
       "readdir-order": ("find_d_s", "hash", "inode"),
       "unaligned-4k": ("newfs_s", "offset 41", "offset 40")}


def lesson_cmd(*args) -> subprocess.CompletedProcess:
    """`simfs lesson ...` (python -m experiments.lessons: the same parser, found without the
    entry point being installed)."""
    return subprocess.run([sys.executable, "-m", "experiments.lessons", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)


def lesson_on_a_terminal(*args) -> tuple[subprocess.CompletedProcess, str]:
    """`simfs lesson ...` with stderr on a pseudo-terminal (stdout piped): the run, and what
    reached the terminal."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "experiments.lessons", *map(str, args)], cwd=REPO,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = []

    def drain():                                 # keep reading: a full terminal would block the bar
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:                      # EIO: the last writer closed it
                break
            if not chunk:
                break
            seen.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        out, _ = p.communicate(timeout=120)
    finally:
        p.kill()
        reader.join()
        os.close(master)
    tty = b"".join(seen).decode(errors="replace")
    return subprocess.CompletedProcess(p.args, p.returncode, out.decode(), tty), tty


@pytest.mark.parametrize("name", list(lessons.LESSONS))
def test_lesson_quick(name, tmp_path):
    out = tmp_path / name
    r, tty = lesson_on_a_terminal(name, "--quick", "--out", out, "--work-dir", tmp_path)
    assert r.returncode == 0, tty
    steps = lessons.LESSONS[name].STEPS      # the bar reached its end, counting every step
    assert f"{name} " in tty and f"{steps}/{steps}" in tty and f"{steps + 1}/{steps}" not in tty, tty
    assert "\x1b[" not in r.stdout                       # stdout (a pipe): the result alone
    fig = json.loads((out / "figures.json").read_text())
    text = (out / "README.md").read_text()
    # every picture the page shows exists and is a real PNG or GIF; there is at least one
    shown = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert shown, text
    for name_ in shown:
        head = (out / name_).read_bytes()[:8]
        assert head.startswith(PNG if name_.endswith(".png") else GIF), name_
    assert "## Questions" in text and text.count("\n1. ") == 1
    # the key figure: recomputed from the measured times, in the documented direction
    what, num, den = KEY[name]
    ratio = fig[what][num] / fig[what][den]
    doc = (REPO / "docs" / "lessons" / f"{name}.md").read_text()
    m = re.search(r"key figure: (.+?) (>|<) 1", doc)
    assert m, f"docs/lessons/{name}.md must state its key figure's direction"
    assert m.group(1) == fig["key"]["label"]
    assert (ratio > 1.02) if m.group(2) == ">" else (ratio < 1 / 1.02), (name, ratio)
    assert f"{ratio:.2f}x" in r.stdout
    assert f"{ratio:.1f} times" in text or f"{ratio:.2f} times" in text       # the page quotes it
    assert not list(tmp_path.glob("simfs-lesson-*")), "the work directory is removed"
    if name == "unaligned-4k":     # the cached drive's pre-reads: in its own work, misaligned only
        pre = fig["sectors_preread"]
        assert pre["offset 41"] > 0 and pre["offset 40"] == 0 and pre["offset 41, no write cache"] == 0


def test_lesson_list_and_bad_name():
    r = lesson_cmd("list")
    assert r.returncode == 0 and all(n in r.stdout for n in lessons.LESSONS)
    r = lesson_cmd("no-such-lesson")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "seven-free" in r.stderr


def test_a_lesson_reruns_into_its_own_output_only(tmp_path):
    """--out may hold the same lesson's earlier output (replaced), never other files."""
    out = tmp_path / "l"
    for extra in ((), ("--json",)):
        r = lesson_cmd("seven-free", "--quick", "--out", out, "--work-dir", tmp_path, *extra)
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""                 # stderr piped: no progress bar
    assert json.loads(r.stdout)["lesson"] == "seven-free"       # --json: the figures alone
    readme = (out / "README.md").read_text()
    r = lesson_cmd("readdir-order", "--quick", "--out", out, "--work-dir", tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "holds other files" in r.stderr, r.stderr
    assert (out / "README.md").read_text() == readme
