"""The folders are the data path: every import goes down (or sideways to a plug-in package).

Each module's imports (also those inside functions) are read with `ast`, and the layer they
reach must be one its own layer may use. A lower layer that imported an upper one would be a
call back up the data path (docs/design.md, "Layout of the repository").

Above simfs stand experiments/ and benchmarks/, one rule per folder (whatever files they
hold): they use simfs's library layers, never its commands' modules (but the argument types
the commands share, simfs.cli.common, `simfs verb`'s option table, which job files take
their verbs' options through, the progress bar, simfs.cli.progress, and the table renderer,
simfs.cli.tables), and take no private
name (`_x`) from a package of another folder.
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
    "plugin_registry": set(),          # the plug-in registries policies/ and disk_models/ build on: stdlib only
    "simfs.outfile": set(),             # opening the files simfs writes beside an image: stdlib only
    "simfs.ondisk": {"simfs.errors", "plugin_registry"},
    "simfs.blockio": {"simfs.errors", "simfs.ondisk", "simfs.outfile", "policies"},
    "simfs.fs": {"simfs.errors", "simfs.units", "simfs.ondisk", "simfs.blockio", "simfs.outfile", "policies",
                 "disk_models"},
    "simfs.inprocess": {"simfs.errors", "simfs.units", "simfs.ondisk", "simfs.blockio", "simfs.fs", "simfs.outfile",
                     "disk_models"},
    "simfs.fuse": {"simfs", "simfs.errors", "simfs.units", "plugin_registry", "simfs.ondisk", "simfs.fs", "simfs.blockio",
                   "simfs.outfile", "policies", "disk_models"},
    "simfs.pictures": {"simfs.errors", "simfs.units", "simfs.ondisk", "simfs.blockio", "simfs.fs", "plugin_registry"},
    "simfs.cli": {"simfs", "simfs.errors", "simfs.units", "plugin_registry", "simfs.ondisk", "simfs.blockio",
                  "simfs.fs", "simfs.inprocess", "simfs.fuse", "simfs.pictures", "simfs.outfile", "policies",
                  "disk_models"},
    "policies": {"plugin_registry"},
    "disk_models": {"plugin_registry"},
}
#: what the folders above simfs may use of it: its library layers, no command module
LIBRARY = {"simfs", "simfs.errors", "simfs.units", "simfs.outfile", "simfs.ondisk", "simfs.blockio", "simfs.fs",
           "simfs.inprocess", "simfs.fuse", "simfs.pictures", "plugin_registry", "policies", "disk_models"}
ALLOWED["experiments"] = LIBRARY
ALLOWED["benchmarks"] = LIBRARY | {"experiments"}
#: modules of a layer otherwise closed to a folder that it may import by name
OPEN = {"experiments": {"simfs.cli.common", "simfs.cli.verb", "simfs.cli.progress", "simfs.cli.tables"}, "benchmarks": set()}
PACKAGES = ("simfs", "plugin_registry", "policies", "disk_models", "experiments", "benchmarks")


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


def modules(top: str):
    """(path, module name) of every module under the folder `top`."""
    for path in sorted((REPO / top).rglob("*.py")):
        yield path, ".".join(path.relative_to(REPO).with_suffix("").parts)


def wrong_imports(path: Path, own: str, shown: str | None = None) -> list[str]:
    """The imports of `path` (of layer `own`) that its layer may not make."""
    shown = shown or str(path.relative_to(REPO))
    wrong = []
    for target, line in imports(path):
        if target.split(".")[0] not in PACKAGES:
            continue
        there = layer_of(target)
        if there != own and there not in ALLOWED[own] and target not in OPEN.get(own, ()):
            wrong.append(f"{shown}:{line}: {own} imports {target}")
    return wrong


def test_every_import_goes_down_the_data_path():
    wrong = []
    seen = set()
    for top in ("simfs", "plugin_registry", "policies", "disk_models", "experiments", "benchmarks"):
        for path, module in modules(top):
            own = layer_of(module)
            seen.add(own)
            wrong += wrong_imports(path, own)
    assert seen <= set(ALLOWED), f"layers without a rule: {seen - set(ALLOWED)}"
    assert not wrong, "imports against the data path:\n" + "\n".join(wrong)


def private_names(path: Path, own: str):
    """(line, module, name) of each private name `path` takes from another folder's package."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            if top in PACKAGES and top != own:
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.endswith("__"):   # __version__ is public
                        yield node.lineno, node.module, alias.name


def test_experiments_and_benchmarks_take_no_private_name():
    found = [f"{path.relative_to(REPO)}:{line}: from {module} import {name}"
             for top in ("experiments", "benchmarks") for path, _ in modules(top)
             for line, module, name in private_names(path, top)]
    assert not found, "private names taken from another package:\n" + "\n".join(found)


def test_the_rule_can_fail(tmp_path):
    """The scan sees an upward import (here: the on-disk format importing the volume)."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from simfs.fs.volume import Volume\n")
    assert [(t, n) for t, n in imports(bad)] == [("simfs.fs.volume", 2)]
    assert layer_of("simfs.fs.volume") not in ALLOWED["simfs.ondisk"]


def test_the_folder_rules_can_fail(tmp_path):
    """An experiment that imports a command's module or a benchmark, or takes a private name
    of simfs, is seen; the command modules the rule opens, and its own private names, are not."""
    bad = tmp_path / "bad.py"
    bad.write_text("from simfs.cli.layout import cmd_layout\nfrom simfs.pictures.blockmap import _x\n"
                   "import benchmarks.run\nfrom simfs.cli.common import size_type\n"
                   "from experiments.report import _own\n")
    got = [w.rsplit(": ", 1)[1] for w in wrong_imports(bad, "experiments", shown="bad.py")]
    assert got == ["experiments imports simfs.cli.layout", "experiments imports benchmarks.run"]
    assert list(private_names(bad, "experiments")) == [(2, "simfs.pictures.blockmap", "_x")]
