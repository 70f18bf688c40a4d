"""A broken or hostile server (tests/reliability/hostile.py, a real socket server on loopback):
what it sends is a typed error naming it, within the API timeout, never a raw exception; a
frame larger than its own max_payload closes the connection instead of filling the client's
memory; and close() is bounded whatever the server does."""

from __future__ import annotations

import concurrent.futures
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

import natsobj
from natsobj.aio.client import CLOSE_GRACE_SECONDS
from tests.reliability.hostile import (
    BAD_HEADER,
    HUGE,
    HUGE_MSG,
    NOT_JSON,
    PIECE,
    SILENT,
    HostileServer,
)

API_TIMEOUT = 2.0
MARGIN = 1.5  # a loaded machine's scheduling
GUARD = 30.0  # a call still running this long is reported as hung


def _bounded(call: Callable[[], Any], bound: float, what: str) -> tuple[Any, float]:
    """``call()`` in a worker thread, failing the test if it outlives GUARD; returns what it
    returned or raised, and how long it took (which must be within ``bound``)."""
    worker = concurrent.futures.ThreadPoolExecutor(1)
    began = time.monotonic()

    def outcome() -> Any:
        try:
            return call()
        except Exception as exc:  # returned, to be asserted on in the test's thread
            return exc

    try:
        result = worker.submit(outcome).result(GUARD)
    except concurrent.futures.TimeoutError:
        pytest.fail(f"{what} still blocked {GUARD:g}s later")
    finally:
        worker.shutdown(wait=False)
    took = time.monotonic() - began
    assert took <= bound, f"{what} took {took:.2f}s, beyond its {bound:g}s bound"
    return result, took


@pytest.mark.parametrize("mode", [NOT_JSON, BAD_HEADER])
def test_malformed_reply_is_a_protocol_violation_naming_the_server(mode):
    with HostileServer(mode) as server:
        client = natsobj.connect(server.url, api_timeout=API_TIMEOUT)
        try:
            error, _ = _bounded(lambda: client.store("b"), API_TIMEOUT + MARGIN, "store()")
            assert isinstance(error, natsobj.ProtocolViolation), repr(error)
            assert f"127.0.0.1:{server.port}" in str(error)
        finally:
            _bounded(client.close, API_TIMEOUT + CLOSE_GRACE_SECONDS + MARGIN, "close()")


@pytest.mark.fast_paths
def test_a_frame_beyond_max_payload_closes_the_connection_with_bounded_memory():
    """The server announces a 2 GB message and streams it: the client stops reading it
    once the frame is known to exceed the server's own max_payload."""
    with HostileServer(HUGE_MSG) as server:
        client = natsobj.connect(server.url, api_timeout=API_TIMEOUT)
        tracemalloc.start()
        try:
            error, _ = _bounded(lambda: client.store("b"), API_TIMEOUT + MARGIN, "store()")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
            _bounded(client.close, API_TIMEOUT + CLOSE_GRACE_SECONDS + MARGIN, "close()")
        assert isinstance(error, natsobj.ProtocolViolation), repr(error)
        assert f"127.0.0.1:{server.port}" in str(error) and str(HUGE) in str(error)
        assert peak < 16 * 1024 * 1024, f"the client held {peak} bytes at its peak"
        # the server could write only what the socket buffers took before the client left
        assert server.streamed < 64 * 1024 * 1024 + PIECE, server.streamed


def test_close_is_bounded_when_the_server_stops_answering():
    with HostileServer(SILENT) as server:
        client = natsobj.connect(server.url, api_timeout=API_TIMEOUT)
        error, _ = _bounded(lambda: client.store("b"), API_TIMEOUT + MARGIN, "store()")
        assert isinstance(error, natsobj.NotConnected), repr(error)
        assert f"127.0.0.1:{server.port}" in str(error)
        _bounded(client.close, API_TIMEOUT + CLOSE_GRACE_SECONDS + MARGIN, "close()")
