"""1 KiB put, get and get_info, sequential operations per second, natsobj against nats-py's
ObjectStore.

The cases are ``benchmarks.core``'s ``natspy-ops`` and ``ours-ops`` (each a fresh bucket, so
every put creates a new name), alternating in one run against one server, each in its own
process. ``make bench`` runs ``measure``; ``python -m benchmarks.small_ops [--repeats N]
[--ops N]`` prints the section on its own.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from benchmarks.before import Checkout
from benchmarks.core import BEFORE, run_case
from benchmarks.figures import HIGHER, Section, add_row, ratio_target, section, timed

CASES = {"natspy-ops": "nats-py ObjectStore", "ours-ops": "natsobj"}
OPS = (("put", "put_ops"), ("get", "get_ops"), ("get_info", "get_info_ops"))


def measure(
    url: str, work: Path, repeats: int, count: int, *, before: Checkout | None = None
) -> list[Section]:
    """Each case ``repeats`` times, taking turns (natsobj at ``before`` too, if given)."""
    columns = {**CASES, **({BEFORE: before.label} if before else {})}
    figures = section(
        "small-ops",
        "Small objects: 1 KiB operations, one after another",
        f"{count} operations of each kind per run, in a fresh bucket, so every put creates a"
        " new name. natsobj's `get` is `get_bytes`; nats-py's is its ObjectStore `get`.",
        columns,
        [("ours-ops", "natspy-ops"), *([("ours-ops", BEFORE)] if before else [])],
    )
    with timed(figures):
        runs: dict[str, list[dict[str, float]]] = {column: [] for column in columns}
        for _ in range(repeats):
            for case in CASES:
                runs[case].append(run_case(case, url, count, work / "unused"))
            if before:
                old = run_case("ours-ops", url, count, work / "unused", before=before)
                runs[BEFORE].append(old)
    for label, key in OPS:
        samples = {column: [run[key] for run in runs[column]] for column in columns}
        add_row(figures, label, "operations/s", HIGHER, samples)
        ratio_target(
            figures, f"1 KiB {label} >= 1.5x nats-py", label, "ours-ops", "natspy-ops", 1.5
        )
    return [figures]


def main() -> None:
    from benchmarks.report import render_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ops", type=int, default=1000, help="operations of each kind per run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="natsobj-small-ops-"))
    try:
        from natsobj.local.embedded import (
            NatsServerProcess,  # not at the top: a --before checkout may lack it
        )

        with NatsServerProcess(work / "nats") as server:
            sections = measure(server.url, work, args.repeats, args.ops)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(render_section(each) for each in sections))


if __name__ == "__main__":
    main()
