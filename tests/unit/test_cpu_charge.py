"""The CPU charge per operation (simfs.fs.cpucost): the kernel's per-kind table applies per kind,
requests only FUSE makes cost nothing, cpu_op_us keeps the flat charge, runs are deterministic.

On the ideal disk (every request done at its issue time) an operation's simulated time is its
CPU charge alone."""

import json
import shutil
from pathlib import Path

import pytest

from simfs.fs import cpucost
from simfs.fs.operation import OperationCharger
from simfs.fs.optionspec import OptionError
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs

MIB = 1 << 20
KINDS = sorted(cpucost.charges(cpucost.MEASURED, 1.0))
#: a distinct charge per kind (microseconds): a kind charged as another shows
DISTINCT = {k: (i + 1) * 1e-6 for i, k in enumerate(KINDS)}


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    img = tmp_path_factory.mktemp("cpu") / "img"
    mkfs(img, 32 * MIB, block_size=4096, uuid=bytes(range(16)), hash_seed=bytes(16), now=1_000_000_000)
    return img


@pytest.fixture
def distinct(monkeypatch):
    monkeypatch.setattr(cpucost, "charges", lambda m, scale: dict(DISTINCT))
    return DISTINCT


def _cost(vol, fn, *args, **kw):
    t0 = vol.clock.now
    fn(*args, **kw)
    return vol.clock.now - t0


def test_each_kind_is_charged_its_own_figure(image, tmp_path, distinct):
    c = distinct
    img = shutil.copy(image, tmp_path / "img")
    with Volume.open(img, VolumeOptions(disk="ideal")) as vol:
        r = vol.root_ino
        assert _cost(vol, vol.getattr, r) == pytest.approx(c["getattr"])
        assert _cost(vol, vol.mkdir, r, b"d", 0o40755, 0, 0) == pytest.approx(c["mkdir"])
        assert _cost(vol, vol.create, r, b"f", 0o100644, 0, 0) == pytest.approx(c["create"])
        ino = vol.lookup(r, b"f").st_ino
        assert _cost(vol, vol.write, ino, 0, b"x" * 8192) == pytest.approx(c["write"] + 8 * c["write_kib"])
        assert _cost(vol, vol.read, ino, 0, 4096) == pytest.approx(c["read"] + 4 * c["read_kib"])
        assert _cost(vol, vol.setattr, ino, mode=0o600) == pytest.approx(c["setattr"])
        assert _cost(vol, vol.setxattr, ino, b"user.k", b"v") == pytest.approx(c["setxattr"])
        assert _cost(vol, vol.getxattr, ino, b"user.k") == pytest.approx(c["getxattr"])
        assert _cost(vol, vol.listxattr, ino) == pytest.approx(c["listxattr"])
        assert _cost(vol, vol.removexattr, ino, b"user.k") == pytest.approx(c["removexattr"])
        assert _cost(vol, vol.symlink, r, b"s", b"f", 0, 0) == pytest.approx(c["symlink"])
        s = vol.lookup(r, b"s").st_ino
        assert _cost(vol, vol.readlink, s) == pytest.approx(c["readlink"])
        assert _cost(vol, vol.link, ino, r, b"g") == pytest.approx(c["link"])
        assert _cost(vol, vol.rename, r, b"g", r, b"h") == pytest.approx(c["rename"])
        assert _cost(vol, vol.unlink, r, b"h") == pytest.approx(c["unlink"])
        assert _cost(vol, vol.rmdir, r, b"d") == pytest.approx(c["rmdir"])
        assert _cost(vol, vol.statfs) == pytest.approx(c["statfs"])
        assert _cost(vol, vol.fsync, ino) == pytest.approx(c["fsync"])
        n = len(vol.readdir(r))
        assert _cost(vol, vol.readdir, r) == pytest.approx(c["readdir"] + c["readdir_open"] + n * c["readdir_entry"])
        rest = len(vol.readdir(r, 2))
        assert 0 < rest < n
        assert _cost(vol, vol.readdir, r, 2) == pytest.approx(c["readdir"] + rest * c["readdir_entry"])


