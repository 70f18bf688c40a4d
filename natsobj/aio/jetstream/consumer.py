"""An ordered consumer: one filter subject, read in stream order, recreated from the last
sequence after a gap, a lost heartbeat, a restart or the loss of the stream leader.

Two ways to be delivered to, chosen per connection:

- **Pull** for one-off reads (chunks, listings, changes) within the account's own JetStream
  (the default API prefix): the reader asks for a batch as it consumes (for object reads, two
  requests of half of ``read_window_bytes`` each, the next asked for while the previous one
  arrives), which keeps more data in flight than push flow control allows
  (docs/performance.md).
- **Push** for watches, and for everything through an API prefix (another account, another
  domain): the server delivers to an inbox subject, so nothing beyond the inbox-prefix stream
  import is needed; a pull request's many-message reply would need ``response_type: stream``
  on the API export. This is how the official clients read. Flow control gives the
  back-pressure: a flow-control request queues behind the messages delivered before it and is
  answered when the reader takes it, so the server never runs more than its 2 MiB window
  ahead of the reader. Its idle heartbeats are what lets a watch notice a lost stream leader
  (a long pull stalled past a leader kill in tests/cluster/test_watch_failover.py).

Deliveries are routed raw from the connection's read loop (``JetStreamApi.subscribe_deliveries``):
no header dict, ``Msg`` or queue task per message; the few control messages (heartbeats,
flow control, status) have their headers parsed when they come.

Object reads use ``stop_when_idle``: every chunk already exists, so a consumer that runs dry
(pull: the no-wait request ends; push: a heartbeat reports no gap) means the chunks vanished.
Watches keep waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from natsobj.aio.jetstream.failover import Failover
from natsobj.aio.jetstream.jsapi import JetStreamApi, parse_headers, raw_status
from natsobj.aio.jetstream.nuids import next_nuid
from natsobj.errors import BucketRecreated, NatsObjError, NotConnected, PermissionDenied
from natsobj.model import time_from_nanos
from natsobj.retry import RetryableError
from natsobj.wire import (
    CONSUMER_STALLED,
    DEFAULT_API_PREFIX,
    DESCRIPTION,
    LAST_CONSUMER_SEQUENCE,
    consumer_create_api,
    consumer_delete_subject,
    flow_control_prefix,
    pull_subject,
)

_NANOS = 1_000_000_000
# Stalled heartbeats on one flow-control subject, each answered, before we conclude that our
# answers cannot reach the server (across accounts: no '$JS.FC.>' import).
STALLED_HEARTBEATS = 3
# In a cluster a pull can reach its node before the new consumer's interest has: the server
# answers 503 (no responders). Ask again shortly; after this many in a row, recreate it.
PULL_RETRY_SECONDS = 0.05
MAX_UNANSWERED_PULLS = 40
# Idle heartbeats of a one-off read (chunks, listings): how soon vanished messages or a dead
# server are noticed.
READ_HEARTBEAT = 1.0
# Idle heartbeats of a long-lived consumer (a watch): how soon a lost leader is noticed.
FOLLOW_HEARTBEAT = 5.0


@dataclass
class StreamMsg:
    subject: str
    data: bytes
    sequence: int
    pending: int
    nanos: int  # the server's receive time
    headers: bytes = b""  # the raw header block (a record's Nats-TTL, a delete marker's reason)

    @property
    def time(self) -> datetime:
        """Made only when asked for: chunks of a large object never need it."""
        return time_from_nanos(self.nanos)


@dataclass(slots=True)
class _Delivery:
    """A message on the consumer's inbox as the connection read it: no header dict, no Msg."""

    subject: bytes
    reply: bytes
    headers: bytes  # the raw header block, b"" without one
    data: bytes


class _Inbox:
    """What reached the consumer's inbox, in order: deliveries, filled straight from the
    connection's read loop, the PermissionDenied of a refused publish, or the NotConnected
    of a lost connection."""

    def __init__(self) -> None:
        self._items: deque[_Delivery | NatsObjError] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: _Delivery | NatsObjError) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def take(self) -> _Delivery | NatsObjError | None:
        return self._items.popleft() if self._items else None

    def empty(self) -> bool:
        return not self._items

    async def wait(self) -> None:
        """Return once something is there."""
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None


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


