"""A small seeded mutation tester for simfs's core modules: do the fast tests notice a planted bug?

    python tools/mutation/mutation.py [--per-module N] [--seed S] [--only MOD,...]
                                      [--timeout SEC] [--out FILE] [--list] [--keep DIR]

For each module of targets.toml it collects every place a small bug can be planted (below),
takes a seeded sample of N of them (plus the module's pinned mutants: bugs once found to
survive, kept so that they stay killed), and for each mutant writes the mutated module into
a copy of the tree, runs the module's covering fast tests there (`pytest -x`, `not long and
not serial`, SIMFS_PURE=1 so the compiled twin of a module never hides its mutant, and a
per-mutant timeout), and counts it killed (a test failed), timed out or survived. The table
(per module: killed, timed out, survived, equivalent, score) goes to --out, and each
survivor is listed with its line so that it can be killed by a test or named equivalent in
equivalent.toml (with the reason: a mutant no test can tell from the original).

Mutations (ast-based, on one node at a time, written back into the source text in place):
  cmp   a comparison operator flipped (< <=, > >=, == !=, in / not in, is / is not)
  not   a `not` dropped
  bool  `and` <-> `or`
  arith + <-> -, * <-> //, // -> *, % -> //, << <-> >>, & <-> |
  off1  a `+ 1` or `- 1` dropped
  const an integer constant c -> c + 1 (0 -> 1, 1 -> 2 ...; True <-> False)
  args  the first two positional arguments of a call swapped (not of max and min)
  del   an assignment (or augmented assignment) statement deleted (replaced by `pass`)

The tree copy holds only what the tests import (simfs, policies, disk_models, plugin_registry,
experiments, benchmarks, tests, examples, the project files), never build/ (so no compiled
module is there at all) and never .git; the checkout itself is never written.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
COPY_DIRS = ("simfs", "policies", "disk_models", "plugin_registry", "experiments", "benchmarks",
             "tests", "examples", "docs", "tools")
COPY_FILES = ("setup.cfg", "pyproject.toml", "mkdocs.yml", "Makefile")
PYTEST = ["-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
          "-m", "not long and not serial", "--no-header", "-o", "addopts="]

CMP_FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
            ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
ARITH_FLIP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult,
              ast.Mod: ast.FloorDiv, ast.LShift: ast.RShift, ast.RShift: ast.LShift,
              ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}


@dataclass
class Mutant:
    module: str             # path relative to the repository
    kind: str
    lineno: int
    line: str               # the original line, stripped
    new: str                # the replacement text
    start: tuple[int, int]  # (line, col) of the replaced segment, 1-based line
    end: tuple[int, int]
    pinned: bool = False
    salt: int = 0           # the how-many-th mutant of the same line text, kind and change
    result: str = ""
    detail: str = ""
    seconds: float = 0.0

    @property
    def key(self) -> str:
        """Stable across edits elsewhere in the file: the line's text, the kind, the change."""
        h = hashlib.sha1(f"{self.module}\0{self.line}\0{self.kind}\0{self.new}\0{self.salt}".encode()).hexdigest()
        return h[:10]

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        offs = [0]
        for ln in lines:
            offs.append(offs[-1] + len(ln.encode()))
        raw = source.encode()
        a = offs[self.start[0] - 1] + self.start[1]
        b = offs[self.end[0] - 1] + self.end[1]
        return (raw[:a] + self.new.encode() + raw[b:]).decode()


@dataclass
class Target:
    module: str
    tests: list[str]
    k: str = ""
    pinned: list[dict] = field(default_factory=list)


# finding the sites ----------------------------------------------------------------------------
def _docstring_nodes(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _skipped(tree) -> set[int]:
    """Nodes not worth mutating: docstrings, f-strings, annotations, __slots__, raise messages."""
    skip = _docstring_nodes(tree)
    for node in ast.walk(tree):
        sub = []
        if isinstance(node, ast.JoinedStr):
            sub = [node]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            sub = [a.annotation for a in node.args.args + node.args.kwonlyargs if a.annotation]
            sub += [node.returns] if node.returns else []
        elif isinstance(node, ast.AnnAssign):
            sub = [node.annotation]
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__slots__"
                                                  for t in node.targets):
            sub = [node]
        elif isinstance(node, ast.Raise) and node.exc is not None:
            sub = [node]            # what is raised is tested by the refusals, not the mutant count
        for s in sub:
            for n in ast.walk(s):
                skip.add(id(n))
    return skip


