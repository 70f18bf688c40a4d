"""With TLS configured, a server (or an impostor on its address) that does not ask for TLS
gets nothing: no CONNECT, no credentials, on the first connect and on every reconnect.

The impostor is a plain socket server on loopback that sends a NATS INFO without
``tls_required`` and records every byte it receives."""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import natsobj
from natsobj import ConnectionSettings
from natsobj.local.embedded import NatsServerProcess, free_port
from natsobj.sync import run
from tests.security.pki import Pki
from tests.security.support import PROMPT, as_tls, assert_no_secret, exception_text, stopwatch
from tests.security.test_tls import tls_block

USER = "alice"
PASSWORD = "pw-Tz72-secret"
TOKEN = "tok-Hq85-secret"
PAYLOAD = b"payload-Wd03"
PLAIN_INFO = {
    "server_id": "IMPOSTOR",
    "version": "2.10.0",
    "proto": 1,
    "headers": True,
    "max_payload": 1048576,
    "auth_required": True,
}


class Impostor:
    """A plaintext 'NATS server' that greets every client with ``info`` and keeps whatever
    the client sends, so a test can prove that nothing secret reached it."""

    def __init__(self, port: int, info: dict[str, object]) -> None:
        self.port = port
        self.greeting = b"INFO " + json.dumps(info).encode() + b"\r\n"
        self.received = bytearray()
        self.connections = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self._listener.settimeout(0.1)
        self._stopped = threading.Event()
        self._talking = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            with conn:
                self._talk(conn)

    def _talk(self, conn: socket.socket) -> None:
        with self._lock:
            self.connections += 1
        self._talking.set()
        conn.sendall(self.greeting)
        conn.settimeout(0.5)
        try:
            while data := conn.recv(65536):
                with self._lock:
                    self.received += data
        except OSError:
            pass
        finally:
            self._talking.clear()

    def wait_for_connections(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.connections < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.connections >= count, f"only {self.connections} connection(s) came"

    def assert_received_nothing(self) -> None:
        """Once the client has hung up: not one byte came, so no CONNECT and no secret."""
        deadline = time.monotonic() + 2
        while self._talking.is_set() and time.monotonic() < deadline:
            time.sleep(0.02)
        with self._lock:
            seen = bytes(self.received)
        assert seen == b"", seen[:200]

    def close(self) -> None:
        self._stopped.set()
        self._thread.join(5)
        self._listener.close()


@contextmanager
def impostor(port: int, **info: object) -> Iterator[Impostor]:
    server = Impostor(port, {**PLAIN_INFO, "port": port, **info})
    try:
        yield server
    finally:
        server.close()


def refused(settings: ConnectionSettings) -> natsobj.NotConnected:
    with stopwatch() as took, pytest.raises(natsobj.NotConnected) as err:
        natsobj.connect(settings)
    assert took.seconds < PROMPT, f"refusal took {took.seconds:.1f}s"
    return err.value


def assert_says_why(error: natsobj.NotConnected, port: int) -> None:
    text = str(error)
    assert f"127.0.0.1:{port}" in text  # names the server
    assert "did not offer TLS" in text  # and why
    assert "in clear" in text
    assert_no_secret(exception_text(error), [PASSWORD, TOKEN])


# -- first connect -------------------------------------------------------------------------------


@pytest.mark.timeout(15)
@pytest.mark.parametrize(
    "credentials",
    [{"user": USER, "password": PASSWORD}, {"token": TOKEN}],
    ids=["password", "token"],
)
def test_tls_url_refuses_a_server_that_does_not_offer_tls(pki: Pki, credentials):
    port = free_port()
    with impostor(port) as fake:
        settings = ConnectionSettings(
            servers=[f"tls://127.0.0.1:{port}"],
            tls_ca=str(pki.ca),
            connect_timeout=2,
            **credentials,
        )
        error = refused(settings)
        fake.wait_for_connections(1, 1)
        fake.assert_received_nothing()
    assert_says_why(error, port)


@pytest.mark.timeout(15)
@pytest.mark.parametrize("option", ["tls_ca", "tls_cert"])
def test_tls_options_on_a_nats_url_refuse_a_plaintext_server(pki: Pki, option):
    """``nats://`` with a CA or a client certificate means TLS too: no downgrade."""
    port = free_port()
    tls = (
        {"tls_ca": str(pki.ca)}
        if option == "tls_ca"
        else {"tls_cert": str(pki.client.cert), "tls_key": str(pki.client.key)}
    )
    with impostor(port) as fake:
        url = f"nats://{USER}:{PASSWORD}@127.0.0.1:{port}"
        error = refused(ConnectionSettings.from_url(url, connect_timeout=2, **tls))
        fake.assert_received_nothing()
    assert_says_why(error, port)


@pytest.mark.timeout(15)
def test_tls_required_false_is_refused_too(pki: Pki):
    port = free_port()
    with impostor(port, tls_required=False, tls_available=True) as fake:
        url = f"tls://{USER}:{PASSWORD}@127.0.0.1:{port}"
        error = refused(ConnectionSettings.from_url(url, tls_ca=str(pki.ca), connect_timeout=2))
        fake.assert_received_nothing()
    assert_says_why(error, port)


@pytest.mark.timeout(15)
def test_without_tls_configured_a_plaintext_server_is_still_used():
    """The check is about configured TLS only: plain ``nats://`` keeps working."""
    port = free_port()
    with impostor(port) as fake:
        # the impostor never answers PING: whatever happens after CONNECT is not the point
        with contextlib.suppress(Exception):
            natsobj.connect(f"nats://127.0.0.1:{port}", connect_timeout=1).close()
        fake.wait_for_connections(1, 1)
    assert b"CONNECT" in bytes(fake.received)  # it spoke NATS to the server, as asked


# -- reconnect: the address is taken over by an impostor -----------------------------------------


@pytest.fixture
def tls_auth_server(tmp_path, pki: Pki) -> Iterator[NatsServerProcess]:
    config = tls_block(pki, verify=False) + (
        f"authorization {{ users: [ {{user: {USER}, password: {PASSWORD}}} ] }}\n"
    )
    with NatsServerProcess(tmp_path / "tls-auth", config=config) as server:
        yield server


@pytest.mark.timeout(30)
def test_reconnect_to_an_impostor_sends_nothing(tls_auth_server, pki: Pki, caplog):
    """Neither the credentials nor a publish buffered while reconnecting (nats-py flushes
    those into the last socket when the client is closed) reach the impostor."""
    caplog.set_level(logging.WARNING, logger="natsobj")
    port = tls_auth_server.port
    url = as_tls(tls_auth_server.url).replace("tls://", f"tls://{USER}:{PASSWORD}@")
    client = natsobj.connect(url, tls_ca=str(pki.ca), connect_timeout=2)
    try:
        assert client.store_names() == []  # a real, authenticated TLS connection first
        tls_auth_server.stop()
        with impostor(port) as fake:
            fake.wait_for_connections(2, 10)  # the client came back, and came back again
            run(client.aio.nc.publish("natsobj.test", PAYLOAD))  # buffered: not connected
            client.close()
            fake.assert_received_nothing()
    finally:
        client.close()
    warnings = [r.getMessage() for r in caplog.records if "did not offer TLS" in r.getMessage()]
    assert warnings, "a refused reconnect is worth a warning"
    assert f"127.0.0.1:{port}" in warnings[0]
    assert_no_secret(caplog.text, [PASSWORD])
