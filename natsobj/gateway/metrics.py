"""Prometheus metrics of the gateway (``--metrics``), with the official ``prometheus_client``.

Several workers (``--workers``) are one gateway to Prometheus: the client's multiprocess mode
is used, each worker writing its values to files in a private directory the supervising
process creates (``PROMETHEUS_MULTIPROC_DIR``, set before the workers start and before any
worker imports ``prometheus_client``), and ``/metrics`` on any worker reads all of them.
Counters and histograms add up across workers, live and exited; gauges of a process's own
state (open connections, requests in progress) count live workers only, and the NATS
connection gauge shows the worst worker. One worker keeps its values in memory as usual.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from natsobj.errors import NatsObjError
from natsobj.gateway.clients import ClientPool

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
PREFIX = "natsobj_gateway"
UNKNOWN_OPERATION = "Unknown"
# the operation names that start and end a multipart upload (the route table's, S3's own)
MULTIPART_START = "CreateMultipartUpload"
MULTIPART_ENDS = frozenset({"CompleteMultipartUpload", "AbortMultipartUpload"})
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
SAMPLE_SECONDS = 1.0


@dataclass
class Metrics:
    """The gateway's metrics; ``render`` answers ``/metrics``."""

    multiprocess_dir: str | None = field(default_factory=lambda: os.environ.get(MULTIPROC_ENV))

    def __post_init__(self) -> None:
        # imported here: the gateway runs without prometheus_client unless --metrics is given,
        # and its multiprocess mode is chosen by the environment at import time
        import prometheus_client as prom

        self._prom = prom
        own = prom.CollectorRegistry()
        self.requests = prom.Counter(
            f"{PREFIX}_requests",
            "S3 requests answered, by operation and HTTP status.",
            ["operation", "status"],
            registry=own,
        )
        self.duration = prom.Histogram(
            f"{PREFIX}_request_duration_seconds",
            "Time from the request's headers to its last response byte, by operation.",
            ["operation"],
            buckets=DURATION_BUCKETS,
            registry=own,
        )
        self.received = prom.Counter(
            f"{PREFIX}_received_bytes",
            "Request body bytes received, by operation.",
            ["operation"],
            registry=own,
        )
        self.sent = prom.Counter(
            f"{PREFIX}_sent_bytes",
            "Response body bytes sent, by operation.",
            ["operation"],
            registry=own,
        )
        self.in_progress = prom.Gauge(
            f"{PREFIX}_requests_in_progress",
            "S3 requests being served.",
            registry=own,
            multiprocess_mode="livesum",
        )
        self.connections = prom.Gauge(
            f"{PREFIX}_open_connections",
            "Client connections open.",
            registry=own,
            multiprocess_mode="livesum",
        )
        self.closed_connections = prom.Counter(
            f"{PREFIX}_closed_connections",
            "Client connections the gateway closed: a header or body timeout, or evicted at"
            " the connection cap.",
            ["reason"],
            registry=own,
        )
        self.nats_connected = prom.Gauge(
            f"{PREFIX}_nats_connected",
            "1 while every NATS connection of the gateway is up, 0 while one is down or the"
            " gateway cannot connect.",
            registry=own,
            multiprocess_mode="livemin",
        )
        self.nats_reconnects = prom.Counter(
            f"{PREFIX}_nats_reconnects",
            "Reconnects of the gateway's NATS connections.",
            registry=own,
        )
        self.multipart = prom.Gauge(
            f"{PREFIX}_multipart_uploads_in_progress",
            "Multipart uploads created through this gateway and not yet completed or aborted"
            " through it.",
            registry=own,
            multiprocess_mode="sum",
        )
        if self.multiprocess_dir is not None:
            from prometheus_client import multiprocess

            self.registry = prom.CollectorRegistry()
            multiprocess.MultiProcessCollector(self.registry, path=self.multiprocess_dir)
        else:
            self.registry = own
        self.nats_connected.set(1)
        self._reconnects_seen: dict[int, int] = {}

    def observe(
        self, operation: str, status: int, seconds: float, received: int, sent: int
    ) -> None:
        self.requests.labels(operation, str(status)).inc()
        self.duration.labels(operation).observe(seconds)
        if received:
            self.received.labels(operation).inc(received)
        if sent:
            self.sent.labels(operation).inc(sent)
        if status < 300:
            if operation == MULTIPART_START:
                self.multipart.inc()
            elif operation in MULTIPART_ENDS:
                self.multipart.dec()

    def sample_nats(self, connections: list[Any]) -> None:
        """Record the state of the pool's NATS connections (nats-py clients)."""
        up = all(nc.is_connected for nc in connections)
        self.nats_connected.set(1 if up else 0)
        for nc in connections:
            count = int(nc.stats.get("reconnects", 0))
            seen = self._reconnects_seen.get(id(nc), 0)
            if count > seen:
                self.nats_reconnects.inc(count - seen)
            self._reconnects_seen[id(nc)] = count

    def render(self) -> web.Response:
        body = self._prom.generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": self._prom.CONTENT_TYPE_LATEST})


async def sample_forever(metrics: Metrics, pool: ClientPool) -> None:
    """Every ``SAMPLE_SECONDS``, the state of the pool's NATS connections. The gateway's own
    connection is made here if no request has made it yet (as readiness does), so the gauge
    is 0 for a gateway that cannot reach NATS, not 1 for one that has not tried."""
    while True:
        try:
            async with asyncio.timeout(SAMPLE_SECONDS):
                await pool.own_client()
        except (NatsObjError, TimeoutError):
            metrics.nats_connected.set(0)
        else:
            metrics.sample_nats(pool.connections())
        await asyncio.sleep(SAMPLE_SECONDS)


def process_exited(pid: int) -> None:
    """Drop an exited worker's live gauges (multiprocess mode; the supervisor calls it)."""
    if os.environ.get(MULTIPROC_ENV):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
