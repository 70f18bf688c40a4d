"""A nats-server with its monitoring port, to count the bytes it sends to every client (Spark's
Python workers included) before and after a query: what a read really fetched."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from natsobj.local.embedded import NatsServerProcess, free_port


@contextmanager
def monitored_server(directory: Path) -> Iterator[tuple[NatsServerProcess, int]]:
    """A server and its monitoring port (the ``monitored`` fixture of tests/spark)."""
    port = free_port()
    server = NatsServerProcess(directory, config=f'http: "127.0.0.1:{port}"\n')
    server.start()
    try:
        yield server, port
    finally:
        server.stop()


def served(port: int) -> int:
    """Bytes the server has sent to all its clients (``out_bytes`` of ``/varz``)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/varz", timeout=10) as response:
        return int(json.load(response)["out_bytes"])
