"""The -o parser: generic mapping onto VolumeOptions fields, front-end keys, errors."""

import dataclasses
import enum
import os
from dataclasses import dataclass, field
from typing import Literal, Optional

import pytest

from simfs import units
from simfs.fuse import mountopts
from simfs.fuse.mountopts import OptionError, parse


class Mode(enum.Enum):
    FAST = "fast"
    SLOW = "slow"


@dataclass
class Opts:
    alloc: str = "first-free"
    blocks: int = 1024
    ratio: float = 0.5
    atime: bool = False
    read_only: bool = False
    order: Literal["hash", "linear"] = "linear"
    mode: Mode = Mode.FAST
    limit: Optional[int] = None
    policy: str = field(default="a", metadata={"choices": lambda: ["a", "b"]})
    spec: str = field(default="x", metadata={"suboptions": True})
    checked: str = field(default="ok", metadata={"check": lambda v: (_ for _ in ()).throw(ValueError("nope"))
                                                  if v == "bad" else None})
    out: str = field(default="", metadata={"path": True})
    level: float = field(default=1.0, metadata={"range": (0.0, 10.0)})
    count: int = field(default=4, metadata={"range": (1, lambda: 64 << 10)})


def p(*specs):
    return parse(list(specs), volume_cls=Opts)


def test_defaults():
    o = p()
    assert o.volume == Opts() and o.log is None and o.loglevel == "info" and not o.debug_faults


def test_types_converted_from_annotations():
    o = p("alloc=cg,blocks=64K,ratio=0.25,atime,order=hash,mode=slow,limit=7,policy=b")
    v = o.volume
    assert (v.alloc, v.blocks, v.ratio, v.atime, v.order, v.mode, v.limit, v.policy) == \
        ("cg", 65536, 0.25, True, "hash", Mode.SLOW, 7, "b")
    assert p("limit=none").volume.limit is None
    assert p("blocks=0x100").volume.blocks == 256
    assert p("blocks=2MiB").volume.blocks == 2 << 20


def test_bool_spellings_and_aliases():
    assert p("atime=yes").volume.atime is True
    assert p("atime=off").volume.atime is False
    assert p("atime,noatime").volume.atime is False        # later wins
    assert p("ro").volume.read_only is True
    assert p("ro", "rw").volume.read_only is False


def test_front_end_options():
    o = p("log=rel.log,loglevel=debug,fsname=x,noallow_other,debug_faults,fuse_debug")
    assert o.log == os.path.abspath("rel.log")
    assert (o.loglevel, o.fsname, o.allow_other, o.debug_faults, o.fuse_debug) == \
        ("debug", "x", False, True, True)
    fo = o.fuse_options("/img")
    assert {"fsname=x", "subtype=simfs", "default_permissions", "debug"} <= fo
    assert "allow_other" not in fo


def test_fuse_options_defaults():
    fo = p("ro").fuse_options("/a,b/img\u00e9")
    assert "ro" in fo and "default_permissions" in fo
    assert ("allow_other" in fo) == (os.geteuid() == 0)
    name = next(x for x in fo if x.startswith("fsname="))
    assert "," not in name and name.isascii()


def test_suboptions_take_following_unknown_items():
    o = p("spec=base,k1=v1,k2=v2,blocks=8,atime")
    assert o.volume.spec == "base,k1=v1,k2=v2" and o.volume.blocks == 8 and o.volume.atime
    assert o.given["spec"] == "base,k1=v1,k2=v2"


def test_path_fields_made_absolute():
    assert p("out=trace.csv").volume.out == os.path.abspath("trace.csv")


@pytest.mark.parametrize("spec,msg", [
    ("bogus", "unknown mount option 'bogus'; valid options: alloc, blocks"),
    ("level=11", "bad value for mount option level: '11' (valid: 0 to 10)"),
    ("level=-0.5", "(valid: 0 to 10)"),
    ("level=nan", "(expected a finite number)"),
    ("ratio=inf", "(expected a finite number)"),
    ("count=0", "bad value for mount option count: '0' (valid: 1 to 64K)"),
    ("count=65537", "(valid: 1 to 64K)"),
    ("count=infK", "(expected an integer"),
    ("count=1e400K", "(expected an integer"),
    ("blocks=lots", "bad value for mount option blocks"),
    ("ratio=x", "bad value for mount option ratio"),
    ("atime=maybe", "expected yes/no"),
    ("order=random", "valid: hash, linear"),
    ("mode=medium", "valid: fast, slow"),
    ("policy=c", "valid: a, b"),
    ("checked=bad", "bad value for mount option checked: nope"),
    ("blocks", "needs a value"),
    ("log", "needs a value"),
    ("loglevel=loud", "valid: debug, info"),
])
def test_errors_are_one_line(spec, msg):
    with pytest.raises(OptionError) as e:
        p(spec)
    assert msg in str(e.value) and "\n" not in str(e.value)


