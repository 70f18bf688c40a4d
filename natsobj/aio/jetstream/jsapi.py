"""A thin JetStream API layer: requests through the API prefix, replies through one inbox.

All requests and publish acknowledgements share one wildcard inbox subscription, so a put can
keep many chunk acks in flight cheaply, and a permission violation reported by the server fails
the waiting request at once instead of letting it time out.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from nats.aio.client import Client as NatsConnection
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from natsobj.aio.jetstream.api_errors import api_error, publish_denied
from natsobj.aio.jetstream.failover import Failover
from natsobj.aio.jetstream.nats_internals import internals_present
from natsobj.errors import (
    ClusterUnavailable,
    NatsObjError,
    NotConnected,
    PermissionDenied,
    ProtocolViolation,
)
from natsobj.retry import RetryableError
from natsobj.settings import ConnectionSettings
from natsobj.wire import (
    CLUSTER_NOT_AVAILABLE,
    DEFAULT_API_PREFIX,
    DESCRIPTION,
    FLOW_CONTROL,
    STATUS,
    account_imports,
    header_block,
)

_VIOLATION = re.compile(r'Permissions Violation for (Publish|Subscription) to "?([^"\s]+)"?', re.I)
ACCOUNT_IMPORTS = account_imports()


# nats-py internals of the two fast paths below (see nats_internals): raw deliveries replace the
# connection's ``_process_msg`` (and key handlers by ``Subscription._id``); direct publishes
# write its outgoing buffer.
RAW_DELIVERY_INTERNALS = ("_process_msg",)
DIRECT_PUBLISH_INTERNALS = (
    "_pending",
    "_pending_data_size",
    "_max_pending_size",
    "_flush_pending",
    "_flush_queue",
    "_max_payload",
    "stats",
)

# A raw subscription's handler: subject, header block (b"" without headers) and payload.
RawHandler = Callable[[bytes, bytes, bytes], None]
# A raw delivery handler: subject, reply subject (b"" without one), header block and payload.
DeliveryHandler = Callable[[bytes, bytes, bytes, bytes], None]


def _fail(future: asyncio.Future[Msg], error: NatsObjError) -> None:
    if not future.done():
        future.set_exception(error)
        future.exception()  # its waiter may be gone (a failed put stops awaiting later acks)


def _stock_delivery(handler: DeliveryHandler) -> Callable[[Msg], Awaitable[None]]:
    """A raw handler as a nats-py message callback, for when deliveries cannot be routed raw:
    the parsed headers are written back into the block the handler reads."""

    async def deliver(msg: Msg) -> None:
        block = raw_header_block(msg.headers)
        handler(msg.subject.encode(), msg.reply.encode(), block, msg.data)

    return deliver


def raw_header_block(headers: dict[str, str] | None) -> bytes:
    """The header block for headers nats-py parsed (``parse_headers`` in reverse): its
    ``Status`` and ``Description`` go back inline, ``NATS/1.0 404 No Messages``."""
    if not headers:
        return b""
    # nats-py keys the description with a str enum, whose hash is not the string's
    named = {getattr(name, "value", name): value for name, value in headers.items()}
    status = named.pop(STATUS, None)
    description = named.pop(DESCRIPTION, "")
    first = f"NATS/1.0 {status} {description}".rstrip() if status else "NATS/1.0"
    lines = "".join(f"{name}: {value}\r\n" for name, value in named.items())
    return f"{first}\r\n{lines}\r\n".encode()


def raw_status(headers: bytes) -> tuple[str, str] | None:
    """(status, description) of a raw header block with an inline status
    (``NATS/1.0 204 EOB``), None for an ordinary message."""
    if headers[8:9] != b" ":
        return None
    line = headers[9 : headers.find(b"\r\n")].decode("utf-8", "replace")
    status, _, description = line.partition(" ")
    return status, description


def parse_headers(headers: bytes) -> dict[str, str] | None:
    """A raw header block as the dict nats-py gives (``Status`` and ``Description`` for an
    inline status), without nats-py's per-character name checks."""
    if not headers:
        return None
    lines = headers.split(b"\r\n")
    parsed: dict[str, str] = {}
    status = raw_status(headers)
    if status is not None:
        parsed[STATUS] = status[0]
        if status[1]:
            parsed[DESCRIPTION] = status[1]
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            parsed[name.strip().decode("ascii", "replace")] = value.strip().decode(
                "utf-8", "replace"
            )
    return parsed or None


