"""Running the gateway: ``start`` in a running event loop (for embedding and tests), ``serve``
until interrupted (the CLI)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from natsobj.errors import NatsObjError
from natsobj.gateway.app import make_app
from natsobj.gateway.clients import ClientPool
from natsobj.s3 import access_keys
from natsobj.settings import ConnectionSettings

ALIVE_POLL_SECONDS = 0.5


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


@dataclass
class Running:
    """A started gateway: where it listens, and how to stop it."""

    runner: web.AppRunner
    host: str
    port: int
    tls: bool = False

    @property
    def endpoint(self) -> str:
        scheme = "https" if self.tls else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    async def stop(self) -> None:
        await self.runner.cleanup()


async def start(
    settings: ConnectionSettings,
    credentials_file: str | Path,
    *,
    listen: str = "127.0.0.1:9000",
    domain: str | None = None,
    tls: ssl.SSLContext | None = None,
) -> Running:
    """Start serving in the running loop; ``listen`` with port 0 picks a free port; with
    ``tls`` (``tls_context``) it serves HTTPS only."""
    keys = access_keys.load(credentials_file)
    host, port = parse_listen(listen)
    runner = web.AppRunner(make_app(ClientPool(settings, keys), domain=domain), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=tls)
    await site.start()
    bound = runner.addresses[0]
    return Running(runner, host, int(bound[1]), tls=tls is not None)


def serve(
    settings: ConnectionSettings,
    credentials_file: str | Path,
    *,
    listen: str,
    domain: str | None = None,
    tls: ssl.SSLContext | None = None,
    announce: Callable[[str], None] | None = None,
    alive: Callable[[], bool] | None = None,
) -> bool:
    """Serve until interrupted (Ctrl-C or SIGTERM), then close every connection; True when
    interrupted. ``announce`` is given the endpoint once it serves (default: a line on
    stdout); ``alive``, asked every half second off the loop, ends serving (False) once it
    says the NATS server behind the gateway is gone (``natsobj serve --gateway``)."""

    async def main() -> bool:
        running = await start(settings, credentials_file, listen=listen, domain=domain, tls=tls)
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stopping.set)
        (announce or _print_endpoint)(running.endpoint)
        try:
            while alive is None or await asyncio.to_thread(alive):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), ALIVE_POLL_SECONDS)
                if stopping.is_set():
                    return True
            return False
        finally:
            await running.stop()

    return asyncio.run(main())


def _print_endpoint(endpoint: str) -> None:
    print(f"S3 gateway on {endpoint}", flush=True)
