"""kill -9 of an in-process verb leaves what a daemon crash leaves (README, What survives).

`simfs verb unpack` of an archive is killed at a random point of its run. A commit happens
between two operations and captures the whole volume, so the image holds the state of its last
commit: the verb refuses it until `simfs fsck --repair`, which leaves it e2fsck-clean, and the
archive's files, read back by the kernel's ext2 in archive order, are intact up to some point;
after it comes at most the one file that commit caught half-written, then nothing. With delayed
allocation, the recent files whose pages had no blocks yet read as zeros, as README says; since
write-back places the oldest pages first, those are the files after the intact ones. An empty
file has nothing to lose and is whole wherever it stands. A file after a missing one, or a
non-empty intact one after a damaged one, would mean a commit that did not capture one
consistent state.
"""

import itertools
import os
import random
import re
import signal
import subprocess
import tarfile
import time

import pytest

from tests.conftest import e2fsck, make_image, run_simfs, simfs_argv
from tests.helpers import kernel_mount


def _unpack(img, tarball, options):
    return subprocess.Popen(simfs_argv() + ["verb", "unpack", "-o", options, str(img), "t",
                                            "--from", str(tarball)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _states(root, tarball) -> str:
    """One letter per regular file of the archive, in its order: '=' intact, '0' intact and
    empty (no page to lose: it is whole as soon as it exists), 'x' present but not the
    archive's bytes, '-' missing."""
    out = []
    with tarfile.open(tarball) as tf:
        for m in tf:
            if not m.isfile():
                continue
            p = os.path.join(root, "t", m.name)
            if not os.path.isfile(p):
                out.append("-")
                continue
            with open(p, "rb") as f:
                data = f.read()
            out.append("x" if data != tf.extractfile(m).read() else "=" if data else "0")
    return "".join(out)


def _runs(states: str) -> str:
    """The states as runs, for a message: '918=, 1x, 1081-'."""
    return ", ".join(f"{len(list(g))}{c}" for c, g in itertools.groupby(states))


@pytest.mark.parametrize("options, states_allowed", [
    ("writeback=async,commit=0.2", r"[=0]*x?-*"),
    ("alloc=delayed,writeback=softdep,cache=2M,commit=0.2", r"[=0]*[x0]*-*"),
])
@pytest.mark.serial
def test_kill_9_of_an_unpack_leaves_a_prefix_of_the_archive(tmp_path, source_tarball, options,
                                                            states_allowed):
    # how long the whole unpack takes here, so that the kill falls inside it
    whole = make_image(tmp_path / "whole.img", "512M")
    t0 = time.monotonic()
    p = _unpack(whole, source_tarball, options)
    with p.stderr:
        assert p.wait(timeout=600) == 0, p.stderr.read()
    duration = time.monotonic() - t0

    # a loaded host may run the second unpack faster than the first: then earlier
    fraction = random.Random(options).uniform(0.3, 0.7)
    for attempt in range(4):
        img = make_image(tmp_path / f"k{attempt}.img", "512M")
        p = _unpack(img, source_tarball, options)
        time.sleep(fraction * duration)
        if p.poll() is None:
            break
        p.stderr.close()
        fraction /= 2
    else:
        pytest.fail(f"the unpack ended before the kill four times ({duration:.1f} s the first time)")
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=60)
    p.stderr.close()

    r = run_simfs("verb", "find", img, "t", check=False)
    assert r.returncode == 2 and "not cleanly unmounted" in r.stderr, r.stderr
    # one error line; before it at most the note that the open finished (or discarded) the
    # commit the kill interrupted, when the kill fell inside one
    *notes, error = r.stderr.strip().splitlines()
    assert "not cleanly unmounted" in error, r.stderr
    assert len(notes) <= 1 and all(re.search(r"finished an interrupted commit|discarded a torn journal",
                                             n) for n in notes), r.stderr
    r = run_simfs("fsck", "--repair", img, check=False)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    rc, out = e2fsck(img)
    assert rc == 0, out

    with kernel_mount(img, tmp_path / "mnt") as mnt:
        states = _states(mnt, source_tarball)
    assert set(states) - {"=", "0"}, "the kill came after the last file"
    assert re.fullmatch(states_allowed, states), \
        f"not a state of one commit ({states_allowed}): {_runs(states)}"
