"""Parsing `simfs mount -o key=val,...`.

Every field of `VolumeOptions` is a mount option, found generically through
`dataclasses.fields` and converted by its type annotation (bool, int, float, str, Literal,
Enum, Optional; integers take K/M/G/T suffixes). A field may carry metadata:
`choices` (list or callable) and `check` (callable raising ValueError) validate its value
here, `help` describes it, and `suboptions=True` lets its value hold commas, as in
`-o disk=sata7200,rpm=5400,alloc=cg`: items with keys that are not options continue the
previous value; `path=True` makes a relative path absolute (the daemon runs in /);
`range=(low, high)` bounds a number (either may be a callable, evaluated when parsing).
Front-end keys (`log=`, `fsname=`, ...) are handled by the
mount itself and never reach the volume. Unknown keys or values raise `OptionError`, whose
message is one line and names what is valid.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import types
import typing
from dataclasses import dataclass, field

from simfs import units


class OptionError(ValueError):
    """A mount option is unknown or has a bad value (message meant for the user)."""


@dataclass
class FrontOpt:
    kind: object          # bool, str, int or a tuple of choices
    default: object
    help: str


# Options the mount front end consumes itself.
FRONTEND: dict[str, FrontOpt] = {
    "log": FrontOpt(str, None, "daemon log file (default: IMAGE.log beside the image)"),
    "loglevel": FrontOpt(("debug", "info", "warning", "error"), "info", "log verbosity"),
    "fsname": FrontOpt(str, None, "source shown by mount/df/findmnt (default: the image's absolute "
                                  "path, as any file system shows its device)"),
    "allow_other": FrontOpt(bool, None, "let other users in (default: on when mounted by root)"),
    "fuse_debug": FrontOpt(bool, False, "libfuse request tracing into the log (very verbose)"),
    "debug_faults": FrontOpt(bool, False,
                             "TESTS ONLY: enable /.simfs/fault, which makes chosen handlers raise"),
    "oplog": FrontOpt(str, None, "record every volume operation here for `simfs replay` "
                                 "(JSON lines; gzip if it ends in .gz)"),
    "nostats": FrontOpt(bool, False, "do not write the final statistics at unmount (default: "
                                     "IMAGE.stats.json beside the image, or stats=PATH)"),
}

# Kernel mount flags passed on to the FUSE mount as given (mount(8) and fstab hand them over;
# `mount` shows them). atime/noatime are volume options: the kernel flag follows them.
KERNEL_FLAGS = ("nosuid", "suid", "nodev", "dev", "noexec", "exec", "nodiratime",
                "dirsync", "lazytime", "nolazytime", "async")
# Taken but not handed to libfuse, which (3.14) refuses them: simfs never updates a directory's
# access time (what nodiratime asks; `diratime` is not taken), and writes inodes back by its
# own model whatever lazytime says.
NOT_FOR_LIBFUSE = frozenset(("nodiratime", "lazytime", "nolazytime"))

# The policies `simfs stats` and /.simfs/info summarise in one line, defaults included, in this order.
SHOWN = ("disk", "alloc", "inode_placement", "dirorder", "writeback", "cache")

# Spellings that set a volume field: alias -> (field, value).
# Kernel-style flags that set volume options: each names the (field, value) pairs it sets.
ALIASES = {"ro": (("read_only", True),), "rw": (("read_only", False),),
           "strictatime": (("atime", True), ("relatime", False)),
           "relatime": (("atime", True), ("relatime", True))}

# Defaults for fields that do not (yet) say so in their metadata.
SUBOPTION_FIELDS = {"disk"}
PATH_FIELDS = {"trace", "stats"}     # made absolute here: the daemon runs in /
CHECKS = {"disk": ("disk_models", "make_disk")}   # builds the model: catches what only that finds


def machine_memory() -> int:
    """Physical memory in bytes: a buffer cache larger than this cannot be what was meant."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 1 << 40


# Valid ranges (inclusive) of numeric fields, for fields whose metadata has no "range".
# cache: the buffer cache keeps at least 64 blocks (256K of 4K blocks) whatever it is told;
# maxio: at least one block of the largest block size; sync_interval: the syncer must run.
RANGES = {
    "cache": (256 << 10, machine_memory),
    "maxio": (4 << 10, 64 << 20),
    "cpu_op_us": (0.0, 1e6),
    "sync_interval": (0.01, 86400.0),
    "commit": (0.05, 86400.0),
}