def test_a_lookup_is_a_hit_only_for_a_name_the_kernel_still_holds(image, tmp_path, distinct):
    c = distinct
    img = shutil.copy(image, tmp_path / "img")
    with Volume.open(img, VolumeOptions(disk="ideal")) as vol:
        r = vol.root_ino
        ino = vol.create(r, b"f", 0o100644, 0, 0).st_ino
        vol.hold(ino)                                           # the create reply's reference
        assert _cost(vol, vol.lookup, r, b"f") == pytest.approx(c["lookup"])      # in the dcache
        vol.drop(ino)                                           # FORGET: the dentry goes
        miss = c["lookup"] + c["lookup_miss"]
        assert _cost(vol, vol.lookup, r, b"f") == pytest.approx(miss)
        vol.hold(ino)
        assert _cost(vol, vol.lookup, r, b"f") == pytest.approx(c["lookup"])
        vol.drop(ino)
        vol.readdir(r)                                          # listed while not held ...
        vol.hold(ino)                                           # ... readdirplus holds it
        assert _cost(vol, vol.lookup, r, b"f") == pytest.approx(miss)     # getdents makes no dentry
        vol.hold(ino)
        assert _cost(vol, vol.lookup, r, b"f") == pytest.approx(c["lookup"])
        with pytest.raises(Exception):
            vol.lookup(r, b"missing")
        t0 = vol.clock.now
        with pytest.raises(Exception):
            vol.lookup(r, b"missing")
        assert vol.clock.now - t0 == pytest.approx(c["lookup_negative"])


def test_requests_only_fuse_makes_cost_nothing(image, tmp_path, distinct):
    img = shutil.copy(image, tmp_path / "img")
    with Volume.open(img, VolumeOptions(disk="ideal")) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o100644, 0, 0).st_ino
        vol.hold(ino)
        assert _cost(vol, vol.drop, ino) == 0                              # FORGET
        assert _cost(vol, vol.open_file, ino) == 0                         # OPEN
        assert _cost(vol, vol.release_file, ino, True) == 0                # RELEASE
        with pytest.raises(Exception):                                     # file_remove_privs's
            vol.getxattr(ino, cpucost.XATTR_CAPS)                          # probe (ENODATA)
        t0 = vol.clock.now
        with pytest.raises(Exception):
            vol.getxattr(ino, cpucost.XATTR_CAPS)
        assert vol.clock.now == t0


def test_cpu_op_us_keeps_the_flat_charge_whatever_cpu_says(image, tmp_path):
    img = shutil.copy(image, tmp_path / "img")
    for opts, us in (({"cpu_op_us": 7.0}, 7.0), ({"cpu": "kernel", "cpu_op_us": 7.0}, 7.0),
                     ({"cpu": "flat"}, cpucost.FLAT_US), ({"cpu_op_us": 0.0}, 0.0)):
        with Volume.open(img, VolumeOptions(disk="ideal", **opts)) as vol:
            r = vol.root_ino
            assert _cost(vol, vol.getattr, r) == pytest.approx(us * 1e-6), opts
            assert _cost(vol, vol.readdir, r) == pytest.approx(us * 1e-6), opts
            assert _cost(vol, vol.statfs) == pytest.approx(us * 1e-6), opts


def test_the_default_is_the_kernel_table_at_the_seeds_era(image, tmp_path):
    img = shutil.copy(image, tmp_path / "img")
    assert VolumeOptions().cpu == "kernel" and VolumeOptions().cpu_op_us is None
    cost = cpucost.charges(cpucost.MEASURED, cpucost.ERAS["2011"])
    host = cpucost.charges(cpucost.MEASURED, cpucost.ERAS["host"])
    with Volume.open(img, VolumeOptions(disk="ideal")) as vol:
        assert _cost(vol, vol.getattr, vol.root_ino) == pytest.approx(cost["getattr"])
    with Volume.open(img, VolumeOptions(disk="ideal", cpu="kernel-host")) as vol:
        assert _cost(vol, vol.getattr, vol.root_ino) == pytest.approx(host["getattr"])
    assert 0 < host["getattr"] < cost["getattr"]


