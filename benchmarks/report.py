"""BENCHMARKS.md from a results dict (``benchmarks.figures``), and the results history.

``render(results, previous)`` is a pure function, so the report's shape is tested on a
synthetic dict without running a benchmark. Every run's results are kept as a small JSON file
in ``benchmarks/results/``; the report compares the run with the newest earlier file of the
same mode and puts the previous figure beside every median and ratio that moved by more than
``MOVED``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.figures import HIGHER, Section

RESULTS = Path(__file__).resolve().parent / "results"
MOVED = 0.10  # a relative change of a median or ratio above this shows the previous figure


# -- the history --------------------------------------------------------------------------------


def save(results: dict[str, Any], directory: Path = RESULTS) -> Path:
    """Write ``results`` as ``<UTC date and time>-<mode>.json`` and set ``results["id"]`` to
    its name; a second run in the same second gets a suffix instead of overwriting."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"{results['started'].replace(':', '')}-{results['mode']}"
    path, extra = directory / f"{stem}.json", 1
    while path.exists():
        extra += 1
        path = directory / f"{stem}-{extra}.json"
    results["id"] = path.stem
    path.write_text(json.dumps(results, separators=(",", ":"), sort_keys=True) + "\n")
    return path


def previous_of(results: dict[str, Any], directory: Path = RESULTS) -> dict[str, Any] | None:
    """The newest results file of the same mode older than ``results``: a quick run compared
    with a full one would show every figure as moved."""
    candidates = sorted(
        (
            path
            for path in directory.glob(f"*-{results['mode']}*.json")
            if path.stem < results.get("id", "\uffff")
        ),
        key=lambda path: path.stem,
    )
    return json.loads(candidates[-1].read_text()) if candidates else None


# -- rendering ----------------------------------------------------------------------------------


def render(results: dict[str, Any], previous: dict[str, Any] | None = None) -> str:
    """The whole of BENCHMARKS.md for ``results``, compared with ``previous`` where given."""
    before = _Previous(previous)
    lines = _header(results, previous)
    lines += _machine(results)
    lines += _targets(results["sections"], before)
    for each in results["sections"]:
        lines += _section(each, before)
    return "\n".join(lines).rstrip() + "\n"


def render_section(each: Section) -> str:
    """One section on its own, for a module run by hand (``python -m benchmarks.cluster``)."""
    return "\n".join(_section(each, _Previous(None))).strip() + "\n"


def _header(results: dict[str, Any], previous: dict[str, Any] | None) -> list[str]:
    quick = results["mode"] == "quick"
    mode = (
        "**Quick mode** (`make bench-quick`): smaller objects and stores and fewer repeats, for"
        " development. Quote the full mode's figures (`make bench`), not these."
        if quick
        else "**Full mode** (`make bench`)."
    )
    compared = (
        f"Compared with the previous {results['mode']} run, `benchmarks/results/"
        f"{previous['id']}.json`: where a median or a ratio moved by more than {MOVED:.0%},"
        " the previous figure stands beside it in brackets."
        if previous
        else f"No earlier {results['mode']} run in `benchmarks/results/`: nothing to compare."
    )
    skipped = (
        f"Not measured in this run: {', '.join(results['skipped'])}. Spark and streaming run"
        " in the full mode and with `--spark` in the quick one; `--skip` leaves out others."
        if results.get("skipped")
        else "Every benchmark group ran."
    )
    return [
        "# Benchmarks",
        "",
        f"Written by `make bench` (`python -m benchmarks.run`) from one run on one machine;"
        f" do not edit by hand. The run's figures: `benchmarks/results/{results['id']}.json`."
        " Why the figures are what they are, and what was tried and not kept:"
        " [docs/performance.md](docs/performance.md).",
        "",
        mode,
        "",
        skipped,
        "",
        compared,
        "",
        "Every natsobj figure is measured beside its anchors (the raw JetStream limit, nats-py's"
        " built-in ObjectStore, S3 directly, local Parquet) in the same run against the same"
        " server. Each case runs in its own process and the cases take turns in every repeat,"
        " so the machine's noise falls on all of them alike. Tables give the minimum, median"
        " and maximum over the repeats (*n*); ratios are of medians and read as natsobj's"
        " advantage: above 1.00x natsobj is better (faster, more operations per second, less"
        " memory), below it the anchor is.",
        "",
    ]


