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
    assert plain[-1] == "    cpdef grow(self)"                    # (the property stays Python)
    plain = plain[:-1]
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


CALLS = textwrap.dedent('''
    class Calls:
        def __init__(self, a):
            self.a = a
        def plain(self, x, y=1):
            return [v for v in x if v > self.a] + [y]
        def star(self, *args):
            return args
        def keywords(self, x, *, y=2):
            return x
        def closure(self, x):
            return sorted(x, key=lambda v: -v)
        def genexpr(self, x):
            return sum(v for v in x)
        def gen(self):
            yield self.a
        @property
        def prop(self):
            return self.a
        def twice(self):
            return 1
        twice = twice
        def include(self):
            return 0
        def _private(self, cdef):
            return cdef
''')


def test_methods_cython_can_compile_so_are_declared_cpdef():
    pxd = slots.declarations(CALLS)
    cpdefs = [line.strip() for line in pxd.splitlines() if "cpdef" in line]
    assert cpdefs == ["cpdef plain(self, x, y=*)"]
    assert slots.declarations("class Empty:\n    def f(self):\n        return 1\n") == ""


def test_typed_attributes_only_while_their_class_is_compiled(monkeypatch):
    src = "class Holder:\n    def __init__(self, t):\n        self.t = t\n        self.u = t\n"
    monkeypatch.setattr(slots, "TYPED", {"pkg.m.Holder.t": "pkg.other.Target"})
    pxd = slots.declarations(src, "pkg.m", {"pkg.other": {"Target": set()}})
    assert pxd.startswith("from pkg.other cimport Target\n")
    assert "    cdef public Target t\n" in pxd and "    cdef public object u\n" in pxd
    for compiled in ({"pkg.other": {}}, {}):        # not an extension type (or not built): object
        pxd = slots.declarations(src, "pkg.m", compiled)
        assert "cimport" not in pxd and "    cdef public object t\n" in pxd


def test_write_says_which_modules_declarations_each_one_cimports(tmp_path, monkeypatch):
    """Directly or through another's: m's code reaches q's type through o's attribute."""
    (tmp_path / "m.py").write_text("class Holder:\n    def __init__(self, t):\n        self.t = t\n")
    (tmp_path / "o.py").write_text("class Target:\n    def __init__(self):\n        self.v = 0\n")
    (tmp_path / "q.py").write_text("class Leaf:\n    def __init__(self):\n        self.w = 0\n")
    monkeypatch.setattr(slots, "TYPED", {"pkg.m.Holder.t": "pkg.o.Target", "pkg.o.Target.v": "pkg.q.Leaf"})
    requires = slots.write({n: tmp_path / f"{n[-1]}.py" for n in ("pkg.m", "pkg.o", "pkg.q")},
                           tmp_path / "pxd")
    assert requires == {"pkg.m": {"pkg.o", "pkg.q"}, "pkg.o": {"pkg.q"}, "pkg.q": set()}
    assert "cimport Target" in (tmp_path / "pxd" / "pkg" / "m.pxd").read_text()


@pytest.mark.skipif(os.environ.get("SIMFS_PURE") in ("1", "all"), reason="SIMFS_PURE=1: all source")
def test_compiled_calls_keep_pythons_overrides():
    """A `cpdef` method called from the compiled class itself still finds a Python subclass's
    override and an instance attribute of the same name; a TYPED attribute takes only its type."""
    import simfs.compiled as compiled
    from simfs.blockio.stats import Phase, Stats
    assert compiled.state()["simfs.blockio.stats"] == "compiled"
    assert "cpdef fold(self)" in slots.declarations(compiled.sources()[Phase.__module__].read_text())

    class Counting(Phase):
        folds = 0

        def fold(self):
            self.folds += 1
            super().fold()
    p = Counting("x", 0.0)
    p.latency()
    assert p.folds == 1                           # latency() calls self.fold(): the override
    q = Phase("y", 0.0)
    q.fold = lambda: (_ for _ in ()).throw(RuntimeError("instance attribute called"))
    with pytest.raises(RuntimeError, match="instance attribute called"):
        q.latency()
    with pytest.raises(TypeError):
        Stats().phase = object()                  # simfs.blockio.stats.Stats.phase: a Phase


def test_an_attribute_whose_method_is_taken_uncalled_stays_object(monkeypatch):
    """Cython turns `self.t.m` (a cpdef method of a typed attribute, not called) into an
    unbound C function: such an attribute is left `object`; reading a field through it is fine."""
    monkeypatch.setattr(slots, "TYPED", {"pkg.m.Holder.t": "pkg.o.Target"})
    compiled = {"pkg.o": {"Target": {"m"}}}
    src = "class Holder:\n    def __init__(self, t):\n        self.t = t\n    def f(self):\n        return {}\n"
    for body, typed in (("self.t.m()", True), ("self.t.v", True), ("self.t.m", False),
                        ("self.t.v.m", False), ("self.t.v.w", True)):
        pxd = slots.declarations(src.format(body).replace("{}", body), "pkg.m", compiled)
        assert ("cdef public Target t" in pxd) is typed, body
