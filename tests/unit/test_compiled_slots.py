"""simfs.compiled.slots: which classes the build makes extension types, with what slots - and
that the build did (a plain class's attributes are slots of the compiled type, not entries of
its instances' __dict__)."""

import os
import textwrap

import pytest

from simfs.compiled import slots

SOURCE = textwrap.dedent('''
    import dataclasses

    class Plain:
        LIMIT = 3
        def __init__(self, a):
            self.a, (self.b, self._c) = a, (1, 2)
            self.__hidden = 0
            self.LIMIT = 4
        def grow(self):
            self.n: int = 0
            self.n += 1
        @property
        def size(self):
            return self.a

    class Slotted:
        __slots__ = ("x", "y", "__weakref__")
        def __init__(self):
            self.x = self.y = 0

    class Based(Plain):
        def __init__(self):
            self.z = 1

    @dataclasses.dataclass
    class Decorated:
        q: int = 0

    class Descriptor:
        def __init__(self):
            self.offset = 0
        def __get__(self, obj, owner=None):
            return self.offset

    class Empty:
        def f(self):
            return 1
''')


def test_a_plain_class_declares_what_its_methods_assign_and_keeps_its_dict():
    pxd = slots.declarations(SOURCE)
    plain = pxd.split("cdef class Plain:\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[-1] for line in plain] == ["_c", "a", "b", "n", "__dict__", "__weakref__"]
    assert all(line.startswith("    cdef public object ") for line in plain[:4])


def test_slots_are_declared_as_written_without_a_dict():
    pxd = slots.declarations(SOURCE)
    assert "cdef class Slotted:\n    cdef public object x\n    cdef public object y\n" \
           "    cdef object __weakref__\n" in pxd
    assert "__dict__" not in pxd.split("cdef class Slotted:")[1]


def test_classes_unlike_an_extension_type_are_left_alone():
    pxd = slots.declarations(SOURCE)
    for name in ("Based", "Decorated", "Descriptor", "Empty"):
        assert f"class {name}:" not in pxd
    assert slots.declarations("class A:\n    __slots__ = tuple('ab')\n    def f(self):\n"
                              "        self.a = 1\n") == ""          # slots not written out


def test_write_keeps_the_tree_to_what_the_modules_need(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(SOURCE)
    out = tmp_path / "pxd"
    stale = out / "pkg" / "gone.pxd"
    stale.parent.mkdir(parents=True)
    stale.write_text("cdef class Gone:\n    pass\n")
    slots.write({"pkg.m": src}, out)
    assert (out / "pkg" / "m.pxd").read_text() == slots.declarations(SOURCE)
    assert not stale.exists()


@pytest.mark.skipif(os.environ.get("SIMFS_PURE") in ("1", "all"), reason="SIMFS_PURE=1: all source")
def test_the_build_keeps_a_plain_classes_attributes_in_slots():
    import simfs.compiled as compiled
    from simfs.blockio.cache import Buffer, BufferCache
    assert compiled.state()["simfs.blockio.cache"] == "compiled"
    buf = Buffer(7, bytearray(8), "data", 12)
    assert not hasattr(buf, "__dict__") and buf.blkno == 7          # __slots__, as in the source
    assert "bs" in BufferCache.__dict__                             # a slot's descriptor
    with pytest.raises(AttributeError):
        buf.other = 1                                               # as with __slots__


def test_no_class_of_the_data_path_has_two_bases_with_slots():
    """A class with two bases that the build makes extension types with slots of their own
    cannot be created ("multiple bases have instance lay-out conflict"): Volume's mixins must
    keep their state elsewhere (simfs.fs.namespace.RecentlyFreed), or the compiled build breaks
    the moment a second mixin assigns an attribute on self."""
    import ast

    from simfs.compiled import sources
    slotted, multi = set(), []
    for name, path in sources().items():
        tree = ast.parse(path.read_text())
        slotted |= {n.name for n in tree.body if isinstance(n, ast.ClassDef)
                    and f"cdef class {n.name}:" in slots.declarations(ast.unparse(n))}
        multi += [(name, n.name, [b.id for b in n.bases if isinstance(b, ast.Name)])
                  for n in tree.body if isinstance(n, ast.ClassDef) and len(n.bases) > 1]
    assert any(cls == "Volume" for _, cls, _ in multi)
    bad = [(m, cls, [b for b in bases if b in slotted]) for m, cls, bases in multi
           if len([b for b in bases if b in slotted]) > 1]
    assert not bad, f"classes whose bases would each have slots: {bad}"