#: calls whose first two arguments commute: swapping them is an equivalent mutant by construction
SYMMETRIC = {"max", "min"}


def _symmetric(call) -> bool:
    f = call.func
    return isinstance(f, ast.Name) and f.id in SYMMETRIC


def _expr(node) -> str:
    return "(" + ast.unparse(node) + ")"


def sites(module: str, source: str) -> list[Mutant]:
    tree = ast.parse(source)
    lines = source.splitlines()
    skip = _skipped(tree)
    out: list[Mutant] = []

    def add(node, kind: str, new: str, whole_stmt: bool = False):
        if node.end_lineno is None:
            return
        out.append(Mutant(module, kind, node.lineno, lines[node.lineno - 1].strip(), new,
                          (node.lineno, _col(lines, node.lineno, node.col_offset)),
                          (node.end_lineno, _col(lines, node.end_lineno, node.end_col_offset))))

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                flip = CMP_FLIP.get(type(op))
                if flip:
                    m = _copy(node)
                    m.ops[i] = flip()
                    add(node, "cmp", _expr(m))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            add(node, "not", _expr(node.operand))
        elif isinstance(node, ast.BoolOp):
            m = _copy(node)
            m.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            add(node, "bool", _expr(m))
        elif isinstance(node, ast.BinOp):
            flip = ARITH_FLIP.get(type(node.op))
            if flip:
                m = _copy(node)
                m.op = flip()
                add(node, "arith", _expr(m))
            if (isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.right, ast.Constant)
                    and node.right.value == 1 and not isinstance(node.right.value, bool)):
                add(node, "off1", _expr(node.left))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, bool):
            new = (not node.value) if isinstance(node.value, bool) else node.value + 1
            add(node, "const", repr(new))
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and not any(
                isinstance(a, ast.Starred) for a in node.args[:2]) and not _symmetric(node):
            m = _copy(node)
            m.args[0], m.args[1] = m.args[1], m.args[0]
            if ast.unparse(m.args[0]) != ast.unparse(m.args[1]):
                add(node, "args", _expr(m))
        elif isinstance(node, (ast.Assign, ast.AugAssign)) and node.lineno == node.end_lineno:
            add(node, "del", "pass")
    out.sort(key=lambda m: (m.start, m.kind, m.new))
    return out


def _col(lines: list[str], lineno: int, col_bytes: int) -> int:
    return col_bytes                    # ast offsets are UTF-8 byte offsets, as apply() uses


def _copy(node):
    return ast.parse(ast.unparse(node), mode="eval").body


def pinned(module: str, source: str, specs: list[dict]) -> list[Mutant]:
    """The module's pinned mutants: `find` (a piece of one line, unique or with `nth`: its
    occurrence counted from 0) -> `replace`."""
    out = []
    raw_lines = source.splitlines(keepends=True)
    for spec in specs:
        hits = [i for i, ln in enumerate(raw_lines) if spec["find"] in ln]
        nth = spec.get("nth")
        if nth is None and len(hits) != 1 or nth is not None and not 0 <= nth < len(hits):
            raise SystemExit(f"targets.toml: pinned mutant {spec['find']!r} matches {len(hits)} lines "
                             f"of {module} (must be one, or give nth)")
        i = hits[nth or 0]
        col = len(raw_lines[i][:raw_lines[i].index(spec["find"])].encode())
        end = col + len(spec["find"].encode())
        out.append(Mutant(module, "pinned", i + 1, raw_lines[i].strip(), spec["replace"],
                          (i + 1, col), (i + 1, end), pinned=True, detail=spec.get("why", "")))
    return out


def valid(m: Mutant, source: str) -> bool:
    try:
        new = m.apply(source)
        compile(new, m.module, "exec")
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return False
    return new != source


