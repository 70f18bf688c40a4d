"""Running the gateway: ``start`` in a running event loop (for embedding and tests), ``serve``
until interrupted (the CLI), in one process or in ``workers`` processes sharing the port
(natsobj.gateway.workers), within the connection bounds of natsobj.gateway.limits and with the
operator's views of natsobj.gateway.observability."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import ssl
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from natsobj.errors import NatsObjError
from natsobj.gateway import limits as bounds
from natsobj.gateway import metrics, workers
from natsobj.gateway.app import make_app
from natsobj.gateway.clients import ClientPool
from natsobj.gateway.limits import ConnectionGuard
from natsobj.gateway.observability import Observability, Watch
from natsobj.s3 import access_keys
from natsobj.s3.access_keys import Credentials
from natsobj.s3.gateway_limits import Limits
from natsobj.settings import ConnectionSettings

ALIVE_POLL_SECONDS = 0.5
# what a request still running when the drain ends gets to wind down once cancelled (aiohttp's
# shutdown, which would otherwise stop reading its body while it waits: ConnectionGuard.drain)
CANCEL_GRACE_SECONDS = 2.0


class BadTlsFiles(NatsObjError, ValueError):
    """The gateway's HTTPS certificate or key cannot be read or do not belong together:
    refused at start rather than serving plain HTTP."""


def tls_context(cert: str | Path, key: str | Path | None = None) -> ssl.SSLContext:
    """The server side of HTTPS: ``cert`` (PEM, the chain after the certificate) and its
    private ``key`` (PEM; None when ``cert`` holds it too). TLS 1.2 at least."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise BadTlsFiles(
            f"gateway TLS certificate {cert} and key {key or cert} cannot be used: {exc}"
        ) from None
    return context


def parse_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9000`` for IPv6) → (host, port)."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--listen wants HOST:PORT, got {listen!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def bind(listen: str) -> socket.socket:
    """The listening socket of ``listen`` (port 0: a free one), for one process or several."""
    host, port = parse_listen(listen)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=bounds.BACKLOG)


@dataclass
class Running:
    """A started gateway: where it listens, and how to stop it."""

    runner: web.AppRunner
    server: asyncio.AbstractServer
    guard: ConnectionGuard
    watch: Watch
    host: str
    port: int
    tls: bool = False

    @property
    def endpoint(self) -> str:
        scheme = "https" if self.tls else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    async def stop(self) -> None:
        """Stop accepting, let the requests in flight finish (``Limits.drain_timeout``), close
        every connection."""
        self.watch.stopping = True
        self.server.close()
        try:
            await self.guard.drain(self.guard.limits.drain_timeout)
            await self.runner.cleanup()
        finally:
            self.guard.stop()


def _credentials(credentials: str | Path | Credentials) -> Credentials:
    if isinstance(credentials, Credentials):
        return credentials
    return access_keys.load(credentials)


async def start(
    settings: ConnectionSettings,
    credentials: str | Path | Credentials,
    *,
    listen: str = "127.0.0.1:9000",
    domain: str | None = None,
    tls: ssl.SSLContext | None = None,
    limits: Limits | None = None,
    observability: Observability | None = None,
    sock: socket.socket | None = None,
) -> Running:
    """Start serving in the running loop; ``listen`` with port 0 picks a free port; with
    ``tls`` (``tls_context``) it serves HTTPS only. ``credentials``: a credentials file, or
    keys already read (``natsobj.s3.access_keys``). ``sock``: a socket already listening
    (``bind``; ``listen`` then only names the host)."""
    limits = limits or Limits()
    pool = ClientPool(settings, _credentials(credentials))
    host, _ = parse_listen(listen)
    sock = sock or bind(listen)
    app = make_app(pool, domain=domain)
    watch = Watch(observability or Observability(), pool)
    guard = ConnectionGuard(
        limits, on_count=watch.connections_changed, on_close=watch.connection_closed
    )
    app[bounds.GUARD] = guard
    app.middlewares.append(bounds.watch_requests)
    watch.install(app)
    runner = web.AppRunner(
        app,
        access_log=None,
        shutdown_timeout=CANCEL_GRACE_SECONDS,
        keepalive_timeout=limits.keepalive_timeout,
    )
    await runner.setup()
    loop = asyncio.get_running_loop()
    try:
        server = await loop.create_server(
            guard.protocol_factory(runner.server),  # type: ignore[arg-type]
            sock=sock,
            ssl=tls,
            backlog=bounds.BACKLOG,
        )
    except BaseException:
        await runner.cleanup()
        raise
    guard.start()
    port = int(sock.getsockname()[1])
    return Running(runner, server, guard, watch, host, port, tls=tls is not None)


def serve(
    settings: ConnectionSettings,
    credentials: str | Path | Credentials,
    *,
    listen: str,
    domain: str | None = None,
    tls: ssl.SSLContext | None = None,
    limits: Limits | None = None,
    observability: Observability | None = None,
    workers_count: int = 1,
    announce: Callable[[str], None] | None = None,
    alive: Callable[[], bool] | None = None,
) -> bool:
    """Serve until interrupted (Ctrl-C or SIGTERM), then drain and close every connection;
    True when interrupted. ``workers_count`` processes share the port (``alive`` is for one
    process only). ``announce`` is given the endpoint once it serves (default: a line on
    stdout); ``alive``, asked every half second off the loop, ends serving (False) once it
    says the NATS server behind the gateway is gone (``natsobj serve --gateway``)."""
    keys = _credentials(credentials)
    limits = limits or Limits()
    observability = observability or Observability()
    bounds.log_to_stderr()
    sock = bind(listen)
    host, _ = parse_listen(listen)
    scheme = "https" if tls is not None else "http"
    shown = f"[{host}]" if ":" in host else host
    endpoint = f"{scheme}://{shown}:{sock.getsockname()[1]}"
    said = announce or _print_endpoint

    async def main(announce_here: bool) -> bool:
        running = await start(
            settings, keys, listen=listen, domain=domain, tls=tls, limits=limits,
            observability=observability, sock=sock,
        )  # fmt: skip
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stopping.set)
        if announce_here:
            said(running.endpoint)
        try:
            while alive is None or await asyncio.to_thread(alive):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), ALIVE_POLL_SECONDS)
                if stopping.is_set():
                    return True
            return False
        finally:
            await running.stop()

    with sock:
        if workers_count <= 1:
            return asyncio.run(main(True))
        if alive is not None:
            raise ValueError("alive is for a gateway of one process")
        with _multiprocess_metrics(observability.metrics):
            supervisor = workers.Supervisor(
                workers_count,
                lambda: 0 if asyncio.run(main(False)) else 1,
                grace=limits.drain_timeout + limits.header_timeout,
                on_exit=metrics.process_exited,
            )
            return supervisor.run(lambda: said(endpoint))


@contextlib.contextmanager
def _multiprocess_metrics(enabled: bool) -> Iterator[None]:
    """A private directory for the workers' metric files (natsobj.gateway.metrics), named in
    the environment they inherit; removed when they have all exited."""
    if not enabled:
        yield
        return
    folder = tempfile.mkdtemp(prefix="natsobj-gateway-metrics-")
    previous = os.environ.get(metrics.MULTIPROC_ENV)
    os.environ[metrics.MULTIPROC_ENV] = folder
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(metrics.MULTIPROC_ENV, None)
        else:
            os.environ[metrics.MULTIPROC_ENV] = previous
        shutil.rmtree(folder, ignore_errors=True)


def _print_endpoint(endpoint: str) -> None:
    print(f"S3 gateway on {endpoint}", flush=True)
