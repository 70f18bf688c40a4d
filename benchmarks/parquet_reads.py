"""The Parquet reads the ranged-read benchmark times, and a process that times them for the
``before`` column (``--before REF``): run with the checkout's directory as its working
directory, ``import natsobj`` there loads that commit's package (benchmarks/before.py), so the
same reads go through the earlier natsobj, taking turns with today's in every repeat.

As a process: ``python -m benchmarks.parquet_reads URL PATH`` opens one ``nats`` filesystem
(kept across reads, as the in-process reader keeps its own), then reads a case name per line on
stdin and answers that read's milliseconds, timed inside the process."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any


def cases(pq: Any) -> dict[str, Callable[[Any, str], object]]:
    """The three reads, each given a filesystem and the object's path."""
    return {
        "footer": lambda fs, p: _footer(fs, p, pq),
        "column": lambda fs, p: pq.read_table(p, filesystem=fs, columns=["c3"]),
        "table": lambda fs, p: pq.read_table(p, filesystem=fs),
    }


def _footer(fs: Any, path: str, pq: Any) -> object:
    with fs.open(path, "rb") as handle:
        return pq.ParquetFile(handle).metadata


class ReaderProcess:
    """The reads of ``path`` in a process of its own, working in ``directory``."""

    def __init__(self, directory: str, url: str, path: str) -> None:
        import subprocess

        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.parquet_reads", url, path],
            cwd=directory,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def read(self, case: str) -> float:
        """The milliseconds one read of ``case`` took in the process."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(case + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the reader process ended (exit {self.process.wait()})")
        return float(answer)

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)


def main() -> None:
    import fsspec
    import pyarrow.parquet as pq

    url, path = sys.argv[1], sys.argv[2]
    fs = fsspec.filesystem("nats", url=url, skip_instance_cache=True)
    reads = cases(pq)
    for line in sys.stdin:
        start = time.perf_counter()
        reads[line.strip()](fs, path)
        print((time.perf_counter() - start) * 1000, flush=True)


if __name__ == "__main__":
    main()
