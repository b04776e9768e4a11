"""`simfs plot` on trace rows that are no request (nan, inf or negative times, times out of
order, an lba past any disk, no sectors) and on an empty -o / --movie: one line naming the file
and line, exit status 2, nothing written (a traceback from numpy before). In-process; no FUSE."""

from __future__ import annotations

import pytest

from simfs.blockio.trace import FIELDS
from simfs.cli.main import main
from tests.helpers import refused_by

ROW = dict(issue="0.000000000", start="0.000000000", finish="0.008373640", op="R", lba="0", sectors="8",
           queue="0", overhead="0", seek="0", rotation="0", transfer="0", interface="0", rmw="0",
           cache_hit="0", cause="super", ino="0", phase="all")


def _trace(tmp_path, **bad) -> str:
    """A trace of three good requests, the second one changed by `bad`."""
    rows = [dict(ROW), dict(ROW, issue="0.01", start="0.01", finish="0.02", lba="1024"),
            dict(ROW, issue="0.03", start="0.03", finish="0.04", op="W", lba="64")]
    rows[1].update(bad)
    p = tmp_path / "t.csv"
    p.write_text("\n".join([",".join(FIELDS)] + [",".join(r[k] for k in FIELDS) for r in rows]) + "\n")
    return str(p)


def refused(capsys, *argv, words=()) -> str:
    return refused_by(main, capsys, *argv, words=words)


def test_a_good_trace_draws(tmp_path, capsys):
    assert main(["plot", _trace(tmp_path), "-o", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").exists()


@pytest.mark.parametrize("bad, words", [
    (dict(start="nan"), ["t.csv:3: start is nan"]),
    (dict(finish="inf"), ["t.csv:3: finish is inf"]),
    (dict(issue="1e400"), ["t.csv:3: issue is inf"]),
    (dict(issue="-5", start="-5"), ["t.csv:3: issue is -5.0"]),
    (dict(finish="0.001"), ["t.csv:3:", "not in that order"]),
    (dict(lba="99999999999999999999999"), ["t.csv:3: lba 99999999999999999999999"]),
    (dict(lba="-100"), ["t.csv:3: lba -100"]),
    (dict(sectors="0"), ["t.csv:3:", "sectors 0"]),
])
@pytest.mark.parametrize("how", ["-o", "--json", "--movie"])
def test_rows_that_are_no_request_are_refused(tmp_path, capsys, bad, words, how):
    out = {"-o": ["-o", tmp_path / "p.png"], "--json": ["--json"], "--movie": ["--movie", tmp_path / "m.gif"]}
    refused(capsys, "plot", _trace(tmp_path, **bad), *out[how], words=["bad trace"] + words)
    assert not (tmp_path / "p.png").exists() and not (tmp_path / "m.gif").exists()


@pytest.mark.parametrize("flag", ["-o", "--movie"])
def test_an_empty_output_path_is_refused(tmp_path, capsys, flag):
    """`-o ''` drew nothing and exited 0."""
    refused(capsys, "plot", _trace(tmp_path), flag, "", words=[f"{flag} ''", "empty path"])
