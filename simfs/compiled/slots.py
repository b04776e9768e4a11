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

Calls, too: each method of such a class that Cython can compile so (no closure, generator,
`*args`/`**kwargs`, keyword-only parameter or decorator; its name bound once) is declared `cpdef`, so that a call
`self.m(...)` inside the class is a C call through the type's method table instead of an
attribute lookup and a Python call. Python's semantics stay: a Python subclass's override, or an
instance attribute of the same name, is still found and called (Cython checks the instance's and
the type's dictionaries, by their version tags, before taking the C path). And the attributes
TYPED names are declared as holding an instance of another such class (cimported from its
module's declarations): a call on them, `self.cache.bread(...)`, is a C call too. Assigning
anything else to one (a test double) raises TypeError; the class's own module and the one it
cimports are then built together: `requires` says which, and the manifest records both
sources' hashes, so that neither runs compiled against the other's old declarations.
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
    return {name for st in node.body for name in _binds(st)}


def _binds(st: ast.stmt) -> list[str]:
    """The names a statement of a class body binds."""
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [st.name]
    if isinstance(st, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return [e.id for t in (st.targets if isinstance(st, ast.Assign) else [st.target])
                for e in ast.walk(t) if isinstance(e, ast.Name)]
    return []


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


#: attributes declared as holding an instance of a compiled class of the data path
#: ("module.Class.attribute": "module.Class"); only where nothing else is ever assigned to them
#: (no test double either), and used only while both classes are extension types
_CACHE, _STATS = "simfs.blockio.cache.BufferCache", "simfs.blockio.stats.Stats"
_SPACE, _INODES, _CHECKS = "simfs.fs.freespace.FreeSpace", "simfs.fs.inodes.InodeTable", "simfs.fs.checks.Checks"
_PLACEMENT, _FILEMAP = "simfs.fs.placement.Placement", "simfs.fs.filemap.FileMap"
TYPED = {
    "simfs.blockio.stats.Stats.phase": "simfs.blockio.stats.Phase",
    "simfs.blockio.cache.BufferCache.stats": _STATS,
    "simfs.fs.operation.OperationCharger.kernel": "simfs.fs.cpucost.KernelCharge",
    "simfs.fs.freespace.FreeSpace.cache": _CACHE, "simfs.fs.freespace.FreeSpace.stats": _STATS,
    "simfs.fs.freespace.FreeSpace.checks": _CHECKS,
    "simfs.fs.placement.Placement.space": _SPACE,
    "simfs.fs.inodes.InodeTable.cache": _CACHE, "simfs.fs.inodes.InodeTable.checks": _CHECKS,
    **{f"simfs.fs.filemap.FileMap.{a}": t for a, t in (
        ("cache", _CACHE), ("space", _SPACE), ("placement", _PLACEMENT), ("inodes", _INODES),
        ("checks", _CHECKS))},
    **{f"simfs.fs.extentmap.ExtentMap.{a}": t for a, t in (
        ("cache", _CACHE), ("space", _SPACE), ("placement", _PLACEMENT), ("inodes", _INODES),
        ("checks", _CHECKS))},
    **{f"simfs.fs.directory.Directories.{a}": t for a, t in (
        ("cache", _CACHE), ("filemap", _FILEMAP), ("inodes", _INODES), ("checks", _CHECKS))},
    **{f"simfs.fs.htree.HTree.{a}": t for a, t in (
        ("cache", _CACHE), ("filemap", _FILEMAP), ("inodes", _INODES), ("checks", _CHECKS))},
    **{f"simfs.fs.delalloc.DelayedAllocation.{a}": t for a, t in (
        ("cache", _CACHE), ("stats", _STATS), ("space", _SPACE), ("filemap", _FILEMAP),
        ("placement", _PLACEMENT), ("inodes", _INODES))},
}

#: names Cython's declaration syntax reserves (a method or parameter so named stays `def`)
_RESERVED = {"include", "cdef", "cpdef", "ctypedef", "cimport", "struct", "union", "enum", "extern",
             "inline", "public", "readonly", "api", "nogil", "gil", "with", "sizeof", "typeof",
             "NULL", "new", "operator", "fused", "const", "volatile", "signed", "unsigned", "DEF",
             "IF", "ELIF", "ELSE", "print", "exec", "by", "char", "short", "int", "long", "float",
             "double", "bint", "object", "void", "namespace", "cppclass", "template", "packed"}

#: what makes a method impossible to compile as `cpdef` (closures, generators, coroutines)
_NOT_CPDEF = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.GeneratorExp,
              ast.Yield, ast.YieldFrom, ast.Await)


def _cpdef(node: ast.ClassDef) -> list[str]:
    """`cpdef` declarations for the class's methods that can be compiled so."""
    counts: dict[str, int] = {}
    for st in node.body:
        for name in _binds(st):
            counts[name] = counts.get(name, 0) + 1
    out = []
    for st in node.body:
        if not isinstance(st, ast.FunctionDef) or st.decorator_list or st.name.startswith("__") \
                or counts.get(st.name) != 1:
            continue
        a = st.args
        if a.posonlyargs or a.vararg or a.kwarg or a.kwonlyargs or not a.args or \
                _RESERVED & {st.name, *(arg.arg for arg in a.args)}:
            continue
        if any(isinstance(sub, _NOT_CPDEF) for stmt in st.body for sub in ast.walk(stmt)):
            continue
        first = len(a.args) - len(a.defaults)
        params = [arg.arg + ("=*" if i >= first else "") for i, arg in enumerate(a.args)]
        out.append(f"    cpdef {st.name}({', '.join(params)})")
    return out


def classes(source: str) -> dict[str, set[str]]:
    """The classes of a module's source that the build makes extension types, and the
    methods of each it declares `cpdef`."""
    return {name: {line.split()[1].split("(")[0] for line in _cpdef(node)}
            for name, (node, _, _) in _declared(source)}


def _declared(source: str):
    """(class name, its field names and whether it keeps __dict__ / __weakref__) per class
    the build makes an extension type."""
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
        if names:
            yield node.name, (node, names, slots)


def declarations(source: str, module: str = "", compiled: dict[str, dict[str, set[str]]] | None = None) -> str:
    """The augmenting .pxd for a module's source ("" if no class of it qualifies). `module` is
    its name and `compiled` the classes each module of the build makes extension types, with
    their `cpdef` methods (for TYPED: an attribute is typed only while its class is one)."""
    return _declarations(source, module, compiled or {})[0]


def _referenced(node: ast.ClassDef, methods: set[str]) -> dict[str, set[str]]:
    """Where the class's code takes a name through an attribute of self without calling it,
    `self.a.name` (`self.checks.bad_range` passed on as a function): attribute -> those names,
    and "" for one of `methods` taken further down (`self.a.b.name`). Such an attribute stays
    `object` if a name is a `cpdef` method of its type: Cython 3.3 turns a `cpdef` method
    taken so from a typed attribute into an unbound C function (the C compiler warns; the call
    goes wrong)."""
    called = {id(sub.func) for sub in ast.walk(node) if isinstance(sub, ast.Call)}
    out: dict[str, set[str]] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and id(sub) not in called and isinstance(sub.value, ast.Attribute):
            root, depth = sub.value, 1
            while isinstance(root.value, ast.Attribute):
                root, depth = root.value, depth + 1
            if isinstance(root.value, ast.Name) and root.value.id == "self":
                if depth == 1:
                    out.setdefault(root.attr, set()).add(sub.attr)
                elif sub.attr in methods:
                    out.setdefault(root.attr, set()).add("")
    return out


def _declarations(source: str, module: str, compiled: dict[str, dict[str, set[str]]]) -> tuple[str, set[str]]:
    out, cimports, requires = [], [], set()
    methods = {m for classes in compiled.values() for ms in classes.values() for m in ms}
    for cls, (node, names, slots) in _declared(source):
        lines = []
        untyped = _referenced(node, methods)
        for n in names:
            target = TYPED.get(f"{module}.{cls}.{n}", "")
            tmod, _, tcls = target.rpartition(".")
            if target and tcls in compiled.get(tmod, ()) and \
                    not untyped.get(n, set()) & (compiled[tmod][tcls] | {""}):
                if tmod != module:
                    cimports.append(f"from {tmod} cimport {tcls}")
                    requires.add(tmod)
                lines.append(f"    cdef public {tcls} {n}")
            else:
                lines.append(f"    cdef public object {n}")
        if slots is None:
            lines += ["    cdef dict __dict__", "    cdef object __weakref__"]
        elif "__weakref__" in slots:
            lines.append("    cdef object __weakref__")
        lines += _cpdef(node)
        out.append(f"cdef class {cls}:\n" + "\n".join(lines) + "\n")
    head = "".join(line + "\n" for line in sorted(set(cimports)))
    return (head + "\n" if head else "") + "\n".join(out), requires


def write(sources: dict[str, Path], into: Path) -> dict[str, set[str]]:
    """Write each module's .pxd under `into` (as a package tree, for Cython's include path);
    remove the ones no module needs any more. Returns, per module, the other modules whose
    declarations its own cimport, directly or through each other's (it must be built, and
    loaded, only with them as they are)."""
    texts = {name: path.read_text() for name, path in sources.items()}
    compiled = {name: classes(text) for name, text in texts.items()}
    wanted, requires = set(), {}
    for name, text in texts.items():
        text, requires[name] = _declarations(text, name, compiled)
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
    closed = {}
    for name in requires:                # and theirs: a type reached through another's attribute
        todo, seen = list(requires[name]), set()
        while todo:
            other = todo.pop()
            if other not in seen:
                seen.add(other)
                todo += requires.get(other, ())
        closed[name] = seen
    return closed
