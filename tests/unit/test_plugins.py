"""Plug-in registries (issue 12): allocators, inode placers, directory orders, write-back modes
and disk models are found by name among the built-ins, installed packages' entry points and
``package.module:Class``; each follows one contract; errors are one line.

Entry points are tested with a fake installed distribution (a ``*.dist-info`` directory with
an ``entry_points.txt`` on sys.path), so nothing needs installing; the example package under
examples/ is imported from its source directory. The mounted side is tests/mount/test_plugin_mount.py.
"""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest

import disk_models
import policies
from disk_models import MODELS, PRESETS, AdvancedFormatDrive, IdealDisk, RotatingDrive, make_disk, resolve
from policies import ALLOCATORS, INODE_PLACERS, make_allocator, make_inode_placer
from policies.base import BlockRequest
from policies.delayed import Delayed, DelayedState
from policies.dirorder import DIR_ORDERS, make_dir_order
from policies.writeback import WRITEBACK, Async, Softdep, Sync, make_writeback
from simfs.fs.volume import Volume, VolumeOptions
from simfs.ondisk.mkfs import mkfs
from plugin_registry import PluginError
from tests.helpers import assert_fsck_clean

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "simfs-example-plugins"
REGISTRIES = (ALLOCATORS, INODE_PLACERS, DIR_ORDERS, WRITEBACK, MODELS)


def _reload_all() -> None:
    for r in REGISTRIES:
        r.reload()
    PRESETS.reload()


@pytest.fixture
def fresh_registries():
    """Registries re-read after the test changed sys.path (and before: a clean start)."""
    _reload_all()
    yield
    _reload_all()


PLUGIN_MODULE = '''
from disk_models.base import DiskModel, DiskResult
from disk_models.params import PARAMS, Param
from disk_models.presets import Preset
from policies.base import BlockAllocator, InodePlacer, NoSpace
from policies.dirorder import DirOrder
from policies.writeback import BLOCK_KINDS, WritebackPolicy


class LastFit(BlockAllocator):
    name = "last-fit"
    summary = "the highest free block of the volume"

    def allocate(self, space, req, state):
        free = (~space.block_used).nonzero()[0]
        if not len(free):
            raise NoSpace()
        return int(free[-1])


class Nameless(LastFit):
    name = ""


class LastInode(InodePlacer):
    name = "last-inode"
    summary = "the highest free inode"

    def choose(self, space, parent_ino, is_dir):
        free = (~space.inode_used).nonzero()[0]
        if not len(free):
            raise NoSpace()
        return int(free[-1]) + 1


class Reverse(DirOrder):
    name = "reverse"
    summary = "reverse slot order"

    def _ranked(self, entries, hash_ctx):
        return [(0 if e[0] == b"." else 1 if e[0] == b".." else 2 + (1 << 32) - e[3], e[3], e)
                for e in entries]


class AllSync(WritebackPolicy):
    name = "all-sync"
    summary = "every block an operation dirties is written before it returns"

    def sync_kinds(self, op):
        return BLOCK_KINDS


class Flat(DiskModel):
    model = "flat"
    summary = "every request costs `latency` ms"
    PARAMS = {"capacity": PARAMS["capacity"],
              "latency": Param("latency", float, "ms", "per request", 0.0, 1000)}
    presets = (Preset("flat-1ms", "flat", "1 ms per request", "no drive",
                      {"capacity": 2 ** 32, "latency": 1.0},
                      {"capacity": "convention", "latency": "[inferred] a round number"}),)

    def __init__(self, spec):
        self.name, self.sectors = spec.name, spec.values["capacity"]
        self.t = spec.values["latency"] * 1e-3
        self.reset()

    def submit(self, op, lba, sectors, issue_time, sync=False):
        self.check(op, lba, sectors)
        start = max(issue_time, self._free)
        self._free = start + self.t
        return DiskResult(issue_time, start, self._free, queue=start - issue_time, overhead=self.t)

    def flush(self, now):
        return max(now, self._free)

    def reset(self):
        self._free = 0.0

    @property
    def busy_until(self):
        return self._free


class NotAPolicy:
    name = "nothing"


class LazyDelayed(BlockAllocator):
    name = "lazy"
    decides = "flush"


class Someday(BlockAllocator):
    name = "someday"
    decides = "someday"


class BadPasses(WritebackPolicy):
    name = "bad-passes"
    passes = ["inode"]


class NoCapacity(Flat):
    model = "no-capacity"
    PARAMS = {"latency": Flat.PARAMS["latency"]}
    presets = ()


def broken():
    raise RuntimeError("this plug-in is broken")
'''

