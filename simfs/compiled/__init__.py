"""The compiled hot path: Cython builds of the data-path modules, used only while they match
their source.

A simulation spends its real time in many small Python calls (tens of volume operations per
file); compiling those modules unchanged with Cython, their plain classes as extension types
whose attributes live in fixed slots (simfs.compiled.slots), takes about a third of the real
time off an in-process run. The source stays the program: `python -m simfs.compiled build`
(a step of `make venv`) compiles the modules below into build/compiled/, with a manifest of
each source's SHA-256, and the import hook here loads a compiled module only if its source
still has that hash. An edited module is imported from its source until the next build,
never from a stale build; a build for another Python is never loaded. SIMFS_PURE=1 imports
every module from source (SIMFS_PURE=simfs.fs.volume,... the modules named).

Simulated results do not depend on it: the compiled code runs the same Python operations on
the same Python values (tests/unit/test_compiled.py compares a run both ways).

    python -m simfs.compiled build [-j N]   compile (only what changed)
    python -m simfs.compiled                which modules run compiled, and which do not
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "compiled"
MANIFEST = BUILD / "manifest.json"
#: the packages compiled: every module of the data path (the FUSE layer and the command line
#: stay Python: they wait on the kernel and the user, not on the CPU)
PACKAGES = ("simfs/fs", "simfs/blockio", "simfs/ondisk", "simfs/inprocess", "policies", "disk_models")
#: Cython's directives: Python semantics throughout - annotations are not C types, and no
#: local variable gets a C type by inference (Cython's "safe" inference made `v` of
#: `v = int(x) if ... else float(x)` a C double: an integer parameter came back as 37.0)
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "infer_types": False}


def sources() -> dict[str, Path]:
    """module name -> source file, for every module compiled (packages' __init__ stay Python)."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                out[".".join(path.relative_to(ROOT).with_suffix("").parts)] = path
    return out


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest() -> dict:
    """The last build's manifest ({} if none): suffix, config (Cython and directives), modules."""
    try:
        m = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}
    return m if isinstance(m, dict) else {}


def _manifest() -> dict:
    """The built modules, if built for this Python (this very build of it: the headers a
    module was compiled against are this interpreter's)."""
    m = manifest()
    if m.get("suffix") != importlib.machinery.EXTENSION_SUFFIXES[0] or m.get("python") != sys.version:
        return {}                                   # built for another Python
    return m.get("modules", {})


def _pure() -> set[str] | None:
    """The modules SIMFS_PURE names (None: SIMFS_PURE=1, all of them)."""
    pure = os.environ.get("SIMFS_PURE", "")
    return None if pure in ("1", "all") else set(pure.split(","))


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds a module's compiled build when its source is unchanged since the build."""

    def __init__(self, modules: dict, root: Path = ROOT, build: Path = BUILD):
        self.modules, self.root, self.build = modules, root, build

    def current(self, name: str) -> Path | None:
        """The compiled file for `name`, if built from the source as it is now."""
        entry = self.modules.get(name)
        if entry is None:
            return None
        so = self.build / entry["file"]
        try:
            fresh = so.is_file() and _sha256(self.root / entry["source"]) == entry["sha256"]
        except OSError:
            fresh = False
        return so if fresh else None

    def find_spec(self, fullname, path=None, target=None):
        so = self.current(fullname)
        if so is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname, so, loader=importlib.machinery.ExtensionFileLoader(fullname, str(so)))


def install() -> CompiledFinder | None:
    """Put the finder first on sys.meta_path (once), unless SIMFS_PURE=1 or nothing is built.
    Modules imported before this (the packages' __init__) are Python."""
    pure = _pure()
    if pure is None:
        return None
    for f in sys.meta_path:
        if isinstance(f, CompiledFinder):
            return f
    modules = {k: v for k, v in _manifest().items() if k not in pure}
    if not modules:
        return None
    finder = CompiledFinder(modules)
    sys.meta_path.insert(0, finder)
    return finder


def state() -> dict[str, str]:
    """module -> "compiled" (built from the source as it is), "stale" (source edited since the
    build: runs as Python), "not built", or "pure" (SIMFS_PURE names it: runs as Python)."""
    modules = _manifest()
    finder = CompiledFinder(modules)
    pure = _pure()
    return {name: ("not built" if name not in modules else
                   "pure" if pure is None or name in pure else
                   "compiled" if finder.current(name) else "stale") for name in sources()}
