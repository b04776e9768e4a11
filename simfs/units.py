"""Sizes in bytes: reading them ('64M', '1.5G', '512KiB', '0x1000') and writing them ('1.5 MiB').

One grammar for every place simfs takes a size: `simfs mkfs --size`, integer mount options
(`-o cache=64M`), `simfs experiment run --size`, the workload generator's sizes. Callers turn
the ValueError into their own kind of error (argparse's, a mount option's).

    NUMBER [K|M|G|T|P|E [i]] [B]        case-insensitive, binary multiples (K = 1024)

NUMBER is a decimal integer, a decimal fraction (truncated to whole bytes after multiplying:
'1.5k' is 1536) or a 0x / 0o / 0b integer; blanks around it and between it and the unit, and
underscores between digits ('1_000'), are ignored. A sign, 'inf' and 'nan' are refused.
`disk_models` does not use this: its parameters are numbers in a datasheet's unit (MiB, KiB,
MB/s) with no suffixes, and it imports nothing from simfs.
"""

from __future__ import annotations

import math
import re

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40

_MULTIPLIERS = {"": 1, "k": KiB, "m": MiB, "g": GiB, "t": TiB, "p": 1 << 50, "e": 1 << 60}
_SIZE = re.compile(r"(?P<num>0[xob][0-9a-f]+|\d+(?:\.\d*)?|\.\d+)\s*"
                   r"(?:(?P<unit>[kmgtpe])i?)?b?", re.I)


def parse_size(value: int | str) -> int:
    """Bytes from a size: '64M' -> 67108864, '512KiB' -> 524288, '1.5k' -> 1536, '0x10' -> 16,
    4096 -> 4096 (an int is taken as bytes). Raises ValueError ('bad size: ...' or
    'negative size: ...')."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"negative size: {value}")
        return value
    text = str(value).strip().replace("_", "")
    if text.startswith("-"):
        raise ValueError(f"negative size: {value!r}")
    m = _SIZE.fullmatch(text)
    if not m:
        raise ValueError(f"bad size: {value!r}")
    num, mult = m["num"].lower(), _MULTIPLIERS[(m["unit"] or "").lower()]
    if num[:2] in ("0x", "0o", "0b"):
        try:
            return int(num, 0) * mult
        except ValueError:                  # 0b12, 0o9
            raise ValueError(f"bad size: {value!r}") from None
    if "." not in num:
        return int(num) * mult
    x = float(num) * mult
    if not math.isfinite(x):
        raise ValueError(f"bad size: {value!r}")
    return int(x)


_UNITS = (("GiB", GiB), ("MiB", MiB), ("KiB", KiB))


def format_size(n: int) -> str:
    """'1.5 MiB': bytes in the largest of KiB, MiB and GiB that is not more than n, one decimal
    ('512 B' below 1 KiB)."""
    for unit, div in _UNITS:
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def option_size(n: int) -> str:
    """Bytes as a size option would take them, in the largest K/M/G/T unit, rounded down to
    one decimal where not exact: 262144 -> '256K', 1.54 GiB -> '1.5G'."""
    for suffix, mult in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= mult:
            return f"{n // mult}{suffix}" if n % mult == 0 else f"{math.floor(n * 10 / mult) / 10:g}{suffix}"
    return str(n)


def format_mib(n: float) -> str:
    """'15.4 MiB': bytes in MiB, one decimal, whatever the size (tables that compare sizes)."""
    return f"{n / MiB:.1f} MiB"
