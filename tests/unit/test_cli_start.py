"""`simfs` starts at once: a run imports only the module of the command it names, and the
stand-ins for the others (simfs.cli.main.COMMANDS) say what the modules' own parsers say.
The time itself is a benchmark (benchmarks/bench_cli_start.py), not a test."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

cli = importlib.import_module("simfs.cli.main")     # (simfs.cli.main is also the function)

HEAVY = ("numpy", "matplotlib", "dask", "rich", "pandas", "simfs.fs", "simfs.fuse", "simfs.ondisk",
         "simfs.pictures", "experiments")


def heavy_imported(code: str) -> list[str]:
    """The heavy modules a fresh interpreter has imported after running `code`."""
    probe = (f"import sys, json\n{code}\nheavy = {HEAVY!r}\n"
             "print(json.dumps(sorted(m for m in sys.modules\n"
             "                        if any(m == h or m.startswith(h + '.') for h in heavy))))")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


@pytest.mark.parametrize("argv", [["mkfs", "--help"], ["--version"], ["fsck", "x.img"], []])
def test_parsing_imports_nothing_heavy(argv):
    """Building the parser for `simfs mkfs` (or --version, or fsck) imports no numpy, matplotlib,
    rich, volume or FUSE layer: those load inside the commands that use them."""
    assert heavy_imported(f"from simfs.cli.main import build_parser\nbuild_parser({argv!r})") == []


def test_only_the_chosen_command_module_is_imported():
    code = ("from simfs.cli.main import build_parser\nbuild_parser(['mkfs', 'x.img', '1M'])\n"
            "print(json.dumps(sorted(k for k in sys.modules if k.startswith('simfs.cli.'))))")
    r = subprocess.run([sys.executable, "-c", "import sys, json\n" + code], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == ["simfs.cli.common", "simfs.cli.main", "simfs.cli.mkfs"]


def _subparsers(parser):
    return next(a for a in parser._actions if a.dest == "command")


@pytest.fixture(scope="module")
def full():
    return cli.build_parser()


def test_the_table_says_what_the_parsers_say(full):
    """COMMANDS' names, aliases, modules and help lines are those the modules register, in order
    (a help line changed in a module and not here fails)."""
    real = [(c.metavar, c.help) for c in _subparsers(full)._choices_actions]
    own = [(c.metavar, c.help) for c in _subparsers(cli.build_parser(["mkfs"]))._choices_actions]
    table = [(name + (f" ({', '.join(aliases)})" if aliases else ""), help_)
             for name, _, aliases, help_ in cli.COMMANDS if name != "*"]
    assert own == table, ("simfs/cli/main.py's COMMANDS repeats each command's name, aliases and "
                          "help line (so `simfs --help` needs no module): make it say what the module says")
    assert [r for r in real if r[0].split()[0] in cli.MODULE_OF] == table
    names = list(_subparsers(full).choices)
    assert [n for n in names if n in cli.MODULE_OF] == list(cli.MODULE_OF)


def test_top_level_help_lists_every_command(full):
    """`simfs --help` from a run given a command (stand-ins, entry points loaded for their help)
    is the full parser's help, word for word."""
    assert cli.build_parser(["mkfs"]).format_help() == full.format_help()
    assert cli.build_parser([]).format_help() == full.format_help()


@pytest.mark.parametrize("word", sorted(cli.MODULE_OF))
def test_each_command_help_is_its_own(full, word):
    lazy = cli.build_parser([word])
    assert _subparsers(lazy).choices[word].format_help() == _subparsers(full).choices[word].format_help()


def test_an_entry_point_command_and_a_mistyped_word(full, capsys):
    """Entry points (experiments' commands) still parse, and a mistyped command gets the same
    one-line refusal, with its suggestion, as before."""
    extra = [n for n in _subparsers(full).choices if n not in cli.MODULE_OF]
    for word in extra:
        assert _subparsers(cli.build_parser([word])).choices[word].format_help() == \
            _subparsers(full).choices[word].format_help()
    with pytest.raises(SystemExit) as e:
        cli.main(["mkfss", "x"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice: 'mkfss'" in err and "mkfs" in err.split("(choose")[1]
    with pytest.raises(SystemExit):
        full.parse_args(["mkfss", "x"])
    assert capsys.readouterr().err == err


def test_command_word():
    assert cli.command_word(["--version"]) is None
    assert cli.command_word(["-h", "disks", "show"]) == "disks"
    assert cli.command_word(["--", "mkfs"]) == "mkfs"
