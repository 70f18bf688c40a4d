"""Get an object, run a script on it, put what the script wrote: the twin of the Amazon
provider's ``S3FileTransformOperator``, with its parameter names (``source_s3_key`` and
``dest_s3_key`` become ``source_key`` and ``dest_key``).

S3 Select (``select_expression``) has no NATS counterpart and is not taken: the script does
the filtering.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.exceptions import AirflowException

from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
from airflow_natsobj.operators.copy import object_location
from airflow_natsobj.operators.object_store import NatsBaseOperator
from airflow_natsobj.operators.script import ScriptProcess
from airflow_natsobj.options import operation_options
from airflow_natsobj.payloads import object_payload
from airflow_natsobj.wording import airflow_words
from natsobj.aio.put_modes import CREATE, OVERWRITE
from natsobj.errors import ObjectExists, in_words_of

if TYPE_CHECKING:
    from airflow.sdk import Context


class NatsFileTransformOperator(NatsBaseOperator):
    """Get ``source_key`` into a temporary file, run ``transform_script`` as
    ``transform_script SOURCE DEST *script_args``, and put the file DEST as ``dest_key``.
    Returns the put object's ObjectInfo as a dict.

    The get streams chunk by chunk into the file, checked against the object's digest, so
    the worker's memory stays bounded whatever the size. The script's output is logged line
    by line; a non-zero exit fails the task and puts nothing. The script runs in a process
    group of its own: at ``execution_timeout`` and on ``on_kill`` the group is stopped
    (SIGTERM, then SIGKILL after ``STOP_GRACE_SECONDS``), the temporary files are removed and
    nothing is put. The put is atomic (readers see the old object or the new one) and, as
    Amazon's, does not overwrite an existing ``dest_key`` unless ``replace=True``: the check
    and the put are one create-only compare-and-swap, so a writer racing the task is not
    overwritten either.

    The keys (templated) are names in ``source_bucket_name``/``dest_bucket_name`` or full
    ``nats://bucket/name`` URLs with the bucket left out. ``source_nats_conn_id`` and
    ``dest_nats_conn_id`` (as Amazon's ``source_aws_conn_id``/``dest_aws_conn_id``) default
    to ``nats_conn_id``. ``allow_missing_digest`` is ``NatsGetObjectOperator``'s.
    """

    template_fields: Sequence[str] = (
        "source_key",
        "dest_key",
        "source_bucket_name",
        "dest_bucket_name",
        "script_args",
        "source_nats_conn_id",
        "dest_nats_conn_id",
    )
    template_ext: Sequence[str] = ()
    ui_color = "#f9c915"

    def __init__(
        self,
        *,
        source_key: str,
        dest_key: str,
        transform_script: str,
        script_args: Sequence[str] | None = None,
        source_bucket_name: str | None = None,
        dest_bucket_name: str | None = None,
        source_nats_conn_id: str | None = None,
        dest_nats_conn_id: str | None = None,
        replace: bool = False,
        allow_missing_digest: bool | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.source_key = source_key
        self.dest_key = dest_key
        self.transform_script = transform_script
        self.script_args = list(script_args or [])
        self.source_bucket_name = source_bucket_name
        self.dest_bucket_name = dest_bucket_name
        self.source_nats_conn_id = source_nats_conn_id or self.nats_conn_id
        self.dest_nats_conn_id = dest_nats_conn_id or self.nats_conn_id
        self.replace = replace
        options = operation_options(
            "get", f"task {self.task_id!r}", allow_missing_digest=allow_missing_digest
        )
        self.allow_missing_digest: bool = options["allow_missing_digest"]
        self._script: ScriptProcess | None = None

    def _source(self) -> tuple[str, str]:
        return object_location(
            self.source_bucket_name,
            self.source_key,
            "source_bucket_name",
            "source_key",
            self.source_nats_conn_id,
        )

    def _dest(self) -> tuple[str, str]:
        return object_location(
            self.dest_bucket_name,
            self.dest_key,
            "dest_bucket_name",
            "dest_key",
            self.dest_nats_conn_id,
        )

    @in_words_of(airflow_words)
    def execute(self, context: Context) -> dict[str, Any]:
        (source_bucket, source_name), (dest_bucket, dest_name) = self._source(), self._dest()
        with tempfile.TemporaryDirectory(prefix="natsobj-transform-") as work:
            source, dest = Path(work) / "source", Path(work) / "dest"
            with NatsObjectStoreHook(nats_conn_id=self.source_nats_conn_id) as hook:
                got = hook.get_file(
                    source_bucket,
                    source_name,
                    source,
                    allow_missing_digest=self.allow_missing_digest,
                )
            self.log.info("Got nats://%s/%s (%d bytes)", source_bucket, source_name, got.size)
            dest.touch()  # as Amazon's: the script may open its output for appending
            self._run_script(source, dest)
            with NatsObjectStoreHook(nats_conn_id=self.dest_nats_conn_id) as hook:
                try:
                    info = hook.put(
                        dest_bucket, dest_name, dest, mode=OVERWRITE if self.replace else CREATE
                    )
                except ObjectExists as exc:
                    raise ObjectExists(
                        exc.message,
                        bucket=dest_bucket,
                        name=dest_name,
                        hint="Pass replace=True to overwrite it, or write to another name.",
                    ) from None
        self.log.info("Put nats://%s/%s (%d bytes)", dest_bucket, dest_name, info.size)
        return object_payload(info)

    def _run_script(self, source: Path, dest: Path) -> None:
        """The script with (source, dest, *script_args), its output logged as it comes. An
        exception while it runs (Airflow's ``AirflowTaskTimeout`` at ``execution_timeout``)
        stops its process group before the temporary files are removed."""
        command = [self.transform_script, str(source), str(dest), *map(str, self.script_args)]
        with ScriptProcess(command) as script:
            self._script = script
            for line in script.lines():
                self.log.info("%s", line)
            returncode = script.wait()
        nothing_put = f"nothing was put to bucket {self._dest()[0]!r}"
        if script.stopped:
            raise AirflowException(
                f"{self.task_id}: transform script {self.transform_script!r} was stopped "
                f"because the task was killed; {nothing_put}"
            )
        if returncode:
            raise AirflowException(
                f"{self.task_id}: transform script {self.transform_script!r} exited with "
                f"{returncode}; {nothing_put}"
            )

    def on_kill(self) -> None:
        """Stop the running script's process group (SIGTERM, SIGKILL after a grace); the task
        then fails, removes its temporary files and puts nothing."""
        if self._script is not None:
            self._script.stop()

    def _lineage_objects(self) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        return [self._source()], [self._dest()]
