"""Every example printed by every `--help` runs (so none can rot again).

The examples are read from the help itself: every parser reachable from `simfs` (simfs's own
commands and those other packages register, picked up as they are added), the lines of its
"examples:" block (a trailing backslash continues a line; `# ...` lines are comments). Each
block runs in a fresh scratch directory holding what examples name: `disk.img` (256 MiB,
with src/Makefile, tree/, big.iso and f), `src.tar`, statistics files (a.json, b.json,
first/second.stats.json, disk.img.stats.json, ext2/cg.stats.json, with an `all` and a
`readback` phase), traces (a.csv, b.csv); `/mnt/sim` becomes the scratch mount point, mounted with defaults for the
lines that use it but do not mount it. A few examples cannot run unattended here; they are
parsed (argv accepted by the parser) and the reason is listed in PARSE_ONLY. Mounts: run
under `flock /tmp/simfs-mount.lock`.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simfs.cli.main import build_parser
from tests.conftest import REPO, fuse_mounts, run

pytestmark = pytest.mark.mount

# regex on the example line -> why it is parsed rather than run
PARSE_ONLY = {
    r"^simfs experiment run\b": "an experiment runs for minutes (tests/mount/test_experiments.py runs them)",
    r"^simfs run\b": "a job runs for seconds to minutes (tests/volume/test_jobs_run.py runs them)",
    r"^simfs fio\b": "fio runs for a minute on the modelled disk (tests/mount/test_fio.py runs examples/fio)",
    r"\bresults/": "needs finished runs in results/ (the job and report tests make them)",
    r"^simfs report\b": "needs an experiment's results (the report's own test renders one)",
    r"^simfs lesson (?!list)": "a lesson runs for up to two minutes (the lessons' own test)",
    r"--foreground": "stays in the foreground until Ctrl-C",
    r"\bmy\.trace\b": "a user's own trace and drive (the DiskSim drives' examples run)",
    r"\binstall-helper\b|^mount -t fuse\.simfs": "changes /sbin (tests/mount/test_mount_helper.py)",
    r"/sys/kernel/tracing|\bsda\b": "a capture of the machine's own kernel or drive (the world has the "
                                     "committed tracefs capture as find.trace; tests/unit/test_trace_import.py)",
}
# parsers that must show examples (the list, and every top-level command)
MUST_HAVE = {"simfs disks", "simfs disks show", "simfs disks probe", "simfs policies show"}


def parsers():
    """(prog, parser) for every parser reachable from `simfs`, aliases once."""
    seen, out = set(), []

    def walk(p):
        if id(p) in seen:
            return
        seen.add(id(p))
        out.append((p.prog, p))
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sp in a.choices.values():
                    walk(sp)
    walk(build_parser())
    return out


def examples(help_text: str) -> list[str]:
    """The command lines of a help text's "examples:" block."""
    if "examples:" not in help_text:
        return []
    block = help_text.split("examples:", 1)[1].split("\n\n", 1)[0]
    lines, cur = [], ""
    for raw in block.splitlines():
        text = raw.strip()
        if not text:
            continue
        if cur:
            cur += " " + text
        elif text.startswith("#"):
            continue
        else:
            cur = text
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip()
            continue
        lines.append(cur)
        cur = ""
    return lines


ALL = [(prog, ex) for prog, p in parsers() for ex in examples(p.format_help())]
BLOCKS: dict[str, list[str]] = {}
for _prog, _ex in ALL:
    BLOCKS.setdefault(_prog, []).append(_ex)


def test_help_shows_examples():
    have = {prog for prog, _ in ALL}
    top = {prog for prog, _ in parsers() if prog.count(" ") == 1}
    missing = sorted((MUST_HAVE | top) - have)
    assert not missing, f"--help without examples: {missing}"
    assert len(ALL) >= 40