def test_unknown_option_lists_every_valid_key():
    with pytest.raises(OptionError) as e:
        p("zzz=1")
    text = str(e.value)
    for key in [f.name for f in dataclasses.fields(Opts)] + ["noatime", "ro", "rw", "log", "debug_faults"]:
        assert key in text


def test_describe_lists_fields_and_front_end():
    text = mountopts.describe(Opts)
    assert "order=linear (one of: hash, linear)" in text
    assert "atime=no" in text and "log=VALUE" in text and "debug_faults" in text


def test_real_volume_options_parse():
    from simfs.fs.volume import VolumeOptions
    names = [f.name for f in dataclasses.fields(VolumeOptions)]
    o = parse(["alloc=first-free,noatime"])
    assert isinstance(o.volume, VolumeOptions) and o.volume.atime is False
    for n in names:
        assert n in mountopts.valid_keys()
    with pytest.raises(OptionError):
        parse(["definitely_not_an_option=1"])


def test_ranges_are_inclusive():
    assert p("level=0,count=1").volume.level == 0.0
    assert p("level=10,count=64K").volume.count == 64 << 10


@pytest.mark.parametrize("spec,valid", [
    ("cache=0", "(valid: 64K to "),
    ("cache=-1", "(valid: 64K to "),
    ("cache=99999999999999G", "the machine's memory"),
    ("maxio=0", "(valid: 4K to 64M, a multiple of 4K)"),
    ("maxio=1K", "(valid: 4K to 64M, a multiple of 4K)"),
    ("maxio=5000", "(give a multiple of 4K, e.g. 4K)"),      # was rounded to one block, unsaid
    ("maxio=130K", "(give a multiple of 4K, e.g. 128K)"),
    ("cpu_op_us=-5", "(valid: 0 to 1000000)"),
    ("cpu_op_us=nan", "(expected a finite number)"),
    ("sync_interval=0", "(valid: 0.01 to 86400)"),
    ("sync_interval=-1", "(valid: 0.01 to 86400)"),
    ("sync_interval=inf", "(expected a finite number)"),
])
def test_volume_numbers_out_of_range(spec, valid):
    with pytest.raises(OptionError) as e:
        parse([spec])
    assert valid in str(e.value) and spec.split("=")[0] in str(e.value) and "\n" not in str(e.value)


def test_cache_may_be_as_large_as_memory():
    mem = mountopts.machine_memory()
    assert parse([f"cache={mem}"]).volume.cache == mem
    with pytest.raises(OptionError, match=f"to {units.option_size(mem)}, the machine.s memory"):
        parse([f"cache={mem + 4096}"])
    assert mountopts.parse_int(units.option_size(mem)) <= mem     # the bound it names is valid


def test_every_volume_option_declares_itself():
    """A new option says what it does, and a number what is sane (nan, negative, zero, huge
    are refused) and what it counts, on its own field: there is no table elsewhere."""
    import typing
    from simfs.fs.volume import VolumeOptions
    hints = typing.get_type_hints(VolumeOptions)
    for f in dataclasses.fields(VolumeOptions):
        assert f.metadata.get("help"), f.name
        if mountopts.unoptional(hints[f.name])[0] in (int, float):
            assert f.metadata.get("range") and f.metadata.get("unit"), f.name


def test_format_size():
    assert [units.option_size(n) for n in (5, 4096, 256 << 10, 64 << 20, 1536 << 10, (3 << 30) + 1)] == \
        ["5", "4K", "256K", "64M", "1.5M", "3G"]


def test_disk_checked_by_building_the_model():
    """A spec that resolves but cannot be built failed only in the daemon, after forking."""
    with pytest.raises(OptionError, match="bad value for mount option disk: .*cylinders"):
        parse(["disk=sata7200,capacity=4096"])
    with pytest.raises(OptionError, match="bad value for mount option disk: rpm='nan'"):
        parse(["disk=sata7200,rpm=nan"])


def test_describe_shows_ranges():
    text = mountopts.describe(Opts)
    assert "level=1.0 (0 to 10)" in text and "count=4 (1 to 64K)" in text


@pytest.mark.parametrize("opt", ["noatime=yes", "ro=1", "nodev=1"])
def test_a_flag_given_a_value_says_so(opt):
    """Not "unknown mount option 'noatime' (did you mean 'noatime'?)"."""
    key, value = opt.split("=")
    with pytest.raises(OptionError, match=f"mount option {key} takes no value: give {key}, not {opt}"):
        parse([opt])
