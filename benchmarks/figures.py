"""The results of one benchmark run, as plain JSON-able dicts.

The measuring modules build *sections* here and ``benchmarks.report`` renders them; nothing
in a section is formatted, so a results file from any earlier run renders the same way and
can be compared figure by figure with a later one.

A section is a table: ``columns`` name the clients measured side by side in the same run
(natsobj and its anchors), each ``row`` is one figure with every repeat's sample per column,
and ``ratios`` says which pairs of columns to compare (``(natsobj's column, anchor's)``).
``targets`` are the goals the issues set, checked by the renderer against the medians.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

KiB, MiB, GiB = 1024, 1024**2, 1024**3
HIGHER, LOWER = "higher", "lower"

Section = dict[str, Any]


def section(
    key: str,
    title: str,
    note: str,
    columns: Mapping[str, str],
    ratios: Sequence[tuple[str, str]] = (),
) -> Section:
    """An empty section; ``columns`` maps each column's key to its label, in table order."""
    return {
        "id": key,
        "title": title,
        "note": note,
        "columns": dict(columns),
        "ratios": [list(pair) for pair in ratios],
        "rows": [],
        "targets": [],
    }


def add_row(
    into: Section, label: str, unit: str, better: str, samples: Mapping[str, Sequence[float]]
) -> None:
    """One figure: every repeat's value per column (a column missing here renders as "—")."""
    into["rows"].append(
        {
            "label": label,
            "unit": unit,
            "better": better,
            "samples": {
                column: [_compact(v) for v in values] for column, values in samples.items()
            },
        }
    )


def ratio_target(into: Section, label: str, row: str, of: str, over: str, at_least: float) -> None:
    """A goal on the ratio of medians, expressed as natsobj's advantage (see the report)."""
    into["targets"].append(
        {"label": label, "row": row, "of": of, "over": over, "at_least": at_least}
    )


def value_target(into: Section, label: str, row: str, of: str, at_most: float) -> None:
    """A goal on one column's median (a memory ceiling, a count of requests)."""
    into["targets"].append({"label": label, "row": row, "of": of, "at_most": at_most})


@contextlib.contextmanager
def timed(*sections: Section) -> Iterator[None]:
    """Record the 1-minute load average before and after the block, and its duration, on each
    section it measured: a shared machine's noise is part of what a figure means."""
    load, start = os.getloadavg()[0], time.monotonic()
    yield
    for each in sections:
        each["load"] = [round(load, 2), round(os.getloadavg()[0], 2)]
        each["seconds"] = round(time.monotonic() - start, 1)


def throughput(size: int, runs: Sequence[Mapping[str, float]], key: str) -> list[float]:
    """MiB/s of every run, from its seconds."""
    return [size / MiB / run[key] for run in runs]


def machine(packages: Sequence[str]) -> dict[str, str]:
    """What the figures were measured on: hardware, OS and every version that matters."""
    from natsobj.local.embedded import (
        server_binary,  # not at the top: a --before checkout may lack it
    )

    server = subprocess.run([server_binary(), "--version"], capture_output=True, text=True)
    return {
        "CPU": _cpu_model(),
        "cores": str(os.cpu_count()),
        "memory": f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / GiB:.0f} GiB",
        "OS": f"{_os_name()} ({platform.system()} {platform.release()}, {platform.machine()})",
        "Python": f"{platform.python_implementation()} {platform.python_version()}",
        "nats-server": server.stdout.strip().removeprefix("nats-server: "),
        **{name: _version(name) for name in ("natsobj", "nats-py", *packages)},
    }


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _os_name() -> str:
    release = Path("/etc/os-release")
    if release.exists():
        for line in release.read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    return platform.platform()


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _compact(value: float) -> float:
    """Five significant digits: far below the noise, and keeps the results file small."""
    return float(f"{value:.5g}")
