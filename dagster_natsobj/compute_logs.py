"""Step stdout and stderr in the NATS object store: Dagster's ``compute_logs:`` plug-in, the twin
of dagster-aws's ``S3ComputeLogManager``.

Dagster captures a step's output into local files (its ``LocalComputeLogManager``); this
manager puts each file into the bucket when the capture ends, and every ``upload_interval``
seconds while it runs (as ``<name>.partial``). Uploads stream from the open file, so a large
log never sits in memory. The UI's reads come back as ranged reads of the object: a cursor
fetches the chunks it needs, not the whole log.

The connection fields are the resource's own (``NatsObjectStoreResource``): ``dagster.yaml``
spells them flat beside ``bucket`` and ``prefix``, and the resource interprets them, as it
does for every other face.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote

from dagster import Field, Noneable, Shape, StringSource
from dagster._core.storage.cloud_storage_compute_log_manager import (
    CloudStorageComputeLogManager,
    PollingComputeLogSubscriptionManager,
)
from dagster._core.storage.compute_log_manager import (
    CapturedLogContext,
    CapturedLogSubscription,
    ComputeIOType,
    LogRetrievalShellCommand,
)
from dagster._core.storage.local_compute_log_manager import (
    IO_TYPE_EXTENSION,
    LocalComputeLogManager,
)
from dagster._serdes import ConfigurableClass, ConfigurableClassData
from dagster._utils import ensure_file
from dagster_shared import seven

import natsobj
from dagster_natsobj import naming
from dagster_natsobj.resource import NatsObjectStoreResource
from natsobj.errors import BucketNotFound, NatsObjError, ObjectNotFound, UnsafeLocalState
from natsobj.local.files import OTHERS_ANY, check_private
from natsobj.paths import SEP, nats_url

log = logging.getLogger(__name__)

PARTIAL_SUFFIX = ".partial"  # a capture still running, as dagster-aws names it
CONTENT_TYPE = "text/plain"


def private_capture_dir() -> str:
    """The default ``local_dir``: ``natsobj-compute-logs-<uid>`` in the system's temporary
    directory, 0700 and the user's own. Dagster writes the captured files with the umask's
    modes (0644 under the usual 022), so this directory is what keeps other local users
    from reading a step's output; one that another user made or can enter is refused."""
    path = Path(seven.get_system_temp_directory()) / f"natsobj-compute-logs-{os.getuid()}"
    with suppress(FileExistsError):
        path.mkdir(mode=0o700)
    st = path.lstat()
    fix = f"Remove {path} (or give local_dir= a directory only you can enter)."
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeLocalState(f"{path} is not a directory", hint=fix)
    check_private(path, st, OTHERS_ANY, fix, "a compute-log directory")
    return str(path)


def connection_config_fields() -> dict[str, Field]:
    """The resource's fields as ``dagster.yaml`` config: one schema (names, help, defaults and
    secrets) for the resource and this manager."""
    schema = cast(Shape, NatsObjectStoreResource.to_config_schema().as_field().config_type)
    return dict(schema.fields)