# running --------------------------------------------------------------------------------------
def make_copy(dest: Path, working_tree: bool = False) -> None:
    """The tree the mutants are written into: what HEAD holds (git archive), or with
    `working_tree` the files as they are now (uncommitted edits included)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    have = [p for p in (*COPY_DIRS, *COPY_FILES) if (REPO / p).exists()]
    if not working_tree:
        top = subprocess.run(["git", "-C", str(REPO), "ls-tree", "--name-only", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.split()
        have = [p for p in have if p in top]
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD", *have],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        return
    ignore = shutil.ignore_patterns("__pycache__", ".hypothesis", "*.so", "*.img")
    for p in have:
        if (REPO / p).is_dir():
            shutil.copytree(REPO / p, dest / p, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(REPO / p, dest / p)


def run_tests(tree: Path, target: Target, timeout: float) -> tuple[str, str, float]:
    """('killed' | 'survived' | 'timeout' | 'error', last lines, seconds)."""
    shutil.rmtree(tree / ".hypothesis", ignore_errors=True)   # no example found for one mutant replays for the next
    env = dict(os.environ, SIMFS_PURE="1", PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    argv = [sys.executable, *PYTEST, *(["-k", target.k] if target.k else []), *target.tests]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return "timeout", "", time.monotonic() - t0
    took = time.monotonic() - t0
    tail = "\n".join(out.strip().splitlines()[-3:])
    if p.returncode == 0:
        return "survived", tail, took
    if p.returncode in (1, 2):          # a test failed, or the tests could not even be collected
        return "killed", tail, took
    return "error", tail, took


def load_targets(path: Path) -> list[Target]:
    data = tomllib.loads(path.read_text())
    return [Target(m, t["tests"], t.get("k", ""), t.get("pinned", [])) for m, t in data["module"].items()]


def load_equivalent(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    return {e["key"]: " ".join(e["reason"].split()) for e in tomllib.loads(path.read_text()).get("mutant", [])}


def sample(target: Target, per_module: int, seed: int, root: Path = REPO) -> list[Mutant]:
    source = (root / target.module).read_text()
    pool = [m for m in sites(target.module, source) if valid(m, source)]
    rng = random.Random(f"{seed}:{target.module}")
    chosen = rng.sample(pool, min(per_module, len(pool)))
    chosen.sort(key=lambda m: m.start)
    out = pinned(target.module, source, target.pinned) + chosen
    seen: dict[str, int] = {}
    for m in out:                       # the same change on two equal lines: two keys
        k = m.key
        m.salt = seen.get(k, 0)
        seen[k] = m.salt + 1
    return out


def rendered(files: list[Path]) -> dict[str, list]:
    """Module -> its mutants as recorded (SimpleNamespace), the last file's for each module."""
    from types import SimpleNamespace
    out: dict[str, list] = {}
    for f in files:
        mods: dict[str, list] = {}
        for line in f.read_text().splitlines():
            r = json.loads(line)
            mods.setdefault(r["module"], []).append(SimpleNamespace(
                module=r["module"], key=r["key"], kind=r["kind"], lineno=r["line"], line=r["text"],
                new=r["new"], result=r["result"], pinned=r["pinned"], detail=r.get("detail", "")))
        out.update(mods)
    return out


