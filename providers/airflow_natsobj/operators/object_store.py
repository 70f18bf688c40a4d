"""Put, get and delete objects, and create and delete object stores, as Airflow tasks.

Every operator renders its fields with Jinja, pushes JSON-safe results to XCom
(``ObjectInfo.as_dict()``), and lets the natsobj error (which names bucket, object and the fix)
become the task's failure message.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator, ObjectStoragePath

from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from natsobj.errors import BucketExists, BucketNotFound, ObjectNotFound, ObjectTooLarge
from natsobj.model import ObjectInfo

if TYPE_CHECKING:
    from airflow.sdk import Context

DEFAULT_MAX_XCOM_BYTES = 1024 * 1024


def _is_storage_path(value: Any) -> bool:
    return isinstance(value, ObjectStoragePath)


class _NatsOperator(BaseOperator):
    ui_color = "#d7f0e8"

    def __init__(self, *, nats_conn_id: str = NatsObjectStoreHook.default_conn_name, **kwargs: Any):
        super().__init__(**kwargs)
        self.nats_conn_id = nats_conn_id

    def hook(self) -> NatsObjectStoreHook:
        return NatsObjectStoreHook(nats_conn_id=self.nats_conn_id)


class NatsObjectPutOperator(_NatsOperator):
    """Store a local file, an ObjectStoragePath or rendered ``data`` as one object.

    Give exactly one of ``source`` (a local path, or an ObjectStoragePath on any filesystem,
    streamed) and ``data`` (str or bytes, rendered as a template). Returns the ObjectInfo as a
    dict; every outlet asset gets an event whose extra holds name, nuid, digest, size and
    sequence.
    """

    template_fields: Sequence[str] = (
        "bucket",
        "name",
        "source",
        "data",
        "description",
        "metadata",
        "headers",
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

    def execute(self, context: Context) -> dict[str, Any]:
        with self.hook() as hook:
            if self.create_bucket:
                hook.ensure_store(self.bucket)
            meta = {
                "description": self.description,
                "metadata": self.metadata,
                "headers": self.headers,
            }
            if self.data is not None:
                info = hook.put(self.bucket, self.name, self.data, **meta)
            elif _is_storage_path(self.source):
                with self.source.open("rb") as handle:  # type: ignore[union-attr]
                    info = hook.put(self.bucket, self.name, handle, **meta)
            else:
                path = Path(str(self.source)).expanduser()
                if not path.is_file():
                    raise FileNotFoundError(
                        f"{self.task_id}: source {str(path)!r} is not a file; nothing was put to "
                        f"bucket {self.bucket!r}, object {self.name!r}"
                    )
                info = hook.put(self.bucket, self.name, path, **meta)
        self.log.info(
            "Put nats://%s/%s: %d bytes in %d chunks, %s",
            info.bucket,
            info.name,
            info.size,
            info.chunks,
            info.digest,
        )
        self._emit_outlet_events(context, info)
        return info.as_dict()

    def _emit_outlet_events(self, context: Context, info: ObjectInfo) -> None:
        extra = {
            "bucket": info.bucket,
            "name": info.name,
            "nuid": info.nuid,
            "digest": info.digest,
            "size": info.size,
            "sequence": info.sequence,
        }
        outlet_events = context["outlet_events"]
        for outlet in self.outlets:
            with contextlib.suppress(TypeError, KeyError):
                outlet_events[outlet].extra.update(extra)


class NatsObjectGetOperator(_NatsOperator):
    """Read an object into a local file or an ObjectStoragePath (streamed), or into XCom.

    With ``destination`` the ObjectInfo dict is returned. Without it the content is returned
    as text (``encoding``, default utf-8; ``"base64"`` for binary) provided the object is at most
    ``max_xcom_bytes``; bigger objects fail before anything is read.

    ``min_sequence`` (templated) is the writer's sequence, e.g.
    ``"{{ ti.xcom_pull('put')['sequence'] }}"``: the read is then guaranteed to see that put
    and is served by the nearest replica rather than the stream leader.
    """

    template_fields: Sequence[str] = ("bucket", "name", "destination", "encoding", "min_sequence")

    def __init__(
        self,
        *,
        bucket: str,
        name: str,
        destination: str | Path | ObjectStoragePath | None = None,
        encoding: str = "utf-8",
        max_xcom_bytes: int = DEFAULT_MAX_XCOM_BYTES,
        min_sequence: int | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.name = name
        self.destination = destination
        self.encoding = encoding
        self.max_xcom_bytes = max_xcom_bytes
        self.min_sequence = min_sequence

    def _known_sequence(self) -> int | None:
        """The rendered ``min_sequence``; an empty or "None" rendering means none is known."""
        value = self.min_sequence
        if value is None or str(value).strip() in ("", "None"):
            return None
        try:
            return int(value)
        except ValueError:
            raise ValueError(
                f"{self.task_id}: min_sequence must be a stream sequence number, got {value!r}"
            ) from None

    def execute(self, context: Context) -> Any:
        with self.hook() as hook:
            if self.destination is None:
                return self._to_xcom(hook)
            if _is_storage_path(self.destination):
                info = self._to_storage_path(hook, self.destination)  # type: ignore[arg-type]
            else:
                info = hook.get_file(
                    self.bucket,
                    self.name,
                    Path(str(self.destination)).expanduser(),
                    min_sequence=self._known_sequence(),
                )
        self.log.info(
            "Got nats://%s/%s (%d bytes) into %s",
            self.bucket,
            self.name,
            info.size,
            self.destination,
        )
        return info.as_dict()

    def _to_xcom(self, hook: NatsObjectStoreHook) -> str:
        try:
            data = hook.get_bytes(
                self.bucket,
                self.name,
                max_size=self.max_xcom_bytes,
                min_sequence=self._known_sequence(),
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
        """Stream chunk by chunk; a failed read (digest mismatch) removes the partial copy."""
        try:
            with (
                hook.open_reader(
                    self.bucket, self.name, min_sequence=self._known_sequence()
                ) as reader,
                destination.open("wb") as out,
            ):
                for chunk in reader:
                    out.write(chunk)
                return reader.info
        except BaseException:
            with contextlib.suppress(Exception):
                destination.unlink()
            raise


class NatsObjectDeleteOperator(_NatsOperator):
    """Delete one object or several (``name`` may be a list); returns the names deleted."""

    template_fields: Sequence[str] = ("bucket", "name")

    def __init__(
        self, *, bucket: str, name: str | list[str], missing_ok: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.name = name
        self.missing_ok = missing_ok

    def execute(self, context: Context) -> list[str]:
        names = [self.name] if isinstance(self.name, str) else list(self.name)
        deleted = []
        with self.hook() as hook:
            for name in names:
                try:
                    hook.delete(self.bucket, name)
                except ObjectNotFound:
                    if not self.missing_ok:
                        raise
                    self.log.info("nats://%s/%s was already gone", self.bucket, name)
                    continue
                deleted.append(name)
        return deleted


class NatsCreateObjectStoreOperator(_NatsOperator):
    """Create a bucket (or, with ``exists_ok``, accept one that exists); returns its status."""

    template_fields: Sequence[str] = ("bucket", "description", "metadata")

    def __init__(
        self,
        *,
        bucket: str,
        description: str | None = None,
        metadata: dict[str, str] | None = None,
        ttl: float | timedelta | None = None,
        max_bytes: int = -1,
        storage: str = "file",
        replicas: int = 1,
        compression: bool = False,
        exists_ok: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.description = description
        self.metadata = metadata
        self.options = {
            "ttl": ttl,
            "max_bytes": max_bytes,
            "storage": storage,
            "replicas": replicas,
            "compression": compression,
        }
        self.exists_ok = exists_ok

    def execute(self, context: Context) -> dict[str, Any]:
        with self.hook() as hook:
            try:
                store = hook.create_store(
                    self.bucket,
                    description=self.description,
                    metadata=self.metadata,
                    **self.options,
                )
            except BucketExists:
                if not self.exists_ok:
                    raise
                store = hook.get_store(self.bucket)
            return store.status().as_dict()


class NatsDeleteObjectStoreOperator(_NatsOperator):
    """Delete a bucket and everything in it."""

    template_fields: Sequence[str] = ("bucket",)

    def __init__(self, *, bucket: str, missing_ok: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.missing_ok = missing_ok

    def execute(self, context: Context) -> None:
        with self.hook() as hook:
            try:
                hook.delete_store(self.bucket)
            except BucketNotFound:
                if not self.missing_ok:
                    raise