def raw_header(headers: bytes, name: bytes) -> str | None:
    """One header's value from a raw header block, without parsing the rest; ``name`` is
    matched exactly as the server writes it (``b"Nats-Sequence"``). The last occurrence: the
    server adds its own (``Nats-Sequence``, ``Nats-Msg-Size``, ...) after those the publisher
    stored, which may claim anything."""
    start = headers.rfind(b"\r\n" + name + b":")
    if start == -1:
        return None
    start += len(name) + 3
    return headers[start : headers.find(b"\r\n", start)].strip().decode("utf-8", "replace")


def status_of(msg: Msg) -> str | None:
    headers = msg.headers
    return headers.get(STATUS) if headers else None


class JetStreamApi:
    """Requests to one JetStream (local, another account's, or another domain's)."""

    def __init__(self, nc: NatsConnection, settings: ConnectionSettings) -> None:
        self.nc = nc
        self.prefix = settings.js_api_prefix
        self.object_prefix = settings.object_prefix
        self.inbox_prefix = settings.inbox_prefix or "_INBOX"
        self.timeout = settings.api_timeout
        self.failover_timeout = settings.failover_timeout
        self._inbox = nc.new_inbox()
        self._tokens = itertools.count(1)
        self._waiting: dict[str, tuple[asyncio.Future[Msg], str]] = {}
        self._unsubscribe_replies: Callable[[], Awaitable[None]] | None = None
        self._denied_subscription: str | None = None
        # Set by the first listing whose batched direct get came back as a single message: an
        # API imported from another account without response_type: stream. Later listings
        # go straight to the consumer scan.
        self.batched_gets_cut_off = False
        # Subject prefixes published to without a reply future (flow-control answers), told of
        # denials.
        # by registration: several readers may listen on one prefix at once
        self._denial_listeners: dict[int, tuple[str, Callable[[PermissionDenied], None]]] = {}
        self._listener_ids = itertools.count()
        # Told when the connection is lost (consumers waiting for deliveries).
        self._loss_listeners: dict[int, Callable[[NotConnected], None]] = {}
        # When the connection was last lost (loop time), and why when natsobj cut it: the
        # patience of wait_connected runs from then, not from each call.
        self._lost_at: float | None = None
        self._lost_reason: str | None = None
        self._raw_handlers: dict[int, DeliveryHandler] = {}
        self._raw_routed = False  # set by start() when this nats-py has what routing needs
        self._direct_publish = internals_present("direct publish", nc, DIRECT_PUBLISH_INTERNALS)

    async def start(self) -> None:
        self._route_raw_messages()
        self._unsubscribe_replies = await self.subscribe_deliveries(
            self._inbox + ".*", self._on_reply
        )

    def _route_raw_messages(self) -> None:
        """Hand messages of raw subscriptions to their handler straight from the connection's
        read loop. nats-py otherwise parses every header into a dict, builds a Msg and queues
        it for a task per subscription: most of the cost of a many-message reply."""
        if not internals_present("raw deliveries", self.nc, RAW_DELIVERY_INTERNALS):
            return
        process_msg = self.nc._process_msg
        handlers = self._raw_handlers

        async def route(sid: int, subject: bytes, reply: bytes, data: bytes, headers: Any) -> None:
            handler = handlers.get(sid)
            if handler is None:
                await process_msg(sid, subject, reply, data, headers)
            else:
                handler(subject, reply, headers or b"", data)

        self.nc._process_msg = route  # type: ignore[method-assign]  # on purpose, see above
        self._raw_routed = True

    async def subscribe_raw(
        self, subject: str, handler: RawHandler
    ) -> Callable[[], Awaitable[None]]:
        """Subscribe with a handler called synchronously per message with the raw subject,
        header block and payload (see ``raw_header``); returns the unsubscribe."""
        return await self.subscribe_deliveries(
            subject, lambda subject, _reply, headers, data: handler(subject, headers, data)
        )

    async def subscribe_deliveries(
        self, subject: str, handler: DeliveryHandler
    ) -> Callable[[], Awaitable[None]]:
        """``subscribe_raw`` with the reply subject too: a consumer's deliveries carry their
        stream and consumer sequences in it (``$JS.ACK...``)."""
        routed = await self._subscribe_routed(subject)
        subscription = routed or await self.nc.subscribe(subject, cb=_stock_delivery(handler))
        sid: int | None = routed._id if routed is not None else None
        if sid is not None:
            self._raw_handlers[sid] = handler

        async def unsubscribe() -> None:
            if sid is not None:
                self._raw_handlers.pop(sid, None)
            if not self.nc.is_closed:
                await subscription.unsubscribe()

        return unsubscribe

    async def _subscribe_routed(self, subject: str) -> Subscription | None:
        """A subscription whose messages the raw route takes (by its sid), or None when they
        must go through nats-py's own delivery: no route, or a ``Subscription`` without
        ``_id`` (then the route is given up, once)."""
        if not self._raw_routed:
            return None
        subscription = await self.nc.subscribe(subject)
        if internals_present("raw deliveries", subscription, ("_id",)):
            return subscription
        await subscription.unsubscribe()
        self._raw_routed = False
        return None

    def _on_reply(self, subject: bytes, _reply: bytes, headers: bytes, data: bytes) -> None:
        """From the read loop: the waiting request resumes with no queue and task in between."""
        entry = self._waiting.pop(subject[len(self._inbox) + 1 :].decode(), None)
        if entry is not None and not entry[0].done():
            reply = Msg(
                self.nc, subject=subject.decode(), data=data, headers=parse_headers(headers)
            )
            entry[0].set_result(reply)

    def on_permission_error(self, text: str) -> bool:
        """Fail every request aimed at the denied subject; True when the error was one of ours.

        nats-py lowercases the server's error text, so subjects are compared ignoring case."""
        match = _VIOLATION.search(text)
        if not match:
            return False
        kind, subject = match.groups()
        if kind.lower() == "subscription":
            inbox = self._inbox + ".*"
            self._denied_subscription = inbox if subject.lower() == inbox.lower() else subject
            for future, _ in list(self._waiting.values()):
                _fail(future, self.subscription_denied())
            return True
        for future, target in list(self._waiting.values()):
            if target.lower() == subject.lower():
                _fail(future, publish_denied(target))
        for prefix, listener in list(self._denial_listeners.values()):
            if subject.lower().startswith(prefix.lower()):
                listener(publish_denied(prefix + subject[len(prefix) :]))
        return True

    def subscription_denied(self) -> PermissionDenied:
        return PermissionDenied(
            f"not allowed to subscribe to reply subject {self._denied_subscription!r}",
            hint="Allow the inbox prefix (or set inbox_prefix to one you may subscribe to).",
        )

    def listen_for_denial(
        self, prefix: str, listener: Callable[[PermissionDenied], None]
    ) -> Callable[[], None]:
        """Call ``listener`` if publishing to a subject starting with ``prefix`` is denied;
        returns the undo (of this listener only)."""
        key = next(self._listener_ids)
        self._denial_listeners[key] = (prefix, listener)

        def stop() -> None:
            self._denial_listeners.pop(key, None)

        return stop

    def listen_for_loss(self, listener: Callable[[NotConnected], None]) -> Callable[[], None]:
        """Call ``listener`` with the error each time the connection is lost; returns the
        undo (of this listener only)."""
        key = next(self._listener_ids)
        self._loss_listeners[key] = listener

        def stop() -> None:
            self._loss_listeners.pop(key, None)

        return stop

    def connection_lost(self, reason: str | None = None) -> None:
        """The connection dropped (nats-py's disconnected callback; ``reason`` when natsobj
        cut it for a protocol violation). No reply to a request sent before can come (the
        server answers on the connection it was asked on, and a dead server not at all), so
        every waiting request fails now rather than at its timeout, and ``wait_connected``
        counts its patience from this moment: a call's bound runs from the loss."""
        self._lost_at = asyncio.get_running_loop().time()
        self._lost_reason = reason
        for future, subject in list(self._waiting.values()):
            _fail(future, self.lost(subject))
        error = self.lost(None)
        for listener in list(self._loss_listeners.values()):
            listener(error)

    @property
    def server(self) -> str:
        """The server this connection talks (or last talked) to, by ``host:port``, for errors:
        never its URL, which may carry credentials."""
        uri = getattr(getattr(self.nc, "_current_server", None), "uri", None)
        if uri is None or not uri.hostname:
            return "the NATS server"
        return f"the NATS server at {uri.hostname}:{uri.port}"

    def lost(self, subject: str | None) -> NotConnected:
        """The error for a call the lost connection cut short, naming the server, and what
        it broke when natsobj closed the connection for a protocol violation."""
        doing = f" while calling {subject!r}" if subject else ""
        if self._lost_reason:
            return ProtocolViolation(
                f"{self.server} {self._lost_reason}, so natsobj closed the connection{doing}"
            )
        return NotConnected(f"lost the connection to {self.server}{doing}")

    def reply_json(self, reply: Msg, subject: str) -> dict[str, Any]:
        """A JetStream reply's JSON body. One that is not a JSON object is the server breaking
        the protocol: ProtocolViolation naming it, never a raw JSONDecodeError."""
        try:
            body = json.loads(reply.data)
        except ValueError:  # JSONDecodeError, UnicodeDecodeError
            body = None
        if not isinstance(body, dict) or not isinstance(body.get("error", {}), dict):
            raise ProtocolViolation(
                f"{self.server} answered {subject!r} with {len(reply.data)} bytes that are not"
                " a JetStream reply (a JSON object)"
            )
        return body

    async def send(
        self, subject: str, payload: bytes, headers: dict[str, str] | None = None
    ) -> asyncio.Future[Msg]:
        """Publish with a reply subject; return the future of the reply without waiting for it."""
        future, token = self._expect_reply(subject)
        if self._writable(payload):
            await self._write_hpub(subject, f"{self._inbox}.{token}", headers or {}, payload)
            return future
        await self._connected_for(subject, future)
        try:
            # nats-py's publish blocks on a full buffer while reconnecting: bound it
            async with asyncio.timeout(self.timeout):
                await self._publish(subject, payload, headers, future, token)
        except TimeoutError:
            raise self.unreachable(subject) from None
        return future

    def _expect_reply(self, subject: str) -> tuple[asyncio.Future[Msg], str]:
        """A future for the reply to a request to ``subject`` and its inbox token."""
        if self._denied_subscription:
            raise self.subscription_denied()
        token = str(next(self._tokens))
        future: asyncio.Future[Msg] = asyncio.get_running_loop().create_future()
        self._waiting[token] = (future, subject)
        future.add_done_callback(lambda _: self._waiting.pop(token, None))
        return future, token

    async def _connected_for(self, subject: str, future: asyncio.Future[Msg]) -> None:
        try:
            await self.wait_connected(subject)
        except BaseException:
            future.cancel()
            raise

    def _writable(self, payload: bytes) -> bool:
        """Whether a publish can go straight into the connection's outgoing buffer: connected,
        not draining, and within the server's payload limit (nats-py's own checks)."""
        nc = self.nc
        return (
            self._direct_publish
            and nc.is_connected
            and not nc.is_draining_pubs
            and len(payload) <= nc._max_payload
        )

    async def _write_hpub(
        self, subject: str, reply: str, headers: dict[str, str], payload: bytes
    ) -> None:
        """``nc.publish`` for a large payload, without its copies: nats-py concatenates the
        protocol line, headers, payload and CRLF into one new bytes object, twice over, before
        its flusher joins the pending commands again. Queued as three pieces instead, the
        payload is copied once, by that join (each put chunk: two copies fewer).
        The three go in with no await between them: another task's command must not land
        inside the message."""
        nc = self.nc
        block = header_block(headers)
        line = f"HPUB {subject} {reply} {len(block)} {len(block) + len(payload)}\r\n"
        head = line.encode() + block
        nc._pending += (head, payload, b"\r\n")
        nc._pending_data_size += len(head) + len(payload) + 2
        nc.stats["out_msgs"] += 1
        nc.stats["out_bytes"] += len(payload)
        if 0 < nc._max_pending_size < nc._pending_data_size:
            await self._force_flush(subject)  # nats-py's _send_command does the same, unbounded
        elif nc._flush_queue is not None and nc._flush_queue.empty():
            await nc._flush_pending()

    async def _force_flush(self, subject: str) -> None:
        """nats-py's forced flush waits for its flusher task with no bound, and a flusher that
        a reconnect cancels never answers (a put blocked for minutes on a killed server): here
        it is bounded by the API timeout. Cut short by a lost connection it is no error yet:
        the window acts on the chunk's acknowledgement, which will not come; while still
        connected the server has stopped reading."""
        try:
            async with asyncio.timeout(self.timeout):
                await self.nc._flush_pending(force_flush=True)
        except TimeoutError:
            if self.nc.is_connected:
                raise self.unreachable(subject) from None
            await self.wait_connected(subject)

    async def _publish(
        self,
        subject: str,
        payload: bytes,
        headers: dict[str, str] | None,
        future: asyncio.Future[Msg],
        token: str,
    ) -> None:
        try:
            await self.nc.publish(subject, payload, reply=f"{self._inbox}.{token}", headers=headers)
        except BaseException as exc:
            future.cancel()
            if isinstance(exc, NatsObjError | asyncio.CancelledError | TimeoutError):
                raise
            raise NotConnected(f"could not publish to {subject!r}: {exc}") from exc

    @property
    def in_cluster(self) -> bool:
        """Whether the server we talk to is part of a cluster (its INFO names one): then a
        missing answer is an election or a lost node to wait out, not a misconfiguration."""
        info = getattr(self.nc, "_server_info", None) or {}
        return bool(info.get("cluster"))

    async def wait_connected(self, subject: str) -> None:
        """Ride out a reconnect (in a cluster, to another node, for up to failover_timeout);
        a server that stays away is a NotConnected error."""
        if self.nc.is_connected:
            return
        loop = asyncio.get_running_loop()
        patience = self.failover_timeout if self.in_cluster else self.timeout
        deadline = (self._lost_at if self._lost_at is not None else loop.time()) + patience
        while not self.nc.is_connected:
            if self.nc.is_closed or loop.time() > deadline:
                if self.in_cluster:
                    raise NotConnected(
                        f"not connected to NATS (while sending to {subject!r}); no server of"
                        f" the cluster could be reached within {patience:g}s of losing"
                        f" {self.server}"
                    )
                raise self.lost(subject)
            await asyncio.sleep(0.05)

    async def request(
        self,
        subject: str,
        payload: bytes = b"",
        *,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Msg:
        future, token = self._expect_reply(subject)
        await self._connected_for(subject, future)
        try:
            # one deadline for the publish (see send) and the reply: arming a timer is a
            # fair part of a small request's own work
            async with asyncio.timeout(timeout or self.timeout):
                await self._publish(subject, payload, headers, future, token)
                return await future
        except TimeoutError:
            raise self.unreachable(subject) from None

    def unreachable(self, subject: str) -> NatsObjError:
        if not self.nc.is_connected:
            return self.lost(subject)
        if self.in_cluster:
            return ClusterUnavailable(
                f"no reply from the JetStream cluster for {subject!r} within {self.timeout:g}s:"
                " the stream's leader is being elected, or too few of its replicas are up"
            )
        hint = "Check that JetStream is enabled and the domain / API prefix is right."
        if self.prefix != DEFAULT_API_PREFIX:
            hint += f" Across accounts: {ACCOUNT_IMPORTS}"
        return NotConnected(
            f"no reply from JetStream for {subject!r} within {self.timeout:g}s ({self.server})",
            hint=hint,
        )

    def undeliverable(self, what: str, bucket: str | None) -> NotConnected:
        """A consumer exists but nothing it delivers to our inbox arrives."""
        return NotConnected(
            f"{what} delivers to {self.inbox_prefix}.> but nothing arrived",
            bucket=bucket,
            hint=f"Across accounts: {ACCOUNT_IMPORTS}",
        )

    def flow_control_unreachable(self, subject: str, bucket: str | None) -> NotConnected:
        return NotConnected(
            f"the server keeps waiting for our flow-control answer on {subject!r}",
            bucket=bucket,
            hint=f"Allow publishing to '{FLOW_CONTROL}.>'. Across accounts: {ACCOUNT_IMPORTS}",
        )

    async def call(
        self,
        operation: str,
        body: dict[str, Any] | None = None,
        *,
        bucket: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """One JetStream API call, e.g. ``call("STREAM.INFO.OBJ_x")``, errors mapped; in a
        cluster it is repeated through an election (see Failover)."""
        failover = Failover(self, f"{self.prefix}.{operation}", bucket, name)
        while True:
            try:
                return await self.call_once(
                    operation,
                    body,
                    bucket=bucket,
                    name=name,
                    timeout=timeout or failover.attempt_timeout,
                )
            except RetryableError as exc:
                await failover.wait(exc)

    async def call_once(
        self,
        operation: str,
        body: dict[str, Any] | None = None,
        *,
        bucket: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """``call`` without the retries, for callers that must change the request between
        attempts. What a recovering cluster may answer is raised as a ``RetryableError``
        (its ``final`` the error to raise when no retry is left)."""
        subject = f"{self.prefix}.{operation}"
        payload = json.dumps(body).encode() if body is not None else b""
        try:
            reply = await self.request(subject, payload, timeout=timeout)
        except NotConnected as exc:
            raise RetryableError.wrapping(exc) from None
        if status_of(reply) == "503":
            raise RetryableError.wrapping(
                NotConnected(
                    f"JetStream did not answer on {subject!r} (no responders)",
                    bucket=bucket,
                    hint="Check that JetStream is enabled and the domain / API prefix is right.",
                )
            )
        response = self.reply_json(reply, subject)
        if "error" in response:
            error = api_error(response["error"], bucket=bucket, name=name)
            if int(response["error"].get("err_code") or 0) == CLUSTER_NOT_AVAILABLE:
                raise RetryableError.wrapping(error)
            raise error
        return response

    async def close(self) -> None:
        for future, _ in list(self._waiting.values()):
            future.cancel()
        self._waiting.clear()
        if self._unsubscribe_replies is not None:
            await self._unsubscribe_replies()
            self._unsubscribe_replies = None
