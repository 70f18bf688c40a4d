"""Batched direct gets (ADR-31, nats-server 2.11+): one request, many messages back.

A batched get is answered by a message per stored message, then an end-of-batch status
(``204 EOB``; ``404`` when nothing matched). The API's shared inbox takes one reply per
request, so these requests get a subscription of their own (``DirectBatches``). The listing
asks with ``multi_last`` (the last record of many names); ranged reads with ``seq`` and
``batch`` (an object's chunks from a given one on), adding ``next_by_subj`` to skip other
subjects' messages when some lie between the chunks.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from natsobj.aio.jetstream.jsapi import JetStreamApi, raw_status
from natsobj.errors import NatsObjError, NotConnected
from natsobj.wire import direct_get_batch_subject

RawMsg = tuple[bytes, bytes]  # a direct-get reply's header block and payload


class BatchedGetFailed(NatsObjError):
    """A batched direct get was answered with an error status. On the listing's first
    request it means the server cannot do them (the listing falls back); later it is the
    caller's error."""

    hint = "Try again; if it persists, check the server's health and version (2.11+)."


class BatchStalled(NotConnected):
    """A batched direct get went silent before its end-of-batch status. After exactly one
    message this is what a multi-message reply looks like across an account import that
    lacks ``response_type: stream``."""

    def __init__(self, received: int, bucket: str | None) -> None:
        super().__init__(
            f"batched direct get stalled after {received} messages",
            bucket=bucket,
            hint="Check the server's health; a retry asks again.",
        )
        self.received = received


class TooManySubjects(Exception):
    """413: the server caps subjects per batched direct get below what was sent."""


class _Batch:
    """The messages of one batched direct get, done at its end-of-batch status."""

    def __init__(self, loop: asyncio.AbstractEventLoop, bucket: str | None) -> None:
        self.bucket = bucket
        self.messages: list[RawMsg] = []
        self.done: asyncio.Future[None] = loop.create_future()

    def add(self, headers: bytes, data: bytes) -> None:
        if self.done.done():
            return
        status = raw_status(headers)
        if status is None:
            self.messages.append((headers, data))
        elif status[0] in ("204", "404"):  # end of batch; 404: nothing matched
            self.done.set_result(None)
        elif status[0] == "413":
            self.done.set_exception(TooManySubjects())
        else:
            answer = " ".join(status).strip()
            self.done.set_exception(
                BatchedGetFailed(f"batched direct get answered {answer}", bucket=self.bucket)
            )

    def fail(self, error: Exception) -> None:
        if not self.done.done():
            self.done.set_exception(error)

    async def wait(self, timeout: float) -> list[RawMsg]:
        """Wait for the end of the batch; only silence (no message for ``timeout``) fails."""
        seen = -1
        while not self.done.done():
            if len(self.messages) == seen:
                raise BatchStalled(seen, self.bucket)
            seen = len(self.messages)
            try:
                await asyncio.wait_for(asyncio.shield(self.done), timeout)
            except TimeoutError:
                continue
        self.done.result()
        return self.messages


class DirectBatches:
    """Batched direct gets on one stream, any number outstanding, over one subscription:
    ``open()``, then ``get(body)`` as often as needed, then ``close()``."""

    def __init__(self, api: JetStreamApi, stream: str, *, bucket: str | None = None) -> None:
        self.api = api
        self.bucket = bucket
        self.subject = direct_get_batch_subject(api.prefix, stream)
        self._inbox = api.nc.new_inbox()
        self._tokens = itertools.count(1)
        self._open: dict[str, _Batch] = {}
        self._unsubscribe: Callable[[], Awaitable[None]] | None = None
        self._stop_listening = lambda: None

    async def open(self) -> None:
        stop_denial = self.api.listen_for_denial(self.subject, self._on_denied)
        stop_loss = self.api.listen_for_loss(self._on_denied)  # no answer can come any more

        def stop_listening() -> None:
            stop_denial()
            stop_loss()

        self._stop_listening = stop_listening
        self._unsubscribe = await self.api.subscribe_raw(self._inbox + ".*", self._on_msg)

    def _on_msg(self, subject: bytes, headers: bytes, data: bytes) -> None:
        batch = self._open.get(subject[len(self._inbox) + 1 :].decode())
        if batch is not None:
            batch.add(headers, data)

    def _on_denied(self, error: NatsObjError) -> None:
        for batch in self._open.values():
            batch.fail(error)

    async def get(self, body: dict[str, Any]) -> list[RawMsg]:
        """The messages answering one request ``body`` (ADR-31 fields), in stream order; []
        when nothing matched. TooManySubjects on a 413, BatchedGetFailed on another status,
        BatchStalled when the answer stops before its end."""
        if self._unsubscribe is None:
            raise NotConnected("batched direct gets used before open()", bucket=self.bucket)
        token = str(next(self._tokens))
        batch = self._open[token] = _Batch(asyncio.get_running_loop(), self.bucket)
        try:
            await self.api.wait_connected(self.subject)
            await self.api.nc.publish(
                self.subject, json.dumps(body).encode(), reply=f"{self._inbox}.{token}"
            )
            return await batch.wait(self.api.timeout)
        finally:
            self._open.pop(token, None)

    async def close(self) -> None:
        self._stop_listening()
        for batch in self._open.values():
            batch.fail(NotConnected("batched direct gets closed", bucket=self.bucket))
        if self._unsubscribe is not None:
            await self._unsubscribe()
        self._unsubscribe = None