# Fields that must be whole multiples: maxio is a number of blocks of any block size (a
# remainder would be dropped without a word).
MULTIPLES = {"maxio": 4 << 10}

_TRUE = {"1", "yes", "y", "true", "on"}
_FALSE = {"0", "no", "n", "false", "off"}


@dataclass
class MountOptions:
    """The parsed `-o` string: volume options plus the front end's own."""

    volume: object
    log: str | None = None
    loglevel: str = "info"
    fsname: str | None = None
    allow_other: bool | None = None
    fuse_debug: bool = False
    debug_faults: bool = False
    oplog: str | None = None
    nostats: bool = False
    kernel_flags: list = field(default_factory=list)   # KERNEL_FLAGS given, in order
    given: dict = field(default_factory=dict)   # key -> value as the user wrote it

    def in_force(self, image: str) -> dict:
        """Every option's value in force, defaults included: the volume's, then the front
        end's (for /.simfs/info)."""
        out = {f.name: getattr(self.volume, f.name) for f in dataclasses.fields(self.volume)}
        out.update((k, getattr(self, k)) for k in FRONTEND)
        out["fsname"] = self.fsname or self.default_fsname(image)
        out["policies"] = self.policies()
        out["allow_other"] = "allow_other" in self.fuse_options(image)
        if self.kernel_flags:
            out["kernel_flags"] = list(self.kernel_flags)
        return out

    def default_fsname(self, image: str) -> str:
        """The image's path: what `mount`, `df` and `findmnt` show as the source, as a kernel
        file system shows its device, so `findmnt IMAGE`, `mount -a` and xfstests find it."""
        return image

    def policies(self) -> str:
        """`disk=...;alloc=...;...`: the policies in force in one line (commas inside a value
        become '+'), shown by `simfs stats` and /.simfs/info."""
        shown = []
        for key in SHOWN:
            val = getattr(self.volume, key, None)
            if val in (None, ""):
                continue
            if key == "cache" and isinstance(val, int):
                val = units.option_size(val)
            shown.append(f"{key}={str(val).replace(',', '+')}")
        return ";".join(shown)

    def fuse_options(self, image: str) -> set[str]:
        """The option set for `pyfuse3.init` (fidelity contract: kernel checks permissions)."""
        name = self.fsname or self.default_fsname(image)
        name = "".join(c if (c.isascii() and c.isprintable() and c not in ",\\") else "_" for c in name)
        opts = {f"fsname={name}", "subtype=simfs", "default_permissions"}
        if not getattr(self.volume, "atime", False):
            opts.add("noatime")             # (libfuse 3.14 takes neither relatime nor
                                            # strictatime: simfs keeps access times itself)
        opts.update(f for f in self.kernel_flags if f not in NOT_FOR_LIBFUSE)
        allow_other = self.allow_other if self.allow_other is not None else os.geteuid() == 0
        if allow_other:
            opts.add("allow_other")
        if getattr(self.volume, "read_only", False):
            opts.add("ro")
        if self.fuse_debug:
            opts.add("debug")
        return opts


def _volume_cls():
    from simfs.fs.volume import VolumeOptions
    return VolumeOptions


def _hints(cls) -> dict:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # unresolvable annotations: fall back to the defaults' types
        return {f.name: (type(f.default) if f.default is not dataclasses.MISSING else str)
                for f in dataclasses.fields(cls)}


def _choices(f: dataclasses.Field, typ) -> list | None:
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


def _unoptional(typ):
    """(inner type, accepts None) for Optional[X] / X | None."""
    if typing.get_origin(typ) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(typ) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(typ)) == 2:
            return args[0], True
    return typ, False


def parse_bool(key: str, text: str) -> bool:
    t = text.strip().lower()
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    raise OptionError(f"bad value for mount option {key}: {text!r} (expected yes/no)")


def parse_int(text: str) -> int:
    """'4096', '0x1000', '64M', '128KiB', '1_000' -> int: a size (simfs.units.parse_size);
    a sign is kept, so that the range check can name the valid range."""
    t = text.strip()
    return -units.parse_size(t[1:]) if t.startswith("-") else units.parse_size(t)


