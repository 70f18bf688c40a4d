"""Task logs in a NATS object store: the twin of the Amazon provider's ``S3RemoteLogIO``.

Airflow 3 calls ``upload`` from the task supervisor once the task has reported its state, and
``stream`` (or ``read``) from the API server's task handler when someone opens the log. Objects
are named as S3 names its keys: the log file's path relative to ``[logging] base_log_folder``,
under the prefix of ``[logging] remote_base_log_folder = nats://bucket/prefix``.

A log upload never changes a task's outcome: when the store is missing or unreachable the
upload logs a warning and leaves the local file where it is, so the worker still serves it.
Logs are not task data, so nothing here reports lineage (the hook's ``put`` would).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_natsobj.log.lines import log_lines
from natsobj.aio.put_modes import CREATE, PutMode
from natsobj.errors import NatsObjError, ObjectNotFound
from natsobj.names import check_bucket
from natsobj.paths import SEP, is_nats_url, nats_url, parse_nats_url

if TYPE_CHECKING:
    from airflow_natsobj.hooks.object_store import NatsObjectStoreHook
    from natsobj.sync import ObjectStore

log = logging.getLogger(__name__)

# The URL scheme of ``remote_base_log_folder`` this IO claims (provider info ``remote-logging``).
SCHEME = "nats"
# How much of a local log file is read at a time when it is appended to an earlier upload.
_BLOCK = 1024 * 1024


def _reason(exc: BaseException) -> str:
    """An error as a log line says it: natsobj errors in Airflow's words."""
    if isinstance(exc, NatsObjError):
        from airflow_natsobj.wording import airflow_words

        return exc.said_in(airflow_words)
    return f"{type(exc).__name__}: {exc}"


