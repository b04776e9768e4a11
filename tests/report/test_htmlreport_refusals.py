"""`simfs report` on more bad input: -o naming a file the report reads (its results.json was
written over with HTML, exit status 0), and results.json files of the wrong shape (`{}` made an
empty page; a list or a summary of the wrong type a traceback): one line, exit status 2,
nothing written. In-process (experiments.htmlreport.main); no browser."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from experiments import htmlreport
from tests.helpers import refused_by

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "results" / "summary" / "ext2fs-2010"


def refused(capsys, *argv, words=()) -> str:
    return refused_by(htmlreport.main, capsys, *argv, words=words)


@pytest.fixture
def run(tmp_path):
    d = tmp_path / "run"
    shutil.copytree(RUN, d)
    return d


@pytest.mark.parametrize("name", ["results.json", "table.md", "bars.png", "./results.json"])
def test_output_that_is_an_input_is_refused(run, capsys, name):
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    refused(capsys, run, "-o", run / name, words=["is one of the files the report reads"])
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


def test_output_that_is_an_input_of_a_run_below_is_refused(run, capsys):
    refused(capsys, run.parent, "-o", run / "results.json", words=["is one of the files the report reads"])


def test_output_elsewhere_is_written(run, tmp_path, capsys):
    assert htmlreport.main([str(run), "-o", str(tmp_path / "page.html")]) == 0
    assert (tmp_path / "page.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("content, table, words", [
    ("{}", False, "not a results file (an empty object)"),
    ("{}", True, "not a results file (an empty object)"),
    ("[]", False, "not a results file (JSON an array"),
    ("null", False, "not a results file (JSON null"),
    ('{"a": 1}', False, "not a results file (no summary and configs"),
    ('{"summary": 1, "configs": 2}', False, "not a results file (summary and configs must be lists"),
    ('{"summary": [{"config": "a"}], "configs": [{"name": "a"}]}', False, "not a results file (KeyError"),
])
def test_results_of_the_wrong_shape_are_refused(tmp_path, capsys, content, table, words):
    d = tmp_path / "r"
    d.mkdir()
    (d / "results.json").write_text(content)
    if table:
        (d / "table.md").write_text("| a |\n")
    refused(capsys, d, words=[f"{d / 'results.json'}: {words}"])
    assert not (d / "report.html").exists()


def test_another_kind_of_results_with_its_table_is_shown(tmp_path, capsys):
    """A results.json that is not an experiment's (seed001_full's rows) shows its table.md."""
    d = tmp_path / "full"
    shutil.copytree(REPO / "results" / "summary" / "readdir-order-full", d)
    assert htmlreport.main([str(d)]) == 0
    assert "<pre>" in (d / "report.html").read_text()
