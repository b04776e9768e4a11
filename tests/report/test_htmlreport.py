"""`simfs report`: one self-contained HTML page of a results directory, rendered by a real headless
chromium (Debian's; `make test` installs it): the headings, the tables' cells computed from
results.json, and every image decoded (naturalWidth > 0, read by a script added to a copy of the
page). The page is built from the committed results/summary/ext2fs-2010 run: no experiment runs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from experiments import report

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "results" / "summary" / "ext2fs-2010"

PROBE = """<script>
window.addEventListener("load", () => {
  const imgs = [...document.images];
  const d = document.createElement("div");
  d.id = "probe";
  d.textContent = "images=" + imgs.length + " decoded=" + imgs.filter(i => i.complete && i.naturalWidth > 0).length
                  + " widths=" + imgs.map(i => i.naturalWidth).join(",");
  document.body.appendChild(d);
});
</script></body>"""


def report_cmd(*args) -> subprocess.CompletedProcess:
    """`simfs report ...` (python -m experiments.htmlreport: the same parser, found without the
    entry point being installed)."""
    return subprocess.run([sys.executable, "-m", "experiments.htmlreport", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("chromium is not installed (apt-get install chromium; `make test` installs it)")
    return exe


def render(page: Path) -> str:
    """The DOM after load, from a real headless browser (no network, no GPU, a fresh profile)."""
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                            "--no-first-run", "--disable-background-networking", "--disable-component-update",
                            "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=5000",
                            "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_report_renders_in_a_real_browser(tmp_path):
    out = tmp_path / "report.html"
    r = report_cmd(RUN, "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out} (1 run")
    page = out.read_text()
    # self-contained: no address to fetch, every image inline
    assert not re.search(r"""(src|href)=["'](https?:|//)""", page)
    assert all(src.startswith("data:image/png;base64,") for src in re.findall(r'<img src="([^"]+)"', page))
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", PROBE, 1))
    dom = render(probed)

    doc = json.loads((RUN / "results.json").read_text())
    assert f"<h1>{doc['title']}</h1>" in dom
    for h in ("Simulated seconds", "The seed's figures beside the model's", "Plots", "How it was run"):
        assert f"<h3>{h}</h3>" in dom, h
    # the tables' cells, as experiments.report formats them from results.json
    header, rows = report.main_table(doc)
    for row in rows:
        assert f"<td>{row[0]}</td>" in dom
        assert f'<td class="num">{row[-1]}</td>' in dom
    for c in doc["comparisons"]:
        assert f'<td class="num">{report.fmt_ratio(c["measured"])}</td>' in dom
        if c["published"]:
            assert f'<td class="num">{report.fmt_ratio(c["published"])}</td>' in dom
    assert "simfs " + " ".join(doc["argv"]) in dom          # how it was run
    # every image decoded: the run's PNGs and the seed-vs-model chart
    pngs = len(list(RUN.glob("*.png"))) + 1
    m = re.search(r'<div id="probe">images=(\d+) decoded=(\d+) widths=([\d,]+)</div>', dom)
    assert m, dom[-2000:]
    assert int(m.group(1)) == pngs and int(m.group(2)) == pngs, m.group(0)
    assert min(int(w) for w in m.group(3).split(",")) >= 400
    assert dom.count("<figcaption>") == pngs


def test_report_of_a_directory_of_runs(tmp_path):
    root = tmp_path / "runs"
    for name in ("ext2fs-2010", "writeback"):
        shutil.copytree(REPO / "results" / "summary" / name, root / name)
    r = report_cmd(root)
    assert r.returncode == 0, r.stderr
    page = (root / "report.html").read_text()
    assert "2 runs" in r.stdout and page.count("<h2 ") == 2 and '<a href="#run1">' in page


@pytest.mark.parametrize("args, words", [
    (["/nonexistent/results"], "no such directory"),
    ([RUN / "table.md"], "not a directory"),
    ([REPO / "docs"], "no results.json"),
    ([RUN, "-o", "/nonexistent/dir/r.html"], "does not exist"),
])
def test_bad_input_is_one_line_exit_2(args, words):
    r = report_cmd(*args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and words in r.stderr, r.stderr


def _section(tmp_path, **changes) -> str:
    """The HTML of the committed run with some fields of its results.json changed (in process)."""
    from experiments.htmlreport import run_section
    doc = {**json.loads((RUN / "results.json").read_text()), **changes}
    return run_section(doc, tmp_path, "run0")          # tmp_path: no PNGs, only the text and tables


def test_no_lone_full_stop_without_a_description(tmp_path):
    for empty in ("", None, "  "):
        page = _section(tmp_path, description=empty)
        assert "<p>.</p>" not in page and not re.search(r"<p>\s*\.\s*</p>", page), empty
    assert "<p>untar onto a fresh image.</p>" in _section(tmp_path, description="untar onto a fresh image.")


def test_ranges_over_repetitions_only_with_more_than_one(tmp_path):
    one = _section(tmp_path, repetitions=1)
    assert "repetitions" not in one.split("<h3>How it was run</h3>")[0]
    assert "+wb s</code>: simulated seconds of writing back" in one        # the table has +wb columns
    three = _section(tmp_path, repetitions=3)
    assert "Ranges are min–max over repetitions." in three
    doc = json.loads((RUN / "results.json").read_text())
    no_wb = [dict(p, drain_included=True) for p in doc["phases"]]       # no +wb column: no note on it
    assert "+wb s" not in _section(tmp_path, phases=no_wb, repetitions=1)