@dataclass
class NatsRemoteLogIO:
    """Airflow's ``RemoteLogStreamIO`` for ``nats://bucket/prefix``.

    ``delete_local_copy``: remove the local file once it is stored (``[logging]
    delete_local_logs``); otherwise it is emptied, as S3's IO does, so that a task resumed after
    deferral appends only its new lines to the stored log. ``conn_id``: the natsobj connection
    (``[logging] remote_log_conn_id``; None: ``nats_default``).
    """

    remote_base: str
    base_log_folder: Path
    delete_local_copy: bool = False
    conn_id: str | None = None
    bucket: str = field(init=False)
    prefix: str = field(init=False)

    # No structlog processors: logs are shipped whole when the task ends.
    processors: ClassVar[tuple[Any, ...]] = ()

    def __post_init__(self) -> None:
        if not is_nats_url(self.remote_base):
            raise ValueError(
                f"[logging] remote_base_log_folder {self.remote_base!r} is not a nats:// URL; "
                "give nats://bucket or nats://bucket/prefix"
            )
        target = parse_nats_url(self.remote_base)
        self.bucket = check_bucket(target.bucket)
        self.prefix = target.key.strip(SEP)
        self.base_log_folder = Path(self.base_log_folder)

    @classmethod
    def from_config(cls) -> NatsRemoteLogIO:
        """The IO ``[logging]`` describes; Airflow calls this for a ``nats://`` folder."""
        from airflow_natsobj.configuration import conf

        return cls(
            remote_base=conf.get_mandatory_value("logging", "remote_base_log_folder"),
            base_log_folder=Path(
                os.path.expanduser(conf.get_mandatory_value("logging", "base_log_folder"))
            ),
            delete_local_copy=conf.getboolean("logging", "delete_local_logs", fallback=False),
            conn_id=conf.get("logging", "remote_log_conn_id", fallback=None) or None,
        )

    @cached_property
    def hook(self) -> NatsObjectStoreHook:
        from airflow_natsobj.hooks.object_store import NatsObjectStoreHook

        return NatsObjectStoreHook(self.conn_id) if self.conn_id else NatsObjectStoreHook()

    def object_name(self, relative_path: str) -> str:
        """The object a log is stored as: its path under ``base_log_folder``, under the
        prefix."""
        return SEP.join(part for part in (self.prefix, relative_path.lstrip(SEP)) if part)

    # -- upload -----------------------------------------------------------------------------------

    def upload(self, path: os.PathLike[str] | str, ti: Any = None) -> None:
        """Store the log file at ``path`` (absolute, or relative to ``base_log_folder``).

        The file is streamed (the core's put reads it chunk by chunk) and the object replaced
        atomically; when an earlier upload of the same attempt exists (a task resumed after
        deferral), the new lines are appended to it, streamed too."""
        local = self.base_log_folder / path  # an absolute path replaces the folder
        base = self.base_log_folder.resolve()
        if not local.resolve().is_relative_to(base):
            log.warning("Skipping the log upload: %s is outside base_log_folder %s", local, base)
            return
        relative = local.resolve().relative_to(base)
        if not local.is_file():
            return
        name = self.object_name(relative.as_posix())
        try:
            self._put(self._store(), name, local)
        except Exception as exc:
            # The task's state is already reported; nothing a log upload raises may change it.
            log.warning(
                "Could not upload the task log to %s; it stays at %s: %s",
                nats_url(self.bucket, name),
                local,
                _reason(exc),
            )
            return
        if self.delete_local_copy:
            local.unlink(missing_ok=True)
        else:
            local.write_bytes(b"")

    def _put(self, store: ObjectStore, name: str, local: Path) -> None:
        try:
            earlier = store.get_info(name)
        except ObjectNotFound:
            store.put(name, local, mode=CREATE)
            return
        if local.stat().st_size == 0:
            return  # nothing new since the last upload
        store.put(
            name,
            _appended(store, name, local),
            mode=PutMode.replacing(earlier),
        )

    # -- read -------------------------------------------------------------------------------------

    def _find(self, relative_path: str) -> tuple[list[str], list[str]]:
        """The stored logs of one attempt (the attempt's object and any whose name continues
        it, as S3 lists keys by prefix) as sources to show and names to read."""
        prefix = self.object_name(relative_path)
        try:
            names = [info.name for info in self._store().list(prefix=prefix)]
        except Exception as exc:
            # The log page falls back to the worker's copy rather than failing.
            log.warning("Could not list task logs under %s: %s", self.remote_base, _reason(exc))
            return [f"Could not list {nats_url(self.bucket, prefix)}: {_reason(exc)}"], []
        return [nats_url(self.bucket, name) for name in names], names

    def _store(self) -> ObjectStore:
        return self.hook.get_store(self.bucket)

    def read(self, relative_path: str, ti: Any) -> tuple[list[str], list[str] | None]:
        """Each stored log of the attempt whole (Airflow's older interface; ``stream`` is the
        one Airflow 3 uses)."""
        sources, names = self._find(relative_path)
        if not names:
            return sources, None
        return sources, ["\n".join(self._lines(name)) for name in names]

    def stream(self, relative_path: str, ti: Any) -> tuple[list[str], list[Iterator[str]]]:
        """Each stored log of the attempt as a generator of lines, read chunk by chunk when
        Airflow's reader pulls them: memory holds a chunk and a line, not the log."""
        sources, names = self._find(relative_path)
        return sources, [self._lines(name) for name in names]

    def _lines(self, name: str) -> Iterator[str]:
        try:
            with self._store().get(name) as reader:
                yield from log_lines(reader)
        except Exception as exc:
            yield f"Could not read the log {nats_url(self.bucket, name)}: {_reason(exc)}"


def _appended(store: ObjectStore, name: str, local: Path) -> Iterator[bytes]:
    """The stored log, then the local file's new lines, as the put's source (the core
    advances it in a worker thread, so the blocking reads here do not stall its loop)."""
    last = b"\n"
    with store.get(name) as reader:
        for chunk in reader:
            if chunk:
                last = chunk[-1:]
            yield chunk
    if last != b"\n":
        yield b"\n"
    with local.open("rb") as handle:
        while block := handle.read(_BLOCK):
            yield block
