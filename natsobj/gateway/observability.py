"""What an operator watches, each on by a flag (``Observability``): ``/metrics``
(natsobj.gateway.metrics), ``/health/live`` and ``/health/ready`` (natsobj.gateway.health) and
the access log (natsobj.gateway.accesslog), fed by one middleware around every S3 request.

The endpoints share the S3 port and answer only unsigned GETs (and HEADs) of their exact
paths: a signed request for ``/metrics`` is still S3's ListObjects of a bucket named
``metrics``. The S3 operation of a request is what the routing put in
``request["s3_operation"]`` (``Unknown`` until it does); bucket, key and access key id are what
``handle`` put in ``request["s3_bucket"]``, ``["s3_key"]`` and ``["s3_access_key"]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from natsobj.gateway import health
from natsobj.gateway.accesslog import AccessLog, Entry
from natsobj.gateway.clients import ClientPool
from natsobj.gateway.metrics import UNKNOWN_OPERATION, Metrics, sample_forever

METRICS = "/metrics"
# a status for a request that ended without a response: the client went away, or the
# gateway stopped before it finished (nginx's word for it)
NO_RESPONSE = 499
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Observability:
    """Which of the operator's views are on."""

    metrics: bool = False
    health: bool = False
    access_log: str | None = None
    """A file to append JSON lines to, or ``-`` for stdout."""


class Watch:
    """One gateway process's views, and whether it is stopping (readiness says so)."""

    def __init__(self, observability: Observability, pool: ClientPool) -> None:
        self.pool = pool
        self.health = observability.health
        self.metrics = Metrics() if observability.metrics else None
        self.access_log = AccessLog(observability.access_log) if observability.access_log else None
        self.stopping = False
        self._sampler: asyncio.Task[None] | None = None

    def connections_changed(self, count: int) -> None:
        if self.metrics is not None:
            self.metrics.connections.set(count)

    def connection_closed(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.closed_connections.labels(reason).inc()

    def install(self, app: web.Application) -> None:
        app.middlewares.append(self.endpoints)
        if self.metrics is not None or self.access_log is not None:
            app.middlewares.append(self.observe)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)

    async def _start(self, _: web.Application) -> None:
        if self.metrics is not None:
            self._sampler = asyncio.create_task(sample_forever(self.metrics, self.pool))

    async def _stop(self, _: web.Application) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampler
        if self.access_log is not None:
            self.access_log.close()

    @web.middleware
    async def endpoints(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method in ("GET", "HEAD") and _unsigned(request):
            path = request.raw_path
            if path == METRICS and self.metrics is not None:
                return self.metrics.render()
            if path == health.LIVE and self.health:
                return health.live()
            if path == health.READY and self.health:
                return await health.ready(self.pool, stopping=self.stopping)
        return await handler(request)

    @web.middleware
    async def observe(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.perf_counter()
        status = NO_RESPONSE
        response: web.StreamResponse | None = None
        if self.metrics is not None:
            self.metrics.in_progress.inc()
        try:
            response = await handler(request)
            status = response.status
            return response
        except web.HTTPException as exc:
            status = exc.status
            raise
        finally:
            if self.metrics is not None:
                self.metrics.in_progress.dec()
            self._record(request, response, status, time.perf_counter() - started)

    def _record(
        self,
        request: web.Request,
        response: web.StreamResponse | None,
        status: int,
        seconds: float,
    ) -> None:
        operation = request.get("s3_operation", UNKNOWN_OPERATION)
        received = request.content.total_bytes
        sent = _body_bytes(request, response)
        if self.metrics is not None:
            self.metrics.observe(operation, status, seconds, received, sent)
        if self.access_log is not None:
            self.access_log.write(
                Entry(
                    remote=request.remote,
                    method=request.method,
                    operation=operation,
                    bucket=request.get("s3_bucket"),
                    key=request.get("s3_key"),
                    status=status,
                    received=received,
                    sent=sent,
                    seconds=seconds,
                    request_id=response.headers.get("x-amz-request-id") if response else None,
                    access_key=request.get("s3_access_key"),
                )
            )


def _unsigned(request: web.Request) -> bool:
    return "Authorization" not in request.headers and "X-Amz-Signature" not in request.query


def _body_bytes(request: web.Request, response: web.StreamResponse | None) -> int:
    """The response body's length as answered (its Content-Length): a request cut short has
    no response here, so a count never includes bytes that were promised and not sent."""
    if response is None or request.method == "HEAD" or response.status in (204, 304):
        return 0
    return response.content_length or 0
