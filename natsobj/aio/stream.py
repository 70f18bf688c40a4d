"""A bucket's stream: the layer under ``ObjectStore``.

Everything that talks to the JetStream stream behind a bucket, rather than about objects,
lives here and is public, so the store, the reader, the listing, the name index and the
archive share one implementation: the stream's info (``StreamInfo``), reads of a subject's
last message from the leader or from any replica, the one wait for a lagging replica, the
guarded rollup publish, purges, and the read-only consumers.

Strong reads: with more than one replica, a direct get or a consumer may be answered by a
replica that has not applied every acknowledged write yet. Reads that must reflect such
writes ask the leader, or read from a replica until it reaches a sequence the leader gave
(``until_caught_up``), and raise ``ReplicaLagging`` when it never does.
"""

from __future__ import annotations

import base64
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, NamedTuple, TypeVar

from natsobj.aio.jetstream.api_errors import api_error
from natsobj.aio.jetstream.consumer import READ_HEARTBEAT, OrderedConsumer
from natsobj.aio.jetstream.failover import Failover
from natsobj.aio.jetstream.jsapi import JetStreamApi, parse_headers, raw_header, status_of
from natsobj.errors import (
    NatsObjError,
    NotConnected,
    ObjectNotFound,
    ReplicaLagging,
    SequenceConflict,
)
from natsobj.model import StoreStatus, StreamInfo, parse_server_time
from natsobj.names import stream_name
from natsobj.retry import REPLICA_CATCH_UP
from natsobj.settings import STRONG, ConnectionSettings
from natsobj.wire import (
    EXPECTED_LAST_SUBJECT_SEQ,
    MSG_ID,
    MSG_SIZE,
    NATS_SEQUENCE,
    NATS_TIME_STAMP,
    ROLLUP,
    WRONG_LAST_SEQUENCE,
    direct_get_batch_subject,
    direct_get_subject,
    stream_api,
)

T = TypeVar("T")

_UNAVAILABLE = object()  # no replica answered a direct get: ask the leader


class LastMsg(NamedTuple):
    """A subject's last message as the server stored it."""

    data: bytes
    sequence: int
    time: datetime
    # the stored headers (a record's Nats-TTL, a delete marker's Nats-Marker-Reason)
    headers: Mapping[str, str] = {}


