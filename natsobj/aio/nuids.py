"""Unique tokens the client makes up: the nuid of a version's chunk subject, the id of an
atomic batch, the name of a consumer. One generator for the process, behind a lock, like
nats.go's ``nuid.Next()``: tokens drawn from two copies of it could repeat only by chance,
from one never, and clients on other threads' event loops share it safely."""

from __future__ import annotations

import threading

from nats.nuid import NUID

_generator = NUID()
_lock = threading.Lock()


def next_nuid() -> str:
    """A new 22-character token, unique in this process and random across processes."""
    with _lock:
        return _generator.next().decode()
