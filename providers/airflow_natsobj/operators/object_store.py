"""Put, get and delete objects, and create and delete object stores, as Airflow tasks.

Every operator renders its fields with Jinja, pushes JSON-safe results to XCom
(``airflow_natsobj.payloads.object_payload``: ``ObjectInfo.as_dict()`` with ``version_id``
and ``delete_marker``), and lets the natsobj error (which names bucket, object and the fix)
become the task's failure message.
"""

from __future__ import annotations

import base64
import contextlib
import functools
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from airflow.exceptions import AirflowProviderDeprecationWarning
from airflow.sdk import BaseOperator, ObjectStoragePath

from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from airflow_natsobj.options import operation_options, rendered_sequence, unset, version_option
from airflow_natsobj.payloads import object_payload
from airflow_natsobj.wording import airflow_words
from natsobj.aio.put_modes import CREATE, OVERWRITE
from natsobj.deprecation import warn_deprecated
from natsobj.errors import (
    BucketNotFound,
    ObjectExists,
    ObjectNotFound,
    ObjectTooLarge,
    in_words_of,
)
from natsobj.local.files import replacing
from natsobj.model import ObjectInfo
from natsobj.orchestration.lineage import dataset_identity
from natsobj.store_config import STORE_SETTINGS

if TYPE_CHECKING:
    from airflow.sdk import Context

DEFAULT_MAX_XCOM_BYTES = 1024 * 1024
# What a put's asset event carries of its object: enough to pin the version it wrote
OUTLET_EXTRA = ("bucket", "name", "nuid", "version_id", "digest", "size", "sequence")


def _is_storage_path(value: Any) -> bool:
    return isinstance(value, ObjectStoragePath)