class BucketStream:
    """The stream behind one bucket, shared by its ``ObjectStore`` and the modules working
    on it. ``replicas``, ``allow_direct``, ``allow_atomic`` and ``max_bytes`` (-1: none) follow the
    latest ``info()``."""

    def __init__(
        self, api: JetStreamApi, bucket: str, info: StreamInfo, settings: ConnectionSettings
    ) -> None:
        self.api = api
        self.bucket = bucket
        self.stream = stream_name(bucket)
        self.settings = settings
        self.replicas = info.replicas
        self.allow_direct = info.allow_direct
        self.allow_atomic = info.allow_atomic
        self.max_bytes = int(info.config.get("max_bytes") or -1)
        # the stream's identity: a bucket deleted and made again under its name is another
        # stream, whose sequences start over (what is kept per version is keyed by it)
        self.created = info.created

    def __repr__(self) -> str:
        return f"BucketStream(bucket={self.bucket!r})"

    def publish_subject(self, local_subject: str) -> str:
        """ADR-19: with an API prefix, ``$O`` publishes go out under that prefix."""
        return self.api.object_prefix + local_subject[2:]

    # -- info -------------------------------------------------------------------------------

    async def info(
        self,
        *,
        subjects_filter: str | None = None,
        offset: int | None = None,
        timeout: float | None = None,
    ) -> StreamInfo:
        """``STREAM.INFO``, answered by the leader (BucketNotFound once the bucket is gone);
        with ``subjects_filter``, one page (from ``offset``) of the matching subjects."""
        body: dict[str, Any] = {}
        if subjects_filter is not None:
            body["subjects_filter"] = subjects_filter
        if offset is not None:
            body["offset"] = offset
        response = await self.api.call(
            stream_api("INFO", self.stream), body, bucket=self.bucket, timeout=timeout
        )
        info = StreamInfo.from_response(response)
        self.replicas, self.allow_direct = info.replicas, info.allow_direct
        self.allow_atomic = info.allow_atomic
        self.max_bytes = int(info.config.get("max_bytes") or -1)
        return info

    async def status(self) -> StoreStatus:
        return StoreStatus.from_stream_info(self.bucket, await self.info())

    async def update(self, **changes: Any) -> StreamInfo:
        """Send the stream's configuration back with ``changes``; the rest is kept as is."""
        config = dict((await self.info()).config, **changes)
        response = await self.api.call(
            stream_api("UPDATE", self.stream), config, bucket=self.bucket
        )
        return StreamInfo.from_response(response)

    async def set_metadata(self, key: str, value: str | None) -> StreamInfo:
        """Set one key of the stream's metadata (None: remove it), the others kept as they
        are: how natsobj keeps its own bookkeeping there (lifecycle rules, archive targets,
        a bucket published through the S3 gateway), which ``update_store(metadata=)``, the
        user's tags, leaves alone."""
        metadata = dict((await self.info()).config.get("metadata") or {})
        if value is None:
            metadata.pop(key, None)
        else:
            metadata[key] = value
        return await self.update(metadata=metadata)

    async def leader_count(self, subject: str) -> int:
        """Messages on ``subject`` as the stream leader counts them."""
        info = await self.info(subjects_filter=subject)
        return sum(info.state.subjects.values())

    # -- reads ------------------------------------------------------------------------------

    @property
    def strong_reads(self) -> bool:
        """Whether a read without a known sequence must be answered by the stream leader.

        Direct gets are answered by any replica, and a replica may not yet hold a write that
        has already returned. With one replica, or ``consistency="eventual"``, they are used."""
        return self.settings.consistency == STRONG and self.replicas > 1

    def read_floor(self, info: StreamInfo) -> int | None:
        """The sequence a replica must have reached for its answer to include every write
        that returned before ``info`` was taken (the leader answers STREAM.INFO), or None
        when any replica's answer will do.

        Batched direct gets take it as ``up_to_seq``: a replica that is behind answers 404 and
        one that is current answers exactly as of that sequence (``Nats-UpTo-Sequence``). Not
        as ``min_last_seq``: the pinned nats-server 2.15.1 ignores that field on direct gets
        (batched or not) and rejects it on STREAM.MSG.GET and consumers."""
        if not self.strong_reads:
            return None
        return info.state.last_sequence or None

    async def last(
        self, subject: str, *, name: str | None = None, min_sequence: int | None = None
    ) -> LastMsg | None:
        """The last message on a subject, or None when there is none.

        ``min_sequence`` is a sequence the caller knows the subject has reached (the meta
        sequence handed over by a writer, or 1 for a chunk that must exist): a direct get
        answered below it came from a replica that is behind, and the leader is asked."""
        if self.allow_direct and (min_sequence is not None or not self.strong_reads):
            found = await self._direct_last(subject, name=name)
            if found is None or isinstance(found, LastMsg):  # not _UNAVAILABLE
                fresh = found is not None and found.sequence >= (min_sequence or 0)
                if min_sequence is None or fresh or self.replicas == 1:
                    return found
        return await self.leader_last(subject, name=name)

    async def first(
        self, subject: str, *, after: int = 0, name: str | None = None
    ) -> LastMsg | None:
        """The first message on ``subject`` past sequence ``after``, or None when there is none.

        A replica holds a prefix of the stream, so a message it returns is the one the leader
        would; only a replica's "none" may be out of date, and with more than one replica the
        leader is asked then."""
        body = {"seq": after + 1, "next_by_subj": subject}
        if self.allow_direct:
            found = await self._direct(
                direct_get_batch_subject(self.api.prefix, self.stream),
                json.dumps(body).encode(),
                name=name,
            )
            if isinstance(found, LastMsg) or (found is None and self.replicas == 1):
                return found
        return await self._leader_get(body, name=name)

    async def _direct_last(self, subject: str, *, name: str | None) -> LastMsg | object | None:
        return await self._direct(
            direct_get_subject(self.api.prefix, self.stream, subject), b"", name=name
        )

    async def _direct(
        self, request_subject: str, payload: bytes, *, name: str | None
    ) -> LastMsg | object | None:
        """Direct get (ADR-31) from whichever replica answers; _UNAVAILABLE when none can."""
        try:
            reply = await self.api.request(request_subject, payload)
        except NotConnected:
            if not self.api.in_cluster:
                raise
            return _UNAVAILABLE  # the leader read rides out the failover
        status = status_of(reply)
        if status is None:
            headers = reply.headers or {}
            return LastMsg(
                reply.data,
                int(headers[NATS_SEQUENCE]),
                parse_server_time(headers[NATS_TIME_STAMP]),
                headers,
            )
        if status == "404":
            return None
        if status != "503":
            raise NatsObjError(
                f"direct get failed with status {status}", bucket=self.bucket, name=name
            )
        await self.info()  # BucketNotFound when the 503 is a deleted bucket
        return _UNAVAILABLE

    async def leader_last(self, subject: str, *, name: str | None = None) -> LastMsg | None:
        """STREAM.MSG.GET, answered only by the stream leader, which holds every acknowledged
        write (and has applied every purge)."""
        return await self._leader_get({"last_by_subj": subject}, name=name)

    async def _leader_get(self, body: dict[str, Any], *, name: str | None) -> LastMsg | None:
        try:
            response = await self.api.call(
                stream_api("MSG.GET", self.stream), body, bucket=self.bucket, name=name
            )
        except ObjectNotFound:
            return None
        message = response["message"]
        return LastMsg(
            base64.b64decode(message.get("data") or b""),
            int(message["seq"]),
            parse_server_time(message["time"]),
            parse_headers(base64.b64decode(message.get("hdrs") or b"")) or {},
        )

    async def leader_floor(self, subject: str) -> int:
        """The sequence of ``subject``'s last message at the leader when reads must be strong
        (a replica's answer must reach it), else 0 (any answer will do)."""
        if not self.strong_reads:
            return 0
        last = await self.leader_last(subject)
        return last.sequence if last else 0

    async def until_caught_up(
        self,
        read: Callable[[], Awaitable[T]],
        caught_up: Callable[[T], bool | Awaitable[bool]],
        *,
        what: str,
        floor: int | None = None,
        name: str | None = None,
    ) -> T:
        """``read()`` until ``caught_up`` says its answer came from a replica that is not
        behind; ReplicaLagging when none is within the wait. ``caught_up`` releases what a
        rejected answer holds (a consumer). ``what`` names the read in the message, ``floor``
        the sequence the replica had to reach, when there is one."""
        for attempt in REPLICA_CATCH_UP.tries():
            if attempt:
                await REPLICA_CATCH_UP.pause(attempt)
            result = await read()
            done = caught_up(result)
            if inspect.isawaitable(done):
                done = await done
            if done:
                return result
        behind = f"sequence {floor}" if floor is not None else "the stream leader"
        raise ReplicaLagging(
            f"the replica serving {what} stayed behind {behind}",
            bucket=self.bucket,
            name=name,
        )

    def consumer(
        self,
        subject: str | tuple[str, ...],
        *,
        deliver_policy: str = "all",
        start_sequence: int | None = None,
        batch: int = 256,
        pulls_ahead: int = 1,
        headers_only: bool = False,
    ) -> OrderedConsumer:
        """A read-only ordered consumer over ``subject`` (or several, in stream order; not
        started) that stops where the stream ends: a read, not a watch (``natsobj.aio.watch``
        makes its own)."""
        return OrderedConsumer(
            self.api,
            self.stream,
            subject,
            deliver_policy=deliver_policy,
            start_sequence=start_sequence,
            stop_when_idle=True,
            heartbeat=READ_HEARTBEAT,
            batch=batch,
            pulls_ahead=pulls_ahead,
            bucket=self.bucket,
            headers_only=headers_only,
        )

    async def started_consumer(
        self, subject: str, expected: int, *, what: str, name: str | None = None, **options: Any
    ) -> tuple[OrderedConsumer, int]:
        """A started read of ``subject`` (``consumer(subject, **options)``) and how many
        messages it has. The consumer may be placed on a replica that has not caught up; with
        fewer than ``expected`` messages while the stream leader holds them all, another one is
        made after a pause (ReplicaLagging when none catches up). Fewer at the leader too is
        the caller's to judge (the messages are gone)."""

        async def start() -> tuple[OrderedConsumer, int]:
            consumer = self.consumer(subject, **options)
            try:
                return consumer, await consumer.start()
            except BaseException:
                await consumer.close()
                raise

        async def complete(started: tuple[OrderedConsumer, int]) -> bool:
            consumer, available = started
            try:
                if available >= expected or await self.leader_count(subject) < expected:
                    return True
            except BaseException:
                await consumer.close()
                raise
            await consumer.close()
            return False

        return await self.until_caught_up(start, complete, what=what, name=name)

    async def message_sizes(
        self, subject: str, expected: int, *, name: str | None = None
    ) -> list[tuple[int, int]]:
        """(stream sequence, payload size) of the first ``expected`` messages on ``subject``
        (the caller knows that many are there, see ``started_consumer``; any more, another
        writer's, are not read), in stream order, read with a headers-only consumer: no
        payload is sent, only each one's ``Nats-Msg-Size``. Fewer come back when they are
        gone."""
        consumer, available = await self.started_consumer(
            subject,
            expected,
            what=f"the messages on {subject}",
            name=name,
            headers_only=True,
            batch=min(1024, max(1, expected)),
            pulls_ahead=2,
        )
        sizes: list[tuple[int, int]] = []
        try:
            while len(sizes) < min(available, expected):
                msg = await consumer.next()
                if msg is None:
                    break
                size = raw_header(msg.headers, MSG_SIZE.encode())
                sizes.append((msg.sequence, int(size) if size is not None else len(msg.data)))
                if msg.pending == 0:
                    break
        finally:
            await consumer.close()
        return sizes

    # -- writes -----------------------------------------------------------------------------

    async def publish_rollup(
        self,
        subject: str,
        data: bytes,
        *,
        rollup: bool = True,
        name: str | None = None,
        expected_sequence: int | None = None,
        msg_id: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> int:
        """Publish ``data`` on the local ``subject`` as a per-subject rollup (the message
        replaces the subject's earlier ones; without ``rollup`` they stay); returns its
        stream sequence.

        ``expected_sequence``: store it only if the subject's last message is at that
        sequence (0: the subject has none), else SequenceConflict and nothing is written. In
        a cluster an unanswered publish is sent again until a stream leader answers (see
        failover.Failover); ``msg_id`` and the expected sequence keep that from storing it twice.
        ``headers`` go with it (a record's Nats-TTL)."""
        headers = {**(headers or {}), **(ROLLUP if rollup else {})}
        if expected_sequence is not None:
            headers[EXPECTED_LAST_SUBJECT_SEQ] = str(expected_sequence)
        if msg_id is not None:
            headers[MSG_ID] = msg_id
        outgoing = self.publish_subject(subject)
        failover = Failover(self.api, outgoing, self.bucket, name)
        while True:
            try:
                reply = await self.api.request(
                    outgoing, data, headers=headers, timeout=failover.attempt_timeout
                )
            except NotConnected as exc:
                await failover.wait(exc)
                continue
            if status_of(reply) != "503":
                break
            if not self.api.in_cluster:
                await self.info()
            await failover.wait(
                NotConnected("no stream accepted the publish", bucket=self.bucket, name=name)
            )
        response = self.api.reply_json(reply, outgoing)
        if "error" in response:
            if int(response["error"].get("err_code") or 0) == WRONG_LAST_SEQUENCE:
                raise SequenceConflict(
                    f"it is no longer at sequence {expected_sequence}",
                    bucket=self.bucket,
                    name=name,
                )
            raise api_error(response["error"], bucket=self.bucket, name=name)
        return int(response["seq"])

    async def purge(self, subject: str) -> int:
        """Remove ``subject``'s messages; returns how many."""
        body = {"filter": subject}
        response = await self.api.call(stream_api("PURGE", self.stream), body, bucket=self.bucket)
        return int(response.get("purged", 0))


__all__ = ["BucketStream", "LastMsg", "ReplicaLagging", "SequenceConflict", "StreamInfo"]
