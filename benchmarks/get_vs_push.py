"""Issue 13, item 2: a 256 MiB ``get_file`` (and put) against the raw ordered push consumer.

The baseline is ``benchmarks.core``'s ``raw-push`` case: nats-py ``publish_async`` to put, and
``js.subscribe(..., ordered_consumer=True)`` with a callback writing each message to a file to
get, on a connection with natsobj's larger socket reads (``raw-push-stock``: without them).
natsobj's case is ``ours`` (``put`` of the file, ``get_file``); ``ours-no-digest`` is the same
with SHA-256 skipped, a diagnostic that splits natsobj's time into its transport and the hash
(which the raw consumer does not compute), and ``raw-push-msg-id`` the baseline with a
``Nats-Msg-Id`` on each chunk, as natsobj's put sends for safe retries. The cases alternate in one
run against one server; the section quotes medians, the ratio of medians (speed, so above
1.0 means natsobj is faster) and the ratio in each round.

``python -m benchmarks.get_vs_push [--repeats N]`` runs only this section on its own server.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from natsobj.embedded import NatsServerProcess

SIZE = 256 * 1024 * 1024
BASELINE, STOCK, OURS = "raw-push", "raw-push-stock", "ours"
NO_DIGEST, MSG_IDS = "ours-no-digest", "raw-push-msg-id"  # diagnostics: where the time goes
CASES = (BASELINE, STOCK, OURS, NO_DIGEST, MSG_IDS)


def measure(url: str, work: Path, repeats: int) -> dict[str, Any]:
    from benchmarks.run import make_file, run_case  # run.py imports this module

    path = work / "get-vs-push.bin"
    make_file(path, SIZE)
    samples: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
    load_start = os.getloadavg()[0]
    for _ in range(repeats):
        for case in CASES:
            samples[case].append(run_case(case, url, SIZE, path))
    path.unlink()
    return {
        "samples": samples,
        "load": (load_start, os.getloadavg()[0]),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def section(figures: dict[str, Any]) -> list[str]:
    samples = figures["samples"]

    def median(case: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[case])

    def paired(case: str, key: str) -> list[float]:
        """Speed of natsobj over ``case`` in each round (the two ran back to back)."""
        return [b[key] / o[key] for b, o in zip(samples[case], samples[OURS], strict=True)]

    load = figures["load"]
    lines = [
        "## 256 MiB get_file and put against the raw ordered push consumer",
        "",
        f"{figures['date']}: {len(samples[OURS])} rounds, each running the cases back to"
        " back against one server, each case in its own process; medians in seconds. The"
        " baseline, *raw push*, is nats-py's ordered push consumer with a callback writing"
        " each 128 KiB message to a file (get) and `publish_async` with 64 acks pending (put),"
        " on a connection reading as natsobj's does (`natsobj/aio/socket_reads.py`: up to"
        " 1 MiB per pass, taken whole from the stream, payloads cut with one copy): that cut"
        " its CPU time (table below), so it is the baseline; *stock* is the same consumer"
        " with nats-py's own 32 KiB reads and copies. A nats-py"
        " pull consumer (`fetch` of 64, acks off) used more CPU than either (0.41 s against"
        " 0.35 s stock, in a separate A/B of 5 rounds) and was not kept. natsobj reads with"
        " two no-wait pull requests of half of `read_window_bytes` open at once, deliveries"
        " routed raw from the read loop, and hashes (and writes) each chunk as it arrives, on a"
        " worker thread beside the loop with three or more CPUs and on the loop with fewer, as"
        " here (`natsobj/aio/offload.py`), verifying SHA-256 before the file is renamed into"
        " place; put hashes the same way, queues each chunk for the socket without nats-py's"
        " two concatenations (`JetStreamApi._write_hpub`) and sends the meta record behind the"
        " last chunk."
        f" Ratios are speed (above 1.0: natsobj faster). 1-minute load average {load[0]:.1f}"
        f" at the start, {load[1]:.1f} at the end, on a shared 2-core machine: single runs"
        " vary a lot, so read the medians, and the per-round ratios for the spread.",
        "",
        "| op | raw push (s) | stock (s) | natsobj (s) | natsobj / raw push |"
        " natsobj / stock | natsobj / raw push, per round |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for op, key in (("get_file", "get_s"), ("put", "put_s")):
        raw, stock, ours = median(BASELINE, key), median(STOCK, key), median(OURS, key)
        rounds = paired(BASELINE, key)
        lines.append(
            f"| {op} | {raw:.2f} | {stock:.2f} | {ours:.2f} | {raw / ours:.2f}x"
            f" | {stock / ours:.2f}x | {', '.join(f'{r:.2f}' for r in rounds)} |"
        )
    lines += [
        "",
        "Where the time goes (diagnostics, in the same rounds): *without SHA-256* is the"
        " `ours` case with the hash replaced by one that hashes nothing, in that process only"
        " (`ours-no-digest` in `benchmarks/core.py`; not a mode natsobj offers); the file"
        " writes and the digest check are unchanged. Its ratio to raw push is natsobj's"
        " transport against nats-py's; the rest of natsobj's time is the hash ADR-20"
        " requires and the raw consumer skips. *raw push with ids* is the baseline with a"
        " `Nats-Msg-Id` header on each chunk, as natsobj's put sends so that a chunk sent"
        " again after a leader change is stored once: the server then deduplicates every"
        " chunk.",
        "",
        "| op | raw push (s) | raw push with ids (s) | natsobj (s) | natsobj without SHA-256 (s) |"
        " without SHA-256 / raw push | the hash's share of natsobj's time |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for op, key in (("get_file", "get_s"), ("put", "put_s")):
        raw, ids = median(BASELINE, key), median(MSG_IDS, key)
        ours, bare = median(OURS, key), median(NO_DIGEST, key)
        lines.append(
            f"| {op} | {raw:.2f} | {ids:.2f} | {ours:.2f} | {bare:.2f} | {raw / bare:.2f}x"
            f" | {max(0.0, (ours - bare) / ours):.0%} |"
        )
    lines += [
        "",
        "CPU seconds of the client process (all its threads; medians), steadier than the"
        " times on a loaded machine. natsobj's include SHA-256 of every byte, which the raw"
        " consumers do not compute:",
        "",
        "| op | raw push | stock | natsobj | natsobj without SHA-256 | raw push with ids |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for op, key in (("get_file", "get_cpu_s"), ("put", "put_cpu_s")):
        cpus = " | ".join(f"{median(case, key):.2f}" for case in CASES)
        lines.append(f"| {op} | {cpus} |")
    lines += [
        "",
        "All runs (s), in round order:",
        "",
        "| case | get_file | put |",
        "|---|---|---|",
    ]
    labels = {
        BASELINE: "raw push",
        STOCK: "stock",
        OURS: "natsobj",
        NO_DIGEST: "without SHA-256",
        MSG_IDS: "raw push with ids",
    }
    for case, label in labels.items():
        gets = ", ".join(f"{s['get_s']:.2f}" for s in samples[case])
        puts = ", ".join(f"{s['put_s']:.2f}" for s in samples[case])
        lines.append(f"| {label} | {gets} | {puts} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="natsobj-get-vs-push-"))
    try:
        with NatsServerProcess(work / "nats") as server:
            figures = measure(server.url, work, args.repeats)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(section(figures)))


if __name__ == "__main__":
    main()