def table(results: dict[str, list[Mutant]], equivalent: dict[str, str], args) -> str:
    rows = ["| module | mutants | killed | timeout | survived | equivalent | score |",
            "|:--|--:|--:|--:|--:|--:|--:|"]
    surv_lines = []
    for mod, ms in results.items():
        eq = [m for m in ms if m.result == "survived" and m.key in equivalent]
        k = sum(m.result == "killed" for m in ms)
        t = sum(m.result == "timeout" for m in ms)
        s = sum(m.result == "survived" and m.key not in equivalent for m in ms)
        e = sum(m.result == "error" for m in ms)
        live = len(ms) - len(eq) - e
        score = f"{100 * (k + t) / live:.0f} %" if live else "-"
        rows.append(f"| `{mod}` | {len(ms)} | {k} | {t} | {s} | {len(eq)} | {score} |"
                    + (f" ({e} errors)" if e else ""))
        for m in ms:
            if m.result == "survived":
                why = equivalent.get(m.key)
                surv_lines.append(f"- `{mod}:{m.lineno}` {m.kind} `{m.key}`: `{m.line}` -> `{m.new}`"
                                  + (f" (equivalent: {why})" if why else " **SURVIVED**"))
            elif m.result == "error":
                surv_lines.append(f"- `{mod}:{m.lineno}` {m.kind} `{m.key}`: tests errored: {m.detail}")
    pins = [f"- `{m.module}:{m.lineno}` `{m.line}` -> `{m.new}`: {m.result}"
            for ms in results.values() for m in ms if m.pinned]
    cmd = "python tools/mutation/mutation.py " + " ".join(args)
    return "\n".join([f"`{cmd}`", "", *rows, "", "Pinned mutants:", "", *(pins or ["- none"]), "",
                      "Survivors and errors:", "", *(surv_lines or ["- none"]), ""])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-module", type=int, default=20, help="sampled mutants per module (20)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated module paths (or parts of them)")
    ap.add_argument("--timeout", type=float, default=240, help="seconds per mutant (240)")
    ap.add_argument("--targets", type=Path, default=HERE / "targets.toml")
    ap.add_argument("--equivalent", type=Path, default=HERE / "equivalent.toml")
    ap.add_argument("--out", type=Path, default=None, help="the table (default: stdout only)")
    ap.add_argument("--json", type=Path, default=None, help="every mutant and its result, as JSON lines")
    ap.add_argument("--keep", type=Path, default=Path("/tmp/simfs-mutation"),
                    help="where the copy of the tree is made (default /tmp/simfs-mutation)")
    ap.add_argument("--list", action="store_true", help="list the sampled mutants, run nothing")
    ap.add_argument("--render", type=Path, nargs="+", metavar="JSONL",
                    help="run nothing: the table of earlier runs' --json files (a module's results "
                         "from the last file that has it)")
    ap.add_argument("--working-tree", action="store_true",
                    help="mutate a copy of the files as they are now (default: as HEAD has them)")
    a = ap.parse_args(argv)
    if a.per_module < 0 or a.timeout <= 0:
        print("mutation: --per-module must be >= 0 and --timeout > 0", file=sys.stderr)
        return 2
    equivalent = load_equivalent(a.equivalent)
    if a.render:
        text = table(rendered(a.render), equivalent, ["--render", *map(str, a.render)])
        print(text)
        if a.out:
            a.out.write_text(text)
        return 0
    targets = load_targets(a.targets)
    if a.only:
        want = a.only.split(",")
        targets = [t for t in targets if any(w in t.module for w in want)]
        if not targets:
            print(f"mutation: no module of {a.targets.name} matches --only {a.only}", file=sys.stderr)
            return 2
    tree = a.keep / "tree"
    make_copy(tree, a.working_tree)
    plan = {t.module: (t, sample(t, a.per_module, a.seed, tree)) for t in targets}
    if a.list:
        for mod, (_, ms) in plan.items():
            for m in ms:
                print(f"{mod}:{m.lineno} {m.kind} {m.key}: {m.line}  ->  {m.new}")
        return 0
    results: dict[str, list[Mutant]] = {}
    failed_base: list[str] = []
    jl = a.json.open("w") if a.json else None
    for mod, (target, ms) in plan.items():
        path = tree / mod
        original = path.read_text()
        base, tail, took = run_tests(tree, target, a.timeout * 3)
        if base != "survived":
            print(f"{mod}: the unmutated tests do not pass ({base}), module left out: {tail}",
                  file=sys.stderr)
            failed_base.append(mod)
            continue
        print(f"{mod}: {len(ms)} mutants, tests take {took:.0f} s unmutated", flush=True)
        for i, m in enumerate(ms):
            try:
                path.write_text(m.apply(original))
                m.result, m.detail, m.seconds = run_tests(tree, target, max(a.timeout, 3 * took))
            finally:
                path.write_text(original)
            print(f"  [{i + 1}/{len(ms)}] {m.result:8} {m.seconds:5.0f}s {mod}:{m.lineno} {m.kind} "
                  f"{m.key}: {m.new[:70]}", flush=True)
            if jl:
                jl.write(json.dumps({"module": mod, "key": m.key, "kind": m.kind, "line": m.lineno,
                                     "text": m.line, "new": m.new, "result": m.result,
                                     "seconds": round(m.seconds, 1), "pinned": m.pinned,
                                     "detail": m.detail if m.result == "error" else ""}) + "\n")
                jl.flush()
        results[mod] = ms
    if jl:
        jl.close()
    shown = [x for x in (argv if argv is not None else sys.argv[1:])]
    text = table(results, equivalent, shown)
    if failed_base:
        text += "\nLeft out (their tests fail unmutated): " + ", ".join(f"`{m}`" for m in failed_base) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text)
    return 1 if failed_base else 0


if __name__ == "__main__":
    sys.exit(main())
