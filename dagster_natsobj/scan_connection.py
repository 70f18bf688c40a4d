"""The connection behind a ``pl.LazyFrame`` input, kept out of the frame.

A LazyFrame input scans its object when it is collected, so it holds the filesystem it reads
with; pickled (an output holding the frame, ``LazyFrame.serialize()``), a plain
``NatsObjectFileSystem`` carries its storage options, the NATS password or token among them,
to wherever the bytes go. The filesystem made here pickles as a token instead: a keyed hash of
the options, which says nothing about them, resolved against this process's own table of the
connections its inputs opened. In another process the token names nothing and unpickling says
so (``ScanConnectionUnknown``); the frame is then loaded again there, through its IO manager.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
from typing import Any

from natsobj.errors import NatsObjError
from natsobj.fs import NatsObjectFileSystem

_TOKEN_KEY = secrets.token_bytes(32)  # the process's own: a token cannot be tried offline
_connections: dict[str, dict[str, Any]] = {}  # one entry per distinct connection, so bounded
_lock = threading.Lock()


class ScanConnectionUnknown(NatsObjError):
    """A LazyFrame input's scan was unpickled in a process other than the one that loaded it:
    its connection is known only there, as its credentials never travel with it."""

    hint = (
        "Load the input again in this process (through its IO manager), or collect the frame"
        " before handing it on."
    )


class ScanFileSystem(NatsObjectFileSystem):
    """A ``NatsObjectFileSystem`` whose pickled form is its token, never its options."""

    scan_token: str = ""

    def __reduce__(self) -> tuple[Any, ...]:
        return _by_token, (self.scan_token,)


def scan_filesystem(options: dict[str, Any]) -> ScanFileSystem:
    """The filesystem for ``options`` (``NatsObjectFileSystem`` keywords), registered under
    its token for this process."""
    text = json.dumps(options, sort_keys=True, default=repr)
    token = hmac.new(_TOKEN_KEY, text.encode(), hashlib.sha256).hexdigest()
    with _lock:
        _connections[token] = options
    fs = ScanFileSystem(**options)
    fs.scan_token = token
    return fs


def _by_token(token: str) -> ScanFileSystem:
    with _lock:
        options = _connections.get(token)
    if options is None:
        raise ScanConnectionUnknown(
            "this LazyFrame's NATS connection is known only in the process that loaded the"
            " input, and its credentials were not pickled with it"
        )
    return scan_filesystem(options)