def _range(key: str, f: dataclasses.Field | None):
    """(low, high, text) of a numeric field's valid range, or None; text like '256K to 64M'."""
    rng = (f.metadata.get("range") if f is not None else None) or RANGES.get(key)
    if rng is None:
        return None
    low, high = (b() if callable(b) else b for b in rng)
    show = units.option_size if isinstance(low, int) and isinstance(high, int) else (lambda v: f"{v:.15g}")
    note = ", the machine's memory" if rng[1] is machine_memory else ""
    if key in MULTIPLES:
        note += f", a multiple of {units.option_size(MULTIPLES[key])}"
    return low, high, f"{show(low)} to {show(high)}{note}"


def _check_range(key: str, text: str, val, f: dataclasses.Field | None) -> None:
    """Refuse a number outside the field's range (nan included), naming the range."""
    rng = _range(key, f)
    if rng is not None and not rng[0] <= val <= rng[1]:
        raise OptionError(f"bad value for mount option {key}: {text!r} (valid: {rng[2]})")
    step = MULTIPLES.get(key)
    if step and val % step:
        raise OptionError(f"bad value for mount option {key}: {text!r} (give a multiple of "
                          f"{units.option_size(step)}, e.g. {units.option_size(max(step, val // step * step))})")


def _check(key: str, value, f: dataclasses.Field | None) -> None:
    check = f.metadata.get("check") if f is not None else None
    if check is None and key in CHECKS:
        import importlib
        mod, name = CHECKS[key]
        try:
            check = getattr(importlib.import_module(mod), name)
        except (ImportError, AttributeError):
            check = None
    if check is not None:
        try:
            check(value)
        except (ValueError, KeyError) as e:
            msg = e.args[0] if e.args else str(e)
            raise OptionError(f"bad value for mount option {key}: {msg}") from None


def _convert(key: str, text: str | None, typ, f: dataclasses.Field | None):
    typ, nullable = _unoptional(typ)
    if nullable and text is not None and text.lower() in ("none", "default"):
        return None
    if typ is bool:
        return True if text is None else parse_bool(key, text)
    if text is None:
        raise OptionError(f"mount option {key} needs a value ({key}=...)")
    choices = _choices(f, typ)
    if typ is int:
        try:
            val = parse_int(text)
        except ValueError:
            raise OptionError(f"bad value for mount option {key}: {text!r} "
                              f"(expected an integer, K/M/G suffixes allowed)") from None
    elif typ is float:
        try:
            val = float(text)
        except ValueError:
            val = math.nan
        if not math.isfinite(val):
            raise OptionError(f"bad value for mount option {key}: {text!r} (expected a finite number)")
    elif isinstance(typ, type) and issubclass(typ, enum.Enum):
        for m in typ:
            if text in (str(m.value), m.name, m.name.lower()):
                return m
        raise OptionError(f"bad value for mount option {key}: {text!r} "
                          f"(valid: {', '.join(str(m.value) for m in typ)})")
    else:
        val = text
    if typ in (int, float):
        _check_range(key, text, val, f)
    if choices is not None:
        norm = [str(c) for c in choices]
        if str(val) not in norm:
            raise OptionError(f"bad value for mount option {key}: {text!r} (valid: {', '.join(norm)})")
        val = choices[norm.index(str(val))]
    return val


def valid_keys(volume_cls=None) -> list[str]:
    """All accepted keys (volume fields, their no- forms for booleans, aliases, front end)."""
    cls = volume_cls or _volume_cls()
    hints = _hints(cls)
    keys = []
    for f in dataclasses.fields(cls):
        keys.append(f.name)
        if _unoptional(hints.get(f.name, str))[0] is bool:
            keys.append("no" + f.name)
    keys += list(ALIASES) + list(FRONTEND) + list(KERNEL_FLAGS)
    return keys


def _suggest(key: str, keys) -> str:
    from simfs.suggest import did_you_mean
    return did_you_mean(key, keys)


