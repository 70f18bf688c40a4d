"""Watching a bucket's meta subjects (and, asked for version events, its version subjects):
current values, history, or updates only."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Generic, Protocol, TypeVar, cast

from natsobj.aio.jetstream.consumer import FOLLOW_HEARTBEAT, OrderedConsumer, StreamMsg
from natsobj.aio.jetstream.jsapi import JetStreamApi, raw_header
from natsobj.aio.restate_proof import proven
from natsobj.aio.stream import BucketStream
from natsobj.aio.version_feed import feed_subjects, is_meta, reported_event
from natsobj.cursors import ChangeCursor
from natsobj.deprecation import warn_deprecated
from natsobj.errors import BadObjectMeta
from natsobj.lifecycle import expired_record, expires_at
from natsobj.local.name_index import decoded
from natsobj.model import ObjectInfo, StoreStatus
from natsobj.operation_options import CURRENT, EARLIEST, FOLLOW, LATEST, Face
from natsobj.version_events import Change
from natsobj.wire import MARKER_REASON, MSG_TTL

_MARKER_REASON = MARKER_REASON.encode()
_MSG_TTL = MSG_TTL.encode()

log = logging.getLogger(__name__)


class WatchedBucket(Protocol):
    """What a watch needs of its bucket: an ``ObjectStore`` or its ``BucketStream``."""

    api: JetStreamApi
    stream: str
    bucket: str

    async def status(self) -> StoreStatus: ...


class WatchedStore(WatchedBucket, Protocol):
    """What a watch needs of an ``ObjectStore``: its stream too, to prove restatements."""

    bucket_stream: BucketStream


def info_from_msg(store: WatchedBucket, msg: StreamMsg) -> ObjectInfo | None:
    """Parse a meta message; a corrupt one, or one claiming another name than its subject
    encodes, is logged and skipped so a listing never hangs.
    The server's subject delete marker is the object's expiry, a delete (``expired``); a
    record's ``Nats-TTL`` gives its ``expires``."""
    headers = msg.headers
    token = msg.subject.rsplit(".", 1)[-1]
    if headers and raw_header(headers, _MARKER_REASON) is not None:
        name = decoded(token)
        if name is None:
            log.warning("skipping a delete marker on an undecodable subject %r", msg.subject)
            return None
        return expired_record(name, store.bucket, mtime=msg.time, sequence=msg.sequence)
    try:
        info = ObjectInfo.from_json(
            msg.data, mtime=msg.time, sequence=msg.sequence, bucket=store.bucket, token=token
        )
    except BadObjectMeta as exc:
        log.warning("skipping unreadable meta record at sequence %s: %s", msg.sequence, exc)
        return None
    if headers:
        info.expires = expires_at(msg.time, raw_header(headers, _MSG_TTL), subject=msg.subject)
    return info


_DELIVER_POLICIES = {EARLIEST: "all", CURRENT: "last_per_subject", LATEST: "new"}


def _position(start: str | int | None, *, include_history: bool, updates_only: bool) -> str | int:
    """Where a watch starts, as the table's ``follow.start`` reads it; ``include_history`` and
    ``updates_only`` are its ADR-20 spellings of earliest and latest, kept for a release."""
    row = FOLLOW["start"]
    if include_history:
        warn_deprecated("watch(include_history=True)", 'watch(start="earliest")', stacklevel=4)
        start = EARLIEST if start is None else start
    if updates_only:
        warn_deprecated("watch(updates_only=True)", 'watch(start="latest")', stacklevel=4)
        start = LATEST if start is None else start
    position: str | int = row.default_for(Face.PYTHON) if start is None else row.parse(start)
    return position


def _include_deletes(include_deletes: bool | str | None, *, ignore_deletes: bool) -> bool:
    """Whether a watch reports deletes, as the table's ``follow.include_deletes`` reads it;
    ``ignore_deletes`` is its older, inverted spelling, kept for a release."""
    row = FOLLOW["include_deletes"]
    if ignore_deletes:
        warn_deprecated("watch(ignore_deletes=True)", "watch(include_deletes=False)", stacklevel=4)
        include_deletes = False if include_deletes is None else include_deletes
    value: bool = (
        row.parse(include_deletes) if include_deletes is not None else row.default_for(Face.PYTHON)
    )
    return value


C = TypeVar("C", bound=Change)