class NatsComputeLogManager(CloudStorageComputeLogManager, ConfigurableClass):
    """Logs each step's stdout and stderr to a NATS object store bucket.

    Named in ``dagster.yaml`` rather than built by hand:

    .. code-block:: yaml

        compute_logs:
          module: dagster_natsobj
          class: NatsComputeLogManager
          config:
            url: nats://nats.internal:4222
            user: dagster
            password:
              env: NATS_PASSWORD
            bucket: dagster-logs
            prefix: dagster
            upload_interval: 30

    Objects are ``<prefix>/storage/<run_id>/compute_logs/<file_key>.out`` (``.err`` for
    stderr), dagster-aws's layout; a running capture's copy ends in ``.partial`` and is deleted
    once the whole log is in. A store that cannot be reached never fails the run: Dagster
    records the failed upload as an engine event and the logs stay in ``local_dir``.
    """

    def __init__(
        self,
        bucket: str,
        *,
        resource: NatsObjectStoreResource | None = None,
        prefix: str = "dagster",
        local_dir: str | None = None,
        upload_interval: int | None = None,
        skip_empty_files: bool = False,
        show_url_only: bool = False,
        create_bucket: bool = True,
        inst_data: ConfigurableClassData | None = None,
    ) -> None:
        self._resource = resource or NatsObjectStoreResource()
        self._bucket = bucket
        self._prefix = prefix
        self._upload_interval = upload_interval or None
        self._skip_empty_files = skip_empty_files
        self._show_url_only = show_url_only
        self._create_bucket = create_bucket
        self._inst_data = inst_data
        self._local_manager = LocalComputeLogManager(local_dir or private_capture_dir())
        self._subscription_manager = PollingComputeLogSubscriptionManager(self)
        # A partial upload and the final one never overlap, so the final one's deletion of
        # the partial copy cannot be undone by a partial upload finishing after it.
        self._upload_lock = threading.Lock()

    @property
    def inst_data(self) -> ConfigurableClassData | None:
        return self._inst_data

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {
            **connection_config_fields(),
            "bucket": Field(StringSource, description="Bucket the logs are stored in."),
            "prefix": Field(
                StringSource,
                is_required=False,
                default_value="dagster",
                description="Prepended to every object name (may contain /, may be empty).",
            ),
            "local_dir": Field(
                Noneable(StringSource),
                is_required=False,
                default_value=None,
                description="Where logs are captured before upload (default: the system's"
                " temporary directory).",
            ),
            "upload_interval": Field(
                Noneable(int),
                is_required=False,
                default_value=None,
                description="Seconds between uploads of a running step's logs (as <name>"
                ".partial); unset: uploaded once, when the capture ends.",
            ),
            "skip_empty_files": Field(
                bool, is_required=False, default_value=False, description="Upload no empty log."
            ),
            "show_url_only": Field(
                bool,
                is_required=False,
                default_value=False,
                description="The UI shows the logs' nats:// location and a natsobj command to"
                " fetch them, not their content.",
            ),
            "create_bucket": Field(
                bool,
                is_required=False,
                default_value=True,
                description="Create the bucket at the first upload when it is missing (with"
                " bucket_settings).",
            ),
        }

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> NatsComputeLogManager:
        connection = {k: v for k, v in config_value.items() if k in connection_config_fields()}
        own = {k: v for k, v in config_value.items() if k not in connection}
        return cls(inst_data=inst_data, resource=NatsObjectStoreResource(**connection), **own)

    @property
    def local_manager(self) -> LocalComputeLogManager:
        return self._local_manager

    @property
    def upload_interval(self) -> int | None:
        return self._upload_interval

    def object_name(
        self, log_key: Sequence[str], io_type: ComputeIOType, partial: bool = False
    ) -> str:
        """Where a log lives in the bucket: ``<prefix>/storage/<namespace...>/<base>.<ext>``."""
        *namespace, filebase = log_key
        filename = f"{filebase}.{IO_TYPE_EXTENSION[io_type]}"
        return naming.join(
            self._prefix, ["storage", *namespace, filename + (PARTIAL_SUFFIX if partial else "")]
        )

    def _store(self, *, create: bool = False) -> natsobj.ObjectStore:
        with self._resource.get_store(self._bucket, create=create) as store:
            return store

    @contextmanager
    def capture_logs(self, log_key: Sequence[str]) -> Iterator[CapturedLogContext]:
        with super().capture_logs(log_key) as local_context:
            if not self._show_url_only:
                yield local_context
                return
            out = nats_url(self._bucket, self.object_name(log_key, ComputeIOType.STDOUT))
            err = nats_url(self._bucket, self.object_name(log_key, ComputeIOType.STDERR))
            yield CapturedLogContext(
                local_context.log_key,
                external_stdout_url=out,
                external_stderr_url=err,
                shell_cmd=LogRetrievalShellCommand(
                    stdout=f"natsobj cat {out}", stderr=f"natsobj cat {err}"
                ),
            )

    def upload_to_cloud_storage(
        self, log_key: Sequence[str], io_type: ComputeIOType, partial: bool = False
    ) -> None:
        """Put the local log into the bucket, streamed from the file.

        A partial upload that fails is logged and tried again at the next interval; the final
        one raises, which Dagster records on the run (the run itself goes on) and which keeps
        the local files, so nothing captured is lost."""
        path = self.local_manager.get_captured_local_path(log_key, IO_TYPE_EXTENSION[io_type])
        ensure_file(path)
        if (self._skip_empty_files or partial) and os.stat(path).st_size == 0:
            return
        name = self.object_name(log_key, io_type, partial=partial)
        with self._upload_lock:
            if partial and self.local_manager.is_capture_complete(log_key):
                return  # the final upload is under way or done
            try:
                store = self._store(create=self._create_bucket)
                with open(path, "rb") as data:
                    store.put(name, data, headers={"Content-Type": CONTENT_TYPE})
            except NatsObjError as exc:
                if not partial:
                    raise
                log.warning("compute logs: partial upload failed, retried later: %s", exc)
                return
            if not partial and self._upload_interval:
                self._delete_quietly(store, self.object_name(log_key, io_type, partial=True))

    def cloud_storage_has_logs(
        self, log_key: Sequence[str], io_type: ComputeIOType, partial: bool = False
    ) -> bool:
        """Whether the log is in the bucket. Dagster asks this from the run's upload thread and
        from the UI's polling; a store it cannot reach, or a record it cannot read, answers
        "not yet" (and says so in the log) rather than ending either."""
        try:
            self._store().get_info(self.object_name(log_key, io_type, partial=partial))
        except (BucketNotFound, ObjectNotFound):
            return False
        except NatsObjError as exc:
            log.warning("compute logs: cannot tell whether they are stored: %s", exc)
            return False
        return True

    def get_log_data_for_type(
        self,
        log_key: Sequence[str],
        io_type: ComputeIOType,
        offset: int,
        max_bytes: int | None,
    ) -> tuple[bytes | None, int]:
        """Up to ``max_bytes`` of the log from ``offset``: from the local file while it is
        there, else a ranged read of the stored log (or of its partial copy).

        A stored log that cannot be read (its record has no digest, its chunks are gone...)
        shows a line saying why, at the same offset, instead of raising: Dagster's one polling
        thread serves every live log view in the process, and an error would end it for all."""
        if self.has_local_file(log_key, io_type):
            path = self.local_manager.get_captured_local_path(log_key, IO_TYPE_EXTENSION[io_type])
            return self.local_manager.read_path(path, offset=offset, max_bytes=max_bytes)
        end = None if max_bytes is None else offset + max_bytes
        name = self.object_name(log_key, io_type)
        try:
            store = self._store()
            for partial in (False, True):
                name = self.object_name(log_key, io_type, partial)
                with suppress(ObjectNotFound):
                    data = store.get_range(name, offset, end)
                    return data, offset + len(data)
        except BucketNotFound:
            return None, offset
        except NatsObjError as exc:
            log.warning("compute logs: cannot show %s: %s", nats_url(self._bucket, name), exc)
            return f"[natsobj] this log cannot be shown: {exc}\n".encode(), offset
        return None, offset

    def display_path_for_type(self, log_key: Sequence[str], io_type: ComputeIOType) -> str:
        """The local file while the capture runs (or after an upload that failed), else the
        stored log's ``nats://`` URL."""
        if self.has_local_file(log_key, io_type):
            return self.local_manager.get_captured_local_path(log_key, IO_TYPE_EXTENSION[io_type])
        return nats_url(self._bucket, self.object_name(log_key, io_type))

    def download_url_for_type(self, log_key: Sequence[str], io_type: ComputeIOType) -> str | None:
        """The stored log's ``nats://`` URL (``natsobj cat`` fetches it); none while it is
        only local."""
        if self.has_local_file(log_key, io_type):
            return None
        return nats_url(self._bucket, self.object_name(log_key, io_type))

    def delete_logs(
        self, log_key: Sequence[str] | None = None, prefix: Sequence[str] | None = None
    ) -> None:
        if log_key is None and prefix is None:
            raise ValueError("delete_logs needs a log_key or a prefix")
        self.local_manager.delete_logs(log_key=log_key, prefix=prefix)
        try:
            store = self._store()
        except BucketNotFound:
            return
        if log_key:
            for io_type in ComputeIOType:
                for partial in (False, True):
                    self._delete_quietly(store, self.object_name(log_key, io_type, partial))
            return
        # the trailing separator keeps ["a"] from matching the logs of ["apple"]
        directory = naming.join(self._prefix, ["storage", *(prefix or [])]) + SEP
        for info in store.list(prefix=directory):
            self._delete_quietly(store, info.name)

    def get_log_keys_for_log_key_prefix(
        self, log_key_prefix: Sequence[str], io_type: ComputeIOType
    ) -> Sequence[list[str]]:
        """The log keys stored directly under ``log_key_prefix`` (partial copies aside)."""
        directory = naming.join(self._prefix, ["storage", *log_key_prefix]) + SEP
        extension = "." + IO_TYPE_EXTENSION[io_type]
        try:
            infos = self._store().list(prefix=directory)
        except BucketNotFound:
            return []
        keys = []
        for info in infos:
            filename = info.name[len(directory) :]
            if SEP not in filename and filename.endswith(extension):
                keys.append([*log_key_prefix, unquote(filename[: -len(extension)])])
        return keys

    @staticmethod
    def _delete_quietly(store: natsobj.ObjectStore, name: str) -> None:
        with suppress(ObjectNotFound):
            store.delete(name)

    def on_subscribe(self, subscription: CapturedLogSubscription) -> None:
        self._subscription_manager.add_subscription(subscription)

    def on_unsubscribe(self, subscription: CapturedLogSubscription) -> None:
        self._subscription_manager.remove_subscription(subscription)

    def dispose(self) -> None:
        self._subscription_manager.dispose()
        self._local_manager.dispose()
