"""The folders are the data path: every import goes down (or sideways to a plug-in package).

Each module's imports (also those inside functions) are read with `ast`, and the layer they
reach must be one its own layer may use. A lower layer that imported an upper one would be a
call back up the data path (docs/design.md, "Layout of the repository").
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# layer -> the layers its modules may import (besides itself)
ALLOWED = {
    "simfs.__init__": {"simfs.compiled"},
    "simfs.compiled": set(),            # the import hook for the compiled data path: stdlib only
    "simfs.errors": set(),
    "simfs.units": set(),
    "simfs.suggest": set(),             # the one "did you mean" helper: stdlib only, used by every layer
    "simfs.plugins": {"simfs.suggest"},
    "simfs.outfile": set(),             # opening the files simfs writes beside an image: stdlib only
    "simfs.ondisk": {"simfs.errors", "simfs.suggest"},
    "simfs.blockio": {"simfs.errors", "simfs.ondisk", "simfs.outfile", "policies"},
    "simfs.fs": {"simfs.errors", "simfs.units", "simfs.ondisk", "simfs.blockio", "simfs.outfile", "policies",
                 "disk_models"},
    "simfs.engine": {"simfs.errors", "simfs.units", "simfs.ondisk", "simfs.blockio", "simfs.fs", "simfs.outfile",
                     "disk_models"},
    "simfs.fuse": {"simfs", "simfs.errors", "simfs.units", "simfs.ondisk", "simfs.fs", "simfs.blockio",
                   "simfs.outfile", "simfs.suggest", "policies", "disk_models"},
    "simfs.cli": {"simfs", "simfs.errors", "simfs.units", "simfs.plugins", "simfs.ondisk", "simfs.blockio",
                  "simfs.fs", "simfs.engine", "simfs.fuse", "simfs.suggest", "policies", "disk_models"},
    "policies": {"simfs.plugins", "simfs.ondisk", "simfs.suggest"},
    "disk_models": {"simfs.plugins", "simfs.suggest"},
}
PACKAGES = ("simfs", "policies", "disk_models", "experiments")


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "simfs":
        return parts[0]
    return "simfs" if len(parts) == 1 else "simfs." + parts[1]


def imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno


def test_every_import_goes_down_the_data_path():
    wrong = []
    seen = set()
    for top in ("simfs", "policies", "disk_models"):
        for path in sorted((REPO / top).rglob("*.py")):
            module = ".".join(path.relative_to(REPO).with_suffix("").parts)
            own = layer_of(module)
            seen.add(own)
            for target, line in imports(path):
                if target.split(".")[0] not in PACKAGES:
                    continue
                there = layer_of(target)
                if there != own and there not in ALLOWED[own]:
                    wrong.append(f"{path.relative_to(REPO)}:{line}: {own} imports {target}")
    assert seen <= set(ALLOWED), f"layers without a rule: {seen - set(ALLOWED)}"
    assert not wrong, "imports against the data path:\n" + "\n".join(wrong)


def test_the_rule_can_fail(tmp_path):
    """The scan sees an upward import (here: the on-disk format importing the volume)."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from simfs.fs.volume import Volume\n")
    assert [(t, n) for t, n in imports(bad)] == [("simfs.fs.volume", 2)]
    assert layer_of("simfs.fs.volume") not in ALLOWED["simfs.ondisk"]