def _names(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _deprecated_name(old: str, new: type) -> None:
    warn_deprecated(old, new.__name__, category=AirflowProviderDeprecationWarning, stacklevel=4)


class NatsBaseOperator(BaseOperator):
    """What every natsobj operator shares: ``nats_conn_id``, its hook, and OpenLineage
    datasets named by the fields in ``_lineage_inputs``/``_lineage_outputs`` (objects of
    ``self.bucket``) or by ``_lineage_objects`` where an operator knows better."""

    ui_color = "#d7f0e8"

    def __init__(self, *, nats_conn_id: str = NatsObjectStoreHook.default_conn_name, **kwargs: Any):
        super().__init__(**kwargs)
        self.nats_conn_id = nats_conn_id

    def hook(self) -> NatsObjectStoreHook:
        return NatsObjectStoreHook(nats_conn_id=self.nats_conn_id)

    # -- OpenLineage (used when apache-airflow-providers-openlineage is installed) ---------------

    _lineage_inputs: tuple[str, ...] = ()
    _lineage_outputs: tuple[str, ...] = ()

    def _lineage(self) -> Any:
        """The objects this task reads and writes as OpenLineage datasets, each under its
        identity (``natsobj.orchestration.lineage``), the same as its asset's."""
        from airflow.providers.common.compat.openlineage.facet import Dataset
        from airflow.providers.openlineage.extractors import OperatorLineage

        def datasets(objects: list[tuple[str, str]]) -> list[Any]:
            identities = (dataset_identity(bucket, name) for bucket, name in objects)
            return [Dataset(namespace=namespace, name=name) for namespace, name in identities]

        inputs, outputs = self._lineage_objects()
        return OperatorLineage(inputs=datasets(inputs), outputs=datasets(outputs))

    def _lineage_objects(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """The ``(bucket, name)`` of the objects read and of those written."""

        def objects(fields: tuple[str, ...]) -> list[tuple[str, str]]:
            bucket: str = self.bucket  # type: ignore[attr-defined]
            return [(bucket, name) for field in fields for name in _names(getattr(self, field))]

        return objects(self._lineage_inputs), objects(self._lineage_outputs)

    def get_openlineage_facets_on_start(self) -> Any:
        return self._lineage()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        return self._lineage()


class NatsCreateObjectOperator(NatsBaseOperator):
    """Store a local file, an ObjectStoragePath or rendered ``data`` as one object.

    Give exactly one of ``source`` (a local path, or an ObjectStoragePath on any filesystem,
    streamed) and ``data`` (str or bytes, rendered as a template). As the Amazon provider's
    ``S3CreateObjectOperator``, an existing object is only overwritten with ``replace=True``;
    otherwise the task fails with ObjectExists, and the check and the put are one
    compare-and-swap, so a writer racing this task is never overwritten either. Returns the
    ObjectInfo as a dict; every outlet asset gets an event whose extra holds name, nuid,
    version_id, digest, size and sequence.

    ``ttl`` (templated: seconds, a duration such as ``"2d"`` or ``"1h30m"``, a timedelta, or
    ``"never"``) makes the server delete the object that long after the put; unset, the
    bucket's lifecycle rules decide (docs/lifecycle.md). Its values are those of every face
    (``natsobj.operation_options``, docs/options.md).
    """

    _lineage_outputs = ("name",)

    template_fields: Sequence[str] = (
        "bucket",
        "name",
        "source",
        "data",
        "description",
        "metadata",
        "headers",
        "ttl",
    )
    template_fields_renderers = {"data": "py", "metadata": "json", "headers": "json"}

    def __init__(
        self,
        *,
        bucket: str,
        name: str,
        source: str | Path | ObjectStoragePath | None = None,
        data: str | bytes | None = None,
        description: str | None = None,
        metadata: dict[str, str] | None = None,
        headers: dict[str, str | list[str]] | None = None,
        create_bucket: bool = False,
        replace: bool = False,
        ttl: float | str | timedelta | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if (source is None) == (data is None):
            raise ValueError(f"{self.task_id}: give exactly one of source= (a path) or data=")
        self.bucket = bucket
        self.name = name
        self.source = source
        self.data = data
        self.description = description
        self.metadata = metadata
        self.headers = headers
        self.create_bucket = create_bucket
        self.replace = replace
        self.ttl = ttl

    def put_options(self) -> dict[str, Any]:
        """The put's options (``natsobj.operation_options``) from the rendered fields."""
        return operation_options("put", f"task {self.task_id!r}", ttl=self.ttl)

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> dict[str, Any]:
        with self.hook() as hook:
            if self.create_bucket:
                hook.ensure_store(self.bucket)
            put = functools.partial(
                hook.put,
                self.bucket,
                self.name,
                description=self.description,
                metadata=self.metadata,
                headers=self.headers,
                mode=OVERWRITE if self.replace else CREATE,
                **self.put_options(),
            )
            try:
                info = self._put_source(put)
            except ObjectExists as exc:
                raise ObjectExists(
                    exc.message,
                    bucket=self.bucket,
                    name=self.name,
                    hint="Pass replace=True to overwrite it, or write to another name.",
                ) from None
        self.log.info(
            "Put nats://%s/%s: %d bytes in %d chunks, %s",
            info.bucket,
            info.name,
            info.size,
            info.chunks,
            info.digest,
        )
        payload = object_payload(info)
        self._emit_outlet_events(context, payload)
        return payload

    def _put_source(self, put: Callable[[Any], ObjectInfo]) -> ObjectInfo:
        """``put`` of the operator's data, storage path or local file."""
        if self.data is not None:
            return put(self.data)
        if _is_storage_path(self.source):
            with self.source.open("rb") as handle:  # type: ignore[union-attr]
                return put(handle)
        path = Path(str(self.source)).expanduser()
        if not path.is_file():
            raise FileNotFoundError(
                f"{self.task_id}: source {str(path)!r} is not a file; nothing was put to "
                f"bucket {self.bucket!r}, object {self.name!r}"
            )
        return put(path)

    def _emit_outlet_events(self, context: Context, payload: dict[str, Any]) -> None:
        extra = {key: payload[key] for key in OUTLET_EXTRA}
        outlet_events = context["outlet_events"]
        for outlet in self.outlets:
            with contextlib.suppress(TypeError, KeyError):
                outlet_events[outlet].extra.update(extra)


class NatsGetObjectOperator(NatsBaseOperator):
    """Read an object into a local file or an ObjectStoragePath (streamed), or into XCom.

    With ``destination`` the ObjectInfo dict is returned. Without it the content is returned
    as text (``encoding``, default utf-8; ``"base64"`` for binary) provided the object is at most
    ``max_xcom_bytes``; bigger objects fail before anything is read.

    ``min_sequence`` (templated) is the writer's sequence, e.g.
    ``"{{ ti.xcom_pull('put')['sequence'] }}"``: the read is then guaranteed to see that put
    and is served by the nearest replica rather than the stream leader.

    ``allow_missing_digest=True`` (or ``"on"``, ``"yes"``...: the words of every face,
    docs/options.md) also reads an object whose record has no digest (from a client that
    writes none); by default that fails with MissingDigest.

    ``version_id`` (templated, e.g. ``"{{ ti.xcom_pull('put')['version_id'] }}"``) reads that
    version of the object (docs/versioning.md) instead of the current one; ``null`` is the
    current one, as on S3.
    """

    template_fields: Sequence[str] = (
        "bucket",
        "name",
        "destination",
        "encoding",
        "min_sequence",
        "version_id",
    )
    _lineage_inputs = ("name",)

    def __init__(
        self,
        *,
        bucket: str,
        name: str,
        destination: str | Path | ObjectStoragePath | None = None,
        encoding: str = "utf-8",
        max_xcom_bytes: int = DEFAULT_MAX_XCOM_BYTES,
        min_sequence: int | str | None = None,
        allow_missing_digest: bool | str | None = None,
        version_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.name = name
        self.version_id = version_id
        self.destination = destination
        self.encoding = encoding
        self.max_xcom_bytes = max_xcom_bytes
        self.min_sequence = min_sequence
        # parsed here: a value the table does not take fails when the DAG is parsed
        options = operation_options(
            "get", f"task {self.task_id!r}", allow_missing_digest=allow_missing_digest
        )
        self.allow_missing_digest: bool = options["allow_missing_digest"]

    def _known_sequence(self) -> int | None:
        return rendered_sequence(self.min_sequence, f"{self.task_id}: min_sequence")

    def version(self) -> str | None:
        """The version to read, from the rendered ``version_id`` (None: the current one)."""
        return version_option(self.version_id, f"task {self.task_id!r}")

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> Any:
        with self.hook() as hook:
            if self.destination is None:
                return self._to_xcom(hook)
            if _is_storage_path(self.destination) and not _is_local(self.destination):
                info = self._to_storage_path(hook, self.destination)  # type: ignore[arg-type]
            else:
                info = hook.get_file(
                    self.bucket,
                    self.name,
                    _local_path(self.destination),
                    min_sequence=self._known_sequence(),
                    allow_missing_digest=self.allow_missing_digest,
                    version_id=self.version(),
                )
        self.log.info(
            "Got nats://%s/%s (%d bytes, version %s) into %s",
            self.bucket,
            self.name,
            info.size,
            info.nuid,
            self.destination,
        )
        return object_payload(info)

    def _to_xcom(self, hook: NatsObjectStoreHook) -> str:
        try:
            data = hook.get_bytes(
                self.bucket,
                self.name,
                max_size=self.max_xcom_bytes,
                min_sequence=self._known_sequence(),
                allow_missing_digest=self.allow_missing_digest,
                version_id=self.version(),
            )
        except ObjectTooLarge as exc:
            raise ObjectTooLarge(
                f"{exc.message}; give destination= (a path or ObjectStoragePath) to stream it, "
                "or raise max_xcom_bytes",
                bucket=self.bucket,
                name=self.name,
                hint="",
            ) from None
        if self.encoding == "base64":
            return base64.b64encode(data).decode("ascii")
        try:
            return data.decode(self.encoding)
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"bucket {self.bucket!r}, object {self.name!r} is not {self.encoding} text "
                f"({exc}); use encoding='base64' or a destination"
            ) from None

    def _to_storage_path(
        self, hook: NatsObjectStoreHook, destination: ObjectStoragePath
    ) -> ObjectInfo:
        """Stream chunk by chunk into a part beside ``destination`` on its filesystem, moved
        over it only once the whole object was read and its digest matched: the rule
        ``get_file`` writes a local path by (``natsobj.local.files.replacing``). The user's
        object there is never truncated, and a failed get (no such object, digest mismatch,
        lost connection) leaves it as it was, with no part beside it."""
        with (
            replacing(_StoragePlace(destination)) as out,
            hook.open_reader(
                self.bucket,
                self.name,
                min_sequence=self._known_sequence(),
                allow_missing_digest=self.allow_missing_digest,
                version_id=self.version(),
            ) as reader,
        ):
            for chunk in reader:
                out.write(chunk)
        return reader.info


def _is_local(destination: ObjectStoragePath) -> bool:
    """A ``file://`` path: written as a local path is, keeping the mode of the file it replaces."""
    return destination.protocol in ("file", "local")


def _local_path(destination: str | Path | ObjectStoragePath) -> Path:
    if isinstance(destination, ObjectStoragePath):
        return Path(destination.path)
    return Path(str(destination)).expanduser()


class _StoragePlace:
    """Where ``replacing`` writes an ObjectStoragePath on a remote filesystem: the part is a
    sibling path of that filesystem, moved over the destination with ``fs.mv`` (not
    ``ObjectStoragePath.move``, which would report the part as lineage)."""

    def __init__(self, destination: ObjectStoragePath) -> None:
        self.destination = destination
        self.file_name = destination.name

    def _part(self, part_name: str) -> ObjectStoragePath:
        """The sibling, built from the destination's URL (which carries its connection id):
        Airflow 3.1's ``parent`` and ``with_name`` get a ``nats://conn@bucket/...`` path
        wrong (the connection id then stands where the bucket belongs)."""
        folder = str(self.destination).rsplit("/", 1)[0]
        return type(self.destination)(f"{folder}/{part_name}", **self.destination.storage_options)

    def create_part(self, part_name: str, buffering: int) -> BinaryIO:
        return cast(BinaryIO, self._part(part_name).open("wb"))

    def commit_part(self, part_name: str, handle: BinaryIO) -> None:
        handle.close()  # the filesystem holds the part only once it is closed
        self.destination.fs.mv(self._part(part_name).path, self.destination.path)

    def remove_part(self, part_name: str) -> None:
        with contextlib.suppress(Exception):
            self._part(part_name).unlink(missing_ok=True)


class NatsDeleteObjectsOperator(NatsBaseOperator):
    """Delete one object or several (``name`` may be a list), or, as the Amazon provider's
    ``S3DeleteObjectsOperator`` does with ``prefix``, every object whose name starts with
    ``prefix``; give exactly one of the two. Returns the names deleted.

    ``missing_ok`` lets a given name be absent; an object listed under ``prefix`` that is gone
    by the time it is deleted (another task deleted it) is not an error. An empty ``prefix``
    (one that rendered nothing) is refused rather than read as "the whole bucket": delete
    the bucket with ``NatsDeleteObjectStoreOperator`` for that.

    In a versioned bucket a delete adds a delete marker and the versions stay
    (docs/versioning.md). ``version_id`` (templated; with one ``name``) removes that version
    for good, as S3's ``DeleteObject`` with a ``VersionId``: a version under a lock fails
    with ObjectLocked, unless ``bypass_governance`` (S3's ``BypassGovernanceRetention``) and
    its retention is in governance mode.
    """

    template_fields: Sequence[str] = ("bucket", "name", "prefix", "version_id")
    _lineage_outputs = ("name",)

    def __init__(
        self,
        *,
        bucket: str,
        name: str | list[str] | None = None,
        prefix: str | None = None,
        missing_ok: bool = False,
        version_id: str | None = None,
        bypass_governance: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if (name is None) == (prefix is None):
            raise ValueError(f"{self.task_id}: give exactly one of name= (or a list) or prefix=")
        if version_id is not None and not isinstance(name, str):
            raise ValueError(f"{self.task_id}: version_id= names a version of one name=")
        self.bucket = bucket
        self.name = name
        self.prefix = prefix
        self.missing_ok = missing_ok
        self.version_id = version_id
        self.bypass_governance = bypass_governance
        self._deleted: list[str] = []

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> list[str]:
        with self.hook() as hook:
            if self.prefix is None:
                self._deleted = self._delete(hook, _names(self.name), self.missing_ok)
                return self._deleted
            prefix = unset(self.prefix)
            if prefix is None:
                raise ValueError(
                    f"{self.task_id}: prefix rendered empty; nothing was deleted from bucket "
                    f"{self.bucket!r} (NatsDeleteObjectStoreOperator deletes a whole bucket)"
                )
            listed = [info.name for info in hook.list(self.bucket, prefix=prefix)]
            self._deleted = self._delete(hook, listed, missing_ok=True)
        self.log.info(
            "Deleted %d object(s) below nats://%s/%s", len(self._deleted), self.bucket, prefix
        )
        return self._deleted

    def _delete(self, hook: NatsObjectStoreHook, names: list[str], missing_ok: bool) -> list[str]:
        deleted = []
        version = version_option(self.version_id, f"task {self.task_id!r}")
        for name in names:
            try:
                hook.delete(
                    self.bucket,
                    name,
                    version_id=version,
                    bypass_governance=self.bypass_governance,
                )
            except ObjectNotFound:
                if not missing_ok:
                    raise
                self.log.info("nats://%s/%s was already gone", self.bucket, name)
                continue
            deleted.append(name)
        return deleted

    def _lineage_objects(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """By ``prefix``, the names are known once deleted (on complete), not at the start."""
        if self.prefix is None:
            return super()._lineage_objects()
        return [], [(self.bucket, name) for name in self._deleted]


class NatsCreateObjectStoreOperator(NatsBaseOperator):
    """Create a bucket (or, with ``exists_ok``, accept one that exists); returns its status.

    Store settings are ``create_store``'s keywords, the fields of ``natsobj.StoreConfig``
    (description, metadata, ttl, max_bytes, storage, replicas, placement, compression); each
    may be templated (``"{{ var.value.ttl }}"``): StoreConfig reads text as it reads values."""

    template_fields: Sequence[str] = ("bucket", "store_settings")
    template_fields_renderers = {"store_settings": "json"}

    def __init__(self, *, bucket: str, exists_ok: bool = True, **kwargs: Any) -> None:
        self.store_settings = {k: kwargs.pop(k) for k in STORE_SETTINGS if k in kwargs}
        super().__init__(**kwargs)
        self.bucket = bucket
        self.exists_ok = exists_ok

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> dict[str, Any]:
        with self.hook() as hook:
            open_store = hook.ensure_store if self.exists_ok else hook.create_store
            return open_store(self.bucket, **self.store_settings).status().as_dict()


class NatsDeleteObjectStoreOperator(NatsBaseOperator):
    """Delete a bucket and everything in it."""

    template_fields: Sequence[str] = ("bucket",)

    def __init__(self, *, bucket: str, missing_ok: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.missing_ok = missing_ok

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> None:
        with self.hook() as hook:
            try:
                hook.delete_store(self.bucket)
            except BucketNotFound:
                if not self.missing_ok:
                    raise


class NatsObjectPutOperator(NatsCreateObjectOperator):
    """Deprecated name of ``NatsCreateObjectOperator``; it keeps the old default
    ``replace=True`` (always overwrite) until it is removed in the next release."""

    def __init__(self, *, replace: bool = True, **kwargs: Any) -> None:
        _deprecated_name("NatsObjectPutOperator", NatsCreateObjectOperator)
        super().__init__(replace=replace, **kwargs)


class NatsObjectGetOperator(NatsGetObjectOperator):
    """Deprecated name of ``NatsGetObjectOperator``."""

    def __init__(self, **kwargs: Any) -> None:
        _deprecated_name("NatsObjectGetOperator", NatsGetObjectOperator)
        super().__init__(**kwargs)


class NatsObjectDeleteOperator(NatsDeleteObjectsOperator):
    """Deprecated name of ``NatsDeleteObjectsOperator``."""

    def __init__(self, **kwargs: Any) -> None:
        _deprecated_name("NatsObjectDeleteOperator", NatsDeleteObjectsOperator)
        super().__init__(**kwargs)
