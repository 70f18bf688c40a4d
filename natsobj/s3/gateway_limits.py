"""The S3 gateway's connection bounds, as values: the command line's defaults and what
``natsobj.gateway.limits`` enforces. Here, outside the gateway package, so the command line
can show them without the gateway extra installed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """The bounds of one gateway process (each worker has its own)."""

    max_connections: int = 4096
    """Open client connections at most (fewer when the descriptor limit would not hold them)."""
    header_timeout: float = 15.0
    """Seconds a connection has to send a request's headers, from its opening or from the
    first byte of its next request."""
    body_timeout: float = 60.0
    """Seconds a request body may pause while the gateway waits to read it."""
    keepalive_timeout: float = 30.0
    """Seconds an idle kept-alive connection stays open."""
    drain_timeout: float = 30.0
    """Seconds a stopping gateway lets requests in flight finish before closing them."""
