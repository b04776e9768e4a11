"""The compiled hot path (simfs.compiled): built and loaded where `make test` built it, never
loaded once its source has changed, and giving the same simulated figures as the source."""

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import simfs.compiled as compiled

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(os.environ.get("SIMFS_PURE") in ("1", "all"),
                                reason="SIMFS_PURE=1: the run is meant to be all source")


def test_the_data_path_runs_compiled():
    """`make test` builds it (make compiled): every module of the data path is compiled from
    its source as it is, and the volume is imported from the build."""
    import simfs.fs.volume
    states = compiled.state()
    assert states and set(states.values()) == {"compiled"}, \
        f"not compiled (run make compiled): {sorted(n for n, s in states.items() if s != 'compiled')}"
    assert simfs.fs.volume.__file__.endswith(importlib.machinery.EXTENSION_SUFFIXES[0])


def test_an_edited_module_is_not_loaded_from_its_build(tmp_path):
    name = "simfs.ondisk.constants"
    entry = dict(compiled._manifest()[name])
    src = tmp_path / entry["source"]
    src.parent.mkdir(parents=True)
    shutil.copy(REPO / entry["source"], src)
    finder = compiled.CompiledFinder({name: entry}, root=tmp_path)
    assert finder.current(name) == compiled.BUILD / entry["file"]
    assert finder.find_spec(name).origin == str(compiled.BUILD / entry["file"])
    src.write_text(src.read_text() + "\nEDITED = True\n")
    assert finder.current(name) is None and finder.find_spec(name) is None
    assert compiled.CompiledFinder({name: entry}, root=tmp_path, build=tmp_path).current(name) is None
    assert finder.find_spec("simfs.cli.main") is None            # not compiled at all


@pytest.mark.parametrize("key, other", [("suffix", ".cpython-39-x86_64-linux-gnu.so"),
                                        ("python", "3.11.7 (main, Jan  1 2024, 00:00:00) [GCC 12.2.0]")])
def test_a_build_for_another_python_is_not_used(tmp_path, monkeypatch, key, other):
    """Another minor version (the suffix), or another build of this one (another patch
    release, another interpreter of the same version: other headers)."""
    manifest = json.loads(compiled.MANIFEST.read_text())
    assert manifest[key] != other
    manifest[key] = other
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    monkeypatch.setattr(compiled, "MANIFEST", path)
    assert compiled._manifest() == {}
    assert set(compiled.state().values()) == {"not built"}


RUN = """
import json, sys
import simfs.fs.volume
from experiments.workload import generate_tree
from simfs.inprocess import verbs
from simfs.inprocess.treedesc import from_directory
from simfs.fuse import mountopts
from simfs.ondisk.mkfs import mkfs
src, img = sys.argv[1], sys.argv[2]
out = []
# a rotating drive, and a 4K drive with 512-byte emulation on a misaligned partition (an
# integer parameter came back from compiled code as a float once: Cython's type inference)
for disk in ("sas10k", "wd-ears,partition_offset=63"):
    mkfs(img, 256 << 20, uuid="00000000-0000-0000-0000-000000000001",
         hash_seed="00000000-0000-0000-0000-000000000002", now=1)
    opts = mountopts.parse([f"alloc=ext2,dirorder=hash,writeback=async,disk={disk}"]).volume
    out.append(verbs.run(img, opts, "unpack", "t", mkdir=True, source=from_directory(src)))
    for verb, params in (("tar-read", {}), ("find", {"type": "f"}), ("cp-a", {"dst": "c"}), ("rm-rf", {})):
        out.append(verbs.run(img, opts, verb, "t", **params))
print(json.dumps({"file": simfs.fs.volume.__file__, "runs": [(r["time"], r["counters"]) for r in out]}))
"""


def test_compiled_and_source_give_the_same_figures(tmp_path):
    """The same work, one process with the compiled modules and one with SIMFS_PURE=1: the
    statistics (simulated time of every operation kind, every counter) are identical."""
    from experiments.workload import generate_tree
    src = tmp_path / "src"
    generate_tree(src, seed=3, files=400)
    got = {}
    for mode, env in (("compiled", {}), ("source", {"SIMFS_PURE": "1"})):
        p = subprocess.run([sys.executable, "-c", RUN, str(src), str(tmp_path / f"{mode}.img")],
                           capture_output=True, text=True, cwd=REPO, env=dict(os.environ, **env))
        assert p.returncode == 0, p.stderr
        got[mode] = json.loads(p.stdout)
    assert got["compiled"]["file"].endswith(importlib.machinery.EXTENSION_SUFFIXES[0])
    assert got["source"]["file"].endswith("volume.py")
    assert got["compiled"]["runs"] == got["source"]["runs"]
    assert got["source"]["runs"][0][1]["disk_writes"] > 0
