"""SIGKILL the only server at a random moment during put, get, ranged read, list, iter_list,
get_info, changes and watch, on both faces, and hold each call to the bound docs/production.md
states: a typed error naming the server within the API timeout of the loss (a watch's
``next(timeout)`` returns by its timeout instead). A put that fails leaves the previous version
intact, or stored the new one whole. Each run draws its kill delay from a seed it prints
(``NATSOBJ_FAULT_SEED`` replays one)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import natsobj
import natsobj.aio
from natsobj.aio.client import CLOSE_GRACE_SECONDS, RECONNECT_ATTEMPTS
from natsobj.local.embedded import NatsServerProcess

API_TIMEOUT = 2.0
# What a loaded machine may add to the bound: scheduling, the loop thread's hand-over.
MARGIN = 1.5
# A call still running this long after the kill is reported as hung instead of hanging the run.
GUARD = 30.0
MAX_CALLS = 200  # calls per run before the kill must have stopped one
CHUNK = 128 * 1024
BIG = 48 * 1024 * 1024  # puts, gets and ranged reads long enough for a kill to land inside
LISTED = 300  # objects listed by list and changes


def _seed() -> int:
    seed = int(os.environ.get("NATSOBJ_FAULT_SEED") or random.randrange(2**32))
    print(f"NATSOBJ_FAULT_SEED={seed}")
    return seed


class Face:
    """One of the two faces, driven from a worker thread so that a hung call is reported:
    the blocking facade as it is, the async core on an event loop of the test's own."""

    def __init__(self, kind: str, url: str) -> None:
        self.kind = kind
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="fault-call")
        self._loop: asyncio.AbstractEventLoop | None = None
        if kind == "aio":
            self._loop = asyncio.new_event_loop()
            threading.Thread(target=self._loop.run_forever, daemon=True).start()
            self.client: Any = self.run(natsobj.aio.connect(url, api_timeout=API_TIMEOUT))
        else:
            self.client = natsobj.connect(url, api_timeout=API_TIMEOUT)

    def run(self, value: Any) -> Any:
        """A blocking call's result as it is; an async one's awaited on the face's loop."""
        if self._loop is None or not asyncio.iscoroutine(value):
            return value
        return asyncio.run_coroutine_threadsafe(value, self._loop).result()

    def start(self, operation: Callable[[], Any]) -> concurrent.futures.Future:
        """``operation()`` started in the worker thread."""
        return self._worker.submit(lambda: self.run(operation()))

    def call(self, operation: Callable[[], Any], what: str) -> Any:
        """``operation()`` in the worker thread, failing the test if it outlives GUARD."""
        return self.outcome(self.start(operation), what)

    def outcome(self, future: concurrent.futures.Future, what: str) -> Any:
        try:
            return future.result(GUARD)
        except concurrent.futures.TimeoutError:
            pytest.fail(f"{what} ({self.kind}) still blocked {GUARD:g}s later")

    def close(self) -> None:
        closing = self._worker.submit(lambda: self.run(self.client.close()))
        try:
            closing.result(GUARD)
        finally:
            self._worker.shutdown(wait=False)
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._loop.stop)


@pytest.fixture(params=["sync", "aio"])
def face(request, own_server: NatsServerProcess) -> Iterator[Face]:
    opened = Face(request.param, own_server.url)
    yield opened
    opened.close()


class Killer:
    """SIGKILLs the server after a delay, remembering when."""

    def __init__(self, server: NatsServerProcess, delay: float) -> None:
        self.server = server
        self.at: float | None = None
        self._timer = threading.Timer(delay, self._kill)

    def _kill(self) -> None:
        self.at = time.monotonic()
        self.server.kill()

    def __enter__(self) -> Killer:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def kill_during(
    face: Face,
    server: NatsServerProcess,
    operation: Callable[[], Any],
    what: str,
    *,
    on_success: Callable[[Any], None] = lambda _: None,
) -> natsobj.NatsObjError:
    """Time one call, then call again and again while the server is killed at a random moment
    within about that time. Every call that runs when the kill comes, or starts after it,
    must raise a natsobj error naming the server within API_TIMEOUT (+ MARGIN) of the later
    of the kill and its own start; returns that error."""
    rnd = random.Random(_seed())
    started = time.monotonic()
    on_success(face.call(operation, what))
    delay = rnd.uniform(0.0, 1.2 * (time.monotonic() - started))
    print(f"{what}: SIGKILL after {delay:.3f}s")
    server_address = f"127.0.0.1:{server.port}"
    with Killer(server, delay) as killer:
        for _ in range(MAX_CALLS):
            began = time.monotonic()
            try:
                on_success(face.call(operation, what))
            except natsobj.NatsObjError as error:
                ended = time.monotonic()
                assert killer.at is not None, f"{what} failed before the kill: {error}"
                took = ended - max(began, killer.at)
                assert took <= API_TIMEOUT + MARGIN, (
                    f"{what} ({face.kind}) raised {took:.2f}s after the server was lost,"
                    f" beyond the {API_TIMEOUT:g}s bound: {error}"
                )
                assert server_address in str(error), error
                return error
    pytest.fail(f"{what}: {MAX_CALLS} calls and none was stopped by the kill")