def _machine(results: dict[str, Any]) -> list[str]:
    start, end = results["load_start"], results["load_end"]
    lines = ["## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in results["machine"].items()]
    lines += [
        f"| run | started {results['started'].replace('T', ' ').rstrip('Z')} UTC,"
        f" {_duration(results['seconds'])} |",
        f"| load average (1, 5, 15 min) at the start | {_loads(start)} |",
        f"| load average (1, 5, 15 min) at the end | {_loads(end)} |",
        "",
    ]
    return lines


def _targets(sections: list[Section], before: _Previous) -> list[str]:
    rows = []
    for each in sections:
        for target in each.get("targets", ()):
            measured, met = _check(each, target)
            if measured is None:
                continue
            old, _ = _check(before.section(each["id"]), target)
            shown = _with_previous(measured, old, _ratio_text if "over" in target else _number)
            rows.append(f"| {target['label']} | {shown} | {'yes' if met else '**no**'} |")
    if not rows:
        return []
    return ["## Targets", "", "| target | measured | met |", "|---|---:|---|", *rows, ""]


def _check(each: Section | None, target: dict[str, Any]) -> tuple[float | None, bool]:
    row = _row(each, target["row"]) if each else None
    if row is None:
        return None, False
    if "over" in target:
        measured = _advantage(row, target["of"], target["over"])
        return measured, measured is not None and measured >= target["at_least"]
    measured = _median(row, target["of"])
    return measured, measured is not None and measured <= target["at_most"]


def _section(each: Section, before: _Previous) -> list[str]:
    lines = [f"## {each['title']}", ""] + ([each["note"], ""] if each["note"] else [])
    if "error" in each:
        return [*lines, f"**Failed in this run**: {each['error']}", ""]
    if "load" in each:
        load = each["load"]
        lines += [
            f"1-minute load average {load[0]:.1f} at the start, {load[1]:.1f} at the end;"
            f" {_duration(each['seconds'])}.",
            "",
        ]
    old = before.section(each["id"])
    lines += _figures_table(each, old)
    if each["ratios"]:
        lines += _ratios_table(each, old)
    return lines


def _figures_table(each: Section, old: Section | None) -> list[str]:
    lines = [
        "| figure | measured | min | median | max | n | previous median |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in each["rows"]:
        label = _figure_label(row)
        for column, name in each["columns"].items():
            values = row["samples"].get(column)
            if not values:
                continue
            median = statistics.median(values)
            previous = _median(_row(old, row["label"]), column)
            moved = _number(previous) if _moved(median, previous) else ""
            lines.append(
                f"| {label} | {name} | {_number(min(values))} | **{_number(median)}**"
                f" | {_number(max(values))} | {len(values)} | {moved} |"
            )
            label = ""
    return [*lines, ""]


def _ratios_table(each: Section, old: Section | None) -> list[str]:
    columns = each["columns"]
    pairs = [tuple(pair) for pair in each["ratios"]]
    header = [f"{columns[ours]} / {columns[anchor]}" for ours, anchor in pairs]
    lines = [
        f"| figure | {' | '.join(header)} |",
        f"|---|{'---:|' * len(pairs)}",
    ]
    for row in each["rows"]:
        cells = []
        for ours, anchor in pairs:
            now = _advantage(row, ours, anchor)
            then = _advantage(_row(old, row["label"]), ours, anchor)
            cells.append("—" if now is None else _with_previous(now, then, _ratio_text))
        if any(cell != "—" for cell in cells):
            lines.append(f"| {_figure_label(row)} | {' | '.join(cells)} |")
    return [*lines, ""]


def _advantage(row: dict[str, Any] | None, ours: str, anchor: str) -> float | None:
    """natsobj's median over the anchor's, turned so that above 1.0 natsobj is better."""
    mine, theirs = _median(row, ours), _median(row, anchor)
    if mine is None or theirs is None or mine == 0 or theirs == 0:
        return None
    return mine / theirs if row["better"] == HIGHER else theirs / mine  # type: ignore[index]


def _median(row: dict[str, Any] | None, column: str) -> float | None:
    values = (row or {}).get("samples", {}).get(column)
    return statistics.median(values) if values else None


def _row(each: Section | None, label: str) -> dict[str, Any] | None:
    return next((row for row in (each or {}).get("rows", ()) if row["label"] == label), None)


def _moved(now: float | None, then: float | None) -> bool:
    if now is None or then is None:
        return False
    if then == 0:
        return now != 0
    return abs(now - then) / abs(then) > MOVED


def _with_previous(now: float, then: float | None, text) -> str:
    return f"{text(now)} ({text(then)})" if _moved(now, then) else text(now)


def _figure_label(row: dict[str, Any]) -> str:
    direction = "more" if row["better"] == HIGHER else "less"
    return f"{row['label']} ({row['unit']}, {direction} is better)"


def _ratio_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def _number(value: float | None) -> str:
    if value is None:
        return "—"
    size = abs(value)
    if size >= 100 or value == 0:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 0.1:
        return f"{value:.2f}"
    return f"{value:.2g}"


def _loads(values: Iterable[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"took {minutes} min {rest} s" if minutes else f"took {rest} s"


class _Previous:
    """The previous run's sections by id (none when there is no previous run)."""

    def __init__(self, results: dict[str, Any] | None) -> None:
        self._sections = {each["id"]: each for each in (results or {}).get("sections", ())}

    def section(self, key: str) -> Section | None:
        found = self._sections.get(key)
        return None if found is None or "error" in found else found
