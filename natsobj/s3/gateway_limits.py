"""The S3 gateway's connection bounds, as values: the command line's defaults and what
``natsobj.gateway.limits`` enforces. Here, outside the gateway package, so the command line
can show them without the gateway extra installed. Each field's ``help`` is its command-line
option's (``natsobj gateway --max-connections``, ...): the options are made from these rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _bound(default: float, help: str, *, seconds: bool = True, zero: bool = False) -> Any:
    """A row: its default, its option's help, whether it is seconds (else a count of at least
    one) and whether 0 is allowed (no wait at all)."""
    return field(default=default, metadata={"help": help, "seconds": seconds, "zero": zero})


@dataclass(frozen=True)
class Limits:
    """The bounds of one gateway process (each worker has its own)."""

    max_connections: int = _bound(
        4096,
        "Open client connections per worker (fewer when its file-descriptor limit is lower); at"
        " the cap the oldest idle connection of the busiest address is closed.",
        seconds=False,
    )
    header_timeout: float = _bound(
        15.0,
        "Time a client has to send a request's headers, from the connection's opening or from"
        " the first byte of its next request.",
    )
    body_timeout: float = _bound(
        60.0, "Longest pause in a request body before the connection is closed."
    )
    keepalive_timeout: float = _bound(30.0, "How long an idle kept-alive connection stays open.")
    drain_timeout: float = _bound(
        30.0, "On SIGTERM, how long requests in flight may take to finish.", zero=True
    )
