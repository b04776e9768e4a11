"""Sizes in labels a reader can take in: `cache=28311552` is drawn and tabled as `cache=27 MiB`.

Config names, mount strings and mkfs parameters carry byte counts as the options were resolved
(a job's `cache = {workload = 0.25}` becomes an integer); pictures and report tables show them
in binary units. Which options are sizes is what VolumeOptions says (metadata unit = "bytes"),
so a new size option is shown the same way without a list here.
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache

from simfs.units import GiB, KiB, MiB, TiB

_KEY_VALUE = re.compile(r"(?P<key>[A-Za-z_][\w.-]*)=(?P<num>\d+)(?=$|[,;\s)])")


def human_size(n: int) -> str:
    """'27 MiB' (exact), '1.5 GiB' (one decimal where not exact), '512 B' below 1 KiB."""
    for unit, div in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= div:
            v = n / div
            return f"{v:.0f} {unit}" if n % div == 0 else f"{v:.1f} {unit}"
    return f"{n} B"


@lru_cache(maxsize=1)
def size_keys() -> frozenset[str]:
    """The mount options whose values are bytes, and mkfs's sizes."""
    from simfs.fs.volume import VolumeOptions
    keys = {f.name for f in dataclasses.fields(VolumeOptions) if f.metadata.get("unit") == "bytes"}
    return frozenset(keys | {"size", "size_bytes", "bytes"})


def is_size_key(key: str) -> bool:
    return key in size_keys() or key.endswith("_bytes")


def human_value(key: str, value) -> str:
    """One option's value as shown: bytes in binary units, anything else as it is."""
    if is_size_key(key) and isinstance(value, int) and not isinstance(value, bool) and value >= KiB:
        return human_size(value)
    return str(value)


def human_options(text: str) -> str:
    """`writeback=async,cache=4194304,alloc=cg` -> `writeback=async,cache=4 MiB,alloc=cg`: every
    `KEY=INTEGER` whose key is a size, in binary units; everything else unchanged."""
    return _KEY_VALUE.sub(lambda m: f"{m['key']}={human_value(m['key'], int(m['num']))}", str(text))
