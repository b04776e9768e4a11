"""Plug-in registries: every kind of policy and every disk model is found by name here.

One `Registry` per kind, each filled from three places, in this order:

1. the built-ins (the classes shipped in `policies/` and `disk_models/`);
2. installed packages' entry points, one group per kind::

       simfs.allocators     simfs.inode_placers     simfs.dirorders
       simfs.writeback      simfs.disk_models

   The entry point's name is the name the mount option takes (``-o alloc=NAME``); its value
   is ``package.module:Class``; the class's ``name`` (``model`` for disk models) must be the
   same name. A built-in name cannot be taken over (the entry point is ignored, with a
   warning). A plug-in that fails to load is left out of listings with a warning, and asking
   for it by name raises a `PluginError` that says why;
3. a class given directly as ``package.module:Class`` (``-o alloc=mypkg.alloc:LastFit``): the
   module is imported from the normal Python path, no entry point or installation needed.

Every class must subclass the kind's base class (its contract: `policies.base`,
`policies.dirorder.DirOrder`, `policies.writeback.WritebackPolicy`,
`disk_models.base.DiskModel`). Errors are `PluginError`, a `ValueError` whose message is one
line meant for the user (``simfs mount`` prints it and exits with status 2).

This package uses only the standard library and imports nothing of simfs: it stands below
the plug-in packages (`policies`, `disk_models`), which build their registries with it, as
they stand below simfs.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import importlib.metadata
import logging
from collections.abc import MutableMapping

log = logging.getLogger("simfs.plugins")

GROUPS = ("simfs.allocators", "simfs.inode_placers", "simfs.dirorders", "simfs.writeback",
          "simfs.disk_models")


class PluginError(ValueError):
    """A policy or model name that cannot be used (message: one line, for the user)."""


def did_you_mean(word, candidates, show=repr) -> str:
    """' (did you mean X?)' for the candidate nearest `word`, else ''. The one such helper:
    every place a name is looked up (commands and their options, mount options, policies, disk
    presets, job-file keys and values, experiments, lessons, verbs) names the nearest valid one
    the same way, difflib's closest match if it is close enough (ratio >= 0.6): a typo is the
    usual mistake. It lives here, at the bottom, so every layer can use it."""
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1, cutoff=0.6)
    return f" (did you mean {show(close[0])}?)" if close else ""


def _why(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def import_class(spec: str):
    """The object named by "package.module:Class" (or "package.module:Outer.Inner")."""
    module_name, _, attr = spec.partition(":")
    module_name, attr = module_name.strip(), attr.strip()
    if not module_name or not attr:
        raise PluginError("expected package.module:Class")
    try:
        obj = importlib.import_module(module_name)
    except Exception as e:          # ImportError, SyntaxError, or whatever the module raised
        raise PluginError(f"cannot import module {module_name!r} ({_why(e)})") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PluginError(f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


class Registry(MutableMapping):
    """name -> class for one kind of plug-in (a mapping; entry points are read on first use).

    kind     what the user is told ("allocator")
    option   the mount option that selects one ("alloc")
    group    the entry-point group ("simfs.allocators")
    base     the class every plug-in must subclass
    key      the class attribute holding its name ("name"; disk models: "model")
    check    optional: check(cls) raises PluginError for a class that breaks the contract in a
             way the base class cannot catch (run on plug-ins, not on the built-ins)
    """

    def __init__(self, kind: str, option: str, group: str, base: type, builtins=(), key: str = "name",
                 check=None):
        self.kind, self.option, self.group, self.base, self.key = kind, option, group, base, key
        self._extra_check = check
        self._builtin = {getattr(cls, key): cls for cls in builtins}
        self._classes: dict = dict(self._builtin)
        self._origin: dict[str, str] = {name: "built-in" for name in self._builtin}
        self._failed: dict[str, str] = {}        # entry-point name -> why it could not be used
        self._loaded = False

    # entry points ------------------------------------------------------------------------
    def _entry_points(self):
        try:
            eps = importlib.metadata.entry_points(group=self.group)
        except Exception as e:      # a broken installation must not stop simfs
            log.warning("cannot read %s entry points: %s", self.group, _why(e))
            return []
        return sorted(eps, key=lambda ep: (ep.name, ep.value))

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for ep in self._entry_points():
            dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
            where = f"entry point {self.group} '{ep.name}' ({ep.value}, package {dist})"
            if ep.name in self._builtin:
                self._fail(ep.name, f"{where} ignored: '{ep.name}' is a built-in {self.kind}", keep=False)
                continue
            if ep.name in self._classes:
                self._fail(ep.name, f"{where} ignored: '{ep.name}' is already provided by "
                                    f"{self._origin.get(ep.name)}", keep=False)
                continue
            try:
                cls = ep.load()
            except Exception as e:
                self._fail(ep.name, f"{where}: cannot load ({_why(e)})")
                continue
            try:
                self._check(cls, ep.value)
            except PluginError as e:
                self._fail(ep.name, f"{where}: {e}")
                continue
            if getattr(cls, self.key) != ep.name:
                self._fail(ep.name, f"{where}: the class's {self.key} is {getattr(cls, self.key)!r}, "
                                    f"not {ep.name!r}")
                continue
            self._classes[ep.name] = cls
            self._origin[ep.name] = f"package {dist}"

    def _fail(self, name: str, why: str, keep: bool = True) -> None:
        log.warning("%s", why)
        if keep:
            self._failed[name] = why

    def reload(self) -> None:
        """Read the entry points again (after installing a plug-in in this process; tests)."""
        self._classes = dict(self._builtin)
        self._origin = {name: "built-in" for name in self._builtin}
        self._failed = {}
        self._loaded = False

    # the mapping -------------------------------------------------------------------------
    def __getitem__(self, name):
        self._load()
        return self._classes[name]

    def __setitem__(self, name, cls) -> None:
        self._load()
        self._classes[name] = cls
        self._origin.setdefault(name, "registered at run time")

    def __delitem__(self, name) -> None:
        self._load()
        del self._classes[name]
        if name not in self._builtin:
            self._origin.pop(name, None)

    def __iter__(self):
        self._load()
        return iter(list(self._classes))

    def __len__(self) -> int:
        self._load()
        return len(self._classes)

    def __contains__(self, name) -> bool:
        self._load()
        return name in self._classes

    def origin(self, name: str) -> str:
        """"built-in", "package DIST" (an entry point) or "registered at run time"."""
        self._load()
        return self._origin.get(name, "")

    def problems(self) -> dict[str, str]:
        """Entry points that could not be used: name -> why."""
        self._load()
        return dict(self._failed)

    # lookup -----------------------------------------------------------------------------
    def _check(self, cls, spec: str) -> None:
        if not (isinstance(cls, type) and issubclass(cls, self.base)):
            raise PluginError(f"{spec!r} is not a subclass of {self.base.__module__}.{self.base.__qualname__}")
        if cls is self.base or inspect.isabstract(cls):
            raise PluginError(f"{spec!r} is abstract (the {self.kind} interface itself); name a class "
                              "that implements it")
        if not isinstance(getattr(cls, self.key, None), str):
            raise PluginError(f"{spec!r} has no {self.key} (a string)")
        if self._extra_check is not None:
            self._extra_check(cls)

    def resolve(self, spec: str) -> type:
        """The class for a name or a "package.module:Class"; PluginError says what is wrong."""
        spec = spec.strip() if isinstance(spec, str) else spec
        if not isinstance(spec, str) or not spec:
            raise PluginError(f"empty {self.kind} name; {self._choices()}")
        if ":" in spec:
            try:
                cls = import_class(spec)
                self._check(cls, spec)
            except PluginError as e:
                raise PluginError(f"{self.kind} {spec!r}: {e}") from None
            return cls
        self._load()
        if spec in self._classes:
            return self._classes[spec]
        if spec in self._failed:
            raise PluginError(f"{self.kind} {spec!r} cannot be used: {self._failed[spec]}")
        raise PluginError(f"unknown {self.kind} '{spec}'; {self._choices()}{did_you_mean(spec, self)}")

    def create(self, spec: str, *args, **kwargs):
        """A new instance of the class `resolve(spec)` names."""
        cls = self.resolve(spec)
        try:
            obj = cls(*args, **kwargs)
        except Exception as e:
            if isinstance(e, PluginError):
                raise
            raise PluginError(f"{self.kind} {spec!r} could not be created ({_why(e)})") from None
        if not getattr(obj, self.key, ""):
            setattr(obj, self.key, spec.strip())       # a nameless package.module:Class: its spec
        return obj

    def _choices(self) -> str:
        return f"choose one of: {', '.join(sorted(self))} (or a class as package.module:Class)"
