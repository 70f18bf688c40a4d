"""Publishing a chunk stream with a bounded window of unacknowledged bytes.

The window keeps memory flat and stays well under the server's ingest queue. If the server
answers 429 (slow down), chunk order must survive the retry: the chunks stored after the
refused one are deleted and everything from the refused chunk on is sent again, in order.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from dataclasses import dataclass

from nats.aio.msg import Msg

from natsobj.aio.jsapi import JetStreamApi, RetryableError, api_error, status_of
from natsobj.errors import BucketNotFound, NatsObjError

MAX_RETRIES = 6
NO_RESPONDERS = "no responders"


@dataclass
class _InFlight:
    data: bytes
    reply: asyncio.Future[Msg]


class PublishWindow:
    def __init__(
        self,
        api: JetStreamApi,
        subject: str,
        stream: str,
        *,
        max_bytes: int,
        bucket: str,
        name: str,
        ack_timeout: float,
    ) -> None:
        self.api = api
        self.subject = subject
        self.stream = stream
        self.max_bytes = max_bytes
        self.bucket = bucket
        self.name = name
        self.ack_timeout = ack_timeout
        self._inflight: deque[_InFlight] = deque()
        self._bytes = 0

    async def publish(self, data: bytes) -> None:
        self._inflight.append(_InFlight(data, await self.api.send(self.subject, data)))
        self._bytes += len(data)
        while self._bytes > self.max_bytes:
            await self._settle_oldest()

    async def drain(self) -> None:
        while self._inflight:
            await self._settle_oldest()

    async def _settle_oldest(self) -> None:
        entry = self._inflight[0]
        try:
            self._check(await self._ack(entry))
        except RetryableError:
            await self._resend_from_oldest()
            return
        self._inflight.popleft()
        self._bytes -= len(entry.data)

    async def _ack(self, entry: _InFlight) -> Msg:
        try:
            async with asyncio.timeout(self.ack_timeout):
                return await asyncio.shield(entry.reply)
        except TimeoutError:
            raise self.api.unreachable(self.subject) from None

    def _check(self, reply: Msg) -> int:
        status = status_of(reply)
        if status == "503":
            raise RetryableError(NO_RESPONDERS, bucket=self.bucket, name=self.name)
        response = json.loads(reply.data)
        if "error" in response:
            raise api_error(response["error"], bucket=self.bucket, name=self.name)
        return int(response["seq"])

    async def _resend_from_oldest(self) -> None:
        last_error = "429"
        for attempt in range(MAX_RETRIES):
            stored_after = []
            for entry in list(self._inflight)[1:]:
                try:
                    stored_after.append(self._check(await self._ack(entry)))
                except RetryableError:
                    continue
            for sequence in stored_after:
                await self.api.call(
                    f"STREAM.MSG.DELETE.{self.stream}",
                    {"seq": sequence, "no_erase": True},
                    bucket=self.bucket,
                )
            await asyncio.sleep(min(0.05 * 2**attempt, 2.0))
            for entry in self._inflight:
                entry.reply = await self.api.send(self.subject, entry.data)
            try:
                self._check(await self._ack(self._inflight[0]))
            except RetryableError as exc:
                last_error = exc.message
                continue
            entry = self._inflight.popleft()
            self._bytes -= len(entry.data)
            return
        if last_error == NO_RESPONDERS:
            raise BucketNotFound(
                f"no stream stores {self.subject!r}",
                bucket=self.bucket,
                name=self.name,
                hint="The bucket was deleted, or (across accounts) '$O.>' is not imported"
                " under the API prefix.",
            )
        raise NatsObjError(
            f"the server kept refusing chunks ({last_error})",
            bucket=self.bucket,
            name=self.name,
            hint="The server is overloaded; retry later or lower put_window_bytes.",
        )

    async def abandon(self) -> None:
        """Wait briefly for acks still in flight so a purge afterwards catches every chunk."""
        pending = [entry.reply for entry in self._inflight if not entry.reply.done()]
        if pending:
            await asyncio.wait(pending, timeout=self.api.timeout)
        self._inflight.clear()
        self._bytes = 0
