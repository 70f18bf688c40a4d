"""Triggers fed by a NATS watch: the meta stream pushes each put or delete, nothing polls.

``NatsObjectTrigger`` resumes a deferred ``NatsObjectSensor``; ``NatsObjectChangeTrigger``
drives an ``AssetWatcher`` and keeps its place (a ``ChangeCursor``: the meta stream sequence and
the bucket's creation time) in the triggerer's asset state store, so a restarted triggerer
carries on after the last event it handed over, and a bucket deleted and created again under
it stops it with ``BucketRecreated`` instead of skipping the new bucket's first objects
(docs/airflow.md, "A recreated bucket").
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from airflow.exceptions import AirflowProviderDeprecationWarning
from airflow.sdk.exceptions import AirflowRuntimeError
from airflow.triggers.base import BaseEventTrigger, BaseTrigger, TriggerEvent

from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from airflow_natsobj.options import operation_options
from airflow_natsobj.payloads import object_payload
from airflow_natsobj.wording import airflow_words
from natsobj.changefeed import cursor_after_recreation
from natsobj.cursors import ChangeCursor
from natsobj.errors import BucketRecreated, NatsObjError, ObjectNotFound
from natsobj.matching import MatchKind, NameMatcher, legacy_matcher
from natsobj.model import ObjectInfo
from natsobj.operation_options import CURRENT, LATEST
from natsobj.orchestration.cursor_keeper import NatsCursorKeeper
from natsobj.orchestration.sensing import AllPresent, QuietPrefix
from natsobj.retry import RESUME

CURSOR_KEY = "nats_meta_sequence"
NO_STATE_STORE = object()  # BaseEventTrigger.asset_state_store came in Airflow 3.3.2
# The words releases before the options table hashed into a cursor key for these positions:
# a triggerer upgraded under a running watcher finds the cursor it kept under them.
_KEYED_AS = {LATEST: "new", CURRENT: "all"}


def error_payload(exc: BaseException) -> dict[str, Any]:
    message = exc.said_in(airflow_words) if isinstance(exc, NatsObjError) else str(exc)
    return {"status": "error", "error_type": type(exc).__name__, "message": message}


def _matcher(
    name: str | None,
    glob: str | None,
    regex: str | None,
    pattern: str | None,
    match: MatchKind | None,
    *,
    default_glob: str | None = None,
    legacy_default: MatchKind = "exact",
) -> NameMatcher:
    """The trigger's matcher; ``pattern``/``match`` are the deprecated pre-0.2 parameters, still
    accepted so triggers serialized by an older release resume after an upgrade."""
    if pattern is not None:
        return legacy_matcher(
            pattern,
            match or legacy_default,
            category=AirflowProviderDeprecationWarning,
            stacklevel=5,
        )
    if name is None and glob is None and regex is None and default_glob is not None:
        glob = default_glob
    return NameMatcher.from_options(name=name, glob=glob, regex=regex)


def _matcher_kwargs(matcher: NameMatcher) -> dict[str, str]:
    parameter, value = matcher.option
    return {parameter: value}


def _matchers_kwargs(matchers: list[NameMatcher], several: bool) -> dict[str, str | list[str]]:
    """The ``name``/``glob``/``regex`` keyword the matchers came from: a list when the sensor
    was given one, a string otherwise (as a trigger serialized before lists were taken)."""
    if not several:
        return _matcher_kwargs(matchers[0])
    parameter, _ = matchers[0].option
    return {parameter: [matcher.pattern for matcher in matchers]}


def _deadline(value: datetime | str | None) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


T = TypeVar("T")


async def by_deadline(deadline: datetime | None, wait: Awaitable[T]) -> T | None:
    """``wait``'s result, or None once ``deadline`` passes first. A trigger keeps the sensor's
    deadline itself: ``airflow dags test`` runs a trigger in line, without the deferral
    timeout a triggerer enforces, and would otherwise wait for ever."""
    if deadline is None:
        return await wait
    remaining = (deadline - datetime.now(UTC)).total_seconds()
    try:
        async with asyncio.timeout(max(remaining, 0)) as scope:
            return await wait
    except TimeoutError:
        if scope.expired():
            return None
        raise


def timeout_payload(deadline: datetime, waited_for: str) -> dict[str, Any]:
    """The event of a trigger whose deadline passed; the sensor fails (or skips) on it."""
    return {
        "status": "timeout",
        "message": f"Sensor has timed out: {waited_for} by its deadline {deadline.isoformat()}",
    }


class NatsObjectTrigger(BaseTrigger):
    """Fire once every one of ``name`` (or ``glob`` or ``regex``; a string or a list) has a
    live object whose meta record is newer than ``after_sequence`` (any current object when
    it is None), like the Amazon provider's ``S3KeyTrigger`` given several keys; records
    whose meta sequence is in ``rejected`` (objects the sensor's ``check_fn`` refused) do
    not count. At ``deadline`` it fires a timeout event instead.

    The success event carries ``objects`` (one ``object_payload`` per name or pattern, in
    their order: ``ObjectInfo.as_dict()`` with ``version_id`` and ``delete_marker``; ``object``
    too when one was given), and ``rejected`` and ``deadline`` as given, so a sensor deferring
    again resumes with them."""

    def __init__(
        self,
        *,
        bucket: str,
        name: str | list[str] | None = None,
        glob: str | list[str] | None = None,
        regex: str | list[str] | None = None,
        after_sequence: int | None = None,
        rejected: list[int] | None = None,
        deadline: datetime | str | None = None,
        nats_conn_id: str = NatsObjectStoreHook.default_conn_name,
        pattern: str | None = None,
        match: MatchKind | None = None,
    ) -> None:
        super().__init__()
        self.bucket = bucket
        if pattern is not None:
            self.matchers = [_matcher(None, None, None, pattern, match)]
        else:
            self.matchers = NameMatcher.all_from_options(name=name, glob=glob, regex=regex)
        self.several = not isinstance(name or glob or regex or pattern, str)
        self.after_sequence = after_sequence
        self.rejected = sorted(set(rejected or ()))
        self.deadline = _deadline(deadline)
        self.nats_conn_id = nats_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "bucket": self.bucket,
                **_matchers_kwargs(self.matchers, self.several),
                "after_sequence": self.after_sequence,
                "rejected": self.rejected,
                "deadline": self.deadline.isoformat() if self.deadline else None,
                "nats_conn_id": self.nats_conn_id,
            },
        )

    def describe(self) -> str:
        return f"nats://{self.bucket}/" + " and ".join(m.describe() for m in self.matchers)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            found = await by_deadline(self.deadline, self._wait())
        except (NatsObjError, ValueError) as exc:
            yield TriggerEvent(error_payload(exc))
            return
        if found is None:
            assert self.deadline is not None
            yield TriggerEvent(timeout_payload(self.deadline, f"{self.describe()} not there"))
            return
        objects = [object_payload(info) for info in found]
        payload: dict[str, Any] = {
            "status": "success",
            "objects": objects,
            "rejected": self.rejected,
            "deadline": self.deadline.isoformat() if self.deadline else None,
        }
        if not self.several:
            payload["object"] = objects[0]
        yield TriggerEvent(payload)

    async def _wait(self) -> list[ObjectInfo]:
        rejected = frozenset(self.rejected)
        present = AllPresent(self.matchers, accept=lambda info: info.sequence not in rejected)
        hook = NatsObjectStoreHook(nats_conn_id=self.nats_conn_id)
        async with hook.aclient() as client:
            store = await client.store(self.bucket)
            if self.after_sequence is None:
                watcher = store.watch(include_deletes=True)  # current objects first, then changes
            else:
                watcher = store.watch(after_sequence=self.after_sequence, include_deletes=True)
            async with watcher:
                async for info in watcher:
                    present.observe(info)
                    found = present.found()
                    if found is not None and (
                        watcher.initial_done or await _all_current(store, found)
                    ):
                        for each in found:
                            self.log.info(
                                "nats://%s/%s appeared (sequence %s)",
                                self.bucket,
                                each.name,
                                each.sequence,
                            )
                        return found
        raise AssertionError("a watch never ends")


class NatsKeysUnchangedTrigger(BaseTrigger):
    """Fire once nothing under ``prefix`` was put or deleted for ``inactivity_period`` seconds
    while at least ``min_objects`` objects are there (``natsobj.orchestration.sensing.QuietPrefix``,
    the rule of the Amazon provider's ``S3KeysUnchangedTrigger``), fed by the change feed: the
    prefix is listed once, then every put and delete is pushed, nothing polls. A put of a
    name already there counts as activity too (a listing of keys misses it). At ``deadline``
    it fires a timeout event instead."""

    def __init__(
        self,
        *,
        bucket_name: str,
        prefix: str,
        inactivity_period: float = 60 * 60,
        min_objects: int = 1,
        previous_objects: list[str] | None = None,
        allow_delete: bool = True,
        deadline: datetime | str | None = None,
        nats_conn_id: str = NatsObjectStoreHook.default_conn_name,
    ) -> None:
        super().__init__()
        self.bucket_name = bucket_name
        self.prefix = prefix
        self.inactivity_period = inactivity_period
        self.min_objects = min_objects
        self.previous_objects = sorted(previous_objects or ())
        self.allow_delete = allow_delete
        self.deadline = _deadline(deadline)
        self.nats_conn_id = nats_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "bucket_name": self.bucket_name,
                "prefix": self.prefix,
                "inactivity_period": self.inactivity_period,
                "min_objects": self.min_objects,
                "previous_objects": self.previous_objects,
                "allow_delete": self.allow_delete,
                "deadline": self.deadline.isoformat() if self.deadline else None,
                "nats_conn_id": self.nats_conn_id,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            quiet = await by_deadline(self.deadline, self._wait())
        except (NatsObjError, ValueError) as exc:
            yield TriggerEvent(error_payload(exc))
            return
        where = f"nats://{self.bucket_name}/{self.prefix}"
        if quiet is None:
            assert self.deadline is not None
            yield TriggerEvent(timeout_payload(self.deadline, f"{where} was not quiet"))
            return
        yield TriggerEvent(
            {
                "status": "success",
                "bucket_name": self.bucket_name,
                "prefix": self.prefix,
                "objects": len(quiet.present),
            }
        )

    async def _wait(self) -> QuietPrefix:
        loop = asyncio.get_running_loop()
        quiet = QuietPrefix(
            self.bucket_name,
            self.prefix,
            inactivity_period=self.inactivity_period,
            min_objects=self.min_objects,
            allow_delete=self.allow_delete,
            previous_objects=self.previous_objects,
            now=loop.time(),
        )
        hook = NatsObjectStoreHook(nats_conn_id=self.nats_conn_id)
        async with hook.aclient() as client:
            store = await client.store(self.bucket_name)
            # the end of the feed first, then the listing: a change in between is in both,
            # seen twice under one meta sequence, which is no change
            start = ChangeCursor.end_of(await store.status())
            quiet.seen(await store.list(prefix=self.prefix), loop.time())
            too_few_logged = False
            async with store.watch(after_sequence=start, include_deletes=True) as watcher:
                while True:
                    now = loop.time()
                    if quiet.is_quiet(now):
                        self.log.info(
                            "nats://%s/%s unchanged for %ss with %s objects",
                            self.bucket_name,
                            self.prefix,
                            self.inactivity_period,
                            len(quiet.present),
                        )
                        return quiet
                    if now >= quiet.quiet_at and not too_few_logged:
                        too_few_logged = True
                        self.log.warning(
                            "nats://%s/%s is quiet but holds %s objects, fewer than "
                            "min_objects=%s; waiting for more",
                            self.bucket_name,
                            self.prefix,
                            len(quiet.present),
                            self.min_objects,
                        )
                    wait = quiet.quiet_at - now if now < quiet.quiet_at else None
                    info = await watcher.next(timeout=wait)
                    if info is not None and quiet.observe(info, loop.time()):
                        too_few_logged = False


async def _all_current(store: Any, infos: list[ObjectInfo]) -> bool:
    """Replayed records may have been replaced or deleted since; only the latest count (a
    later record of the replay corrects what one that is not current left behind)."""
    for info in infos:
        if not await _is_current(store, info):
            return False
    return True


async def _is_current(store: Any, info: ObjectInfo) -> bool:
    """A replayed record may have been replaced or deleted since; only the latest counts."""
    try:
        current = await store.get_info(info.name)
    except ObjectNotFound:
        return False
    return current.sequence == info.sequence


class _CursorStore:
    """The trigger's place in the meta stream, in the triggerer's asset state store.

    Only Airflow's public accessor API is used: the state of the one asset the watcher is
    attached to (``asset_state_store.aget``/``aset``). A trigger shared by several assets has
    no single asset to keep it in; its cursor then lives in memory, and a restarted triggerer
    starts it afresh (``start_at`` applies again), which is logged once. An Airflow without
    an asset state store for triggers (before 3.3.2) keeps it in NATS itself, in
    ``natsobj.orchestration.cursor_keeper``'s key-value bucket, set by ``keep_in_nats`` once
    the watch's client is connected.

    Once running, the trigger's own place in memory is the one it resumes a broken watch
    from, and a write the triggerer's supervisor refuses (the API server could not store it)
    is logged and tried again with the next event. Raising would end the trigger, and Airflow
    would start it again from the older stored place, firing again for every event since.
    """

    def __init__(self, accessors: Any, key: str, log: Any) -> None:
        self._accessors = accessors
        self._key = key
        self._log = log
        self._memory: ChangeCursor | None = None

    def keep_in_nats(self, client: Any) -> None:
        """Keep the cursor in NATS over ``client`` (an Airflow with no asset state store)."""
        self._accessors = NatsCursorKeeper(client)

    async def _persisted(self, action: Any) -> Any:
        if self._accessors is None:
            return None
        try:
            return await action(self._accessors)
        except ValueError as exc:  # several assets share this trigger
            self._log.warning(
                "the NATS watch cursor is kept in memory only (%s); give each asset its own "
                "AssetWatcher so a restarted triggerer resumes where it stopped",
                exc,
            )
            self._accessors = None
            return None

    async def get(self) -> ChangeCursor | None:
        """This run's place, else the stored one (a bare sequence of an older release too)."""
        if self._memory is not None:
            return self._memory
        value = await self._persisted(lambda store: store.aget(self._key))
        return ChangeCursor.parse(value) if value is not None else None

    async def set(self, cursor: ChangeCursor) -> None:
        self._memory = cursor
        try:
            await self._persisted(lambda store: store.aset(self._key, str(cursor)))
        except (AirflowRuntimeError, NatsObjError) as exc:
            self._log.warning(
                "could not store the NATS watch cursor %s (%s); the trigger carries on and "
                "stores its place with the next event",
                cursor,
                exc,
            )


class NatsObjectChangeTrigger(BaseEventTrigger):
    """Fire for every put (and with ``include_deletes``, every delete) of an object named
    ``name`` or matching ``glob`` or ``regex`` (every object when none is given).

    The payload is ``object_payload(info)``: bucket, name, nuid, size, digest, metadata,
    ``deleted`` and ``sequence`` (the meta stream sequence, the trigger's cursor), with
    ``version_id`` (the id ``version_id=`` reads it back by) and ``delete_marker`` (a versioned
    bucket's delete leaves one, docs/versioning.md). The first run
    starts where ``start_at`` says (``docs/options.md``): ``"latest"`` (also ``"new"``, the
    default) at the end of the stream, ``"current"`` (also ``"all"``) with each current object,
    ``"earliest"`` with every change the bucket keeps, or a meta sequence at that record; later
    runs resume after the stored cursor. ``include_deletes`` takes true/false in any spelling
    of the table (``"on"``, ``"yes"``, ``1``).

    When the bucket is deleted and created again, the cursor counts records of a stream that
    is gone: with ``on_recreated="fail"`` (the default) the trigger raises ``BucketRecreated``
    and stops, so an operator decides; ``"restart"`` logs a warning and fires for every object
    of the new bucket from its beginning. Neither skips an object silently.
    """

    def __init__(
        self,
        *,
        bucket: str,
        name: str | None = None,
        glob: str | None = None,
        regex: str | None = None,
        include_deletes: bool | str | None = None,
        start_at: str | int | None = None,
        nats_conn_id: str = NatsObjectStoreHook.default_conn_name,
        pattern: str | None = None,
        match: MatchKind | None = None,
        on_recreated: str | None = None,
    ) -> None:
        super().__init__()
        # parsed here, so a bad value fails at DAG parse time, not in the triggerer
        options = operation_options(
            "follow",
            f"trigger on bucket {bucket!r}",
            start_at=start_at,
            include_deletes=include_deletes,
            on_recreated=on_recreated,
        )
        self.start_at: str | int = options["start"]
        self.include_deletes: bool = options["include_deletes"]
        self.on_recreated: str = options["on_recreated"]
        # built here so a bad pattern fails at DAG parse time, not in the triggerer
        self.matcher = _matcher(
            name, glob, regex, pattern, match, default_glob="**", legacy_default="glob"
        )
        self.bucket = bucket
        self.nats_conn_id = nats_conn_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "bucket": self.bucket,
                **_matcher_kwargs(self.matcher),
                "include_deletes": self.include_deletes,
                "start_at": self.start_at,
                "nats_conn_id": self.nats_conn_id,
                "on_recreated": self.on_recreated,
            },
        )

    @property
    def cursor_key(self) -> str:
        """The asset state store key of this exact watch: several watchers may share an asset,
        and a changed configuration starts afresh (``start_at`` applies again). Switching
        ``on_recreated`` keeps the place: it says what to do with it, not where it is."""
        _, kwargs = self.serialize()
        del kwargs["on_recreated"]
        kwargs["start_at"] = _KEYED_AS.get(kwargs["start_at"], kwargs["start_at"])
        digest = hashlib.sha256(json.dumps(kwargs, sort_keys=True).encode()).hexdigest()[:12]
        return f"{CURSOR_KEY}:{self.bucket}:{digest}"

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Watch forever; a lost server or missing bucket is logged and retried from the cursor."""
        matcher = self.matcher
        state_store = getattr(self, "asset_state_store", NO_STATE_STORE)
        cursor_store = _CursorStore(
            None if state_store is NO_STATE_STORE else state_store, self.cursor_key, self.log
        )
        in_nats = state_store is NO_STATE_STORE
        failures = 0  # since the last event: the restart's pause grows with them
        while True:
            try:
                async for event in self._watch(matcher, cursor_store, in_nats):
                    failures = 0
                    yield event
            except BucketRecreated as exc:
                # "fail" re-raises: the triggerer logs it ("exited with error") and stops
                restart = cursor_after_recreation(exc, self.on_recreated)
                self.log.warning(
                    "%s; on_recreated='restart': firing for every object of the new bucket",
                    exc.message,
                )
                await cursor_store.set(restart)
            except NatsObjError as exc:
                failures += 1
                delay = RESUME.delay(failures)
                self.log.warning(
                    "watch of nats://%s stopped (%s); retrying in %.1fs", self.bucket, exc, delay
                )
                await asyncio.sleep(delay)

    async def _watch(
        self, matcher: NameMatcher, cursor_store: _CursorStore, in_nats: bool
    ) -> AsyncIterator[TriggerEvent]:
        hook = NatsObjectStoreHook(nats_conn_id=self.nats_conn_id)
        async with hook.aclient() as client:
            if in_nats:
                cursor_store.keep_in_nats(client)
            store = await client.store(self.bucket)
            cursor = await cursor_store.get()
            if cursor is None:
                status = await store.status()
                if self.start_at == CURRENT:  # listed here, then followed from the end
                    end = ChangeCursor.starting_at(LATEST, status)
                    listed = await store.list(prefix=matcher.literal_prefix)
                    for info in sorted(listed, key=lambda i: i.sequence or 0):
                        if matcher.matches(info.name):
                            yield TriggerEvent(object_payload(info))
                            await cursor_store.set(replace(end, sequence=info.sequence or 0))
                cursor = ChangeCursor.starting_at(
                    LATEST if self.start_at == CURRENT else self.start_at, status
                )
                await cursor_store.set(cursor)
            async with store.watch(after_sequence=cursor) as watcher:
                # pinned to the bucket (an older release's bare sequence is stored in full now)
                await cursor_store.set(watcher.cursor)
                self.log.info(
                    "watching nats://%s for %s after %s",
                    self.bucket,
                    matcher.describe(),
                    watcher.cursor,
                )
                async for info in watcher:
                    if matcher.matches(info.name) and (self.include_deletes or not info.deleted):
                        yield TriggerEvent(object_payload(info))
                    # Reached once the triggerer has taken the event: only then move the cursor.
                    await cursor_store.set(watcher.cursor)
