"""Read DiskSim 4.0 drive descriptions: .parv/.diskspecs/.model (libparam syntax) and .seek tables.

Why a parser of our own: DiskSim's libparam grammar is small (blocks of `key = value`, lists in
[], nested typed blocks, `source FILE` includes, `instantiate` and `topology` statements) and
the files are the drives' only description; a generic reader keeps every parameter, so the model
can use each one or list it as not modelled (disk_models/disksim.py).

    blocks = read_param_file("valid/cheetah9LP.parv")      # {(type, name): Block}
    drive = load_drive("valid/cheetah9LP.parv")             # DriveFiles: disk, model, seek, bus

Every problem is a `DiskSimFileError` (a ValueError) whose message is one line naming the file
and line: a file that cannot be read, a syntax error, a missing or non-numeric parameter.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


class DiskSimFileError(ValueError):
    """A DiskSim file that cannot be read or does not describe a drive (one-line message)."""


class Block(dict):
    """A libparam block: key -> value (number, word, list or Block); `type` and `name` kept."""

    def __init__(self, type_: str, name: str = "", where: str = ""):
        super().__init__()
        self.type, self.name, self.where = type_, name, where

    def num(self, key: str, default=None) -> float:
        """A numeric parameter; DiskSimFileError if missing (without a default) or not a number."""
        if key not in self:
            if default is not None:
                return default
            raise DiskSimFileError(f"{self.where}: {self.type} {self.name!r} has no '{key}'")
        v = self[key]
        if not isinstance(v, (int, float)):
            raise DiskSimFileError(f"{self.where}: '{key}' in {self.type} {self.name!r} must be a number, not {v!r}")
        return v


_PUNCT = "{}[],="


class _Reader:
    """Recursive descent over one file's text; positions become line numbers in errors."""

    def __init__(self, path: str, depth: int = 0):
        self.path = path
        self.depth = depth
        try:
            with open(path, encoding="latin-1") as f:
                self.text = f.read()
        except OSError as e:
            raise DiskSimFileError(f"cannot read {path}: {e.strerror or e}") from None
        self.i = 0

    def where(self, i: int | None = None) -> str:
        i = self.i if i is None else i
        return f"{self.path}:{self.text.count(chr(10), 0, i) + 1}"

    def fail(self, msg: str):
        raise DiskSimFileError(f"{self.where()}: {msg}")

    def skip(self) -> None:
        t, n = self.text, len(self.text)
        while self.i < n:
            c = t[self.i]
            if c.isspace():
                self.i += 1
            elif c == "#":
                j = t.find("\n", self.i)
                self.i = n if j < 0 else j + 1
            else:
                break

    def peek(self) -> str:
        self.skip()
        return self.text[self.i] if self.i < len(self.text) else ""

    def expect(self, c: str) -> None:
        if self.peek() != c:
            self.fail(f"expected '{c}', found {self.text[self.i:self.i + 20].split(chr(10))[0]!r}" if self.i < len(self.text)
                      else f"expected '{c}', found the end of the file")
        self.i += 1

    def word(self) -> str:
        """A run of non-punctuation, non-space characters."""
        self.skip()
        t, j = self.text, self.i
        while j < len(t) and not t[j].isspace() and t[j] not in _PUNCT and t[j] != "#":
            j += 1
        if j == self.i:
            self.fail(f"expected a name or value, found {t[j:j + 1]!r}" if j < len(t) else "unexpected end of file")
        w, self.i = t[self.i:j], j
        return w

    def key(self) -> str:
        """Everything up to '=' (keys hold spaces, dots, parentheses)."""
        self.skip()
        t = self.text
        j = self.i
        while j < len(t) and t[j] not in "={}[],\n#":
            j += 1
        if j >= len(t) or t[j] != "=":
            self.fail(f"expected 'name = value', found {t[self.i:j + 1].strip()!r}")
        k, self.i = " ".join(t[self.i:j].split()), j + 1
        return k

    # -- grammar -----------------------------------------------------------------------------
    def file(self) -> dict:
        blocks: dict = {}
        while self.peek():
            start = self.i
            w = self.word()
            if w == "source":
                blocks.update(self.include(self.word()))
            elif w == "instantiate":
                self.expect("[")
                names = self.names()
                if self.word() != "as":
                    self.fail("expected 'as' in instantiate")
                blocks[("instantiate", self.word())] = names
            elif w == "topology":
                blocks[("topology", "")] = self.tree()
            else:
                name = self.word() if self.peek() != "{" else ""
                if self.peek() != "{":
                    self.i = start
                    self.fail(f"expected a block 'TYPE NAME {{ ... }}', found {w!r}")
                blocks[(w, name)] = self.block(w, name)
        return blocks

    def items(self, item, what: str) -> list:
        """item() repeated, comma-separated, up to the closing ']' (the '[' already read)."""
        out = []
        while self.peek() != "]":
            if not self.peek():
                self.fail(f"unterminated {what}")
            out.append(item())
            if self.peek() == ",":
                self.i += 1
        self.i += 1
        return out

    def names(self) -> list:
        return self.items(self.word, "'['")

    def tree(self):
        """topology TYPE NAME [ child, ... ] -> (type, name, [children])."""
        t = self.word()
        n = self.word()
        self.expect("[")
        return (t, n, self.items(self.tree, "topology"))

    def include(self, name: str) -> dict:
        if self.depth > 8:
            self.fail("'source' nested too deeply")
        path = name if os.path.isabs(name) else os.path.join(os.path.dirname(self.path), name)
        return _Reader(path, self.depth + 1).file()

    def block(self, type_: str, name: str) -> Block:
        b = Block(type_, name, self.where())
        self.expect("{")
        while True:
            c = self.peek()
            if c == "}":
                self.i += 1
                return b
            if not c:
                self.fail(f"unterminated block {type_} {name}".rstrip())
            if c == ",":
                self.i += 1
                continue
            k = self.key()
            b[k] = self.value()

    def value(self):
        c = self.peek()
        if c == "[":
            self.i += 1
            return self.items(self.value, "list")
        if not c or c in _PUNCT:
            self.fail("expected a value")
        w = self.word()
        if w == "source":
            inc = self.include(self.word())
            if len(inc) != 1:
                self.fail("a 'source' used as a value must hold exactly one block")
            return next(iter(inc.values()))
        if self.peek() == "{":
            return self.block(w, "")
        try:
            return int(w)
        except ValueError:
            pass
        try:
            return float(w)
        except ValueError:
            return w


