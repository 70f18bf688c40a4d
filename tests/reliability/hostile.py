"""A hostile NATS server: a real asyncio TCP server on loopback that speaks just enough of the
protocol (INFO with JetStream, PONG, SUB bookkeeping) for natsobj to connect, then answers
each JetStream API request the way its ``mode`` says a broken or malicious server would."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

MAX_PAYLOAD = 1024 * 1024  # what the INFO announces
HUGE = 2_000_000_000  # the size a huge frame announces
STREAM_CAP = 256 * 1024 * 1024  # what it streams of that at most, then it stalls
PIECE = 64 * 1024

# how the server answers a JetStream API request
NOT_JSON = "not-json"  # an HMSG whose payload is not JSON
BAD_HEADER = "bad-header"  # an HMSG whose header block is announced larger than the message
HUGE_MSG = "huge-msg"  # announces a HUGE-byte MSG and streams its bytes
SILENT = "silent"  # never answers anything after the connect handshake


class HostileServer:
    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.port = 0
        self.streamed = 0  # bytes of a huge frame written so far
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def __enter__(self) -> HostileServer:
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), daemon=True).start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._shut(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)

    async def _shut(self) -> None:
        if self._server is not None:
            self._server.close()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        ready.set()
        self._loop.run_forever()

    def _info(self) -> bytes:
        info: dict[str, Any] = {
            "server_id": "NHOSTILE",
            "server_name": "hostile",
            "version": "2.11.0",
            "proto": 1,
            "go": "go1.22",
            "host": "127.0.0.1",
            "port": self.port,
            "headers": True,
            "max_payload": MAX_PAYLOAD,
            "jetstream": True,
        }
        return f"INFO {json.dumps(info)}\r\n".encode()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        subscriptions: dict[str, str] = {}  # subject -> sid
        writer.write(self._info())
        handshake = True
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                op, *args = line.decode(errors="replace").split()
                op = op.upper()
                if op == "PING":
                    if handshake or self.mode != SILENT:
                        writer.write(b"PONG\r\n")
                        await writer.drain()
                    handshake = False
                elif op == "SUB":
                    subscriptions[args[0]] = args[-1]
                elif op in ("PUB", "HPUB"):
                    await reader.readexactly(int(args[-1]) + 2)
                    reply = args[1] if len(args) > (3 if op == "HPUB" else 2) else ""
                    if reply and args[0].startswith("$JS.API."):
                        sid = _sid_for(reply, subscriptions)
                        if sid is not None:
                            await self._answer(writer, reply, sid)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            writer.close()

    async def _answer(self, writer: asyncio.StreamWriter, reply: str, sid: str) -> None:
        if self.mode == NOT_JSON:
            headers = b"NATS/1.0\r\nX: y\r\n\r\n"
            body = b"\x00<html>not a JetStream reply"
            size = len(headers) + len(body)
            writer.write(f"HMSG {reply} {sid} {len(headers)} {size}\r\n".encode())
            writer.write(headers + body + b"\r\n")
        elif self.mode == BAD_HEADER:
            body = b"NATS/1.0\r\n\r\n{}"
            writer.write(f"HMSG {reply} {sid} 4096 {len(body)}\r\n".encode() + body + b"\r\n")
        elif self.mode == HUGE_MSG:
            writer.write(f"MSG {reply} {sid} {HUGE}\r\n".encode())
            piece = b"\xaa" * PIECE
            while self.streamed < STREAM_CAP:
                writer.write(piece)
                self.streamed += PIECE
                await writer.drain()
            await asyncio.sleep(3600)
        await writer.drain()


def _sid_for(reply: str, subscriptions: dict[str, str]) -> str | None:
    for subject, sid in subscriptions.items():
        if subject == reply or (subject.endswith(".*") and reply.rsplit(".", 1)[0] == subject[:-2]):
            return sid
    return None
