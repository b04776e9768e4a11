"""`python -m simfs.compiled [build [-j N]]`: compile the data-path modules, or show which run
compiled (simfs.compiled says why and how)."""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import os
import sys
from pathlib import Path

from simfs.compiled import (BUILD, DIRECTIVES, MANIFEST, ROOT, _manifest, _sha256, manifest, slots, sources,
                            state)


def _so(name: str, suffix: str) -> Path:
    return BUILD.joinpath("lib", *name.split(".")).with_suffix(suffix)


def build(jobs: int = os.cpu_count() or 1) -> None:
    """Compile every module of `sources()` into BUILD (Cython, then the C compiler; both only
    for what changed since the last build, by the sources' hashes) and write the manifest. A
    module whose source changes during the build is left out of the manifest (it runs as
    Python until the next build)."""
    try:
        from Cython import __version__ as cython_version
        from Cython.Build import cythonize
        from setuptools import Extension, setup
    except ImportError as e:
        print(f"python -m simfs.compiled build: {e.name} is not installed "
              "(pip install -e '.[compiled]'; make venv does)", file=sys.stderr)
        raise SystemExit(2) from None

    mods = sources()
    before = {name: _sha256(path) for name, path in mods.items()}
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    config = (f"Cython {cython_version}, {json.dumps(DIRECTIVES, sort_keys=True)}, "
              f"slots {_sha256(Path(slots.__file__))[:16]}, Python {sys.version}")
    built = _manifest() if manifest().get("config") == config else {}   # other directives: all again
    for name, path in mods.items():   # what the last build made from other source: made again
        if built.get(name, {}).get("sha256") != before[name]:         # (whatever the file times say)
            (BUILD / "c" / path.relative_to(ROOT)).with_suffix(".c").unlink(missing_ok=True)
            _so(name, suffix).unlink(missing_ok=True)
    slots.write(mods, BUILD / "pxd")
    exts = [Extension(name, [str(path.relative_to(ROOT))]) for name, path in mods.items()]
    cwd = os.getcwd()
    os.chdir(ROOT)                                  # relative paths: the C files name the sources so
    try:
        setup(name="simfs-compiled", ext_modules=cythonize(
                  exts, build_dir=str(BUILD / "c"), compiler_directives=DIRECTIVES, nthreads=jobs,
                  include_path=[str(BUILD / "pxd")], quiet=True),
              script_args=["-q", "build_ext", "--build-lib", str(BUILD / "lib"),
                           "--build-temp", str(BUILD / "tmp"), "-j", str(jobs)])
    finally:
        os.chdir(cwd)
    modules = {}
    for name, path in mods.items():
        if _so(name, suffix).is_file() and _sha256(path) == before[name]:
            modules[name] = {"source": str(path.relative_to(ROOT)), "sha256": before[name],
                             "file": str(_so(name, suffix).relative_to(BUILD))}
    tmp = MANIFEST.with_suffix(".tmp")
    tmp.write_text(json.dumps({"suffix": suffix, "python": sys.version, "config": config,
                               "modules": modules}, indent=1, sort_keys=True))
    os.replace(tmp, MANIFEST)
    print(f"compiled {len(modules)} of {len(mods)} modules into {BUILD.relative_to(ROOT)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simfs.compiled", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command")
    b = sub.add_parser("build", help="compile the data-path modules (only what changed)")
    b.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="parallel compilers")
    a = ap.parse_args(argv)
    if a.command == "build":
        build(max(1, a.jobs))
        return 0
    states = state()
    for name, s in states.items():
        print(f"{s:9}  {name}")
    counts = {s: sum(v == s for v in states.values()) for s in ("compiled", "stale", "not built", "pure")}
    print(", ".join(f"{n} {s}" for s, n in counts.items() if n or s != "pure"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
