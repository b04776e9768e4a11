"""Volume.open holds its options to what the mount takes, with the mount's one-line message:
each option is declared once, on its VolumeOptions field (simfs.fs.optionspec)."""

import dataclasses
import hashlib
import math
import re

import pytest

from simfs.fs.optionspec import OptionError, check_value, option
from simfs.fs.volume import Volume, VolumeOptions
from simfs.fuse import mountopts
from simfs.ondisk.mkfs import mkfs
from tests.helpers import assert_fsck_clean, needs_e2fsprogs
from pathlib import Path


def _typed(spec: str) -> dict:
    """The in-process form of `key=text`: the value the mount's parser would have made of it,
    had it been in range (65536 for 64K, 0.0 for 0)."""
    key, _, text = spec.partition("=")
    hints = {f.name: f.type for f in dataclasses.fields(VolumeOptions)}
    if hints[key] in (int, "int"):
        return {key: mountopts.parse_int(text)}
    if hints[key] in (float, "float"):
        return {key: float(text)}
    return {key: text}


def _digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@needs_e2fsprogs
@pytest.mark.parametrize("spec,words", [
    ("cache=0", ["(valid: 64K to "]),                                    # a range
    ("sync_interval=0", ["(valid: 0.01 to 86400)"]),
    ("commit=100000", ["(valid: 0.05 to 86400)"]),
    ("maxio=130K", ["(give a multiple of 4K, e.g. 128K)"]),                # a multiple
    ("alloc=cgg", ["unknown allocator 'cgg'", "(did you mean 'cg'?)"]),    # a policy name
    ("dirorder=hsh", ["unknown directory order 'hsh'", "(did you mean 'hash'?)"]),
    ("writeback=asyn", ["unknown write-back policy 'asyn'", "(did you mean 'async'?)"]),
    ("inode_placement=orlv", ["unknown inode placement 'orlv'", "(did you mean 'orlov'?)"]),
    ("disk=sata720", ["unknown disk preset 'sata720'", "(did you mean 'sata7200'?)"]),
    ("disk=sata7200,capacity=4096", ["cylinders"]),                        # only building finds it
    ("disk=sata7200,rpm=nan", ["rpm='nan'"]),
])
def test_volume_open_refuses_what_the_mount_refuses(tmp_path, spec, words):
    """Volume.open took any value: a cache of 0 ran with 64 blocks, a policy's typo failed
    without a suggestion, an out-of-range interval ran. Now the same line as the mount's,
    before the image is touched."""
    with pytest.raises(OptionError) as mounted:
        mountopts.parse([spec])
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=4096)
    before = _digest(img)
    with pytest.raises(OptionError) as opened:
        Volume.open(img, VolumeOptions(**_typed(spec)))
    line = str(opened.value)
    assert line == str(mounted.value) and "\n" not in line
    assert line.startswith(f"bad value for mount option {spec.split('=')[0]}: ")
    for w in words:
        assert w in line
    assert _digest(img) == before                       # not opened for writing, not locked
    Volume.open(img, VolumeOptions(disk="ideal")).close()
    assert_fsck_clean(img)


@pytest.mark.parametrize("kw,words", [
    ({"cache": "64M"}, "cache: '64M' (expected an integer"),
    ({"cache": True}, "cache: 'True' (expected an integer"),
    ({"commit": math.nan}, "commit: 'nan' (expected a finite number)"),
    ({"cpu_op_us": "10"}, "cpu_op_us: '10' (expected a finite number)"),
])
def test_in_process_values_of_the_wrong_type_refused(tmp_path, kw, words):
    """An in-process caller has no parser to turn "64M" into a number: it is told as the
    mount tells text that is not one."""
    img = tmp_path / "img"
    mkfs(img, 8 << 20, block_size=4096)
    with pytest.raises(OptionError, match=re.escape(f"bad value for mount option {words}")):
        Volume.open(img, VolumeOptions(**kw))


def test_check_value_is_the_mount_check():
    """The one function the job-file checker and Volume.open call for a value."""
    assert check_value("cache", 1 << 20, VolumeOptions) == 1 << 20
    assert check_value("inode_placement", "", VolumeOptions) == ""          # empty: the allocator's own
    assert check_value("alloc", "cg", VolumeOptions) == "cg"
    for key, value in (("maxio", 5000), ("alloc", "nosuch"), ("disk", "sata7200,rpm=1")):
        with pytest.raises(OptionError) as direct:
            check_value(key, value, VolumeOptions)
        with pytest.raises(OptionError) as mounted:
            mountopts.parse([f"{key}={value}"])
        assert str(direct.value) == str(mounted.value)
    with pytest.raises(OptionError, match="unknown mount option 'caches'"):
        check_value("caches", 1, VolumeOptions)


def test_option_metadata_keys_are_checked():
    """A misspelt key (rnage=...) would declare nothing and check nothing."""
    with pytest.raises(TypeError, match="rnage"):
        option(1, "a number", rnage=(0, 2))


def test_help_and_docs_read_the_declarations():
    """--help shows each option's unit, range and registered names from its field."""
    from policies import ALLOCATORS
    text = mountopts.describe()
    lines = {ln.split("=", 1)[0].strip(): ln for ln in text.splitlines() if "=" in ln}
    for f in dataclasses.fields(VolumeOptions):
        assert f.metadata["help"] in lines[f.name]
        if f.metadata.get("unit"):
            assert f"({f.metadata['unit']}: " in lines[f.name], f.name
    assert all(name in lines["alloc"] for name in ALLOCATORS)
