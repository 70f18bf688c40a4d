"""An ordered pull consumer: one filter subject, read in stream order, credit given only as the
reader consumes, recreated from the last sequence after a gap, a lost heartbeat or a restart.

Object reads use it with ``no_wait`` (every chunk already exists, so "no messages" means the
chunks vanished); watches use long pulls with idle heartbeats.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nats.aio.msg import Msg
from nats.nuid import NUID

from natsobj.aio.jsapi import Failover, JetStreamApi, TransientError, status_of
from natsobj.errors import NotConnected, PermissionDenied
from natsobj.model import time_from_nanos
from natsobj.wire import DESCRIPTION, consumer_delete_subject, pull_subject

_nuid = NUID()
_NANOS = 1_000_000_000
# In a cluster a pull can reach its node before the new consumer's interest has: the server
# answers 503 (no responders). Ask again shortly; after this many in a row, recreate it.
PULL_RETRY_SECONDS = 0.05
MAX_UNANSWERED_PULLS = 40


@dataclass
class StreamMsg:
    subject: str
    data: bytes
    sequence: int
    pending: int
    time: datetime


def _parse_ack_subject(reply: str) -> tuple[str, int, int, int, int]:
    """(consumer, stream seq, consumer seq, timestamp ns, pending) from a ``$JS.ACK`` subject."""
    tokens = reply.split(".")
    # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>, or the newer form
    # with <domain>.<account hash> after $JS.ACK and a random token at the end.
    base = 2 if len(tokens) == 9 else 4
    return (
        tokens[base + 1],
        int(tokens[base + 3]),
        int(tokens[base + 4]),
        int(tokens[base + 5]),
        int(tokens[base + 6]),
    )


class OrderedConsumer:
    def __init__(
        self,
        api: JetStreamApi,
        stream: str,
        filter_subject: str,
        *,
        deliver_policy: str = "all",
        start_sequence: int | None = None,
        batch: int = 64,
        no_wait: bool = False,
        heartbeat: float = 5.0,
        expires: float = 30.0,
        bucket: str | None = None,
    ) -> None:
        self.api = api
        self.stream = stream
        self.filter_subject = filter_subject
        self.deliver_policy = deliver_policy
        self.start_sequence = start_sequence
        self.batch = max(1, batch)
        self.no_wait = no_wait
        self.heartbeat = heartbeat
        self.expires = expires
        self.bucket = bucket
        self.last_sequence = 0  # last stream sequence handed to the reader
        self.initial_pending = 0
        self._consumer_seq = 0
        self._name = ""
        self._requests: deque[int] = deque()  # messages still owed by each open pull request
        self._inbox = api.nc.new_inbox()
        self._subscription: Any = None
        # Deliveries, or the PermissionDenied of a refused pull request (see _create).
        self._queue: asyncio.Queue[Msg | PermissionDenied] = asyncio.Queue()
        self._stop_listening = lambda: None
        self._last_activity = time.monotonic()
        self._unanswered_pulls = 0

    async def start(self) -> int:
        """Create the consumer; returns how many messages were pending at creation."""
        self._subscription = await self.api.nc.subscribe(self._inbox, cb=self._deliver)
        self.initial_pending = await self._create()
        return self.initial_pending

    async def _deliver(self, msg: Msg) -> None:
        self._queue.put_nowait(msg)

    def _pull_subject(self) -> str:
        return pull_subject(self.api.prefix, self.stream, self._name)

    def _rename(self) -> None:
        self._name = _nuid.next().decode()
        self._stop_listening()
        self._stop_listening = self.api.listen_for_denial(
            self._pull_subject(), self._queue.put_nowait
        )

    async def _create(self) -> int:
        self._rename()
        config: dict[str, Any] = {
            "name": self._name,
            "ack_policy": "none",
            "filter_subject": self.filter_subject,
            "mem_storage": True,
            "num_replicas": 1,
            "inactive_threshold": 120 * _NANOS,
            "replay_policy": "instant",
        }
        if self.last_sequence:
            config["deliver_policy"] = "by_start_sequence"
            config["opt_start_seq"] = self.last_sequence + 1
        elif self.deliver_policy == "by_start_sequence":
            config["deliver_policy"] = "by_start_sequence"
            config["opt_start_seq"] = self.start_sequence or 1
        else:
            config["deliver_policy"] = self.deliver_policy
        response = await self._create_named(config)
        self._consumer_seq = 0
        self._requests.clear()
        self._last_activity = time.monotonic()
        return int(response.get("num_pending", 0))

    async def _create_named(self, config: dict[str, Any]) -> dict[str, Any]:
        """CONSUMER.CREATE, under a new name for each attempt: in a cluster an unanswered
        create may have been assigned to a node that is gone, and asking again under the same
        name would wait for that node."""
        failover = Failover(self.api, f"consumer create on {self.filter_subject}", self.bucket)
        while True:
            try:
                return await self.api.call_once(
                    f"CONSUMER.CREATE.{self.stream}.{self._name}.{self.filter_subject}",
                    {"stream_name": self.stream, "config": config},
                    bucket=self.bucket,
                    timeout=failover.attempt_timeout,
                )
            except TransientError as exc:
                await failover.wait(exc)
            self._rename()
            config["name"] = self._name

    async def _pull(self) -> None:
        body: dict[str, Any] = {"batch": self.batch}
        if self.no_wait:
            body["no_wait"] = True
        else:
            body["expires"] = int(self.expires * _NANOS)
            body["idle_heartbeat"] = int(self.heartbeat * _NANOS)
        subject = pull_subject(self.api.prefix, self.stream, self._name)
        await self.api.wait_connected(subject)
        await self.api.nc.publish(subject, json.dumps(body).encode(), reply=self._inbox)
        self._requests.append(self.batch)

    def _owed(self) -> int:
        return sum(self._requests)

    @property
    def exhausted(self) -> bool:
        """With no_wait: every open request has ended, so nothing more will arrive."""
        return self.no_wait and not self._requests

    async def next(self, timeout: float | None = None) -> StreamMsg | None:
        """The next message in order; None on timeout, or (no_wait) when nothing is left."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._owed() <= self.batch // 2 and not (self.no_wait and self._requests):
                try:
                    await self._pull()
                except NotConnected:
                    if self.no_wait:
                        raise
                    self._requests.clear()  # a watch outlives a server restart: retry later
            wait = self.heartbeat * 3 if not self.no_wait else self.api.timeout
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - time.monotonic()))
            if self.api.nc.is_closed:
                raise NotConnected("connection closed while reading", bucket=self.bucket)
            try:
                async with asyncio.timeout(max(wait, 0.001)):
                    msg = await self._queue.get()
            except TimeoutError:
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                await self._on_silence()
                continue
            if isinstance(msg, PermissionDenied):
                raise msg
            self._last_activity = time.monotonic()
            result = await self._handle(msg)
            if result is not None:
                return result
            if self.exhausted:
                return None

    async def _handle(self, msg: Msg) -> StreamMsg | None:
        status = status_of(msg)
        if status is None and msg.reply:
            consumer, sseq, cseq, nanos, pending = _parse_ack_subject(msg.reply)
            if consumer != self._name:
                return None  # left over from a consumer we replaced
            if cseq != self._consumer_seq + 1:
                await self._reset()  # a gap: start over after the last message we handed out
                return None
            self._consumer_seq = cseq
            self._unanswered_pulls = 0
            if self._requests:
                self._requests[0] -= 1
                if self._requests[0] <= 0:
                    self._requests.popleft()
            self.last_sequence = sseq
            return StreamMsg(msg.subject, msg.data, sseq, pending, time_from_nanos(nanos))
        if status == "100":  # idle heartbeat
            return None
        if status == "503":
            await self._pull_again()
            return None
        if status in ("404", "408"):  # a pull request ended
            if self._requests:
                self._requests.popleft()
            return None
        if status == "409":
            description = (msg.headers or {}).get(DESCRIPTION, "")
            if "deleted" in description.lower() or "leadership" in description.lower():
                await self._reset()
            elif self._requests:
                self._requests.popleft()
            return None
        return None

    async def _pull_again(self) -> None:
        """A pull found no consumer to answer it (see PULL_RETRY_SECONDS)."""
        if self._requests:
            self._requests.popleft()
        self._unanswered_pulls += 1
        if self._unanswered_pulls >= MAX_UNANSWERED_PULLS:
            self._unanswered_pulls = 0
            await self._reset()
        await asyncio.sleep(PULL_RETRY_SECONDS)
        await self._pull()

    async def _on_silence(self) -> None:
        if self.no_wait:
            raise self.api.unreachable(f"{self.stream} consumer {self._name}")
        if time.monotonic() - self._last_activity >= self.heartbeat * 3:
            await self._reset()  # heartbeats stopped: the consumer or the server went away

    async def _reset(self) -> None:
        old = self._name
        with contextlib.suppress(Exception):
            await self.api.nc.publish(
                consumer_delete_subject(self.api.prefix, self.stream, old), b""
            )
        try:
            await self._create()
        except NotConnected:
            self._last_activity = time.monotonic()  # try again after another silence

    async def close(self) -> None:
        self._stop_listening()
        if self._subscription is None:
            return
        with contextlib.suppress(Exception):
            await self._subscription.unsubscribe()
        with contextlib.suppress(Exception):
            if self._name and self.api.nc.is_connected:
                await self.api.nc.publish(
                    consumer_delete_subject(self.api.prefix, self.stream, self._name), b""
                )
        self._subscription = None
