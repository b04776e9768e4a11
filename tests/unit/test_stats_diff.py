"""`simfs stats --diff A B` shows the figures plain `simfs stats` shows (issue 51, item 12): the
layout score, the disk-time split, the disk requests by cause, the operations and the latency
percentiles, each with A, B, B - A and B / A; in process, on statistics made by the model."""

from __future__ import annotations

import json

from simfs.cli.main import main


def _run(gap: int) -> dict:
    """Statistics of 20 reads of 8 sectors `gap` sectors apart, each behind a `read` operation."""
    from disk_models import make_disk
    from simfs.blockio.clock import SimClock
    from simfs.blockio.stats import Stats
    clock = SimClock(make_disk("sata7200"), Stats(), 8)
    for i in range(20):
        before = clock.now
        clock.io("R", 1 + gap * i, 8, "data", wait=True)
        clock.stats.op("read", clock.now - before, clock.now)
    clock.drain()
    return clock.stats.snapshot(clock.now)


def _tables(out: str) -> dict[str, dict[str, list[str]]]:
    """{title: {row label: [cells]}} of the Markdown tables `simfs stats` prints off a terminal."""
    found, title = {}, None
    for ln in out.splitlines():
        if ln.startswith("|"):
            if title is not None and not ln.startswith("|:"):
                cells = [c.strip() for c in ln.strip("|").split("|")]
                found[title][cells[0]] = cells[1:]
        elif ln.strip():
            title = ln.strip()
            found[title] = {}
    return found


def test_diff_shows_the_figures_stats_shows(tmp_path, capsys):
    a, b = tmp_path / "far.json", tmp_path / "near.json"
    a.write_text(json.dumps(_run(5000)))
    b.write_text(json.dumps(_run(8)))
    assert main(["stats", "--diff", str(a), str(b)]) == 0
    t = _tables(capsys.readouterr().out)
    main_rows = t["phase total: A, B, B - A and B / A"]
    score = main_rows["layout score (Conway: 1 - jumps/4K read)"]
    assert score[1] == "1.000" and float(score[0]) < 1 and score[2].startswith("+")
    split = t["phase total, disk time (simulated seconds, summed over requests)"]
    assert float(split["seek"][0]) > 0 and split["seek"][1] == "0.000000" and split["seek"][3] == "0.00x"
    assert {"rotation", "transfer", "busy"} <= set(split)
    assert t["phase total, disk requests by cause"]["data"] == ["20", "20", "0", "1.00x"]
    ops = t["phase total, operations (count, simulated seconds, mean)"]
    assert ops["read: count"] == ["20", "20", "0", "1.00x"] and float(ops["read: mean ms"][1]) > 0
    lat = t["phase total, latency (simulated ms)"]
    for q in ("count", "mean", "p50", "p90", "p99", "p99.9", "max"):
        assert f"disk all {q}" in lat and f"op read {q}" in lat, q
    # milliseconds, as plain `simfs stats` prints latency
    summary = _run(5000)["total"]["latency"]["disk"]["all"]
    assert lat["disk all p50"][0] == f"{1000 * summary['p50']:.3f}"
    assert "rotational misses" in lat


def test_diff_json_carries_the_same_sections(tmp_path, capsys):
    a, b = tmp_path / "far.json", tmp_path / "near.json"
    a.write_text(json.dumps(_run(5000)))
    b.write_text(json.dumps(_run(8)))
    assert main(["stats", "--diff", str(a), str(b), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["name"]: r for r in doc["rows"]}
    assert rows["disk reads"]["diff"] == 0 and rows["seeks (>128 sectors)"]["b"] == 0   # as before
    assert rows["layout score (Conway: 1 - jumps/4K read)"]["b"] == 1.0
    sections = {s["title"]: {r["name"]: r for r in s["rows"]} for s in doc["sections"]}
    lat = sections["latency (simulated ms)"]
    assert lat["disk all p99"]["a"] == _run(5000)["total"]["latency"]["disk"]["all"]["p99"]   # seconds
    assert sections["disk time (simulated seconds, summed over requests)"]["seek"]["b"] == 0.0