def parse(specs, volume_cls=None) -> MountOptions:
    """Parse `-o` strings (each "a=1,b,noc") into MountOptions; later keys win."""
    cls = volume_cls or _volume_cls()
    hints = _hints(cls)
    vfields = {f.name: f for f in dataclasses.fields(cls)}
    vol_kw: dict = {}
    front: dict = {}
    given: dict = {}
    raw_sub: dict[str, str] = {}        # suboption fields: their raw text, commas and all
    for spec in specs or ():
        absorbing = None                # the suboption field the last item belonged to
        for item in spec.split(","):
            item = item.strip()
            if not item:
                continue
            key, eq, text = item.partition("=")
            key = key.strip().replace("-", "_")
            text = text.strip() if eq else None
            if absorbing and key not in vfields and key not in FRONTEND and key not in ALIASES \
                    and not (key.startswith("no") and (key[2:] in vfields or key[2:] in FRONTEND)):
                raw_sub[absorbing] += "," + item
                given[absorbing] = raw_sub[absorbing]
                continue
            absorbing = None
            given[key] = text
            if key in vfields and text is not None and (
                    vfields[key].metadata.get("suboptions") or key in SUBOPTION_FIELDS):
                raw_sub[key] = text
                absorbing = key
                continue
            if key in ALIASES and text is None and all(f in vfields for f, _ in ALIASES[key]):
                vol_kw.update(ALIASES[key])
                continue
            if key in vfields:
                vol_kw[key] = _convert(key, text, hints.get(key, str), vfields[key])
                continue
            if key.startswith("no") and key[2:] in vfields and \
                    _unoptional(hints.get(key[2:], str))[0] is bool and text is None:
                vol_kw[key[2:]] = False
                continue
            if key in KERNEL_FLAGS and text is None:
                front.setdefault("kernel_flags", []).append(key)
                continue
            if key in FRONTEND:
                spec_ = FRONTEND[key]
                if spec_.kind is bool:
                    front[key] = True if text is None else parse_bool(key, text)
                elif text is None or text == "":
                    raise OptionError(f"mount option {key} needs a value ({key}=...)")
                elif isinstance(spec_.kind, tuple) and text not in spec_.kind:
                    raise OptionError(f"bad value for mount option {key}: {text!r} "
                                      f"(valid: {', '.join(spec_.kind)})")
                else:
                    front[key] = text
                continue
            if key.startswith("no") and key[2:] in FRONTEND and FRONTEND[key[2:]].kind is bool:
                front[key[2:]] = False
                continue
            if text is not None and key in valid_keys(cls):      # noatime=yes, ro=1
                raise OptionError(f"mount option {key} takes no value: give {key}, not {key}={text}")
            raise OptionError(f"unknown mount option {key!r}{_suggest(key, valid_keys(cls))}; "
                              f"valid options: {', '.join(valid_keys(cls))}")
    for key, text in raw_sub.items():
        vol_kw[key] = _convert(key, text, hints.get(key, str), vfields[key])
    for key, val in vol_kw.items():
        _check(key, val, vfields[key])
        if isinstance(val, str) and val and (vfields[key].metadata.get("path") or key in PATH_FIELDS):
            vol_kw[key] = os.path.abspath(val)
    try:
        volume = cls(**vol_kw)
    except (TypeError, ValueError) as e:
        raise OptionError(f"bad mount options: {e}") from None
    for key in ("log", "oplog"):            # the daemon runs in /
        if front.get(key):
            front[key] = os.path.abspath(front[key])
    return MountOptions(volume=volume, given=given, **front)


def describe(volume_cls=None) -> str:
    """Help text: every option with its default (for `simfs mount --help`)."""
    try:
        cls = volume_cls or _volume_cls()
    except ImportError:
        cls = None
    lines = []
    if cls is not None:
        hints = _hints(cls)
        lines.append("volume options:")
        for f in dataclasses.fields(cls):
            typ = hints.get(f.name, str)
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else "")
            if isinstance(default, bool):
                default = "yes" if default else "no"
            ch = _choices(f, _unoptional(typ)[0])
            extra = f" (one of: {', '.join(map(str, ch))})" if ch else ""
            rng = _range(f.name, f)
            extra += f" ({rng[2]})" if rng else ""
            help_ = f.metadata.get("help", "")
            lines.append(f"  {f.name}={default}{extra}" + (f"  {help_}" if help_ else ""))
        lines.append("  ro / rw  = read_only=yes / no; noX = X=no for yes/no options; "
                     "numbers take K/M/G suffixes")
    lines.append("front-end options:")
    for k, spec in FRONTEND.items():
        kind = "yes/no" if spec.kind is bool else ("|".join(spec.kind) if isinstance(spec.kind, tuple)
                                                   else "VALUE")
        lines.append(f"  {k}={kind}  {spec.help}")
    lines.append("kernel flags (passed to the FUSE mount, shown by `mount`): " + ", ".join(KERNEL_FLAGS))
    return "\n".join(lines)
