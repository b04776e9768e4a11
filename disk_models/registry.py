"""The disk-model registry and the preset table (the contract is in disk_models.base).

MODELS   model name -> class: the built-ins and installed packages' entry points in group
         ``simfs.disk_models`` (entry-point name = the class's `model`)
PRESETS  preset name -> Preset: the built-in presets (disk_models.presets, then the ten drives of
         DiskSim's validation suite, disk_models.disksim), then the presets every plug-in model
         brings (a name already taken is ignored, with a warning)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from plugin_registry import PluginError, Registry

from .advanced_format import AdvancedFormatDrive
from .base import DiskModel
from .disksim import DiskSimDrive
from .ideal import IdealDisk
from .presets import PRESETS as BUILTIN_PRESETS
from .presets import Preset
from .rotating import RotatingDrive

log = logging.getLogger("simfs.plugins")


def _check_model(cls) -> None:
    params = getattr(cls, "PARAMS", None)
    if not isinstance(params, dict) or "capacity" not in params:
        raise PluginError(f"{cls.__qualname__}.PARAMS must be a dict of Params including 'capacity'")
    for p in cls.presets:
        if not isinstance(p, Preset):
            raise PluginError(f"{cls.__qualname__}.presets must hold disk_models.presets.Preset objects")
        missing = set(params) - set(p.values)
        if missing:
            raise PluginError(f"preset {p.name!r} of {cls.__qualname__} has no value for {', '.join(sorted(missing))}")


MODELS = Registry("disk model", "disk", "simfs.disk_models", DiskModel,
                  (RotatingDrive, AdvancedFormatDrive, IdealDisk, DiskSimDrive), key="model", check=_check_model)


class _Presets(Mapping):
    """name -> Preset: the built-ins, then the plug-in models' presets (read on first use)."""

    def __init__(self):
        self._table: dict[str, Preset] | None = None

    def _load(self) -> dict[str, Preset]:
        if self._table is None:
            table = dict(BUILTIN_PRESETS)
            table.update((p.name, p) for p in DiskSimDrive.presets)     # the validated DiskSim drives
            for name in MODELS:
                if MODELS.origin(name) == "built-in":
                    continue
                for p in MODELS[name].presets:
                    if p.name in table:
                        log.warning("preset %r of disk model %r ignored: the name is taken", p.name, name)
                        continue
                    if p.kind != name:
                        log.warning("preset %r of disk model %r ignored: its kind is %r", p.name, name, p.kind)
                        continue
                    table[p.name] = p
            self._table = table
        return self._table

    def reload(self) -> None:
        """Read the plug-ins' presets again (after MODELS.reload())."""
        self._table = None

    def __getitem__(self, name: str) -> Preset:
        return self._load()[name]

    def __iter__(self):
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


PRESETS = _Presets()


def model_for(kind: str) -> type[DiskModel]:
    """The model class a preset's (or spec's) kind names: a model name or package.module:Class."""
    return MODELS.resolve(kind)