def test_a_bad_cpu_model_is_one_line():
    with pytest.raises(OptionError, match=r"cpu: 'fast' \(valid: kernel, kernel-2011, kernel-host, flat\)$") as e:
        Volume.open("/nonexistent", VolumeOptions(cpu="fast"))
    assert "\n" not in str(e.value)


class _Clock:
    now = 0.0


class _Cache:
    def begin_op(self, name):
        pass

    def end_op(self):
        pass


class _Stats:
    def op(self, name, t, now):
        pass


class _Vol:
    holds: dict = {}

    def commit_if_due(self):
        pass


@pytest.mark.parametrize("flat", [False, True])
def test_a_nested_operation_is_its_callers_charge_under_the_kernel_model(distinct, flat):
    """(The flat charge is each operation's, nested or not, as before.)"""
    clock = _Clock()
    charger = OperationCharger(clock, _Cache(), _Stats(), 3e-6 if flat else 0.0,
                               None if flat else cpucost.KernelCharge("host"))
    vol = _Vol()

    def symlink(vol, *a):
        charger.call(vol, lambda vol, *a: None, "unlink", a, {})     # its error path
        return type("Attr", (), {"st_ino": 5})
    charger.call(vol, symlink, "symlink", (1, b"s", b"t", 0, 0), {})
    assert clock.now == pytest.approx(6e-6 if flat else distinct["symlink"])


def _run(img, prune_at=None, **opts) -> tuple:
    """A small tree written, listed, looked up, removed: the clock and counters it ends with."""
    with Volume.open(img, VolumeOptions(disk="sata7200", **opts)) as vol:
        if prune_at is not None:
            vol.ops.kernel.prune_at = vol.ops.kernel.prune_floor = prune_at
        r = vol.root_ino
        for d in range(4):
            di = vol.mkdir(r, b"d%d" % d, 0o40755, 0, 0).st_ino
            for f in range(30):
                ino = vol.create(di, b"f%d" % f, 0o100644, 0, 0).st_ino
                vol.write(ino, 0, b"y" * (f * 700))
        vol.sync()
        vol.drop_caches()
        for d in range(4):
            di = vol.lookup(r, b"d%d" % d).st_ino
            vol.hold(di)
            for name, ino, _ in vol.readdir(di):
                if name not in (b".", b".."):
                    vol.hold(ino)
                    vol.lookup(di, name)
                    vol.hold(ino)
                    vol.getattr(ino)
                    if int(name[1:]) % 2:
                        vol.drop(ino, 2)            # FORGET: the next lookup is a miss
                        vol.lookup(di, name)
                    else:
                        vol.lookup(di, name)        # a hit
            for f in range(0, 30, 3):
                vol.unlink(di, b"f%d" % f)
        vol.sync()
        return vol.clock.now, json.dumps(vol.stats.snapshot(vol.clock.now), sort_keys=True, default=str)


def test_deterministic_and_pruning_changes_nothing(image, tmp_path):
    runs = []
    for i in range(2):
        img = shutil.copy(image, tmp_path / f"img{i}")
        runs.append(_run(img))
    assert runs[0] == runs[1]
    assert _run(shutil.copy(image, tmp_path / "img2"), prune_at=1) == runs[0]
    assert _run(shutil.copy(image, tmp_path / "img3"), cpu_op_us=10.0) != runs[0]


def test_the_table_is_the_committed_measurement():
    out = json.loads((Path(__file__).parents[2] / "results/summary/cpu-charge/kernel_cpu_per_kind.json").read_text())
    assert cpucost.MEASURED == out["us_per_call"]
    assert out["kernel"] in cpucost.MACHINE and out["cpu"] in cpucost.MACHINE
    assert all(v >= 0 for v in cpucost.charges(cpucost.MEASURED, 1.0).values())
