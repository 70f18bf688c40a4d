"""BENCHMARKS.md is generated: the renderer on a synthetic results dict (no benchmark run), the
history files, and one real case of every client against the session's nats-server, so a
change to natsobj that breaks the benchmark modules shows up in ``make test``."""

from __future__ import annotations

import copy
import time

import pytest

from benchmarks import core, report
from benchmarks.figures import HIGHER, LOWER, add_row, machine, ratio_target, section

COLUMNS = {"raw": "raw JetStream", "natspy": "nats-py ObjectStore", "ours": "natsobj"}


def synthetic(mode: str = "full", ours_put: float = 400.0) -> dict:
    speed = section(
        "transfer",
        "Throughput",
        "How it was measured.",
        COLUMNS,
        [("ours", "raw"), ("ours", "natspy")],
    )
    add_row(
        speed,
        "64 MiB put",
        "MiB/s",
        HIGHER,
        {
            "raw": [390, 400, 410],
            "natspy": [190, 200, 230],
            "ours": [ours_put - 10, ours_put, ours_put + 5],
        },
    )
    add_row(
        speed,
        "64 MiB get",
        "MiB/s",
        HIGHER,
        {"raw": [300, 300, 300], "natspy": [50, 60, 70], "ours": [250, 270, 280]},
    )
    ratio_target(speed, "64 MiB put >= 0.9x raw", "64 MiB put", "ours", "raw", 0.9)
    memory = section("memory", "Memory", "Same runs.", COLUMNS, [("ours", "raw")])
    add_row(memory, "64 MiB", "MiB", LOWER, {"raw": [20, 22], "ours": [10, 11]})
    return {
        "schema": 1,
        "id": f"2026-11-23T010000Z-{mode}",
        "mode": mode,
        "started": "2026-11-23T01:00:00Z",
        "seconds": 754.0,
        "machine": {"cpu": "Test CPU 9000", "cores": "2", "memory": "24 GiB"},
        "skipped": ["spark", "streaming"],
        "load_start": [0.5, 0.4, 0.3],
        "load_end": [1.75, 1.5, 1.25],
        "sections": [speed, memory],
    }


def figure_line(markdown: str, figure: str, client: str) -> str:
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {figure} ("))
    return next(line for line in lines[start:] if f"| {client} |" in line)


@pytest.mark.unit
def test_report_has_machine_spread_ratios_and_load_without_previous():
    markdown = report.render(synthetic())
    assert "## Machine" in markdown and "| cpu | Test CPU 9000 |" in markdown
    assert "| figure | measured | min | median | max | n | previous median |" in markdown
    assert (
        "| 64 MiB put (MiB/s, more is better) | raw JetStream | 390 | **400** | 410 | 3 |  |"
        in (markdown)
    )
    assert "| natsobj / raw JetStream | natsobj / nats-py ObjectStore |" in markdown
    assert "| 64 MiB put (MiB/s, more is better) | 1.00x | 2.00x |" in markdown
    # less memory is better: the anchor's median over natsobj's
    assert "| 64 MiB (MiB, less is better) | 2.00x |" in markdown
    assert "at the start | 0.50, 0.40, 0.30 |" in markdown
    assert "at the end | 1.75, 1.50, 1.25 |" in markdown
    assert "| 64 MiB put >= 0.9x raw | 1.00x | yes |" in markdown
    assert "took 12 min 34 s" in markdown
    assert "nothing to compare" in markdown and "Not measured in this run: spark" in markdown
    assert "docs/performance.md" in markdown and "Quick mode" not in markdown


@pytest.mark.unit
def test_report_shows_the_previous_figure_only_where_it_moved():
    previous = synthetic(ours_put=200.0)
    previous["id"] = "2026-11-22T010000Z-full"
    markdown = report.render(synthetic(ours_put=400.0), previous)
    assert "`benchmarks/results/2026-11-22T010000Z-full.json`" in markdown
    assert figure_line(markdown, "64 MiB put", "natsobj").endswith("| 3 | 200 |")
    assert figure_line(markdown, "64 MiB put", "raw JetStream").endswith("| 3 |  |")
    assert "| 64 MiB put (MiB/s, more is better) | 1.00x (0.50x) | 2.00x (1.00x) |" in markdown
    assert "| 64 MiB get (MiB/s, more is better) | 0.90x | 4.50x |" in markdown
    assert "| 64 MiB put >= 0.9x raw | 1.00x (0.50x) | yes |" in markdown


@pytest.mark.unit
def test_quick_mode_says_so_and_a_failed_group_is_reported():
    results = synthetic(mode="quick")
    results["sections"].append(
        {
            "id": "cluster",
            "title": "cluster",
            "note": "",
            "columns": {},
            "ratios": [],
            "rows": [],
            "error": "RuntimeError: no leader",
        }
    )
    markdown = report.render(results)
    assert "**Quick mode**" in markdown.split("## Machine")[0]
    assert "**Failed in this run**: RuntimeError: no leader" in markdown


@pytest.mark.unit
def test_history_files_never_collide_and_compare_with_the_same_mode(tmp_path):
    first, second, quick = synthetic(), synthetic(ours_put=500.0), synthetic(mode="quick")
    for results in (first, second, quick):
        results.pop("id")
    saved = [report.save(copy.deepcopy(r), tmp_path) for r in (first, second)]
    assert saved[0] != saved[1] and all(path.exists() for path in saved)
    latest = copy.deepcopy(first)
    latest["started"] = "2026-11-23T02:00:00Z"
    report.save(quick, tmp_path)
    report.save(latest, tmp_path)
    previous = report.previous_of(latest, tmp_path)
    assert previous is not None and previous["id"] == saved[1].stem
    assert report.previous_of(quick, tmp_path) is None


def test_the_quickest_real_case_runs_for_every_client(nats_url, tmp_path):
    """1 KiB put and get by raw JetStream, nats-py's ObjectStore and natsobj, one run each, each
    in its own process, as ``make bench`` runs them; then rendered."""
    began = time.monotonic()
    speed, memory = core.measure_transfer(nats_url, tmp_path, {"1 KiB": 1024}, 1, small_extra=0)
    for row in speed["rows"]:
        assert sorted(row["samples"]) == sorted(COLUMNS)
        assert all(len(values) == 1 and values[0] > 0 for values in row["samples"].values())
    results = {**synthetic(), "machine": machine([]), "sections": [speed, memory]}
    markdown = report.render(results)
    assert "| 1 KiB get (MiB/s, more is better) |" in markdown
    assert "nats-server" in markdown and "v2." in markdown
    assert time.monotonic() - began < 30
