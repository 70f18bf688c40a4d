"""Object versions as Airflow tasks (docs/versioning.md): bring back the version a bad run
overwrote or deleted.

The Amazon provider has no restore operator: on S3 a restore is a ``CopyObject`` from a
version over the current one, which ``NatsCopyObjectOperator(source_version_id=)`` does too.
``NatsRestoreObjectOperator`` says it in one parameter and refuses to run without the version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from airflow_natsobj.operators.object_store import NatsBaseOperator
from airflow_natsobj.options import operation_options, version_option
from airflow_natsobj.payloads import object_payload
from airflow_natsobj.wording import airflow_words
from natsobj.errors import in_words_of

if TYPE_CHECKING:
    from airflow.sdk import Context


class NatsRestoreObjectOperator(NatsBaseOperator):
    """Make version ``version_id`` of ``name`` its current version again, as ``natsobj
    restore`` does: the version's bytes are copied over the current ones (streamed through
    the worker and checked against the version's digest), and the version they replace is
    kept as a version where the bucket keeps versions, so a restore is undone by another.

    ``version_id`` (templated: the id a versions listing, a sensor's or trigger's
    ``version_id``, or a put's XCom shows) must name a version; unset (or ``null``, the current
    one) fails before anything is read. A delete marker has no bytes to restore: delete it
    (``NatsDeleteObjectsOperator(version_id=)``) to undelete. Returns the new current
    version's ObjectInfo dict, with ``version_id`` (its own) and ``restored`` (the one copied).
    """

    template_fields: Sequence[str] = ("bucket", "name", "version_id")
    _lineage_inputs = ("name",)
    _lineage_outputs = ("name",)

    def __init__(
        self,
        *,
        bucket: str,
        name: str,
        version_id: str,
        allow_missing_digest: bool | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.bucket = bucket
        self.name = name
        self.version_id = version_id
        options = operation_options(
            "get", f"task {self.task_id!r}", allow_missing_digest=allow_missing_digest
        )
        self.allow_missing_digest: bool = options["allow_missing_digest"]

    def _version(self) -> str:
        where = f"task {self.task_id!r}"
        version = version_option(self.version_id, where)
        if version is None:
            raise ValueError(
                f"{where}: bucket {self.bucket!r}, object {self.name!r}: version_id names no"
                f" version ({self.version_id!r}); a restore copies a version over the current"
                " one (NatsObjectStoreHook.list_versions shows them)"
            )
        return version

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> dict[str, Any]:
        version = self._version()
        with self.hook() as hook:
            info = hook.restore(
                self.bucket, self.name, version, allow_missing_digest=self.allow_missing_digest
            )
        self.log.info(
            "Restored nats://%s/%s from version %s: now version %s (%d bytes)",
            self.bucket,
            self.name,
            version,
            info.nuid,
            info.size,
        )
        return {**object_payload(info), "restored": version}
