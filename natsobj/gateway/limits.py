"""The gateway's bounds on what the network can make it hold: open connections, the time a
client may take to send its request headers and the pauses it may leave in a body, and the
rate of log lines a flood can cause.

Without them a client that opens connections and never finishes a request holds a file
descriptor each until aiohttp's idle timer (an hour) ends it: at a descriptor limit of 1,024
(systemd's usual) a thousand of them lock every other client out, and asyncio writes an error
line for each refused accept. Here every connection is watched by one ``ConnectionGuard``:

- a connection that has not sent its request headers within ``header_timeout`` of opening (or
  of starting its next request on a kept-alive connection) is closed, as is one whose body
  stalls for ``body_timeout`` while the gateway is waiting to read it;
- at most ``max_connections`` are open, fewer when the descriptor limit would not hold them
  (``connection_budget``). At the cap a new connection is not refused: the connection that has
  waited longest without a request in progress, from the address holding the most such
  connections, is closed to make room. A flood of idle connections from one address thus
  costs that address its own oldest connections, never a signed client's request in flight;
  only when every connection is serving a request is the newcomer closed.

Stopping drains through the guard too (``drain``), not through aiohttp's shutdown alone:
aiohttp stops reading a connection the moment its shutdown begins, so the rest of a body still
on its way would never arrive and its request would hang until cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from natsobj.s3.gateway_limits import Limits

log = logging.getLogger(__name__)

# descriptors kept back from the connection budget: the listening socket, NATS connections,
# files, and the connections asyncio accepts in one go before the guard sees them
FD_RESERVE = 256
BACKLOG = 128
# why the guard closed a connection (the metrics' label)
EVICTED = "evicted"
REFUSED = "refused"
HEADER_TIMEOUT = "header_timeout"
BODY_TIMEOUT = "body_timeout"
DRAIN_POLL_SECONDS = 0.05
LOG_HANDLER = "natsobj-gateway"


def connection_budget(limits: Limits) -> int:
    """``limits.max_connections``, lowered to what this process's descriptor limit holds."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limits.max_connections
    return max(1, min(limits.max_connections, soft - FD_RESERVE))


class _Watched:
    """One connection's state: since when it has been waiting for what."""

    __slots__ = ("content", "in_request", "last_data", "peer", "pending", "since", "transport")

    def __init__(self, transport: asyncio.Transport, now: float) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = peer[0] if isinstance(peer, tuple) else str(peer)
        self.since: float | None = now  # waiting for request headers since; None: idle
        self.in_request = False
        self.pending = False  # bytes of a request whose headers are not all in yet
        self.content: Any = None  # the request's body stream while a handler runs
        self.last_data = now