def read_param_file(path: str) -> dict:
    """(type, name) -> Block for every block of a libparam file (with `source`d files)."""
    return _Reader(path).file()


def read_seek_file(path: str) -> tuple[list[int], list[float]]:
    """A DiskSim .seek file: 'Seek distances measured: N' then N lines 'distance, ms'."""
    try:
        with open(path, encoding="latin-1") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise DiskSimFileError(f"cannot read seek file {path}: {e.strerror or e}") from None
    if not lines or not lines[0].startswith("Seek distances measured:"):
        raise DiskSimFileError(f"{path}:1: a seek file starts with 'Seek distances measured: N'")
    try:
        count = int(lines[0].split(":", 1)[1])
    except ValueError:
        raise DiskSimFileError(f"{path}:1: 'Seek distances measured:' needs a whole number") from None
    dists: list[int] = []
    times: list[float] = []
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.replace(",", " ").split()
        try:
            d, t = int(parts[0]), float(parts[1])
            if len(parts) != 2 or t != t or t < 0 or t > 1e4:
                raise ValueError
        except (ValueError, IndexError):
            raise DiskSimFileError(f"{path}:{no}: expected 'distance, milliseconds', found {line.strip()!r}") from None
        if d < 1 or (dists and d <= dists[-1]):
            raise DiskSimFileError(f"{path}:{no}: seek distances must be positive and increasing (got {d})")
        dists.append(d)
        times.append(t)
    if len(dists) != count:
        raise DiskSimFileError(f"{path}: says {count} seek distances but holds {len(dists)}")
    if count < 2:
        raise DiskSimFileError(f"{path}: a seek table needs at least two distances")
    return dists, times


@dataclass
class DriveFiles:
    """What a .parv says about its (one) disk: the disksim_disk block, its dm_disk model, the
    seek table when the model names one, and the per-sector time of the bus the disk sits on."""

    path: str
    disk: Block
    model: Block
    seek: tuple | None = None
    bus_read: float = 0.0          # ms per sector, the disk's bus (topology)
    bus_write: float = 0.0
    others: dict = field(default_factory=dict)


def _disk_bus(topo, bus=None):
    """The name of the bus directly above the first disksim_disk in the topology tree."""
    if topo is None:
        return None
    t, n, kids = topo
    if t == "disksim_disk":
        return bus
    for k in kids:
        found = _disk_bus(k, n if t == "disksim_bus" else bus)
        if found is not None:
            return found
    return None


def load_drive(path: str) -> DriveFiles:
    """The drive a DiskSim parameter file describes (a .parv, or a .diskspecs holding one disk)."""
    blocks = read_param_file(path)
    disks = [b for (t, _), b in blocks.items() if t == "disksim_disk"]
    if not disks:
        raise DiskSimFileError(f"{path}: no 'disksim_disk' block (is it a DiskSim parameter file?)")
    inst = {n: v for (t, n), v in blocks.items() if t == "instantiate"}     # type -> instances
    of = {i: n for n, names in inst.items() for i in names}                    # instance -> type
    chosen = [d for d in disks if d.name in inst] or disks
    if len(chosen) > 1:
        raise DiskSimFileError(f"{path}: describes {len(chosen)} disks; simfs models one drive per file")
    disk = chosen[0]
    model = disk.get("Model")
    if not isinstance(model, Block) or model.type != "dm_disk":
        raise DiskSimFileError(f"{disk.where}: disk {disk.name!r} needs 'Model = source FILE.model' (a dm_disk block)")
    mech = model.get("Mechanical Model")
    if not isinstance(mech, Block):
        raise DiskSimFileError(f"{model.where}: dm_disk {model.name!r} has no 'Mechanical Model' block")
    seek = None
    if mech.get("Seek type") == "extracted":
        name = mech.get("Full seek curve")
        if not isinstance(name, str):
            raise DiskSimFileError(f"{mech.where}: 'Seek type = extracted' needs 'Full seek curve = FILE'")
        base = os.path.dirname(model.where.rsplit(":", 1)[0])
        seek = read_seek_file(name if os.path.isabs(name) else os.path.join(base, name))
    bus_name = _disk_bus(blocks.get(("topology", "")))
    bus_read = bus_write = 0.0
    if bus_name is not None:
        kind = of.get(bus_name)
        bus = blocks.get(("disksim_bus", kind)) if kind else None
        if bus is not None:
            bus_read = bus.num("Read block transfer time", 0.0)
            bus_write = bus.num("Write block transfer time", 0.0)
    return DriveFiles(path, disk, model, seek, bus_read, bus_write, blocks)
