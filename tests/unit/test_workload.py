"""Tests for experiments.workload (seeded source-like trees) and tests/tools/mmap_writer.py."""

from __future__ import annotations

import gzip
import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.workload import (
    DEFAULT_MTIME,
    MTIME_SPREAD,
    TreeSummary,
    generate_tree,
)
from experiments.workload.cli import main as workload_main
from simfs.units import parse_size

REPO = Path(__file__).resolve().parents[2]
MMAP_WRITER = REPO / "tests" / "tools" / "mmap_writer.py"
MiB = 1 << 20


# ------------------------------------------------------------------------------ helpers

def scan(root: Path) -> dict[str, tuple]:
    """Canonical view of a tree: relative path -> what must be reproducible.

    Hard links are represented by the first path (in sorted order) of their inode, so two
    trees compare equal only if the same names share inodes.
    """
    entries: dict[str, tuple] = {}
    first_name: dict[int, str] = {}
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            paths.append(os.path.join(dirpath, name))
    for p in sorted(paths):
        rel = os.path.relpath(p, root)
        st = os.lstat(p)
        # (atime is set too, but reading the tree, os.walk included, moves it under relatime)
        common = (stat.S_IMODE(st.st_mode), st.st_mtime_ns)
        if stat.S_ISLNK(st.st_mode):
            entries[rel] = ("l", os.readlink(p)) + common
        elif stat.S_ISDIR(st.st_mode):
            entries[rel] = ("d",) + common
        elif stat.S_ISREG(st.st_mode):
            link = first_name.setdefault(st.st_ino, rel)
            with open(p, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            entries[rel] = ("f", st.st_size, digest, st.st_nlink, link) + common
        else:  # pragma: no cover
            entries[rel] = ("?", stat.S_IFMT(st.st_mode))
    st = os.lstat(root)
    entries["."] = ("d", stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return entries


def walk_counts(root: Path) -> dict:
    """Count what is really there, with lstat (os.walk lists symlinks to dirs as dirs)."""
    c = dict(files=0, dirs=0, symlinks=0, hardlinks=0, total_bytes=0, largest_file=0,
             empty_files=0, empty_dirs=0, dangling_symlinks=0, source_files=0,
             source_bytes=0, svn_dirs=0, max_depth=0, longest_path=0)
    seen: set[int] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        parts = [] if rel_dir == "." else rel_dir.split(os.sep)
        in_svn = ".svn" in parts
        if rel_dir != "." and not in_svn:
            c["max_depth"] = max(c["max_depth"], len(parts))
        if rel_dir != "." and not dirnames and not filenames:
            c["empty_dirs"] += 1
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            c["longest_path"] = max(c["longest_path"], len(rel))
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                c["symlinks"] += 1
                if not os.path.exists(p):
                    c["dangling_symlinks"] += 1
            elif stat.S_ISDIR(st.st_mode):
                c["dirs"] += 1
                if name == ".svn":
                    c["svn_dirs"] += 1
            elif stat.S_ISREG(st.st_mode):
                if st.st_ino in seen:
                    c["hardlinks"] += 1
                    continue
                seen.add(st.st_ino)
                c["files"] += 1
                c["total_bytes"] += st.st_size
                c["largest_file"] = max(c["largest_file"], st.st_size)
                c["empty_files"] += st.st_size == 0
                if not in_svn and name != ".svn":
                    c["source_files"] += 1
                    c["source_bytes"] += st.st_size
        # os.walk descends into symlinked dirs only with followlinks=True (default False)
    return c


def summary_counts(s: TreeSummary) -> dict:
    d = s.to_dict()
    for k in ("root", "seed", "largest_path"):
        d.pop(k)
    return d


# ------------------------------------------------------------------------------ fixtures

@pytest.fixture(scope="module")
def tree2k(tmp_path_factory) -> tuple[Path, TreeSummary]:
    dest = tmp_path_factory.mktemp("wl") / "a"
    return dest, generate_tree(dest, seed=7, files=2000)


@pytest.fixture(scope="module")
def svn_tree(tmp_path_factory) -> tuple[Path, TreeSummary]:
    dest = tmp_path_factory.mktemp("wl") / "svn"
    return dest, generate_tree(dest, seed=3, files=400, svn=True)


# ------------------------------------------------------------------------------ workload

def test_deterministic_byte_for_byte(tree2k, tmp_path):
    dest, s = tree2k
    s2 = generate_tree(tmp_path / "b", seed=7, files=2000)
    assert summary_counts(s) == summary_counts(s2)
    assert s.largest_path == s2.largest_path
    a, b = scan(dest), scan(tmp_path / "b")
    assert a.keys() == b.keys()
    diff = [k for k in a if a[k] != b[k]]
    assert not diff, diff[:5]


def test_deterministic_across_processes(tmp_path):
    """No dependence on hash randomisation or on in-process caches."""
    s = generate_tree(tmp_path / "a", seed=12, files=300, svn=True)
    env = dict(os.environ, PYTHONHASHSEED="4242")
    r = subprocess.run([sys.executable, "-m", "experiments.workload", str(tmp_path / "b"),
                        "--files", "300", "--seed", "12", "--svn"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"{s.total_bytes:,}" in r.stdout
    assert scan(tmp_path / "a") == scan(tmp_path / "b")


def test_different_seeds_differ(tmp_path):
    a = generate_tree(tmp_path / "a", seed=1, files=150)
    b = generate_tree(tmp_path / "b", seed=2, files=150)
    assert a.source_files == b.source_files == 150
    sa, sb = scan(tmp_path / "a"), scan(tmp_path / "b")
    assert sa.keys() != sb.keys()
    digests_a = {v[2] for v in sa.values() if v[0] == "f"}
    digests_b = {v[2] for v in sb.values() if v[0] == "f"}
    assert len(digests_a & digests_b) <= 1  # at most the empty file's digest


def test_summary_matches_walk(tree2k):
    dest, s = tree2k
    assert summary_counts(s) == walk_counts(dest)
    assert s.source_files == s.files == 2000
    largest = dest / s.largest_path
    assert largest.stat().st_size == s.largest_file


def test_features_present(tree2k):
    dest, s = tree2k
    assert s.largest_file > MiB
    assert s.symlinks >= 3 and s.dangling_symlinks >= 1 and s.hardlinks >= 1
    assert s.empty_dirs >= 1 and s.empty_files >= 1
    assert s.longest_path > 200
    assert 3 <= s.max_depth <= 8
    kinds = {"file": 0, "dir": 0, "dangling": 0}
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                target = os.readlink(p)
                assert not os.path.isabs(target)
                if not os.path.exists(p):
                    kinds["dangling"] += 1
                elif os.path.isdir(p):
                    kinds["dir"] += 1
                    # never a link to an ancestor: no loops for find -L
                    assert not os.path.realpath(dirpath).startswith(os.path.realpath(p) + os.sep)
                    assert os.path.realpath(dirpath) != os.path.realpath(p)
                else:
                    kinds["file"] += 1
    assert all(kinds.values()), kinds
    nlinks = [os.lstat(os.path.join(dp, f)).st_nlink
              for dp, _, fs in os.walk(dest) for f in fs
              if not os.path.islink(os.path.join(dp, f))]
    assert max(nlinks) >= 2
    # directory fan-out like src/: most directories have 5..30 entries
    sizes = [len(dn) + len(fn) for _, dn, fn in os.walk(dest)]
    in_range = sum(5 <= n <= 32 for n in sizes)
    assert in_range >= 0.8 * len(sizes)
    # modes and times are what the generator set, independent of umask
    assert stat.S_IMODE(os.lstat(dest).st_mode) == 0o755
    for dp, dn, fn in os.walk(dest):
        for n in fn:
            st = os.lstat(os.path.join(dp, n))
            if stat.S_ISREG(st.st_mode):
                assert stat.S_IMODE(st.st_mode) in (0o644, 0o755)
                assert DEFAULT_MTIME <= st.st_mtime < DEFAULT_MTIME + MTIME_SPREAD
                assert st.st_mtime_ns % 10**9 == 0


def test_contents_look_like_source(tree2k):
    dest, s = tree2k
    data = (dest / s.largest_path).read_bytes()
    assert len(data) == s.largest_file
    text = data.decode("ascii")  # plain ASCII text
    assert text.endswith("\n")
    assert text.count("\n") > len(text) / 120
    ratio = len(data) / len(gzip.compress(data, 6))
    assert 2.5 < ratio < 10, ratio  # compresses like source code, not like random bytes
    cfiles = [p for p in dest.rglob("*.c") if p.is_file() and not p.is_symlink()
              and p.stat().st_size > 2000]
    assert cfiles
    assert b"#include" in cfiles[0].read_bytes() or b"{" in cfiles[0].read_bytes()


def test_svn_metadata(svn_tree):
    dest, s = svn_tree
    assert summary_counts(s) == walk_counts(dest)
    assert s.source_files == 400
    work_dirs = [dp for dp, _, _ in os.walk(dest) if ".svn" not in Path(dp).relative_to(dest).parts]
    assert s.svn_dirs == len(work_dirs)
    for dp in work_dirs:
        svn = Path(dp) / ".svn"
        for sub in ("entries", "all-wcprops", "text-base", "prop-base", "props", "tmp",
                    "tmp/text-base", "tmp/prop-base", "tmp/props"):
            assert (svn / sub).exists() or (svn / sub).is_symlink(), svn / sub
        assert stat.S_IMODE((svn / "entries").stat().st_mode) == 0o444
        assert (svn / "entries").read_text().startswith("10\n")
        # every working name has a pristine copy with the same bytes
        for name in os.listdir(dp):
            p = Path(dp) / name
            if name == ".svn" or (p.is_dir() and not p.is_symlink()):
                continue
            base = svn / "text-base" / f"{name}.svn-base"
            if p.is_symlink():
                assert base.read_text() == f"link {os.readlink(p)}"
            else:
                assert base.read_bytes() == p.read_bytes()
                assert stat.S_IMODE(base.stat().st_mode) == 0o444
    # 8 directories per working directory, and more files than the working tree alone
    assert s.dirs == len(work_dirs) - 1 + 8 * len(work_dirs)
    assert s.files > 2 * s.source_files


def test_total_size_exact(tmp_path):
    s = generate_tree(tmp_path / "a", seed=4, files=1200, total_size="20M")
    assert s.source_bytes == 20 * MiB
    assert s.largest_file > MiB
    s2 = generate_tree(tmp_path / "b", seed=4, files=None, total_size="8M", svn=False)
    assert s2.source_bytes == 8 * MiB
    assert 300 < s2.source_files < 1500


def test_limits_and_small_trees(tmp_path):
    s = generate_tree(tmp_path / "a", seed=1, files=1500, max_file_size="64K")
    assert s.largest_file <= 64 * 1024
    for n, depth in ((1, 8), (4, 0), (30, 1), (60, 2)):
        d = tmp_path / f"n{n}_{depth}"
        s = generate_tree(d, seed=n, files=n, max_depth=depth)
        assert summary_counts(s) == walk_counts(d)
        assert s.source_files == n
        assert s.longest_path > 200
    s = generate_tree(tmp_path / "plain", seed=1, files=50, symlinks=False, hardlinks=False,
                      empty_files=False, empty_dirs=False, deep_paths=False)
    assert (s.symlinks, s.hardlinks, s.empty_files, s.empty_dirs) == (0, 0, 0, 0)
    assert s.longest_path < 200


def test_refuses_nonempty_dest_and_bad_args(tmp_path):
    (tmp_path / "x").write_text("x")
    with pytest.raises(FileExistsError):
        generate_tree(tmp_path, files=10)
    with pytest.raises(ValueError):
        generate_tree(tmp_path / "y", files=0)
    with pytest.raises(ValueError):
        generate_tree(tmp_path / "z", files=10, total_size=5)  # < 1 byte per non-empty file
    assert parse_size("50M") == 50 * MiB and parse_size("4KiB") == 4096
    assert parse_size("0x10") == 16 and parse_size(7) == 7


def test_cli(tmp_path, capsys):
    rc = workload_main([str(tmp_path / "c"), "--files", "40", "--seed", "9", "--svn"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "files" in out and ".svn" in out
    r = subprocess.run([sys.executable, "-m", "experiments.workload", str(tmp_path / "d"),
                        "--files", "40", "--seed", "9", "--json"],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert '"source_files": 40' in r.stdout
    rc = workload_main([str(tmp_path / "d"), "--files", "40"])  # not empty any more
    assert rc == 2


# ------------------------------------------------------------------------------ mmap_writer

def run_writer(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(MMAP_WRITER), *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("mode", [
    ["--order", "alloctest"], ["--order", "shuffled", "--seed", "3"], ["--order", "sequential"],
    ["--pwrite", "--order", "alloctest"],
])
def test_mmap_writer_roundtrip(tmp_path, mode):
    f = tmp_path / "big"
    size = str(MiB + 4096 * 3 + 100)  # includes a partial last page
    r = run_writer(str(f), size, *mode)
    assert r.returncode == 0, r.stderr
    assert f.stat().st_size == int(size)
    r = run_writer(str(f), size, "--verify")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mmap_writer_same_bytes_any_order(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_writer(str(a), "256K", "--order", "alloctest").returncode == 0
    assert run_writer(str(b), "256K", "--pwrite", "--order", "shuffled").returncode == 0
    assert a.read_bytes() == b.read_bytes()


def test_mmap_writer_detects_corruption(tmp_path):
    f = tmp_path / "big"
    assert run_writer(str(f), "1M").returncode == 0
    with open(f, "r+b") as fh:
        fh.seek(5 * 4096 + 1234)
        byte = fh.read(1)
        fh.seek(5 * 4096 + 1234)
        fh.write(bytes([byte[0] ^ 0x40]))
    r = run_writer(str(f), "1M", "--verify")
    assert r.returncode == 1
    assert "page 5" in r.stderr
    r = run_writer(str(f), "2M", "--verify")  # wrong size
    assert r.returncode == 1


def test_mmap_writer_usage_errors(tmp_path):
    r = run_writer()
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    r = run_writer(str(tmp_path / "x"), "12Q")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    r = run_writer(str(tmp_path / "no" / "such" / "dir"), "4096")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    r = run_writer(str(tmp_path / "missing"), "4096", "--verify")
    assert r.returncode == 2
    r = run_writer(str(tmp_path / "empty"), "0")
    assert r.returncode == 0 and (tmp_path / "empty").stat().st_size == 0
