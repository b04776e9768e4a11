"""readdir in the mount's directory order, checked against debugfs's dx_hash (the oracle)."""

import subprocess

import pytest

from simfs.ondisk.mkfs import mkfs
from simfs.fs.volume import Volume, VolumeOptions
from tests.helpers import assert_fsck_clean, needs_e2fsprogs

SEED = "9f3c9e84-1c59-4b6b-9a43-5b3b0e1e2a11"


def _names(n):
    import random
    rng = random.Random(5)
    return sorted({bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789_.-\xc3\xa9")
                         for _ in range(rng.randint(1, 30))) for _ in range(n)} - {b".", b".."})


@needs_e2fsprogs
def test_hash_order_is_debugfs_dx_hash_order(tmp_path):
    img = tmp_path / "img"
    mkfs(img, 16 << 20, block_size=1024, hash_seed=SEED)
    names = _names(300)
    with Volume.open(img, VolumeOptions(dirorder="hash", disk="ideal")) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        for n in names:
            vol.create(d, n, 0o644, 0, 0)
        listed = [name for name, _, _ in vol.readdir(d)]
    assert listed[:2] == [b".", b".."]
    assert sorted(listed[2:]) == names
    cmds = tmp_path / "cmds"
    sample = [n for n in names if n.isascii()][:60]   # tests/unit/test_dirhash.py covers non-ASCII names
    cmds.write_text("".join(f'dx_hash -h half_md4 -s {SEED} -- "{n.decode()}"\n' for n in sample))
    out = subprocess.run(["debugfs", "-f", str(cmds), str(img)], capture_output=True, check=True).stdout
    hashes = {}
    for line in out.decode("latin-1").splitlines():
        if line.startswith("Hash of"):
            name = line.split("Hash of ", 1)[1].rsplit(" is ", 1)[0].encode("latin-1")
            h, minor = line.rsplit(" is ", 1)[1].split(" (minor ")
            hashes[name] = (int(h, 16), int(minor.rstrip(")"), 16))
    assert len(hashes) == 60
    ours = [n for n in listed if n in hashes]
    assert ours == sorted(hashes, key=lambda n: hashes[n])
    assert_fsck_clean(img)


@pytest.mark.parametrize("order", ["linear", "hash", "inode", "name"])
def test_every_order_lists_each_entry_once_across_resumes(tmp_path, order):
    img = tmp_path / "img"
    mkfs(img, 16 << 20, block_size=1024)
    names = _names(200)
    with Volume.open(img, VolumeOptions(dirorder=order, disk="ideal")) as vol:
        d = vol.mkdir(vol.root_ino, b"d", 0o755, 0, 0).st_ino
        for n in names:
            vol.create(d, n, 0o644, 0, 0)
        state = vol.opendir_state()
        seen, cookie = [], 0
        while True:
            page = vol.readdir(d, cookie, state)[:17]
            if not page:
                break
            seen += [n for n, _, _ in page]
            cookie = page[-1][2]
        assert sorted(seen) == sorted(names + [b".", b".."])
        if order == "inode":
            inos = [vol.lookup(d, n).st_ino for n in seen[2:]]
            assert inos == sorted(inos)
        if order == "name":
            assert seen[2:] == sorted(names)
