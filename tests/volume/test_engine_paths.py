"""One workload, three in-process paths, the same figures: the guard of the per-operation fast
paths (simfs.fs.operation, the buffer cache's operation boundary, the statistics).

An unpack, a cold find and a cold rm -rf of a small generated tree go (a) through the verbs
(`verbs.run`: the kernel model on a Volume), (b) through the kernel model on a RecordingVolume
(the -o oplog= wrapper), and (c) through `replay` of (b)'s log. Each write-back mode
(sync writes an operation's metadata before it returns, softdep records dependencies per
operation, async neither) and allocators that decide at write time and at write-back: the
statistics (simulated time, every operation's count and time, every counter, per phase) must be
the same field for field on all three paths, and a second run of (a) the same again.
"""

from __future__ import annotations

import dataclasses
import shutil

import pytest

from experiments.workload.describe import describe
from simfs.inprocess import verbs
from simfs.inprocess.kernel import Kernel
from simfs.inprocess.oplog import RecordingVolume
from simfs.inprocess.replay import replay
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean

UUID = "00000000-0000-0000-0000-00000000a11e"
STEPS = (("unpack", {}), ("find", {"type": "d"}), ("rm-rf", {}))


def _params(verb):
    if verb == "unpack":
        return {"source": describe(seed=5, files=60, svn=True, fanout=(2, 6)), "mkdir": True}
    return dict(STEPS)[verb]


def _recorded(img, opts, verb, log):
    """The verb as verbs.run does it, with the volume wrapped in a recorder."""
    vol = RecordingVolume.start(Volume.open(str(img), opts), str(log), "test")
    k = Kernel(vol)
    k.mount()
    params = _params(verb)
    if params.pop("mkdir", False):
        verbs._mkdir_p(k, [b"tree"])
    verbs.VERBS[verb](k, [b"tree"], **params)
    k.unmount()
    vol.close()
    return vol.stats_snapshot()


@pytest.mark.parametrize("writeback,alloc", [("sync", "ext2"), ("async", "delayed"),
                                             ("softdep", "cg"), ("softdep", "delayed")])
def test_verbs_recording_and_replay_agree(tmp_path, writeback, alloc):
    opts = VolumeOptions(alloc=alloc, writeback=writeback, dirorder="hash", disk="sas10k")
    pristine = tmp_path / "pristine.img"
    mkfs(str(pristine), 64 << 20, block_size=4096, uuid=UUID)
    images = {p: tmp_path / f"{p}.img" for p in ("verb", "again", "rec", "replay")}
    for img in images.values():
        shutil.copyfile(pristine, img)
    for verb, _ in STEPS:
        a = verbs.run(str(images["verb"]), opts, verb, "tree", **_params(verb))["time"]
        b = verbs.run(str(images["again"]), opts, verb, "tree", **_params(verb))["time"]
        log = tmp_path / f"{verb}.log"
        c = _recorded(images["rec"], opts, verb, log)
        d = replay(str(log), str(images["replay"]), dataclasses.replace(opts))["time"]
        assert a == b, f"{verb}: two runs of the verb differ"
        assert c == a, f"{verb}: the recorded run differs from the verb"
        assert d == a, f"{verb}: the replay differs from the verb"
        assert a["total"]["operations"], f"{verb}: no operation was counted"
    for img in images.values():
        assert_fsck_clean(img)