# the scratch world -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Inputs every block starts from (copied into each block's directory)."""
    w = tmp_path_factory.mktemp("world")
    bindir = w / "bin"
    bindir.mkdir()
    simfs = bindir / "simfs"
    simfs.write_text(f"#!/bin/sh\nPYTHONPATH='{REPO}'${{PYTHONPATH:+:$PYTHONPATH}} "
                     f"exec '{sys.executable}' -m simfs.cli \"$@\"\n")
    simfs.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}", HOME=str(w))
    tree = w / "srctree"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "Makefile").write_text("all:\n\ttrue\n")
    for i in range(20):
        (tree / "src" / f"file{i}.c").write_text(f"int f{i}(void) {{ return {i}; }}\n" * (i * 40 + 1))
    run(["tar", "cf", w / "src.tar", "-C", tree, "."])
    (w / "src" / "linux").mkdir(parents=True)          # ~/src/linux (HOME is the world)
    sh = lambda cmd: run(["bash", "-c", cmd], cwd=w, env=env)   # noqa: E731
    mnt = w / "mnt"
    mnt.mkdir()
    sh("simfs mkfs -q disk.img 256M")
    sh(f"simfs mount disk.img {mnt} -o trace={w}/a.csv,stats={w}/a.json")
    try:
        sh(f"tar xf src.tar -C {mnt} && mkdir -p {mnt}/tree/a {mnt}/tree/b && touch {mnt}/tree/a/x "
           f"&& head -c 2M /dev/urandom > {mnt}/big.iso && echo hello > {mnt}/f "
           f"&& simfs ctl {mnt} drop-caches && simfs ctl {mnt} mark readback && cat {mnt}/src/*.c > /dev/null")
    finally:
        sh(f"simfs umount -q {mnt}")
    for name in ("b.json", "first.stats.json", "second.stats.json", "disk.img.stats.json",
                 "ext2.stats.json", "cg.stats.json"):
        shutil.copy(w / "a.json", w / name)
    shutil.copy(w / "a.csv", w / "b.csv")
    shutil.copy(w / "a.csv", w / "run.trace")
    (w / "disk_models").symlink_to(REPO / "disk_models")    # the DiskSim drives' traces
    sh(f"simfs trace import {REPO}/tests/unit/data/find.tracefs -o find.trace")   # a kernel's find
    return w, env


def _mounted(mnt: Path) -> bool:
    return os.path.realpath(mnt) in fuse_mounts()


def _umount(mnt: Path, env) -> None:
    if _mounted(mnt):
        subprocess.run([str(Path(env["PATH"].split(":")[0]) / "simfs"), "umount", "-q", str(mnt)],
                       env=env, capture_output=True, timeout=300)
    if _mounted(mnt):
        subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)


@pytest.mark.parametrize("prog", sorted(BLOCKS))
def test_examples_run(prog, world, tmp_path):
    w, env = world
    d = tmp_path / "cwd"
    d.mkdir()
    run(["cp", "-a", "--sparse=always", *[p for p in w.iterdir() if p.name not in ("bin", "srctree", "mnt")], d])
    mnt = d / "mnt"
    mnt.mkdir()
    env = dict(env, HOME=str(d))
    parser = build_parser()
    try:
        for ex in BLOCKS[prog]:
            why = next((r for pat, r in PARSE_ONLY.items() if re.search(pat, ex)), None)
            if why:
                argv = shlex.split(ex.split("#")[0])
                if argv[0] == "simfs":
                    try:
                        parser.parse_args(argv[1:])
                    except SystemExit as e:
                        pytest.fail(f"{prog}: example does not parse: {ex}  ({e})")
                continue
            line = ex.replace("/tmp/", f"{d}/").replace("/mnt/sim", str(mnt))
            words = shlex.split(line, comments=True)
            mounts = "mount" in words and ("simfs" in words or "-t" in words) and "umount" not in words
            image_only = "disk.img" in words or any(w.startswith("disk.img") for w in words)
            if mounts or words[:2] == ["simfs", "mkfs"] or (image_only and str(mnt) not in line):
                _umount(mnt, env)
            elif str(mnt) in line and not _mounted(mnt):
                run(["bash", "-c", f"simfs mount disk.img {mnt}"], cwd=d, env=env)
            if words[:2] == ["simfs", "mkfs"] and "--force" not in words and "-F" not in words:
                (d / words[2]).unlink(missing_ok=True)
            r = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=d, env=env,
                               capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, f"{prog}: example failed ({r.returncode}): {ex}\n{r.stdout[-2000:]}{r.stderr[-2000:]}"
    finally:
        _umount(mnt, env)
