"""A verb's volume is freed when its run ends, by reference counting alone: the in-process
runs keep Python's cyclic collector rare (simfs.inprocess.verbs.rare_collections), so a reference
cycle through a run's kernel would keep each closed volume - its buffer cache, inode table and
allocator state - in memory until a full collection, and a sequence of runs (seed 001 at its own
size) would hold several. Compiled, a closure another closure calls shares their scope and
made such a cycle in unpack (`python -m benchmarks.bench_seed001_scale --files 100000`: a
peak RSS of 566 MiB with it, 422 MiB without)."""

import gc
import weakref

import pytest

from experiments.workload import generate_tree
from simfs.inprocess import verbs
from simfs.inprocess.treedesc import from_directory
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs


@pytest.fixture
def opened(monkeypatch):
    """Weak references to every volume Volume.open returns."""
    refs = []
    real = Volume.open.__func__

    def spy(cls, *a, **k):
        vol = real(cls, *a, **k)
        refs.append(weakref.ref(vol))
        return vol
    monkeypatch.setattr(Volume, "open", classmethod(spy))
    return refs


def test_no_volume_outlives_its_run(tmp_path, opened):
    src = tmp_path / "src"
    generate_tree(src, seed=3, files=60)
    img = tmp_path / "v.img"
    mkfs(img, 128 << 20)
    runs = [("unpack", "tree", {"source": from_directory(str(src)), "mkdir": True}),
            ("find", "tree", {"type": "f"}), ("tar-read", "tree", {}), ("du", "tree", {}),
            ("grep", "tree", {}), ("cp-a", "tree", {"dst": "copy"}), ("rm-rf", "copy", {})]
    enabled = gc.isenabled()
    gc.disable()
    try:
        for verb, where, params in runs:
            verbs.run(str(img), VolumeOptions(), verb, where, **params)
            assert [r() for r in opened if r() is not None] == [], f"{verb}: its volume is still alive"
    finally:
        if enabled:
            gc.enable()
