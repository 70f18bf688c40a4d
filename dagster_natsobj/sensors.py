"""A sensor that starts a run for every change in a bucket, driven by the meta stream.

The cursor is a ``ChangeCursor``: the last meta-stream sequence handled and the bucket's
creation time (``<sequence>@<time>``; a bare sequence stored by an older release is read too).
Each tick asks the store for the changes after it (one bounded batch, answered at once) and
moves the cursor to the batch's end, so nothing is skipped; run keys are
``<bucket>:<sequence>``, so a re-evaluated tick asks for the same runs and Dagster starts each
only once. A bucket deleted and created again since the cursor was taken fails the tick with
``BucketRecreated`` (or, with ``on_recreated="restart"``, starts over from the new bucket's
beginning): docs/dagster.md, "A recreated bucket".

Where a new sensor starts (``start``), whether it reports deletes and what a recreated bucket
means are the change-feed options of ``natsobj.operation_options``, read with its Dagster
defaults (docs/options.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from dagster import (
    DagsterUnknownPartitionError,
    DefaultSensorStatus,
    MultiPartitionKey,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from dagster_natsobj.errors import dagster_words
from dagster_natsobj.options import resolved
from dagster_natsobj.resource import NatsObjectStoreResource
from natsobj import ObjectInfo
from natsobj.changefeed import cursor_after_recreation
from natsobj.cursors import ChangeCursor
from natsobj.deprecation import warn_deprecated
from natsobj.errors import BucketNotFound, BucketRecreated, in_words_of
from natsobj.matching import NameMatcher
from natsobj.operation_options import CURRENT, EARLIEST, LATEST
from natsobj.orchestration.name_templates import NameTemplate

TAG_PREFIX = "natsobj"
RunConfigFn = Callable[[ObjectInfo], Mapping[str, Any]]
PartitionKeyFn = Callable[[str], "str | None"]


def make_nats_object_sensor(
    name: str,
    bucket: str,
    *,
    target: Any = None,
    job: Any = None,
    asset_selection: Any = None,
    glob: str | None = None,
    regex: str | None = None,
    include_deletes: bool | str | None = None,
    minimum_interval_seconds: int = 30,
    run_config_fn: RunConfigFn | None = None,
    batch_size: int = 100,
    resource_key: str = "nats",
    default_status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
    description: str | None = None,
    name_glob: str | None = None,
    on_recreated: str | None = None,
    start: str | int | None = None,
    partition_key_fn: PartitionKeyFn | None = None,
    partition_key_template: str | None = None,
) -> SensorDefinition:
    """Build a sensor requesting one run per object put (and delete, if asked) in ``bucket``.

    ``target`` (or ``job``/``asset_selection``) is what each run materializes, as in
    ``@sensor``. ``glob`` or ``regex`` filter object names with the one matcher every natsobj
    face uses (``*`` stays within a ``/`` segment, ``**`` crosses them); ``name_glob`` is their
    deprecated predecessor. ``run_config_fn(info)`` gives the run config of each run. The
    connection comes from the ``NatsObjectStoreResource`` bound to ``resource_key``, declared as
    a typed parameter, so ``sensor(build_sensor_context(resources={"nats": ...}))`` works.

    ``start`` is where a sensor without a cursor starts: ``earliest`` (the default: every
    change the bucket keeps, so objects already there get their runs), ``current`` (each
    object's current version, then what follows), ``latest`` (only what happens from now on)
    or a meta sequence. ``include_deletes`` (default false) also requests runs for deletes
    and expiries. Each takes every spelling of the options table (``"on"``, ``"new"``...).

    When the bucket was deleted and created again since the cursor was taken, a tick with
    ``on_recreated="fail"`` (the default) raises ``BucketRecreated`` and leaves the cursor, so
    an operator decides; ``"restart"`` logs a warning and requests runs for the new bucket's
    objects from its beginning. Neither skips an object silently.

    For a partitioned target, each run request carries the partition of its object:
    ``partition_key_template`` reads it from the name (``"daily/{date}.parquet"``: the object
    ``daily/2026-11-01.parquet`` runs partition ``2026-11-01``; several fields, such as
    ``"{region}/{date}.csv"``, make a ``MultiPartitionKey`` of the dimensions so named), or
    ``partition_key_fn(name)`` returns it. An object whose name gives no key (the template
    does not match, the function returns None) requests no run; nor does one whose key the
    target's partitions lack (``daily/latest.parquet``), which the tick logs, one warning per
    object, and goes on: one object never stops the runs of the others.
    """
    where = f"sensor {name!r}"
    feed = resolved(
        "follow",
        {"start": start, "include_deletes": include_deletes, "on_recreated": on_recreated},
        where=where,
    )
    if name_glob is not None:
        warn_deprecated("make_nats_object_sensor(name_glob=...)", "glob=...")
        glob = glob or name_glob
    if target is None and job is None and asset_selection is None:
        raise ValueError(
            f"sensor {name!r}: give target= (or job=/asset_selection=) for the runs to start"
        )
    if batch_size < 1:
        raise ValueError(f"sensor {name!r}: batch_size must be at least 1")
    matcher = (
        None if glob is None and regex is None else NameMatcher.from_options(glob=glob, regex=regex)
    )
    template = _template(where, partition_key_fn, partition_key_template)
    partition = partition_key_fn if template is None else _key_from(template)
    listing_prefix = _listing_prefix(matcher, template)

    @sensor(
        name=name,
        target=target,
        job=job,
        asset_selection=asset_selection,
        minimum_interval_seconds=minimum_interval_seconds,
        default_status=default_status,
        description=description or f"Starts a run for each object change in bucket {bucket!r}.",
    )
    @_with_resource_parameter(resource_key)
    @in_words_of(dagster_words)
    def _nats_object_sensor(
        context: SensorEvaluationContext, **resources: NatsObjectStoreResource
    ) -> SensorResult | SkipReason:
        resource = resources[resource_key]
        cursor = _parse_cursor(name, context.cursor)
        known = _known_partition(context, name)
        with resource.get_client() as client:
            try:
                store = client.store(bucket)
            except BucketNotFound:
                return SkipReason(f"bucket {bucket!r} does not exist yet; waiting for it")
            if not context.cursor and feed["start"] != EARLIEST:
                cursor = _start(store, feed["start"], where)
                if feed["start"] == CURRENT:
                    return _current(
                        store, cursor, matcher, run_config_fn, partition, known, listing_prefix
                    )
            try:
                changes = store.changes(cursor, limit=batch_size)
            except BucketRecreated as exc:
                # "fail" fails the tick
                cursor = cursor_after_recreation(exc, feed["on_recreated"])
                context.log.warning(
                    f"{exc.message}; on_recreated='restart': requesting runs for every object "
                    "of the new bucket"
                )
                changes = store.changes(cursor, limit=batch_size)
        requests = _run_requests(
            bucket,
            [info for info in changes if _wanted(info, matcher, feed["include_deletes"])],
            run_config_fn,
            partition,
            known,
        )
        next_cursor = str(changes.cursor)
        if requests:
            return SensorResult(run_requests=requests, cursor=next_cursor)
        reason = f"no new objects in {bucket!r} after sequence {cursor.sequence}"
        if changes:
            reason = f"{len(changes)} change(s) in {bucket!r} did not match the sensor's filter"
        return SensorResult(skip_reason=SkipReason(reason), cursor=next_cursor)

    return _nats_object_sensor


def _start(store: Any, start: str | int, where: str) -> ChangeCursor:
    """The cursor of a sensor's first tick when it does not start at the earliest change:
    the bucket's end (``latest``, ``current``), or just before a meta sequence."""
    status = store.status()
    if isinstance(start, int) and start - 1 > status.last_sequence:
        raise ValueError(
            f"{where}: start={start}, but bucket {store.bucket!r} ends at meta sequence "
            f"{status.last_sequence}"
        )
    # the current versions are listed by the first tick, which then follows from the end
    return ChangeCursor.starting_at(LATEST if start == CURRENT else start, status)


def _current(
    store: Any,
    cursor: ChangeCursor,
    matcher: NameMatcher | None,
    run_config_fn: RunConfigFn | None,
    partition: PartitionKeyFn | None,
    known: Callable[[RunRequest], bool],
    prefix: str,
) -> SensorResult:
    """The first tick of a sensor starting at ``current``: a run per object there now, and
    ``cursor``, the bucket's end read before the listing, so an object put meanwhile is
    listed and reported again under the same run key, which Dagster starts once."""
    listed = store.list(prefix=prefix)
    requests = _run_requests(
        store.bucket,
        [
            info
            for info in sorted(listed, key=lambda i: i.sequence or 0)
            if matcher is None or matcher.matches(info.name)
        ],
        run_config_fn,
        partition,
        known,
    )
    if requests:
        return SensorResult(run_requests=requests, cursor=str(cursor))
    reason = f"no objects in {store.bucket!r} yet"
    return SensorResult(skip_reason=SkipReason(reason), cursor=str(cursor))


def _run_requests(
    bucket: str,
    infos: list[ObjectInfo],
    run_config_fn: RunConfigFn | None,
    partition: PartitionKeyFn | None,
    known: Callable[[RunRequest], bool],
) -> list[RunRequest]:
    """A run per object; with a partition rule, only for objects whose name gives a key the
    target has."""
    requests = []
    for info in infos:
        key = partition(info.name) if partition else None
        if partition and key is None:
            continue
        request = RunRequest(
            run_key=f"{bucket}:{info.sequence}",
            run_config=dict(run_config_fn(info)) if run_config_fn else {},
            tags=object_tags(info),
            partition_key=key,
        )
        if key is None or known(request):
            requests.append(request)
    return requests


def _known_partition(context: SensorEvaluationContext, name: str) -> Callable[[RunRequest], bool]:
    """Whether a run request's partition is one the sensor's target has, by Dagster's own
    resolution of the request (static, time-window, multi and dynamic partitions alike); a
    request for another is logged, naming the object and the key, and dropped, where Dagster
    would fail the whole tick. Without the repository, or in one that does not hold this
    sensor (a bare ``build_sensor_context``, a sensor evaluated beside another code location's
    definitions), no partition can be checked and Dagster resolves the requests as it always
    does."""
    repository = context.repository_def
    if repository is None or not repository.has_sensor_def(name):
        return lambda request: True
    definition = repository.get_sensor_def(name)

    def known(request: RunRequest) -> bool:
        try:
            definition.resolve_run_requests([request], context, definition.asset_selection, [])
        except DagsterUnknownPartitionError as exc:
            context.log.warning(
                f"object {request.tags[f'{TAG_PREFIX}/object']!r} in bucket "
                f"{request.tags[f'{TAG_PREFIX}/bucket']!r} gives partition "
                f"{request.partition_key!r}, which the sensor's target does not have; no run "
                f"for it ({exc})"
            )
            return False
        return True

    return known


def _template(
    where: str, partition_key_fn: PartitionKeyFn | None, template: str | None
) -> NameTemplate | None:
    if template is None:
        return None
    if partition_key_fn is not None:
        raise ValueError(f"{where}: give partition_key_fn= or partition_key_template=, not both")
    try:
        return NameTemplate(template)
    except ValueError as exc:
        raise ValueError(f"{where}: partition_key_template: {exc}") from None


def _key_from(template: NameTemplate) -> PartitionKeyFn:
    """Object name -> partition key by the template: its one field's text, or the
    ``MultiPartitionKey`` of its fields (one per dimension, named as the dimensions are)."""

    def key_of(name: str) -> str | None:
        fields = template.fields_of(name)
        if fields is None:
            return None
        if len(fields) == 1:
            return next(iter(fields.values()))
        return MultiPartitionKey(fields)

    return key_of


def _listing_prefix(matcher: NameMatcher | None, template: NameTemplate | None) -> str:
    """What a ``current`` start lists: the longer of the filter's and the template's literal
    prefixes (a name must match both; when neither prefix extends the other, the filter's)."""
    prefix = matcher.literal_prefix if matcher else ""
    if template is not None:
        own = template.literal_prefix
        if own.startswith(prefix):
            return own
    return prefix


def object_tags(info: ObjectInfo) -> dict[str, str]:
    """The run's view of the object that triggered it."""
    return {
        f"{TAG_PREFIX}/bucket": info.bucket,
        f"{TAG_PREFIX}/object": info.name,
        f"{TAG_PREFIX}/sequence": str(info.sequence),
        f"{TAG_PREFIX}/digest": info.digest,
        f"{TAG_PREFIX}/size": str(info.size),
        f"{TAG_PREFIX}/nuid": info.nuid,
        f"{TAG_PREFIX}/mtime": info.mtime.isoformat() if info.mtime else "",
        f"{TAG_PREFIX}/deleted": "true" if info.deleted else "false",
        # the record's version (ObjectInfo.version_id): empty for a plain delete, no version
        f"{TAG_PREFIX}/version_id": info.version_id or "",
        f"{TAG_PREFIX}/delete_marker": "true" if info.delete_marker else "false",
    }


def _wanted(info: ObjectInfo, matcher: NameMatcher | None, include_deletes: bool) -> bool:
    if info.deleted and not include_deletes:
        return False
    return matcher is None or matcher.matches(info.name)


def _with_resource_parameter(resource_key: str) -> Callable[[Callable[..., Any]], Any]:
    """Give the evaluation function a typed ``<resource_key>: NatsObjectStoreResource``
    parameter: Dagster then passes the resource itself, both on ticks and when a test calls the
    sensor with ``build_sensor_context(resources=...)``."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        context = inspect.Parameter(
            "context", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=SensorEvaluationContext
        )
        resource = inspect.Parameter(
            resource_key, inspect.Parameter.KEYWORD_ONLY, annotation=NatsObjectStoreResource
        )
        fn.__signature__ = inspect.Signature([context, resource])  # type: ignore[attr-defined]
        # Dagster 1.12 finds resource parameters by their type hints, not the signature
        fn.__annotations__ = {
            "context": SensorEvaluationContext,
            resource_key: NatsObjectStoreResource,
        }
        return fn

    return decorate


def _parse_cursor(sensor_name: str, cursor: str | None) -> ChangeCursor:
    if not cursor:
        return ChangeCursor()
    try:
        return ChangeCursor.parse(cursor)
    except ValueError as exc:
        raise ValueError(
            f"sensor {sensor_name!r}: {exc}; reset the sensor's cursor in the Dagster UI "
            "(or `dagster sensor cursor --delete`)"
        ) from None