class ConnectionGuard:
    """Counts, times and evicts the connections of one listening socket (see the module)."""

    def __init__(
        self,
        limits: Limits,
        *,
        on_count: Callable[[int], None] | None = None,
        on_close: Callable[[str], None] | None = None,
    ) -> None:
        self.limits = limits
        self.budget = connection_budget(limits)
        self._open: dict[asyncio.BaseTransport, _Watched] = {}
        self._on_count = on_count or (lambda _: None)
        self._on_close = on_close or (lambda _: None)
        self._sweeper: asyncio.Task[None] | None = None
        self.draining = False

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def protocol_factory(self, inner: Callable[[], asyncio.Protocol]) -> Callable[[], Any]:
        """What ``loop.create_server`` is given: aiohttp's protocol, watched by this guard."""
        return lambda: _GuardedProtocol(self, inner())

    def start(self) -> None:
        interval = min(self.limits.header_timeout, self.limits.body_timeout) / 4
        self._sweeper = asyncio.get_running_loop().create_task(self._sweep_every(interval))

    def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()

    # -- what the protocol and the middleware report ---------------------------------------------

    def opened(self, transport: asyncio.Transport) -> None:
        now = time.monotonic()
        if len(self._open) >= self.budget and not self._evict_one():
            self._on_close(REFUSED)
            transport.abort()
            return
        self._open[transport] = _Watched(transport, now)
        self._on_count(len(self._open))

    def received(self, transport: asyncio.BaseTransport) -> None:
        watched = self._open.get(transport)
        if watched is None:
            return
        now = time.monotonic()
        watched.last_data = now
        if not watched.in_request:
            watched.pending = True
            if watched.since is None:
                watched.since = now  # a kept-alive connection starts its next request

    def closed(self, transport: asyncio.BaseTransport) -> None:
        if self._open.pop(transport, None) is not None:
            self._on_count(len(self._open))

    def request_started(self, transport: asyncio.BaseTransport | None, content: Any) -> None:
        watched = self._open.get(transport) if transport is not None else None
        if watched is not None:
            watched.in_request, watched.since, watched.content = True, None, content
            watched.pending = False
            watched.last_data = time.monotonic()

    def request_finished(self, transport: asyncio.BaseTransport | None) -> None:
        watched = self._open.get(transport) if transport is not None else None
        if watched is not None:
            watched.in_request, watched.content = False, None

    async def drain(self, timeout: float) -> None:
        """Wait until no connection has a request in progress or arriving, or ``timeout`` has
        passed; the listening socket is closed already. Responses sent meanwhile say
        ``Connection: close`` (``watch_requests``), so kept-alive connections end one by one;
        aiohttp's shutdown, which comes next, closes those left idle."""
        self.draining = True
        deadline = time.monotonic() + timeout
        serving = sum(w.in_request for w in self._open.values())
        if serving:
            log.warning(
                "stopping: draining %d request(s) in progress for up to %g s", serving, timeout
            )
        while any(w.in_request or w.pending for w in self._open.values()):
            if time.monotonic() >= deadline:
                return
            await asyncio.sleep(DRAIN_POLL_SECONDS)

    # -- enforcement ------------------------------------------------------------------------------

    def _evict_one(self) -> bool:
        """Close the longest-waiting connection with no request in progress, from the address
        holding the most of them; False when every connection is serving a request."""
        waiting = [w for w in self._open.values() if not w.in_request]
        if not waiting:
            return False
        per_peer = Counter(w.peer for w in waiting)
        victim = min(waiting, key=lambda w: (-per_peer[w.peer], w.since or w.last_data))
        log.warning(
            "at the cap of %d connections: closed an idle connection from %s to make room",
            self.budget,
            victim.peer,
        )
        self._drop(victim, EVICTED)
        return True

    def _drop(self, watched: _Watched, reason: str) -> None:
        self._open.pop(watched.transport, None)
        watched.transport.abort()
        self._on_count(len(self._open))
        self._on_close(reason)

    def sweep(self) -> None:
        """Close the connections past a timeout."""
        now = time.monotonic()
        limits = self.limits
        for watched in list(self._open.values()):
            if watched.in_request:
                if _stalled_body(watched, now, limits.body_timeout):
                    self._drop(watched, BODY_TIMEOUT)
            elif watched.since is not None and now - watched.since > limits.header_timeout:
                self._drop(watched, HEADER_TIMEOUT)

    async def _sweep_every(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            self.sweep()


def _stalled_body(watched: _Watched, now: float, timeout: float) -> bool:
    """Whether the gateway has waited ``timeout`` for the next bytes of a body it has not
    received to the end. A transport paused by the gateway (its buffer full because a handler
    is slow) is not the client's stall."""
    content = watched.content
    if content is None or content.is_eof():
        return False
    if not watched.transport.is_reading():
        watched.last_data = now
        return False
    return now - watched.last_data > timeout


class _GuardedProtocol(asyncio.Protocol):
    """aiohttp's protocol with the guard told of each connection, its bytes and its end."""

    def __init__(self, guard: ConnectionGuard, inner: asyncio.Protocol) -> None:
        self._guard = guard
        self._inner = inner
        self._transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        self._guard.opened(transport)  # type: ignore[arg-type]
        self._inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        assert self._transport is not None
        self._guard.received(self._transport)
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._transport is not None:
            self._guard.closed(self._transport)
        self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()


GUARD: web.AppKey[ConnectionGuard] = web.AppKey("guard", ConnectionGuard)


@web.middleware
async def watch_requests(request: web.Request, handler: Any) -> web.StreamResponse:
    """Tell the guard a request is in progress on its connection (headers read, no header
    timeout any more; body stalls now count) and when it is done."""
    guard = request.app[GUARD]
    transport = request.transport
    guard.request_started(transport, request.content)
    try:
        response: web.StreamResponse = await handler(request)
        if guard.draining and not response.prepared:
            response.force_close()
        return response
    finally:
        guard.request_finished(transport)


@dataclass
class _Window:
    """One kind of line's current window: when it began, lines shown in it, lines held."""

    start: float
    shown: int = 0
    held: int = 0


class RateLimitedLog(logging.Filter):
    """At most ``burst`` lines of one kind (logger and message template) per ``interval``
    seconds; the next line let through says how many were held back. A flood of failing
    connections then costs the log a few lines a second, not megabytes."""

    def __init__(self, *, burst: int = 5, interval: float = 10.0, kinds: int = 1024) -> None:
        super().__init__()
        self.burst = burst
        self.interval = interval
        self.kinds = kinds
        self._windows: dict[tuple[str, object], _Window] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, record.msg)
        now = time.monotonic()
        window = self._windows.get(kind)
        if window is None:
            if len(self._windows) >= self.kinds:
                self._windows.clear()  # bounded memory: forget the old kinds
            window = self._windows[kind] = _Window(now)
        if now - window.start > self.interval:
            window.start, window.shown = now, 0
        if window.shown >= self.burst:
            window.held += 1
            return False
        if window.held:
            record.msg = f"{record.msg} ({window.held} similar lines held back)"
            window.held = 0
        window.shown += 1
        return True


def log_to_stderr() -> None:
    """The gateway process's log: warnings and errors on stderr, rate-limited
    (``RateLimitedLog``): the gateway's own (a defect's traceback, readiness lost) and
    asyncio's and aiohttp's per-connection complaints."""
    root = logging.getLogger()
    if any(handler.get_name() == LOG_HANDLER for handler in root.handlers):
        return  # a gateway served before in this process set it up
    handler = logging.StreamHandler()
    handler.set_name(LOG_HANDLER)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RateLimitedLog())
    handler.setLevel(logging.WARNING)
    root.addHandler(handler)
    gateway = logging.getLogger("natsobj.gateway")
    gateway.addHandler(handler)
    gateway.setLevel(logging.WARNING)
    gateway.propagate = False
