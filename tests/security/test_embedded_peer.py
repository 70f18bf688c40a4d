"""The embedded server's secret goes only to that server (issue 28, point 12).

After the server stops (``natsobj serve --stop``, a crash, an OOM kill), a client still open
keeps reconnecting to ``127.0.0.1:<port>``; another local user who binds that port must get
nothing from it: no CONNECT at all from a client that knows the data directory (it proves its
peer is the directory's server first), and from any client (a Spark executor gets resolved
settings) nothing that would open the buckets once the server is back: the server admits an
nkey, whose signature of the impostor's nonce is worthless to the real server.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import socket
from pathlib import Path

import pytest

from natsobj import aio
from natsobj.errors import NoServer
from natsobj.local.embedded import (
    CREDENTIALS_FILE,
    STATE_FILE,
    NatsServerProcess,
    ensure_server,
    stop_server,
)
from natsobj.local.embedded_rule import resolve_server
from natsobj.settings import RUNNING_EMBEDDED, ConnectionSettings

WAIT = 20.0


class Impostor:
    """A real asyncio server on the stopped server's port: greets like nats-server (with a
    nonce, as a server that wants a signature does) and records every byte each client sends."""

    def __init__(self) -> None:
        self.received: list[bytearray] = []
        self.got_connect = asyncio.Event()
        self.answered = asyncio.Event()  # a client hung up, or sent CONNECT
        self.server: asyncio.Server | None = None

    async def start(self, port: int) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", port)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        port = writer.get_extra_info("sockname")[1]
        info = {
            "server_id": "NIMPOSTOR",
            "version": "2.15.1",
            "proto": 1,
            "host": "127.0.0.1",
            "port": port,
            "headers": True,
            "max_payload": 1048576,
            "auth_required": True,
            "nonce": secrets.token_urlsafe(16),
        }
        writer.write(b"INFO " + json.dumps(info).encode() + b"\r\n")
        await writer.drain()
        got = bytearray()
        self.received.append(got)
        while chunk := await reader.read(65536):
            got += chunk
            if b"CONNECT " in got:
                self.got_connect.set()
                self.answered.set()
                if b"PING" in got:
                    writer.write(b"PONG\r\n")
        self.answered.set()
        writer.close()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


def secret_of(data_dir: Path) -> str:
    """The one secret the embedded server's clients hold, whatever form it has."""
    doc = json.loads((data_dir / CREDENTIALS_FILE).read_text())
    return doc.get("nkey_seed") or doc["password"]


async def wait_for(event: asyncio.Event, what: str) -> None:
    try:
        await asyncio.wait_for(event.wait(), WAIT)
    except TimeoutError:
        raise AssertionError(f"no {what} within {WAIT}s") from None


async def replay(port: int, connect_line: bytes) -> bytes:
    """Send a captured CONNECT to the real server and return its answer to the PING after."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        await reader.readline()  # its INFO, with a new nonce
        writer.write(connect_line + b"PING\r\n")
        await writer.drain()
        return await asyncio.wait_for(reader.readline(), WAIT)
    finally:
        writer.close()


def test_a_reconnecting_client_sends_nothing_to_whoever_took_the_port(tmp_path: Path) -> None:
    data_dir = (tmp_path / "data").resolve()

    async def scenario() -> list[bytearray]:
        client = await aio.connect(f"embedded://{data_dir}")
        port = int(client.nc.connected_url.port)
        impostor = Impostor()
        try:
            assert stop_server(data_dir)
            await impostor.start(port)
            await wait_for(impostor.answered, "reconnect to the impostor")
        finally:
            await impostor.close()
            await asyncio.wait_for(client.close(), WAIT)
        return impostor.received

    try:
        received = asyncio.run(scenario())
        secret = secret_of(data_dir)
    finally:
        stop_server(data_dir)
    assert received, "the client did not reconnect"
    assert all(got == b"" for got in received), bytes(received[0])[:300]
    assert not any(secret.encode() in got for got in received)


def test_what_an_impostor_captures_is_worthless_to_the_restarted_server(tmp_path: Path) -> None:
    """A client that cannot prove its peer (resolved settings, as Spark executors get them)
    still sends nothing reusable: a captured CONNECT replayed to the server is refused."""
    data_dir = (tmp_path / "data").resolve()
    resolved = resolve_server(ConnectionSettings.from_url(f"embedded://{data_dir}"))
    port = int(resolved.servers[0].rsplit(":", 1)[1])

    async def capture() -> bytes:
        client = await aio.connect(resolved)
        impostor = Impostor()
        try:
            assert stop_server(data_dir)
            await impostor.start(port)
            await wait_for(impostor.got_connect, "CONNECT at the impostor")
        finally:
            await impostor.close()
            await asyncio.wait_for(client.close(), WAIT)
        return bytes(next(got for got in impostor.received if b"CONNECT " in got))

    try:
        captured = asyncio.run(capture())
        secret = secret_of(data_dir)
        assert secret.encode() not in captured
        connect_line = captured[: captured.index(b"\r\n") + 2]
        assert connect_line.startswith(b"CONNECT ")
        ensure_server(data_dir, port=port)
        answer = asyncio.run(replay(port, connect_line))
    finally:
        stop_server(data_dir)
    assert b"Authorization Violation" in answer, answer


def test_a_server_an_older_natsobj_started_with_a_password_is_restarted_with_a_key(
    tmp_path: Path,
) -> None:
    """The password an older natsobj generated is replaced, and its server with it; until
    then, a face without a URL says so instead of failing to sign in."""
    data_dir = (tmp_path / "data").resolve()
    data_dir.mkdir(mode=0o700)
    password = secrets.token_urlsafe(32)
    (data_dir / CREDENTIALS_FILE).touch(mode=0o600)
    (data_dir / CREDENTIALS_FILE).write_text(json.dumps({"user": "natsobj", "password": password}))
    config = f'authorization {{\n  user: "natsobj"\n  password: "{password}"\n}}\n'
    legacy = NatsServerProcess(data_dir, config=config, detach=True)
    legacy.start()
    (data_dir / STATE_FILE).touch(mode=0o600)
    (data_dir / STATE_FILE).write_text(json.dumps({"pid": legacy.pid, "port": legacy.port}))
    try:
        with pytest.raises(NoServer, match="started by an older natsobj"):
            resolve_server(ConnectionSettings.from_url(f"{RUNNING_EMBEDDED}://{data_dir}"))
        server = ensure_server(data_dir)
        assert server.pid != legacy.pid and legacy.process is not None
        assert legacy.process.wait(WAIT) is not None
        assert server.credentials is not None and secret_of(data_dir) != password
        with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as sock:
            assert b'"nonce"' in sock.recv(4096), "the server asks for a signature"
        assert password not in (data_dir / "server.conf").read_text()
    finally:
        legacy.kill()
        stop_server(data_dir)


@pytest.mark.parametrize("seed", ["SUAJUNK", ""])
def test_a_credentials_file_that_is_no_key_is_refused(tmp_path: Path, seed: str) -> None:
    from natsobj.errors import UnsafeLocalState

    data_dir = (tmp_path / "data").resolve()
    data_dir.mkdir(mode=0o700)
    (data_dir / CREDENTIALS_FILE).touch(mode=0o600)
    (data_dir / CREDENTIALS_FILE).write_text(json.dumps({"nkey_seed": seed}))
    with pytest.raises(UnsafeLocalState, match="not a credentials record natsobj wrote"):
        ensure_server(data_dir)
