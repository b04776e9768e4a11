"""How a volume option is declared and checked: each option's facts in one place, its field.

`VolumeOptions` (simfs.fs.types) declares every field with `option(...)`, which keeps the
option's help, unit, range and check in the field's metadata; its type is the annotation.
The mount parser (simfs.fuse.mountopts), `simfs mount --help`, the manual's option table
(docs/gen_pages.py), the job-file checker and `Volume.open` all read them there, so a value
is valid or not, with the same one-line message, whichever way it comes in. Policy and disk
names are checked by the registries that build them.

Metadata keys (a plain ``field(metadata=...)`` may carry any of them):

  help        one line for --help and the manual
  unit        what a number counts ("bytes", "simulated seconds")
  range       (low, high), inclusive; either may be a callable, evaluated when checking
  multiple    a number must be a whole multiple of this
  choices     the valid values (a list, or a callable returning one)
  registry    a callable returning the plugin_registry.Registry a name is looked up in
  check       a callable raising ValueError (or KeyError) for a bad value
  suboptions  the mount option's value may hold commas (disk=sata7200,rpm=5400)
  path        a relative path is made absolute by the mount (the daemon runs in /)
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import os
import types
import typing

from simfs.units import option_size, parse_size

KEYS = frozenset(("help", "unit", "range", "multiple", "choices", "registry", "check", "suboptions", "path"))


class OptionError(ValueError):
    """A mount option is unknown or has a bad value (message meant for the user: one line)."""


def option(default, help: str = "", **meta) -> typing.Any:
    """A VolumeOptions field: its default, help and the metadata keys above (typed Any, as
    dataclasses.field is to a type checker: the class body assigns it to a typed name)."""
    unknown = set(meta) - KEYS
    if unknown:
        raise TypeError(f"unknown option metadata: {', '.join(sorted(unknown))}")
    return dataclasses.field(default=default, metadata={"help": help, **meta})


def machine_memory() -> int:
    """Physical memory in bytes: a buffer cache larger than this cannot be what was meant."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 1 << 40


@functools.lru_cache(maxsize=None)
def hints(cls) -> dict:
    """Each field's type annotation, resolved (the defaults' types if they cannot be)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:
        return {f.name: (type(f.default) if f.default is not dataclasses.MISSING else str)
                for f in dataclasses.fields(cls)}


def unoptional(typ):
    """(inner type, accepts None) for Optional[X] / X | None."""
    if typing.get_origin(typ) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(typ)) == 2:
            return args[0], True
    return typ, False


def choices(f: dataclasses.Field | None, typ) -> list | None:
    """The valid values its metadata, a Literal or an Enum names, or None (any)."""
    ch = f.metadata.get("choices") if f is not None else None
    if callable(ch):
        ch = ch()
    if ch is not None:
        return list(ch)
    if typing.get_origin(typ) is typing.Literal:
        return list(typing.get_args(typ))
    if isinstance(typ, type) and issubclass(typ, enum.Enum):
        return [m.value for m in typ]
    return None


def registered(f: dataclasses.Field) -> list[str] | None:
    """The names the field's registry holds (sorted), or None if it has none."""
    reg = f.metadata.get("registry")
    return sorted(reg()) if reg is not None else None


def valid_range(f: dataclasses.Field | None):
    """(low, high, text) of a numeric field's valid range, or None; text like '256K to 64M'."""
    rng = f.metadata.get("range") if f is not None else None
    if rng is None:
        return None
    low, high = (b() if callable(b) else b for b in rng)
    show = option_size if isinstance(low, int) and isinstance(high, int) else (lambda v: f"{v:.15g}")
    note = ", the machine's memory" if rng[1] is machine_memory else ""
    step = f.metadata.get("multiple")
    if step:
        note += f", a multiple of {option_size(step)}"
    return low, high, f"{show(low)} to {show(high)}{note}"


def _bad(key: str, why: str) -> OptionError:
    return OptionError(f"bad value for mount option {key}: {why}")


def check_number(key: str, text: str, val, f: dataclasses.Field | None) -> None:
    """Refuse a number outside the field's range (nan included) or not a whole multiple."""
    rng = valid_range(f)
    if rng is not None and not rng[0] <= val <= rng[1]:
        raise _bad(key, f"{text!r} (valid: {rng[2]})")
    step = f.metadata.get("multiple") if f is not None else None
    if step and val % step:
        raise _bad(key, f"{text!r} (give a multiple of {option_size(step)}, "
                        f"e.g. {option_size(max(step, val // step * step))})")


def check_choice(key: str, text: str, val, f: dataclasses.Field | None, typ):
    """The value as the choices spell it; OptionError naming them if it is none of them."""
    ch = choices(f, typ)
    if ch is None:
        return val
    norm = [str(c) for c in ch]
    if str(val) not in norm:
        raise _bad(key, f"{text!r} (valid: {', '.join(norm)})")
    return ch[norm.index(str(val))]


def check_named(key: str, value, f: dataclasses.Field | None) -> None:
    """Look a name up in the field's registry and run its check (the disk model is built):
    what only they can tell. An empty value whose default is empty means "unset"."""
    if f is None or (value == "" and f.default == ""):
        return
    reg, check = f.metadata.get("registry"), f.metadata.get("check")
    try:
        if reg is not None:
            reg().resolve(value)
        if check is not None:
            check(value)
    except (ValueError, KeyError) as e:
        raise _bad(key, e.args[0] if e.args else str(e)) from None


def _shown(value, f: dataclasses.Field) -> str:
    """A value as the user would write it in -o: 133120 bytes as 130K (5000 as 5000)."""
    if isinstance(value, float):
        return f"{value:.15g}"
    if f.metadata.get("unit") == "bytes" and isinstance(value, int) and not isinstance(value, bool) \
            and value > 0:
        size = option_size(value)
        if parse_size(size) == value:
            return size
    return str(value)


def _typed(key: str, value, typ, f: dataclasses.Field):
    """The in-process value of a number field, refused as the mount refuses text that is not
    one (a string, a bool, nan)."""
    if typ is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise _bad(key, f"{_shown(value, f)!r} (expected an integer, K/M/G suffixes allowed)")
    if typ is float and (isinstance(value, bool) or not isinstance(value, (int, float))
                         or not math.isfinite(value)):
        raise _bad(key, f"{_shown(value, f)!r} (expected a finite number)")
    return value


def declared(key: str, cls) -> dataclasses.Field | None:
    """The field of the options class `cls` (VolumeOptions) that declares option `key`, or None."""
    return next((f for f in dataclasses.fields(cls) if f.name == key), None)


def check_value(key: str, value, cls):
    """Check one option's value (already of its type: 65536, not "64K") as the mount checks it:
    range, multiple, choices, registry, check. Returns it (as the choices spell it); raises
    OptionError with the mount's one-line message. `cls`: the options class (VolumeOptions)."""
    f = declared(key, cls)
    if f is None:
        raise OptionError(f"unknown mount option {key!r}")
    typ, nullable = unoptional(hints(cls).get(key, str))
    if value is None and nullable:
        return None
    text = _shown(value, f)
    if typ in (int, float):
        check_number(key, text, _typed(key, value, typ, f), f)
    if not (isinstance(value, enum.Enum) and isinstance(typ, type) and isinstance(value, typ)):
        value = check_choice(key, text, value, f, typ)
    check_named(key, value, f)
    return value


def check_options(opts) -> None:
    """Check every field of an options instance (Volume.open: in-process callers are held to
    what the mount takes)."""
    for f in dataclasses.fields(opts):
        check_value(f.name, getattr(opts, f.name), type(opts))