def _usable(client: Any, face: Face, bucket: str) -> Any:
    deadline = time.monotonic() + 20
    while True:
        try:
            return face.run(client.store(bucket))
        except natsobj.NotConnected:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_put_killed_at_a_random_moment(face: Face, own_server: NatsServerProcess):
    store = face.run(face.client.create_store("faults"))
    base = os.urandom(BIG)
    versions = iter(range(1, 256))
    attempted: list[bytes] = [b"version 0"]
    face.run(store.put("artifact", attempted[0]))
    stored = [attempted[0]]  # the last version a put returned for

    def put() -> Any:
        data = bytes([next(versions)]) + base[1:]
        attempted.append(data)
        return store.put("artifact", data, chunk_size=CHUNK)

    def returned(_info: Any) -> None:
        stored.append(attempted[-1])

    error = kill_during(face, own_server, put, "put", on_success=returned)
    assert isinstance(error, natsobj.NotConnected), error
    own_server.start()  # the same data directory and port
    store = _usable(face.client, face, "faults")
    data = face.run(store.get_bytes("artifact"))  # digest verified
    # a put whose record landed just before the kill may have lost only its answer
    assert data in (stored[-1], attempted[-1]), hashlib.sha256(data).hexdigest()


@pytest.fixture
def filled(face: Face) -> tuple[Any, bytes]:
    """A bucket with one large object and LISTED small ones."""
    store = face.run(face.client.create_store("faults"))
    big = os.urandom(BIG)
    face.run(store.put("big", big, chunk_size=CHUNK))
    for index in range(LISTED):
        face.run(store.put(f"small/{index:04d}", b"x"))
    return store, big


def test_get_killed_at_a_random_moment(face, own_server, filled):
    store, big = filled

    def got(data: bytes) -> None:
        assert data == big

    kill_during(face, own_server, lambda: store.get_bytes("big"), "get_bytes", on_success=got)


def test_ranged_read_killed_at_a_random_moment(face, own_server, filled):
    store, big = filled
    start, end = 3 * CHUNK + 17, BIG - 5 * CHUNK

    def got(data: bytes) -> None:
        assert data == big[start:end]

    kill_during(
        face, own_server, lambda: store.get_range("big", start, end), "get_range", on_success=got
    )


def test_list_killed_at_a_random_moment(face, own_server, filled):
    store, _ = filled

    def listed(infos: list) -> None:
        assert len(infos) == LISTED + 1

    kill_during(face, own_server, lambda: store.list(), "list", on_success=listed)


def test_iter_list_killed_at_a_random_moment(face, own_server, filled):
    store, _ = filled

    async def collect() -> list:
        return [info async for info in store.iter_list()]

    def listing() -> Any:
        return collect() if face.kind == "aio" else list(store.iter_list())

    def listed(infos: list) -> None:
        assert len(infos) == LISTED + 1

    kill_during(face, own_server, listing, "iter_list", on_success=listed)


def test_get_info_killed_at_a_random_moment(face, own_server, filled):
    store, _ = filled

    def found(info: Any) -> None:
        assert info.size == BIG

    kill_during(face, own_server, lambda: store.get_info("big"), "get_info", on_success=found)


def test_changes_killed_at_a_random_moment(face, own_server, filled):
    store, _ = filled

    def changed(changes: Any) -> None:
        assert len(changes) == LISTED + 1

    kill_during(
        face, own_server, lambda: store.changes(0, limit=10 * LISTED), "changes", on_success=changed
    )


def test_watch_killed_at_a_random_moment(face, own_server):
    """A watch outlives an outage while the client reconnects (a restart must not end a
    sensor), so its bound is the caller's: ``next(timeout)`` returns by its timeout, before
    and after the kill; closing the client ends a watch blocked without a timeout with
    NotConnected, within close()'s own bound."""
    store = face.run(face.client.create_store("faults"))
    watcher = store.watch()
    face.run(watcher.start()) if face.kind == "aio" else None
    rnd = random.Random(_seed())
    delay = rnd.uniform(0.0, 1.0)
    wait = 0.5
    writing = threading.Event()

    def write() -> None:  # a second connection, so the watch has changes to deliver
        with natsobj.connect(own_server.url, api_timeout=API_TIMEOUT) as writer:
            other = writer.store("faults")
            index = 0
            while not writing.is_set():
                try:
                    other.put(f"w{index}", b"x")
                except natsobj.NatsObjError:
                    return
                index += 1

    threading.Thread(target=write, daemon=True).start()
    try:
        with Killer(own_server, delay) as killer:
            while killer.at is None or time.monotonic() - killer.at < 3 * API_TIMEOUT:
                began = time.monotonic()
                face.call(lambda: watcher.next(wait), "watch.next")
                assert time.monotonic() - began <= wait + MARGIN
    finally:
        writing.set()
    blocked = face.start(lambda: watcher.next(None))
    began = time.monotonic()
    face.run(face.client.close())  # from the test's thread while the worker waits
    with pytest.raises(natsobj.NotConnected):
        face.outcome(blocked, "watch.next(None) across close()")
    assert time.monotonic() - began <= API_TIMEOUT + CLOSE_GRACE_SECONDS + MARGIN


@pytest.mark.slow
def test_watch_ends_when_the_client_stops_reconnecting(own_server):
    """The other end of a watch's bound: with the server gone for good, the client gives up
    after RECONNECT_ATTEMPTS attempts 0.5 s apart and the watch raises NotConnected."""
    client = natsobj.connect(own_server.url, api_timeout=API_TIMEOUT)
    store = client.create_store("faults")
    watcher = store.watch()
    assert watcher.next(1.0) is None
    worker = concurrent.futures.ThreadPoolExecutor(1)
    blocked = worker.submit(watcher.next, None)
    own_server.kill()
    killed = time.monotonic()
    bound = RECONNECT_ATTEMPTS * 0.5 + 2 * API_TIMEOUT + MARGIN
    try:
        with pytest.raises(natsobj.NotConnected):
            blocked.result(bound + GUARD)
        assert time.monotonic() - killed <= bound
    finally:
        worker.shutdown(wait=False)
        client.close()