def _filter_config(subjects: tuple[str, ...]) -> dict[str, Any]:
    """A consumer config's filter: the one subject, or several (nats-server 2.10 and later)."""
    if len(subjects) == 1:
        return {"filter_subject": subjects[0]}
    return {"filter_subjects": list(subjects)}


class OrderedConsumer:
    def __init__(
        self,
        api: JetStreamApi,
        stream: str,
        filter_subject: str | tuple[str, ...],
        *,
        deliver_policy: str = "all",
        start_sequence: int | None = None,
        stop_when_idle: bool = False,
        heartbeat: float = FOLLOW_HEARTBEAT,
        batch: int = 256,
        pulls_ahead: int = 1,
        bucket: str | None = None,
        headers_only: bool = False,
        on_created: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``batch``: messages per pull request; ``pulls_ahead``: requests kept open at once.
        With two, the next batch is asked for while the previous one is still arriving, so
        the server never idles for a round trip between batches (object reads, which want
        every message); one suits readers that may stop early (a page of changes).
        ``on_created`` runs after each consumer creation, before anything it delivers is
        taken: a watch checks there that the stream is still the one it started on (a
        consumer recreated on a new stream of the same name would resume at the old stream's
        sequence); what it raises discards that consumer. ``filter_subject`` may be several
        subjects, delivered in stream order."""
        self.api = api
        self.stream = stream
        self.filter_subjects = (
            (filter_subject,) if isinstance(filter_subject, str) else tuple(filter_subject)
        )
        self.deliver_policy = deliver_policy
        self.start_sequence = start_sequence
        self.stop_when_idle = stop_when_idle
        self.heartbeat = heartbeat
        self.batch = max(1, batch)
        self.headers_only = headers_only  # subjects and sequences are all the reader needs
        self.on_created = on_created
        self.pulls_ahead = max(1, pulls_ahead)
        self.pull = stop_when_idle and api.prefix == DEFAULT_API_PREFIX  # see the docstring
        self.bucket = bucket
        self.last_sequence = 0  # last stream sequence handed to the reader
        self.initial_pending = 0
        self.exhausted = False  # stop_when_idle: the server has nothing more to deliver
        self._consumer_seq = 0
        self._name = ""
        self._unsubscribe_inbox: Callable[[], Awaitable[None]] | None = None
        self._inbox_items = _Inbox()
        self._stop_listening = lambda: None
        self._last_arrival = time.monotonic()
        self._ever_delivered = False  # anything at all reached our inbox: the import works
        self._first_created = 0.0  # when the first consumer was created
        self._requests: deque[int] = deque()  # pull: messages still owed by each open request
        self._dry = False  # pull: a request found nothing more; ask for no more
        self._inbox = ""
        self._unanswered_pulls = 0  # pull: requests in a row that found no consumer (503)
        self._stalled_on = ""  # the flow-control subject of the last stalled heartbeat
        self._unanswered = 0  # stalled heartbeats in a row on that subject

    async def start(self) -> int:
        """Create the consumer; returns how many messages were pending at creation."""
        self._first_created = time.monotonic()
        self.initial_pending = await self._create()
        return self.initial_pending

    def _config(self, deliver_subject: str) -> dict[str, Any]:
        config: dict[str, Any] = {
            "name": self._name,
            "ack_policy": "none",
            "max_deliver": 1,
            **_filter_config(self.filter_subjects),
            "mem_storage": True,
            "num_replicas": 1,
            "inactive_threshold": 120 * _NANOS,
            "replay_policy": "instant",
        }
        if self.headers_only:
            config["headers_only"] = True
        if not self.pull:
            config["deliver_subject"] = deliver_subject
            config["flow_control"] = True
            config["idle_heartbeat"] = int(self.heartbeat * _NANOS)
        if self.last_sequence:
            config["deliver_policy"] = "by_start_sequence"
            config["opt_start_seq"] = self.last_sequence + 1
        elif self.deliver_policy == "by_start_sequence":
            config["deliver_policy"] = "by_start_sequence"
            config["opt_start_seq"] = self.start_sequence or 1
        else:
            config["deliver_policy"] = self.deliver_policy
        return config

    async def _create(self) -> int:
        """A new consumer on a new inbox, so nothing from a replaced one can be mistaken for
        ours (its heartbeats report another consumer's sequence)."""
        await self._unsubscribe()
        self._inbox_items = items = _Inbox()
        inbox = self.api.nc.new_inbox()

        def deliver(subject: bytes, reply: bytes, headers: bytes, data: bytes) -> None:
            self._last_arrival = time.monotonic()
            self._ever_delivered = True
            items.put(_Delivery(subject, reply, headers, data))

        self._unsubscribe_inbox = await self.api.subscribe_deliveries(inbox, deliver)
        self._inbox = inbox
        self._requests.clear()
        self._dry = False
        self._consumer_seq = 0
        self.exhausted = False
        self._last_arrival = time.monotonic()
        response = await self._create_named(inbox)
        if self.on_created is not None:
            try:
                await self.on_created()
            except BaseException:
                await self._unsubscribe()  # nothing this consumer delivers is taken
                raise
        return int(response.get("num_pending", 0))

    def _rename(self) -> None:
        self._name = next_nuid()
        self._stop_listening()
        refusable = (  # what we publish without a reply future: pull requests or FC answers
            pull_subject(self.api.prefix, self.stream, self._name)
            if self.pull
            else flow_control_prefix(self.stream, self._name)
        )
        stop_denial = self.api.listen_for_denial(refusable, self._inbox_items.put)
        stop_loss = self.api.listen_for_loss(self._inbox_items.put)

        def stop_listening() -> None:
            stop_denial()
            stop_loss()

        self._stop_listening = stop_listening

    async def _create_named(self, inbox: str) -> dict[str, Any]:
        """CONSUMER.CREATE, under a new name for each attempt: in a cluster an unanswered
        create may have been assigned to a node that is gone, and asking again under the same
        name would wait for that node."""
        filters = " ".join(self.filter_subjects)
        failover = Failover(self.api, f"consumer create on {filters}", self.bucket)
        while True:
            self._rename()
            try:
                return await self.api.call_once(
                    consumer_create_api(self.stream, self._name, self.filter_subjects),
                    {"stream_name": self.stream, "config": self._config(inbox)},
                    bucket=self.bucket,
                    timeout=failover.attempt_timeout,
                )
            except RetryableError as exc:
                await failover.wait(exc)

    async def next(self, timeout: float | None = None) -> StreamMsg | None:
        """The next message in order; None on timeout, or (stop_when_idle) when nothing is
        left."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.exhausted:
            if self.api.nc.is_closed:
                raise NotConnected("connection closed while reading", bucket=self.bucket)
            # no-wait requests: one that ends early means the consumer ran dry
            if self.pull and not self._dry and len(self._requests) < self.pulls_ahead:
                await self._pull()
            item = self._inbox_items.take()
            if item is None:
                wait = self.heartbeat
                if deadline is not None:
                    wait = min(wait, max(0.0, deadline - time.monotonic()))
                try:
                    async with asyncio.timeout(max(wait, 0.001)):
                        await self._inbox_items.wait()
                    continue  # ask for the next batch before handling this one
                except TimeoutError:
                    # checked on every wake-up: a caller polling with short timeouts must not
                    # keep a consumer that died with its node from being noticed
                    await self._on_silence()
                    if deadline is not None and time.monotonic() >= deadline:
                        return None
                    continue
            if isinstance(item, NotConnected):
                await self._on_loss(item)
                continue
            if isinstance(item, NatsObjError):  # PermissionDenied
                raise item
            result = await self._handle(item)
            if result is not None:
                return result
        return None

    async def _on_loss(self, error: NotConnected) -> None:
        """The connection was lost: a read recreates its consumer once reconnected (within
        the bound wait_connected keeps from the loss) or raises; a watch waits on, as through
        any outage, until the client gives up reconnecting."""
        if self.api.nc.is_closed:
            raise error
        if self.stop_when_idle:
            await self._reset()

    async def _pull(self) -> None:
        """A no-wait request: the messages there are, up to a batch, then 404 (dry)."""
        subject = pull_subject(self.api.prefix, self.stream, self._name)
        await self.api.wait_connected(subject)
        body = json.dumps({"batch": self.batch, "no_wait": True}).encode()
        await self.api.nc.publish(subject, body, reply=self._inbox)
        self._requests.append(self.batch)

    async def _handle(self, msg: _Delivery) -> StreamMsg | None:
        line = raw_status(msg.headers) if msg.headers else None
        status = line[0] if line else None
        if status is None and msg.reply:
            consumer, sseq, cseq, nanos, pending = _parse_ack_subject(msg.reply.decode())
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
            return StreamMsg(
                msg.subject.decode(), msg.data, sseq, pending, nanos, headers=msg.headers
            )
        if status == "100":
            if msg.reply:  # flow control: the reader has taken everything delivered before it
                await self._answer(msg.reply.decode())
                return None
            await self._on_heartbeat(parse_headers(msg.headers) or {})
            return None
        if status in ("404", "408"):  # pull: a request ended
            if self._requests:
                self._requests.popleft()
            self._dry = True
            self.exhausted = self.stop_when_idle and not self._requests
            return None
        if status == "503":  # pull: the request beat the new consumer's interest to its node
            await self._pull_again()
            return None
        if status == "409":
            description = (parse_headers(msg.headers) or {}).get(DESCRIPTION, "")
            if "deleted" in description.lower() or "leadership" in description.lower():
                await self._reset()
        return None

    async def _pull_again(self) -> None:
        if self._requests:
            self._requests.popleft()
        self._unanswered_pulls += 1
        if self._unanswered_pulls >= MAX_UNANSWERED_PULLS:
            self._unanswered_pulls = 0
            await self._reset()
        await asyncio.sleep(PULL_RETRY_SECONDS)

    async def _on_heartbeat(self, headers: dict[str, str]) -> None:
        stalled = headers.get(CONSUMER_STALLED)
        if stalled:  # our flow-control answer got lost (a reconnect): answer again
            # Count only heartbeats sent after our answer: older ones wait behind the queue.
            recent = self._inbox_items.empty()
            same = stalled == self._stalled_on
            self._unanswered = self._unanswered + recent if same else int(recent)
            self._stalled_on = stalled
            if self._unanswered > STALLED_HEARTBEATS:
                raise self.api.flow_control_unreachable(stalled, self.bucket)
            await self._answer(stalled)
        last = int(headers.get(LAST_CONSUMER_SEQUENCE) or 0)
        if last > self._consumer_seq:
            await self._reset()  # messages were lost on the way
        elif self.stop_when_idle and not self.pull and not stalled and self._inbox_items.empty():
            self.exhausted = True  # idle with nothing lost: the server has nothing more

    async def _answer(self, reply: str) -> None:
        with contextlib.suppress(Exception):  # a lost answer is retried on the stalled heartbeat
            await self.api.nc.publish(reply, b"")

    async def _on_silence(self) -> None:
        if time.monotonic() - self._last_arrival < self.heartbeat * 3:
            return
        # Not even a heartbeat ever reached us (in a cluster: not even after the time an
        # election may take): deliveries cannot cross into this account.
        patience = self.api.failover_timeout if self.api.in_cluster else self.heartbeat * 3
        never = not self._ever_delivered and self.api.nc.is_connected
        if never and time.monotonic() - self._first_created >= patience:
            raise self.api.undeliverable(f"{self.stream} consumer {self._name}", self.bucket)
        await self._reset()  # heartbeats stopped: the consumer or its server went away

    async def _reset(self) -> None:
        """Recreate the consumer after the last message handed out. In a cluster the create
        call itself rides out a leader election (up to the client's failover_timeout, then
        ClusterUnavailable names the missing leader or quorum); a read gives up with that
        error, a watch tries again after the next silence."""
        old = self._name
        if self.api.nc.is_connected:
            with contextlib.suppress(Exception):
                await self.api.nc.publish(
                    consumer_delete_subject(self.api.prefix, self.stream, old), b""
                )
        try:
            await self._create()
        except (PermissionDenied, BucketRecreated):
            raise
        except NatsObjError:
            if self.stop_when_idle:
                raise
            self._last_arrival = time.monotonic()  # a watch outlives any outage

    async def _unsubscribe(self) -> None:
        self._stop_listening()
        if self._unsubscribe_inbox is not None:
            with contextlib.suppress(Exception):
                await self._unsubscribe_inbox()
            self._unsubscribe_inbox = None

    async def close(self) -> None:
        await self._unsubscribe()
        with contextlib.suppress(Exception):
            if self._name and self.api.nc.is_connected:
                await self.api.nc.publish(
                    consumer_delete_subject(self.api.prefix, self.stream, self._name), b""
                )
        self._name = ""