ENTRY_POINTS = '''
[simfs.allocators]
last-fit = fakeplug_mod:LastFit
broken = fakeplug_mod:Missing
first-free = fakeplug_mod:LastFit
misnamed = fakeplug_mod:LastFit
lazy = fakeplug_mod:LazyDelayed

[simfs.inode_placers]
last-inode = fakeplug_mod:LastInode

[simfs.dirorders]
reverse = fakeplug_mod:Reverse

[simfs.writeback]
all-sync = fakeplug_mod:AllSync

[simfs.disk_models]
flat = fakeplug_mod:Flat
'''


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A directory on sys.path with the module fakeplug_mod (importable as package.module:Class)."""
    d = tmp_path / "plugins"
    d.mkdir()
    (d / "fakeplug_mod.py").write_text(textwrap.dedent(PLUGIN_MODULE))
    monkeypatch.syspath_prepend(str(d))
    yield d
    sys.modules.pop("fakeplug_mod", None)


@pytest.fixture
def installed(plugin_dir, fresh_registries):
    """plugin_dir as an installed distribution 'fakeplug' with entry points for every kind."""
    info = plugin_dir / "fakeplug-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    _reload_all()
    return plugin_dir


def _image(tmp_path, size=64 << 20, block_size=4096):
    img = tmp_path / "img"
    mkfs(img, size, block_size=block_size, uuid=str(uuid.UUID(int=1)), hash_seed=str(uuid.UUID(int=2)),
         now=1_000_000_000)
    return img


def _one_line(e: BaseException) -> str:
    msg = str(e)
    assert msg and "\n" not in msg, msg
    return msg


# the built-ins ------------------------------------------------------------------------------------
def test_every_builtin_is_registered_and_made_by_name(fresh_registries):
    for registry, make in ((ALLOCATORS, make_allocator), (INODE_PLACERS, make_inode_placer),
                           (DIR_ORDERS, make_dir_order), (WRITEBACK, make_writeback)):
        builtin = {n: c for n, c in registry.items() if registry.origin(n) == "built-in"}
        assert len(builtin) >= 3
        for name, cls in builtin.items():
            assert cls.__module__.startswith("policies.")
            obj = make(name)
            assert type(obj) is cls and obj.name == name and cls.summary
    assert {"async", "softdep", "sync"} <= set(WRITEBACK)
    assert {n: MODELS[n] for n in ("rotating", "advanced-format", "ideal")} == {
        "rotating": RotatingDrive, "advanced-format": AdvancedFormatDrive, "ideal": IdealDisk}
    for name, preset in PRESETS.items():
        assert preset.kind in MODELS, name


def test_unknown_names_list_the_choices_in_one_line(fresh_registries):
    with pytest.raises(ValueError) as e:
        make_allocator("bogus")
    msg = _one_line(e.value)
    assert isinstance(e.value, PluginError) and "unknown allocator 'bogus'" in msg
    assert "cg-2013" in msg and "package.module:Class" in msg
    for make, kind in ((make_inode_placer, "inode placement"), (make_dir_order, "directory order"),
                       (make_writeback, "write-back policy")):
        with pytest.raises(PluginError, match=f"unknown {kind} 'bogus'"):
            make("bogus")
    with pytest.raises(ValueError, match="unknown disk preset 'bogus'.*sata7200"):
        make_disk("bogus")


def test_registry_is_a_mapping_that_tests_may_patch(fresh_registries, monkeypatch):
    class Mine(policies.BlockAllocator):
        name = "mine"

        def allocate(self, space, req, state):
            return space.first_free_block(space.geometry.first_data_block, space.geometry.blocks_count)

    monkeypatch.setitem(ALLOCATORS, "mine", Mine)
    assert "mine" in ALLOCATORS and isinstance(make_allocator("mine"), Mine)
    assert ALLOCATORS.origin("mine") == "registered at run time"
    monkeypatch.undo()
    assert "mine" not in ALLOCATORS


# the write-back modes are the old table ---------------------------------------------------------
def test_writeback_modes_say_what_the_cache_used_to_hard_code():
    meta = ("inode", "dir", "indirect", "xattr", "symlink")
    sync = Sync()
    for op in ("create", "mkdir", "mknod", "symlink", "link", "unlink", "rmdir", "rename"):
        assert set(sync.sync_kinds(op)) == set(meta)
    assert sync.sync_kinds("write") == ("indirect",)
    for op in ("read", "setattr", "lookup", "fsync", "setxattr", "readdir"):
        assert sync.sync_kinds(op) == ()
    for mode in (Async(), Softdep()):
        assert all(mode.sync_kinds(op) == () for op in ("create", "write", "rename"))
    assert Sync.passes == Async.passes == ()
    assert Softdep.passes == ()
    assert Sync().dependencies("create") == Async().dependencies("create") == ()
    assert ("dir", "inode") in Softdep().dependencies("create")


def test_the_core_compares_no_write_back_mode_names():
    core = [REPO / "simfs" / "blockio" / "cache.py", REPO / "simfs" / "fs" / "operation.py"]
    for path in core:
        text = path.read_text()
        for name in ("sync", "async", "softdep"):
            assert f'== "{name}"' not in text and f"== '{name}'" not in text, path
        assert "_SYNC_KINDS" not in text and "_SOFTDEP_PASSES" not in text


# entry points -------------------------------------------------------------------------------------
def test_entry_points_join_the_registries(installed):
    assert ALLOCATORS["last-fit"].__module__ == "fakeplug_mod"
    assert ALLOCATORS.origin("last-fit") == "package fakeplug"
    assert ALLOCATORS.origin("first-free") == "built-in"            # a built-in is never taken over
    assert ALLOCATORS["first-free"].__module__ == "policies.firstfree"
    assert "last-inode" in INODE_PLACERS and "reverse" in DIR_ORDERS and "all-sync" in WRITEBACK
    assert "flat" in MODELS and PRESETS["flat-1ms"].kind == "flat"
    assert list(PRESETS)[:5] == ["wd1200jb", "sata7200", "sas10k", "wd-ears", "ideal"]
    assert make_disk("flat-1ms,latency=2").submit("R", 0, 8, 1.0).finish == pytest.approx(1.002)


def test_broken_and_misnamed_entry_points_are_left_out_and_explained(installed):
    problems = ALLOCATORS.problems()
    assert "broken" not in ALLOCATORS and "misnamed" not in ALLOCATORS and "lazy" not in ALLOCATORS
    assert "cannot load" in problems["broken"] and "fakeplug" in problems["broken"]
    assert "'last-fit', not 'misnamed'" in problems["misnamed"]
    assert "allocate_run" in problems["lazy"]
    with pytest.raises(PluginError) as e:
        make_allocator("broken")
    assert "cannot be used" in _one_line(e.value) and "Missing" in str(e.value)


def test_a_volume_runs_on_entry_point_plugins(installed, tmp_path):
    img = _image(tmp_path)
    opts = VolumeOptions(alloc="last-fit", inode_placement="last-inode", dirorder="reverse",
                         writeback="all-sync", disk="flat-1ms")
    with Volume.open(img, opts) as vol:
        root = vol.root_ino
        for i in range(5):
            ino = vol.create(root, b"f%d" % i, 0o644, 0, 0).st_ino
            vol.write(ino, 0, b"x" * 10000)
            assert vol.cache.ndirty == 0                    # all-sync: nothing left dirty
        names = [n for n, _, _ in vol.readdir(root)]
        assert names[:2] == [b".", b".."] and names[2:] == [b"f4", b"f3", b"f2", b"f1", b"f0", b"lost+found"]
        assert ino == vol.geo.inodes_count - 4              # last-inode: from the top down
        assert min(p for _, p, _ in vol.extents(ino)["runs"]) > vol.geo.blocks_count - 64   # last-fit
        snap = vol.stats_snapshot()
        assert snap["alloc"] == "last-fit" and snap["disk"] == "flat-1ms"
        assert snap["writeback"] == "all-sync" and snap["dirorder"] == "reverse"
    assert_fsck_clean(img)


# package.module:Class ---------------------------------------------------------------------------
def test_classes_by_module_path_need_no_entry_point(plugin_dir, fresh_registries):
    assert "last-fit" not in ALLOCATORS                          # not installed: only by path
    assert make_allocator("fakeplug_mod:LastFit").name == "last-fit"
    assert make_allocator(" fakeplug_mod:Nameless ").name == "fakeplug_mod:Nameless"
    assert make_inode_placer("fakeplug_mod:LastInode").name == "last-inode"
    assert make_dir_order("fakeplug_mod:Reverse").name == "reverse"
    assert make_writeback("fakeplug_mod:AllSync").name == "all-sync"
    s = resolve("fakeplug_mod:Flat,latency=3")
    assert s.preset == "flat-1ms" and s.values["latency"] == 3.0 and "override" in s.provenance["latency"]
    assert make_disk("fakeplug_mod:Flat").submit("W", 0, 8, 0.0).finish == pytest.approx(0.001)


@pytest.mark.parametrize("spec,expect", [
    ("nosuch_pkg.mod:Cls", "cannot import module 'nosuch_pkg.mod' (ModuleNotFoundError"),
    ("fakeplug_mod:Nope", "module 'fakeplug_mod' has no attribute 'Nope'"),
    ("fakeplug_mod:NotAPolicy", "is not a subclass of policies.base.BlockAllocator"),
    ("fakeplug_mod:LastInode", "is not a subclass of policies.base.BlockAllocator"),
    ("fakeplug_mod:", "expected package.module:Class"),
    ("fakeplug_mod:LazyDelayed", "decides at 'flush' but has no allocate_run"),
    ("fakeplug_mod:Someday", "not 'write' or 'flush'"),
])
def test_bad_module_paths_are_one_clear_line(plugin_dir, spec, expect):
    with pytest.raises(PluginError) as e:
        make_allocator(spec)
    msg = _one_line(e.value)
    assert msg.startswith(f"allocator {spec!r}") and expect in msg, msg


def test_other_kinds_check_their_contract_too(plugin_dir):
    with pytest.raises(PluginError, match="passes must be a tuple"):
        make_writeback("fakeplug_mod:BadPasses")
    with pytest.raises(PluginError, match="not a subclass of policies.dirorder.DirOrder"):
        make_dir_order("fakeplug_mod:LastFit")
    with pytest.raises(ValueError, match="PARAMS must be a dict of Params including 'capacity'"):
        make_disk("fakeplug_mod:NoCapacity")
    with pytest.raises(ValueError, match="unknown disk parameter 'rpm' for fakeplug_mod:Flat; valid keys: capacity, latency"):
        make_disk("fakeplug_mod:Flat,rpm=5400")
    with pytest.raises(PluginError, match="cannot import module 'nosuch_pkg'"):
        make_disk("nosuch_pkg:Model")


def test_a_mount_option_error_names_the_bad_class(plugin_dir, tmp_path):
    img = _image(tmp_path)
    with pytest.raises(ValueError, match="allocator 'fakeplug_mod:Nope'"):
        Volume.open(img, VolumeOptions(alloc="fakeplug_mod:Nope"))
    with Volume.open(img, VolumeOptions(alloc="fakeplug_mod:LastFit")) as vol:   # the image was left alone
        vol.create(vol.root_ino, b"a", 0o644, 0, 0)
    assert_fsck_clean(img)


# disk models -------------------------------------------------------------------------------------
def test_presets_name_their_model_and_the_4k_rule_is_kept():
    assert PRESETS["wd-ears"].kind == "advanced-format" and PRESETS["sata7200"].kind == "rotating"
    assert type(make_disk("wd-ears")) is AdvancedFormatDrive
    assert type(make_disk("sata7200,physical_sector=4096")) is AdvancedFormatDrive   # as before
    assert type(make_disk("wd-ears,physical_sector=512")) is RotatingDrive           # as before
    assert type(make_disk("ideal")) is IdealDisk
    with pytest.raises(ValueError, match="valid keys: capacity$"):
        make_disk("ideal,rpm=5400")
    assert disk_models.describe("ideal").startswith("ideal:")


# policies may not write the maps ----------------------------------------------------------------
class _Geo:
    def __init__(self, blocks, per_group):
        self.blocks_count, self.first_data_block, self.blocks_per_group = blocks, 0, per_group
        self.block_size = 4096
        self.groups = -(-blocks // per_group)

    def group_start(self, g):
        return g * self.blocks_per_group

    def group_blocks(self, g):
        return min(self.blocks_per_group, self.blocks_count - g * self.blocks_per_group)

    def group_of_block(self, b):
        return b // self.blocks_per_group


class _Space:
    """A read-only space view: any write to block_used raises."""

    def __init__(self, used, per_group):
        self.geometry = _Geo(len(used), per_group)
        self.block_used = used
        used.flags.writeable = False

    def group_free_blocks(self, g):
        geo = self.geometry
        return int((~self.block_used[geo.group_start(g):geo.group_start(g) + geo.group_blocks(g)]).sum())

    def first_free_block(self, start, end):
        seg = self.block_used[start:end]
        free = np.flatnonzero(~seg)
        return start + int(free[0]) if len(free) else -1


def _old_allocate_run(space, req, state, count):
    """policies/delayed.py's allocate_run before the fix (it marked block_used and undid it),
    run on a writable copy: the reference the fixed version must match."""
    class Writable:
        pass
    w = Writable()
    w.geometry = space.geometry
    w.block_used = space.block_used.copy()
    w.group_free_blocks = space.group_free_blocks
    w.first_free_block = lambda s, e: _Space.first_free_block(w, s, e)
    d = Delayed()
    geo = w.geometry
    ext = state.nearest(req.lblk)
    if ext is not None:
        goal = ext[1] + (req.lblk - ext[0])
    else:
        base = w.first_free_block(geo.group_start(req.inode_group), geo.blocks_count)
        goal = (base if base >= 0 else geo.first_data_block) + req.lblk
    goal = min(max(goal, geo.first_data_block), geo.blocks_count - 1)
    out, need = [], count
    while need:
        start, n = d._find(w, goal, need, [])
        out.extend(range(start, start + n))
        w.block_used[start:start + n] = True
        need -= n
        goal = start + n
    return out


@pytest.mark.parametrize("seed", range(6))
def test_delayed_allocation_reads_the_maps_only_and_places_as_before(seed):
    rng = np.random.default_rng(seed)
    used = rng.random(4096) < (0.3 + 0.1 * seed)          # fragmented free space
    used[:5] = True
    space = _Space(used, 1024)
    before = used.copy()
    state = DelayedState()
    for lblk, count in ((0, 40), (40, 100), (230, 7), (140, 60)):      # a file of <= 1 MiB
        req = BlockRequest(ino=12, inode_group=seed % 4, lblk=lblk)
        want = _old_allocate_run(space, req, state, count)
        got = Delayed().allocate_run(space, req, state, count)     # would raise on any write
        assert got == want
        assert len(set(got)) == count and not before[got].any()
        for i, b in enumerate(got):
            state.add(lblk + i, b, 1)
    assert (space.block_used == before).all()


# the example package ----------------------------------------------------------------------------
@pytest.fixture
def examples(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    yield
    for m in [m for m in sys.modules if m.startswith("simfs_example_plugins")]:
        sys.modules.pop(m, None)


def test_example_stride_allocator_puts_a_files_blocks_eight_apart(examples, tmp_path):
    img = _image(tmp_path)
    with Volume.open(img, VolumeOptions(alloc="simfs_example_plugins.stride:Stride", disk="ideal")) as vol:
        ino = vol.create(vol.root_ino, b"f", 0o644, 0, 0).st_ino
        vol.write(ino, 0, bytes(10 * 4096))
        runs = vol.extents(ino)["runs"]
        assert [n for _, _, n in runs] == [1] * 10
        assert [b - a for (_, a, _), (_, b, _) in zip(runs, runs[1:])] == [8] * 9
        ino2 = vol.create(vol.root_ino, b"g", 0o644, 0, 0).st_ino
        vol.write(ino2, 0, bytes(3 * 4096))
        assert vol.extents(ino2)["runs"][0][1] in range(runs[0][1] + 1, runs[0][1] + 8)   # fills a gap
    assert_fsck_clean(img)


def test_example_newest_first_order(examples):
    order = make_dir_order("simfs_example_plugins.newest_first:NewestFirst")
    entries = [(b".", 2, 2, 0), (b"..", 2, 2, 12), (b"a", 12, 1, 24), (b"b", 13, 1, 36), (b"c", 14, 1, 48)]
    listing = order.order(entries)
    assert [e[0] for e, _ in listing] == [b".", b"..", b"c", b"b", b"a"]
    state = order.new_state()
    first = list(order.iterate(entries, 0, None, state, generation=1))[:3]
    rest = list(order.iterate(entries[:3] + entries[4:], first[-1][1], None, state, generation=2))
    assert [e[0] for e, _ in rest] == [b"a"]             # b removed meanwhile: resumes after c


def test_example_ssd_model_and_its_preset(examples):
    s = resolve("simfs_example_plugins.ssd:ConstantLatencySSD")
    assert s.preset == "x25-m" and set(s.provenance) == set(s.values)
    assert all(p.split("]")[0] in ("[read", "[derived", "[inferred") for p in s.provenance.values())
    disk = make_disk("simfs_example_plugins.ssd:ConstantLatencySSD,read_rate=200")
    r = disk.submit("R", 1000, 8, 1.0)
    assert r.total == pytest.approx(65e-6 + 4096 / 200e6) and r.seek == r.rotation == 0
    r2 = disk.submit("W", 5, 256, 1.0)                     # queued behind the read
    assert r2.queue == pytest.approx(r.finish - 1.0)
    assert r2.total == pytest.approx(r2.queue + 85e-6 + 131072 / 100e6)
    assert disk.flush(0.5) == disk.busy_until == r2.finish
    assert "random_read_4k" in disk_models.describe("simfs_example_plugins.ssd:ConstantLatencySSD")
    with pytest.raises(ValueError, match="cannot both be 0"):
        make_disk("simfs_example_plugins.ssd:ConstantLatencySSD,read_latency=0,write_latency=0")
