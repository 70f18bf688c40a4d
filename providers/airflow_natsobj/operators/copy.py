"""Copy an object, or everything under a prefix, to another name or bucket as Airflow tasks:
the twins of the Amazon provider's ``S3CopyObjectOperator`` and ``S3CopyPrefixOperator``,
with its parameter names.

Each copy is the core's ``copy_object`` (``natsobj.aio.copy``): streamed chunk by chunk
through the worker's connection and checked against the source's digest, keeping the
source's description, headers, metadata and chunk size; the worker holds a few chunks at a
time and writes nothing to disk. NATS has no server-side copy of a message, so unlike S3's
``CopyObject`` the bytes do pass through the worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_natsobj.operators.object_store import NatsBaseOperator
from airflow_natsobj.options import operation_options, version_option
from airflow_natsobj.payloads import object_payload
from airflow_natsobj.wording import airflow_words
from natsobj.aio.copy import copied_by_prefix
from natsobj.errors import in_words_of
from natsobj.paths import is_nats_url, parse_nats_url

if TYPE_CHECKING:
    from airflow.sdk import Context


def object_location(
    bucket: str | None,
    key: str,
    bucket_param: str,
    key_param: str,
    nats_conn_id: str,
    *,
    prefix: bool = False,
) -> tuple[str, str]:
    """``(bucket, name)`` from a bucket and a name, or from a full ``nats://bucket/name`` URL
    with the bucket left out, as the Amazon provider's ``get_s3_bucket_key`` reads an
    ``s3://`` one. A URL's connection id (``nats://conn@bucket/name``, ObjectStoragePath's
    spelling) must be the task's ``nats_conn_id``: one task copies on one connection.
    ``prefix``: the key is a prefix, which may be empty (``nats://bucket/``: all of it)."""
    if bucket is None:
        if not is_nats_url(key):
            raise ValueError(
                f"{key_param}={key!r} is not a nats://bucket/name URL: give {bucket_param}= "
                "too, or the full URL"
            )
        location = parse_nats_url(key)
        if location.conn_id is not None and location.conn_id != nats_conn_id:
            raise ValueError(
                f"{key_param}={key!r} names connection {location.conn_id!r} but the task uses "
                f"nats_conn_id={nats_conn_id!r}; both ends of a copy use the task's connection"
            )
        if not location.bucket or not (location.key or prefix):
            raise ValueError(f"{key_param}={key!r} names no bucket and object")
        return location.bucket, location.key
    if is_nats_url(key):
        raise ValueError(
            f"{key_param}={key!r} is a full URL while {bucket_param}={bucket!r} is given: give "
            "the name in the bucket, or leave the bucket out"
        )
    return bucket, key


class NatsCopyObjectOperator(NatsBaseOperator):
    """Copy one object to another name, in the same bucket or another one (which must exist),
    replacing an object there as S3's copy does. Returns the copy's ObjectInfo as a dict.

    ``source_bucket_key``/``dest_bucket_key`` (templated) are names in
    ``source_bucket_name``/``dest_bucket_name``, or full ``nats://bucket/name`` URLs with the
    bucket left out. An object link is followed: the copy holds the linked object's data.
    ``allow_missing_digest`` (the read option of ``NatsGetObjectOperator``) also copies a
    source whose record has no digest; the copy then records the digest of what was read.
    ``source_version_id`` (templated, the Amazon operator's name) copies that version of the
    source (docs/versioning.md); copied over its own name, that restores it
    (``NatsRestoreObjectOperator`` says so in one parameter).
    """

    template_fields: Sequence[str] = (
        "source_bucket_key",
        "dest_bucket_key",
        "source_bucket_name",
        "dest_bucket_name",
        "source_version_id",
    )

    def __init__(
        self,
        *,
        source_bucket_key: str,
        dest_bucket_key: str,
        source_bucket_name: str | None = None,
        dest_bucket_name: str | None = None,
        source_version_id: str | None = None,
        allow_missing_digest: bool | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.source_bucket_key = source_bucket_key
        self.dest_bucket_key = dest_bucket_key
        self.source_bucket_name = source_bucket_name
        self.dest_bucket_name = dest_bucket_name
        self.source_version_id = source_version_id
        options = operation_options(
            "get", f"task {self.task_id!r}", allow_missing_digest=allow_missing_digest
        )
        self.allow_missing_digest: bool = options["allow_missing_digest"]

    def _source(self) -> tuple[str, str]:
        return object_location(
            self.source_bucket_name,
            self.source_bucket_key,
            "source_bucket_name",
            "source_bucket_key",
            self.nats_conn_id,
        )

    def _dest(self) -> tuple[str, str]:
        return object_location(
            self.dest_bucket_name,
            self.dest_bucket_key,
            "dest_bucket_name",
            "dest_bucket_key",
            self.nats_conn_id,
        )

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> dict[str, Any]:
        (source_bucket, source_name), (dest_bucket, dest_name) = self._source(), self._dest()
        with self.hook() as hook:
            info = hook.copy(
                source_bucket,
                source_name,
                dest_bucket,
                dest_name,
                allow_missing_digest=self.allow_missing_digest,
                source_version_id=version_option(
                    self.source_version_id, f"task {self.task_id!r}", "source_version_id"
                ),
            )
        self.log.info(
            "Copied nats://%s/%s to nats://%s/%s (%d bytes)",
            source_bucket,
            source_name,
            dest_bucket,
            dest_name,
            info.size,
        )
        return object_payload(info)

    def _lineage_objects(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        return [self._source()], [self._dest()]


class NatsCopyPrefixOperator(NatsBaseOperator):
    """Copy every object whose name starts with ``source_bucket_prefix`` to the same name with
    that prefix replaced by ``dest_bucket_prefix`` (S3's rule: plain string prefixes, so
    ``raw/`` to ``staged/`` copies ``raw/a/b.csv`` to ``staged/a/b.csv``). The objects are
    listed before the first copy, so copying into the listed prefix copies each once.
    Bucket links are not copied (``natsobj.aio.copy.copied_by_prefix``); object links are
    followed. Returns the names written, in the order copied.

    The prefixes (templated) may be full ``nats://bucket/prefix`` URLs with the bucket left
    out. ``continue_on_failure`` as Amazon's: copy what can be copied, then fail naming how
    many could not; otherwise the first failure fails the task.
    """

    template_fields: Sequence[str] = (
        "source_bucket_prefix",
        "dest_bucket_prefix",
        "source_bucket_name",
        "dest_bucket_name",
    )

    def __init__(
        self,
        *,
        source_bucket_prefix: str,
        dest_bucket_prefix: str,
        source_bucket_name: str | None = None,
        dest_bucket_name: str | None = None,
        continue_on_failure: bool = False,
        allow_missing_digest: bool | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.source_bucket_prefix = source_bucket_prefix
        self.dest_bucket_prefix = dest_bucket_prefix
        self.source_bucket_name = source_bucket_name
        self.dest_bucket_name = dest_bucket_name
        self.continue_on_failure = continue_on_failure
        options = operation_options(
            "get", f"task {self.task_id!r}", allow_missing_digest=allow_missing_digest
        )
        self.allow_missing_digest: bool = options["allow_missing_digest"]
        self._copied: list[tuple[str, str]] = []

    def _ends(self) -> tuple[tuple[str, str], tuple[str, str]]:
        source = object_location(
            self.source_bucket_name,
            self.source_bucket_prefix,
            "source_bucket_name",
            "source_bucket_prefix",
            self.nats_conn_id,
            prefix=True,
        )
        dest = object_location(
            self.dest_bucket_name,
            self.dest_bucket_prefix,
            "dest_bucket_name",
            "dest_bucket_prefix",
            self.nats_conn_id,
            prefix=True,
        )
        return source, dest

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> list[str]:
        (source_bucket, source_prefix), (dest_bucket, dest_prefix) = self._ends()
        failed = 0
        self._copied = []
        with self.hook() as hook:
            listed = hook.list(source_bucket, prefix=source_prefix)
            for info in filter(copied_by_prefix, listed):
                dest_name = dest_prefix + info.name[len(source_prefix) :]
                try:
                    hook.copy(
                        source_bucket,
                        info.name,
                        dest_bucket,
                        dest_name,
                        allow_missing_digest=self.allow_missing_digest,
                    )
                except Exception as exc:
                    if not self.continue_on_failure:
                        raise
                    self.log.error("Failed to copy nats://%s/%s: %s", source_bucket, info.name, exc)
                    failed += 1
                    continue
                self._copied.append((info.name, dest_name))
        self.log.info("Copied %d object(s)", len(self._copied))
        if failed:
            raise RuntimeError(
                f"{self.task_id}: {failed} object(s) below nats://{source_bucket}/"
                f"{source_prefix} could not be copied to bucket {dest_bucket!r} (see the log "
                f"above); {len(self._copied)} were"
            )
        return [dest for _, dest in self._copied]

    def _lineage_objects(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """The objects copied once the task ran; before that, the two prefixes (the names
        are known only once listed), as Amazon's operator reports them."""
        (source_bucket, source_prefix), (dest_bucket, dest_prefix) = self._ends()
        if not self._copied:
            return [(source_bucket, source_prefix)], [(dest_bucket, dest_prefix)]
        return (
            [(source_bucket, source) for source, _ in self._copied],
            [(dest_bucket, dest) for _, dest in self._copied],
        )
