"""Which classes the build makes extension types, and their attributes: an augmenting .pxd
per module, derived from the source alone.

Compiled code reaches an ordinary instance's attribute through a dictionary lookup each
time (`self.clock`, `self.buffers`: most of the data path's work). An extension type
(Cython's `cdef class`) keeps the attributes it declares in fixed slots of the object, and
its methods reach them directly. The source says nothing about this: for each plain class
of a compiled module - a top-level class with no base class, no decorator, no metaclass and
no descriptor methods - the build declares every attribute its methods assign on `self` (or
each `__slots__` name) as a slot holding any Python object. Nothing else changes: a class with a
`__dict__` keeps it (an attribute set elsewhere lands there, as before) and its weak
references; a class with `__slots__` stays without both. Names the class body itself binds
(methods, properties, class attributes) and private `__names` are left to Python.

A Python subclass that redefines a slot's name as a property is not seen by the compiled
base's own methods; no class of the data path does that.
"""

from __future__ import annotations

import ast
from pathlib import Path


#: special methods an extension type implements with fixed C signatures (a descriptor's
#: `__get__(self, obj, owner=None)` is not accepted) or not as a Python class does
_UNLIKE = {"__get__", "__set__", "__delete__", "__set_name__", "__new__", "__init_subclass__",
           "__class_getitem__"}


def _plain(node: ast.ClassDef) -> bool:
    return not (node.bases or node.keywords or node.decorator_list or _UNLIKE & _class_names(node))


def _class_names(node: ast.ClassDef) -> set[str]:
    """What the class body binds itself (methods, properties, class attributes)."""
    names = set()
    for st in node.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(st.name)
        elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for t in st.targets if isinstance(st, ast.Assign) else [st.target]:
                names.update(e.id for e in ast.walk(t) if isinstance(e, ast.Name))
    return names


def _slots(node: ast.ClassDef) -> list[str] | None:
    """The class's `__slots__` names, None if it has none; ValueError if they are not literal."""
    for st in node.body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                              for t in st.targets):
            value = ast.literal_eval(st.value)
            return [value] if isinstance(value, str) else list(value)
    return None


def _assigned(node: ast.ClassDef) -> set[str]:
    """Attributes the class's code assigns on `self`."""
    out = set()
    for sub in ast.walk(node):
        targets = (sub.targets if isinstance(sub, ast.Assign) else
                   [sub.target] if isinstance(sub, (ast.AugAssign, ast.AnnAssign)) else [])
        for t in targets:
            out.update(e.attr for e in ast.walk(t) if isinstance(e, ast.Attribute)
                       and isinstance(e.value, ast.Name) and e.value.id == "self")
    return out


def declarations(source: str) -> str:
    """The augmenting .pxd for a module's source ("" if no class of it qualifies)."""
    out = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef) or not _plain(node):
            continue
        try:
            slots = _slots(node)
        except ValueError:
            continue
        own = _class_names(node)
        names = sorted(n for n in (set(slots) if slots is not None else _assigned(node)) - own
                       if not n.startswith("__"))
        lines = [f"    cdef public object {n}" for n in names]
        if slots is None:
            lines += ["    cdef dict __dict__", "    cdef object __weakref__"]
        elif "__weakref__" in slots:
            lines.append("    cdef object __weakref__")
        if names:
            out.append(f"cdef class {node.name}:\n" + "\n".join(lines) + "\n")
    return "\n".join(out)


def write(sources: dict[str, Path], into: Path) -> None:
    """Write each module's .pxd under `into` (as a package tree, for Cython's include path);
    remove the ones no module needs any more."""
    wanted = set()
    for name, path in sources.items():
        text = declarations(path.read_text())
        if not text:
            continue
        pxd = into.joinpath(*name.split(".")).with_suffix(".pxd")
        wanted.add(pxd)
        pxd.parent.mkdir(parents=True, exist_ok=True)
        if not pxd.is_file() or pxd.read_text() != text:
            pxd.write_text(text)
    for old in into.rglob("*.pxd") if into.is_dir() else ():
        if old not in wanted:
            old.unlink()
