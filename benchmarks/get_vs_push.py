"""A large ``get_file`` (and put) against the raw ordered push consumer, with two diagnostics.

The baseline is ``benchmarks.core``'s ``raw-push`` case: nats-py ``publish_async`` to put, and
``js.subscribe(..., ordered_consumer=True)`` with a callback writing each message to a file to
get, on a connection with natsobj's larger socket reads (``raw-push-stock``: without them).
natsobj's case is ``ours`` (``put`` of the file, ``get_file``); ``ours-no-digest`` is the same
with SHA-256 skipped, a diagnostic that splits natsobj's time into its transport and the hash
(which the raw consumer does not compute), and ``raw-push-msg-id`` the baseline with a
``Nats-Msg-Id`` on each chunk, as natsobj's put sends for safe retries. The cases alternate in
one run against one server, each in its own process.

``python -m benchmarks.get_vs_push [--repeats N] [--mib N]`` prints the sections on its own.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from benchmarks.core import make_file, run_case
from benchmarks.figures import LOWER, MiB, Section, add_row, ratio_target, section, timed
from natsobj.local.embedded import NatsServerProcess

CASES = {
    "raw-push": "raw push consumer",
    "raw-push-stock": "raw push, nats-py's own reads",
    "ours": "natsobj",
    "ours-no-digest": "natsobj without SHA-256 (diagnostic)",
    "raw-push-msg-id": "raw push with a Nats-Msg-Id per chunk (diagnostic)",
}
OPS = (("get_file", "get"), ("put", "put"))


def measure(url: str, work: Path, repeats: int, size: int = 256 * MiB) -> list[Section]:
    label = f"{size // MiB} MiB"
    wall = section(
        "get-vs-push",
        f"{label} get_file and put against the raw ordered push consumer",
        "*raw push* is nats-py's ordered push consumer with a callback writing each 128 KiB"
        " message to a file (get) and `publish_async` with 64 acks pending (put), on a"
        " connection reading as natsobj's does (`natsobj/aio/jetstream/socket_reads.py`);"
        " *nats-py's own"
        " reads* is the same consumer without that. Two diagnostics show where natsobj's time"
        " goes: natsobj with SHA-256 replaced by a hash that computes nothing (in that process"
        " only; not a mode natsobj offers) is its transport against nats-py's, and the raw"
        " publisher with a `Nats-Msg-Id` per chunk (as natsobj's put sends, so that a chunk"
        " sent again after a leader change is stored once) is what the server's"
        " deduplication costs.",
        CASES,
        [("ours", "raw-push"), ("ours", "raw-push-stock"), ("ours-no-digest", "raw-push")],
    )
    cpu = section(
        "get-vs-push-cpu",
        f"{label} get_file and put: CPU seconds of the client process",
        "The same runs; all the client's threads. Steadier than wall time on a loaded machine."
        " natsobj's include SHA-256 of every byte, which the raw consumers do not compute.",
        CASES,
        [("ours", "raw-push"), ("ours-no-digest", "raw-push")],
    )
    path = work / "get-vs-push.bin"
    make_file(path, size)
    runs: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
    try:
        with timed(wall, cpu):
            for _ in range(repeats):
                for case in CASES:
                    runs[case].append(run_case(case, url, size, path))
    finally:
        path.unlink()
    for op, key in OPS:
        add_row(wall, op, "s", LOWER, {c: [r[f"{key}_s"] for r in runs[c]] for c in CASES})
        add_row(cpu, op, "CPU s", LOWER, {c: [r[f"{key}_cpu_s"] for r in runs[c]] for c in CASES})
    ratio_target(wall, f"{label} get_file >= 1.0x raw push", "get_file", "ours", "raw-push", 1.0)
    ratio_target(wall, f"{label} put >= 0.95x raw push", "put", "ours", "raw-push", 0.95)
    return [wall, cpu]


def main() -> None:
    from benchmarks.report import render_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--mib", type=int, default=256, help="object size in MiB")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="natsobj-get-vs-push-"))
    try:
        with NatsServerProcess(work / "nats") as server:
            sections = measure(server.url, work, args.repeats, args.mib * MiB)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(render_section(each) for each in sections))


if __name__ == "__main__":
    main()