class ObjectWatcher(Generic[C]):
    """Async iterator of changes; ``initial_done`` turns True after the initial values.
    Version events (``natsobj.version_events``) come among the records only when asked for
    (``include_version_events``); a watch of the current values starts with each version's
    lock as it is.

    The watch is pinned to the bucket it starts on (or to the one ``after_sequence``, a
    ``ChangeCursor``, was taken on): when its consumer is created again after an outage on a
    bucket deleted and created again meanwhile, it raises ``BucketRecreated`` rather than
    resume at the old bucket's sequence. ``cursor`` is where to resume another watch."""

    def __init__(
        self,
        store: WatchedStore,
        *,
        start: str | int | None = None,
        include_deletes: bool | str | None = None,
        after_sequence: int | ChangeCursor | None = None,
        include_version_events: bool | str = False,
        heartbeat: float = FOLLOW_HEARTBEAT,
        include_history: bool = False,
        updates_only: bool = False,
        ignore_deletes: bool = False,
    ) -> None:
        self.store = store
        position = _position(start, include_history=include_history, updates_only=updates_only)
        self.include_deletes = _include_deletes(include_deletes, ignore_deletes=ignore_deletes)
        self.include_version_events: bool = FOLLOW["include_version_events"].parse(
            include_version_events
        )
        self.position = position  # where this watch started: a table position or a sequence
        self.updates_only = position == LATEST
        resume = None if after_sequence is None else ChangeCursor.parse(after_sequence)
        if resume is None and isinstance(position, int):
            resume = ChangeCursor(position - 1)
        self._seen_through = resume.sequence if resume else 0
        self._created = resume.stream_created if resume else None
        if resume is not None:
            policy, first = "by_start_sequence", resume.sequence + 1
        else:
            policy, first = _DELIVER_POLICIES[str(position)], None
        # only a watch of the current values starts past the versions restatements stand for
        self._current_values = policy == "last_per_subject"
        self._consumer = OrderedConsumer(
            store.api,
            store.stream,
            feed_subjects(store.bucket, include_version_events=self.include_version_events),
            deliver_policy=policy,
            start_sequence=first,
            heartbeat=heartbeat,
            bucket=store.bucket,
            on_created=self._pin,
        )
        self.initial_done = False
        self._started = False

    @property
    def cursor(self) -> ChangeCursor:
        """The last record this watch read, on the bucket it is pinned to."""
        return ChangeCursor(max(self._consumer.last_sequence, self._seen_through), self._created)

    async def _pin(self) -> None:
        """Run after each creation of the watch's consumer: the bucket must still be the one
        the watch is pinned to (the first creation pins a watch started without a cursor)."""
        self._created = self.cursor.check(await self.store.status()).stream_created

    async def start(self) -> ObjectWatcher[C]:
        """Create the watch's consumer; ``next``, iteration and ``async with`` call it for you."""
        if not self._started:
            self._started = True
            try:
                pending = await self._consumer.start()
            except BaseException:
                self._started = False
                await self._consumer.close()
                raise
            self.initial_done = self.updates_only or pending == 0
        return self

    async def next(self, timeout: float | None = None) -> C | None:
        """The next change, or None when ``timeout`` passes first."""
        await self.start()
        while True:
            msg = await self._consumer.next(timeout)
            if msg is None:
                return None
            live = self.initial_done
            if msg.pending == 0:
                self.initial_done = True
            if not is_meta(self.store.bucket, msg):
                event = reported_event(
                    self.store.bucket,
                    msg,
                    include_deletes=self.include_deletes,
                    initial_value=self._current_values and not live,
                )
                if event is not None:
                    return cast(C, event)
                continue
            info = info_from_msg(self.store, msg)
            if info is None or (info.deleted and not self.include_deletes):
                continue
            if info.stands_for is not None:
                info = await proven(self.store.bucket_stream, info)
                # a proven restatement keeps the version it restates, which this watch has
                # delivered or started after, unless it is an initial value
                if info.stands_for is not None and (live or not self._current_values):
                    continue
            return cast(C, info)

    def __aiter__(self) -> AsyncIterator[C]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[C]:
        while True:
            info = await self.next()
            if info is not None:
                yield info

    async def stop(self) -> None:
        """Delete the watch's consumer; the watcher yields nothing after this."""
        await self._consumer.close()

    async def __aenter__(self) -> ObjectWatcher[C]:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
