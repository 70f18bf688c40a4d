"""Publishing a chunk stream with a bounded window of unacknowledged bytes.

The window keeps memory flat and stays well under the server's ingest queue. Every chunk
carries a message id (``Nats-Msg-Id``), so sending it again is harmless: the stream stores it
once and acknowledges the copy with the original's sequence. That makes recovery simple. When
a chunk is refused (429 slow down, 503 no responders), stored out of order, or not
acknowledged at all (the stream leader was lost), every chunk still in the window is sent
again in order until all of them are acknowledged in order. Copies stored out of order are
deleted first, and their chunks sent under a new id generation, which the stream would
otherwise drop as duplicates.

The first chunk claims the put's chunk subject: it is stored only while the subject is empty
(``Nats-Expected-Last-Subject-Sequence: 0``). A put whose nuid another put holds (a forked
process that drew its parent's ids, say) is refused there, before anything of it is stored,
instead of mixing its chunks into the other's object; the put then draws another nuid
(``NuidTaken``). Message ids are the put's own (``natsobj.aio.jetstream.nuids.put_id``), so the
stream's duplicate detection never answers one put's chunk with another's.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from nats.aio.msg import Msg

from natsobj.aio.jetstream.api_errors import api_error
from natsobj.aio.jetstream.failover import FAILOVER_ATTEMPT_TIMEOUT, cluster_unavailable
from natsobj.aio.jetstream.jsapi import JetStreamApi, status_of
from natsobj.errors import BucketNotFound, NatsObjError, NotConnected
from natsobj.retry import RESEND, RetryableError
from natsobj.wire import (
    EXPECTED_LAST_SUBJECT_SEQ,
    MSG_ID,
    OBJECT_SUBJECT_PREFIX,
    WRONG_LAST_SEQUENCE,
    WRONG_LAST_SEQUENCE_CONSTANT,
    chunk_msg_id,
    stream_api,
)

NO_RESPONDERS = "no responders"
UNANSWERED = "no acknowledgement"


class NuidTaken(Exception):
    """The put's chunk subject was not empty when its first chunk came: another put holds
    the nuid. Nothing of this put was stored there; it must draw another nuid. (After a
    resend in a cluster, the chunk refused may be this put's own first copy, whose
    acknowledgement was lost: drawing another nuid leaves that copy to ``compact``.)"""


@dataclass
class _InFlight:
    index: int
    data: bytes
    reply: asyncio.Future[Msg] = field(init=False)


class PublishWindow:
    def __init__(
        self,
        api: JetStreamApi,
        subject: str,
        stream: str,
        *,
        nuid: str,
        put_id: str,
        max_bytes: int,
        bucket: str,
        name: str,
        ack_timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.api = api
        self.headers = dict(headers or {})  # sent with every chunk (its Nats-TTL)
        self.subject = subject
        self.stream = stream
        self.nuid = nuid
        self.put_id = put_id
        self.max_bytes = max_bytes
        self.bucket = bucket
        self.name = name
        self.ack_timeout = ack_timeout
        self._inflight: deque[_InFlight] = deque()
        self._bytes = 0
        self._next_index = 0
        self._generation = 0
        self._last_sequence = 0  # stream sequence of the last chunk acknowledged in order
        self.claimed = False  # the first chunk is stored: the chunk subject is this put's

    async def publish(self, data: bytes) -> None:
        entry = _InFlight(self._next_index, data)
        self._next_index += 1
        await self._send(entry)
        self._inflight.append(entry)
        self._bytes += len(data)
        while self._bytes > self.max_bytes:
            await self._settle_oldest()

    async def drain(self, *, keep_last: bool = False) -> None:
        """Wait until every chunk is acknowledged in order; with ``keep_last``, every chunk
        but the newest (see ``last_msg_id``)."""
        while len(self._inflight) > int(keep_last):
            await self._settle_oldest()

    def last_msg_id(self) -> str | None:
        """The message id of the newest chunk when it is the only one not yet acknowledged,
        else None. A message published with it as ``Nats-Expected-Last-Msg-Id`` is stored
        only right behind that chunk, so only if every chunk was stored."""
        if len(self._inflight) != 1 or self._inflight[0].index != self._next_index - 1:
            return None
        return chunk_msg_id(self.put_id, self._inflight[0].index, self._generation)

    async def _send(self, entry: _InFlight) -> None:
        headers = {**self.headers, MSG_ID: chunk_msg_id(self.put_id, entry.index, self._generation)}
        if entry.index == 0:  # the claim (see above)
            headers[EXPECTED_LAST_SUBJECT_SEQ] = "0"
        entry.reply = await self.api.send(self.subject, entry.data, headers)

    async def _settle_oldest(self) -> None:
        entry = self._inflight[0]
        # in a cluster a lost ack is resent soon (harmless: the stream drops the duplicate)
        timeout = (
            min(self.ack_timeout, self.api.timeout) if self.api.in_cluster else self.ack_timeout
        )
        try:
            sequence = self._check(await self._ack(entry, timeout), entry)
        except RetryableError:
            await self._recover()
            return
        if sequence <= self._last_sequence:  # stored behind a later chunk
            await self._recover()
            return
        self._accept(sequence)

    def _accept(self, sequence: int) -> None:
        entry = self._inflight.popleft()
        self._bytes -= len(entry.data)
        self._last_sequence = sequence
        self.claimed = True

    async def _ack(self, entry: _InFlight, timeout: float) -> Msg:
        """The chunk's acknowledgement. One the lost connection failed before it was awaited
        is a lost one too: in a cluster the window is sent again."""
        try:
            if entry.reply.done():  # the usual case with a full window: no timer to arm
                return entry.reply.result()
            async with asyncio.timeout(timeout):
                return await asyncio.shield(entry.reply)
        except (TimeoutError, NotConnected) as exc:  # NotConnected: the connection was lost
            if not self.api.in_cluster:
                if isinstance(exc, NotConnected):
                    raise
                raise self.api.unreachable(self.subject) from None
            raise RetryableError(UNANSWERED, bucket=self.bucket, name=self.name) from None

    def _check(self, reply: Msg, entry: _InFlight) -> int:
        status = status_of(reply)
        if status == "503":
            raise RetryableError(NO_RESPONDERS, bucket=self.bucket, name=self.name)
        response = self.api.reply_json(reply, self.subject)
        error = response.get("error")
        if error is not None:
            taken = (WRONG_LAST_SEQUENCE, WRONG_LAST_SEQUENCE_CONSTANT)
            if entry.index == 0 and int(error.get("err_code") or 0) in taken:
                raise NuidTaken(self.subject)
            raise api_error(error, bucket=self.bucket, name=self.name)
        return int(response["seq"])

    async def _outcomes(self) -> list[int | str]:
        """Each in-flight chunk's stream sequence, or why it has none (refused, unanswered)."""
        pending = [entry.reply for entry in self._inflight if not entry.reply.done()]
        if pending:
            await asyncio.wait(pending, timeout=min(self.ack_timeout, FAILOVER_ATTEMPT_TIMEOUT))
        outcomes: list[int | str] = []
        for entry in self._inflight:
            if not entry.reply.done() or _lost(entry.reply):
                outcomes.append(UNANSWERED)
                continue
            try:
                outcomes.append(self._check(entry.reply.result(), entry))
            except RetryableError as exc:
                outcomes.append(exc.message)
        return outcomes

    async def _recover(self) -> None:
        """Send the window again until every chunk in it is acknowledged in order: outside a
        cluster for the resends of ``RESEND``, in one until the failover timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.api.failover_timeout
        for attempt in itertools.count():
            outcomes = await self._outcomes()
            stored = [o for o in outcomes if isinstance(o, int)]
            if len(stored) == len(outcomes) and _ascending([self._last_sequence, *stored]):
                for sequence in stored:
                    self._accept(sequence)
                return
            if UNANSWERED not in outcomes and stored:
                # every answer is in: drop the copies stored out of order or after a refused
                # chunk, and store those chunks again under new ids
                for sequence in stored:
                    await self.api.call(
                        stream_api("MSG.DELETE", self.stream),
                        {"seq": sequence, "no_erase": True},
                        bucket=self.bucket,
                    )
                self._generation += 1
            refused = [o for o in outcomes if isinstance(o, str)]
            problem = refused[0] if refused else "stored out of order"
            if self.api.in_cluster and loop.time() >= deadline:
                raise await self._cluster_error()
            if not self.api.in_cluster and attempt + 1 >= (RESEND.attempts or 0):
                raise self._refused(problem)
            await RESEND.pause(attempt + 1, deadline=deadline if self.api.in_cluster else None)
            for entry in self._inflight:
                await self._send(entry)

    def _refused(self, problem: str) -> NatsObjError:
        if problem == NO_RESPONDERS:
            return BucketNotFound(
                f"no stream stores {self.subject!r}",
                bucket=self.bucket,
                name=self.name,
                hint=f"The bucket was deleted, or (across accounts) '{OBJECT_SUBJECT_PREFIX}.>'"
                " is not imported under the API prefix.",
            )
        return NatsObjError(
            f"the server kept refusing chunks ({problem})",
            bucket=self.bucket,
            name=self.name,
            hint="The server is overloaded; retry later or lower put_window_bytes.",
        )

    async def _cluster_error(self) -> NatsObjError:
        """After failover_timeout: the bucket is gone, or the cluster lacks a leader/quorum."""
        try:
            reply = await self.api.request(
                f"{self.api.prefix}.{stream_api('INFO', self.stream)}",
                timeout=FAILOVER_ATTEMPT_TIMEOUT,
            )
            body = self.api.reply_json(reply, self.stream)
            error = body.get("error") if status_of(reply) is None else None
            if error is not None and isinstance(
                api_error(error, bucket=self.bucket), BucketNotFound
            ):
                return self._refused(NO_RESPONDERS)
        except NatsObjError:
            pass
        return await cluster_unavailable(self.api, self.subject, self.bucket, self.name)

    async def abandon(self) -> None:
        """Wait briefly for acks still in flight so a purge afterwards catches every chunk,
        and learn whether the first chunk was stored (``claimed``): only then is the chunk
        subject this put's to purge."""
        pending = [entry.reply for entry in self._inflight if not entry.reply.done()]
        if pending:
            await asyncio.wait(pending, timeout=self.api.timeout)
        first = self._inflight[0] if self._inflight else None
        if first is not None and first.index == 0 and first.reply.done() and not _lost(first.reply):
            with contextlib.suppress(Exception):
                self.claimed = self._check(first.reply.result(), first) > 0
        self._inflight.clear()
        self._bytes = 0


def _lost(reply: asyncio.Future[Msg]) -> bool:
    """Whether the acknowledgement was cut off by a lost connection (so never came)."""
    return reply.cancelled() or isinstance(reply.exception(), NotConnected)


def _ascending(sequences: list[int]) -> bool:
    return all(a < b for a, b in itertools.pairwise(sequences))
