"""The hook every natsobj operator, sensor, trigger and the ``nats://`` filesystem go through."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any, Unpack

from airflow.sdk import BaseHook

import natsobj
from airflow_natsobj.assets import asset_uri
from airflow_natsobj.connection import settings_from_connection
from natsobj.aio.copy import copy_object
from natsobj.aio.put_modes import OVERWRITE, PutMode, from_keywords
from natsobj.aio.sources import PutSource
from natsobj.errors import BucketNotFound, ObjectNotFound, UnsafeLocalPath
from natsobj.local.mirror import Layout, lay_out, local_files, objects_below, up_to_date
from natsobj.model import ObjectInfo
from natsobj.paths import as_dir, common_prefix
from natsobj.settings import ConnectionSettings
from natsobj.shared import SharedClient, shared_client
from natsobj.store_config import StoreConfig, StoreSettings
from natsobj.sync import ObjectReader, ObjectStore, run
from natsobj.versioning import LockMode, ObjectVersion, Versioning, VersionLock


async def _probe(settings: ConnectionSettings) -> list[str]:
    client = await natsobj.aio.connect(settings)
    try:
        return await client.store_names()
    finally:
        await client.close()


def _refuse_left_out(layout: Layout, bucket: str, root: Path) -> None:
    """UnsafeLocalPath for the first object the layout leaves out: the hook mirrors all of
    the prefix or nothing, where the CLI skips such names and says so."""
    if layout.unmapped:
        info, reason = layout.unmapped[0]
        raise UnsafeLocalPath(
            f"not written below {root}: the name has no local path there ({reason})",
            bucket=bucket,
            name=info.name,
        )
    if layout.collisions:
        collision = layout.collisions[0]
        others = [i.name for i in collision.here[1:]]
        if collision.inside is not None:
            others.append(collision.inside.name)
        raise UnsafeLocalPath(
            f"not written below {root}: its local path {collision.relative!r} is also that of"
            f" object(s) {others}",
            bucket=bucket,
            name=collision.here[0].name,
            hint="Fetch each of them alone to a path you name (get_file(name, path)).",
        )


def _delete_stale(root: Path, kept: set[str]) -> None:
    """Remove the files below ``root`` whose relative path is not in ``kept``, then the
    directories left empty (deepest first), as S3Hook's ``sync_to_local_dir`` does."""
    for path, relative in local_files(root):
        if relative not in kept:
            path.unlink()
    for directory, _, _ in os.walk(root, topdown=False):
        if Path(directory) != root and not os.listdir(directory):
            os.rmdir(directory)


class NatsObjectStoreHook(BaseHook):
    """Blocking access to NATS object stores for tasks, and ``aclient()`` for triggers.

    Reads and writes report the ``nats://bucket/name`` assets they touch to Airflow's hook
    lineage collector (and so to OpenLineage, when that provider is installed).
    """

    conn_name_attr = "nats_conn_id"
    default_conn_name = "nats_default"
    conn_type = "nats"
    hook_name = "NATS Object Store"

    def __init__(self, nats_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.nats_conn_id = nats_conn_id
        self._client: SharedClient | None = None

    # -- connection -------------------------------------------------------------------------------

    @cached_property
    def settings(self) -> ConnectionSettings:
        return settings_from_connection(self.get_connection(self.nats_conn_id))

    async def asettings(self) -> ConnectionSettings:
        """Like ``settings`` but safe inside the triggerer's event loop."""
        try:
            conn = await self.aget_connection(self.nats_conn_id)
        except ImportError:
            # Airflow 3.1 outside a task or triggerer (a trigger run by a test or a script):
            # its async lookup imports the supervisor's comms before trying the secrets
            # backends, and there are none; the blocking lookup tries the backends first.
            conn = await asyncio.to_thread(self.get_connection, self.nats_conn_id)
        decode = getattr(conn, "aextra_dejson", None)  # the metastore's Connection has none
        return settings_from_connection(conn, await decode() if decode else None)

    def get_conn(self) -> SharedClient:
        """The blocking client on the process's shared connection for this Airflow connection
        (``natsobj.shared``): every hook, operator and ``nats://`` path of a worker process
        uses one connection and one loop thread."""
        if self._client is None:
            self._client = shared_client(self.settings)
        return self._client

    def close(self) -> None:
        """Let go of the client; the shared connection stays open for the rest of the process."""
        self._client = None

    def __enter__(self) -> NatsObjectStoreHook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @asynccontextmanager
    async def aclient(self) -> AsyncIterator[natsobj.aio.Client]:
        """A fresh async client on the running loop (triggers must not share loops)."""
        client = await natsobj.aio.connect(await self.asettings())
        try:
            yield client
        finally:
            await client.close()

    def test_connection(self) -> tuple[bool, str]:
        """Connect once and list the stores: what the UI's Test button reports."""
        settings: ConnectionSettings | None = None
        try:
            settings = self.settings
            names = run(_probe(settings))
        except Exception as exc:
            message = f"{type(exc).__name__}: {exc}"
            return False, settings.redact(message) if settings else message
        return (
            True,
            f"Connected to {settings.redacted_url()}; {len(names)} object store(s) visible.",
        )

    # -- stores -----------------------------------------------------------------------------------

    def get_store(self, bucket: str) -> ObjectStore:
        """The blocking ObjectStore of an existing bucket (BucketNotFound otherwise)."""
        return self.get_conn().cached_store(bucket)

    def create_store(
        self, bucket: str | StoreConfig, **settings: Unpack[StoreSettings]
    ) -> ObjectStore:
        return self.get_conn().create_store(bucket, **settings)

    def ensure_store(
        self, bucket: str | StoreConfig, **settings: Unpack[StoreSettings]
    ) -> ObjectStore:
        return self.get_conn().ensure_store(bucket, **settings)

    def update_store(
        self, bucket: str | StoreConfig, **changes: Unpack[StoreSettings]
    ) -> ObjectStore:
        return self.get_conn().update_store(bucket, **changes)

    def delete_store(self, bucket: str) -> None:
        self.get_conn().delete_store(bucket)

    def store_names(self) -> list[str]:
        return self.get_conn().store_names()

    def check_for_bucket(self, bucket_name: str) -> bool:
        """S3Hook's ``check_for_bucket``: whether the bucket exists now (its stream is asked,
        not this process's cached binding)."""
        try:
            self.get_conn().store(bucket_name)
        except BucketNotFound:
            return False
        return True

    # -- objects (with lineage) -------------------------------------------------------------------

    def put(
        self,
        bucket: str,
        name: str,
        source: PutSource,
        *,
        description: str | None = None,
        headers: dict[str, list[str] | str] | None = None,
        metadata: dict[str, str] | None = None,
        chunk_size: int | None = None,
        mode: PutMode = OVERWRITE,
        ttl: float | str | timedelta | None = None,
        expected_sequence: int | None = None,
        if_absent: bool = False,
    ) -> ObjectInfo:
        """``ObjectStore.put`` on ``bucket``, reported to lineage as an output; ``ttl``: the
        server deletes the object that long after the put (None: the bucket's rules decide);
        ``mode``: ``CREATE`` creates only (ObjectExists when an object is there),
        ``PutMode.update(n)`` swaps the version at meta sequence ``n`` (natsobj.PutMode;
        ``expected_sequence=`` and ``if_absent=`` are its deprecated spellings, one release)."""
        info = self.get_store(bucket).put(
            name,
            source,
            description=description,
            headers=headers,
            metadata=metadata,
            chunk_size=chunk_size,
            mode=from_keywords(mode, expected_sequence, if_absent),
            ttl=ttl,
        )
        self._lineage_output(bucket, name)
        return info

    def get_bytes(
        self,
        bucket: str,
        name: str,
        *,
        max_size: int | None = None,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        version_id: str | None = None,
    ) -> bytes:
        """``min_sequence``: the writer's ``sequence`` (from its XCom), which lets any replica
        answer instead of the stream leader. ``allow_missing_digest`` (here and on the other
        reads) as for ``ObjectStore.get``: a record without a digest is refused unless set. A
        bool, as the Python face takes it: the operators parse their templated words once.
        ``version_id`` (here and on the other reads, ``get_info`` and ``delete``): that version
        of the object (``list_versions`` shows them; the id is the core's ``version=``), not
        the current one."""
        data = self.get_store(bucket).get_bytes(
            name,
            max_size=max_size,
            min_sequence=min_sequence,
            allow_missing_digest=allow_missing_digest,
            version=version_id,
        )
        self._lineage_input(bucket, name)
        return data

    def get_file(
        self,
        bucket: str,
        name: str,
        path: str | Path,
        *,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        version_id: str | None = None,
    ) -> ObjectInfo:
        info = self.get_store(bucket).get_file(
            name,
            path,
            min_sequence=min_sequence,
            allow_missing_digest=allow_missing_digest,
            version=version_id,
        )
        self._lineage_input(bucket, name)
        return info

    @contextmanager
    def open_reader(
        self,
        bucket: str,
        name: str,
        *,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        version_id: str | None = None,
    ) -> Iterator[ObjectReader]:
        """Stream an object: iterate the reader for chunks; ``reader.info`` is its ObjectInfo."""
        with self.get_store(bucket).get(
            name,
            min_sequence=min_sequence,
            allow_missing_digest=allow_missing_digest,
            version=version_id,
        ) as reader:
            yield reader
        self._lineage_input(bucket, name)

    def get_info(self, bucket: str, name: str, *, version_id: str | None = None) -> ObjectInfo:
        """S3Hook's ``head_object``: the record of the object, or of its version
        ``version_id`` (a delete marker has none to show: ObjectNotFound says it is one)."""
        return self.get_store(bucket).get_info(name, version=version_id)

    def check_for_key(self, key: str, bucket_name: str) -> bool:
        """S3Hook's ``check_for_key`` (its argument order and names): whether object ``key``
        exists (a link counts; a deleted object does not). As on S3, a missing bucket has no
        keys: False, not an error."""
        try:
            self.get_store(bucket_name).get_info(key)
        except (ObjectNotFound, BucketNotFound):
            return False
        return True

    def check_for_prefix(self, prefix: str, delimiter: str, bucket_name: str) -> bool:
        """S3Hook's ``check_for_prefix``: whether some object's name starts with ``prefix``
        followed by ``delimiter`` (added when ``prefix`` does not end with it), i.e. the
        "directory" holds something. The first match ends the listing."""
        if not prefix.endswith(delimiter):
            prefix += delimiter
        with suppress(BucketNotFound):
            for _ in self.get_store(bucket_name).iter_list(prefix=prefix):
                return True
        return False

    def list_prefixes(
        self,
        bucket: str,
        *,
        prefix: str | None = None,
        delimiter: str,
        glob: str | None = None,
    ) -> list[str]:
        """S3's ``list_prefixes``: the distinct common prefixes (``natsobj.paths.common_prefix``)
        of the names under ``prefix`` (matching ``glob``, when given), sorted; a prefix is
        held once however many objects it has."""
        if not delimiter:
            return []
        prefixes = {
            common_prefix(info.name, prefix or "", delimiter)
            for info in self.get_store(bucket).iter_list(prefix=prefix, glob=glob)
        }
        return sorted(found for found in prefixes if found is not None)

    def list(
        self,
        bucket: str,
        *,
        prefix: str | None = None,
        glob: str | None = None,
        delimiter: str | None = None,
    ) -> list[ObjectInfo]:
        """The objects whose names start with ``prefix`` and match the path-aware ``glob``
        (``natsobj.matching``: ``*`` stays inside one ``/`` segment, ``**`` crosses them),
        sorted by name, through the core's listing (the name index, then only the matching
        records). With a ``delimiter``, as S3's ``list_keys``: a name that has the delimiter
        after the prefix is left out (it is under one of ``list_prefixes``)."""
        store = self.get_store(bucket)
        if not delimiter:
            return store.list(prefix=prefix, glob=glob)
        found = [
            info
            for info in store.iter_list(prefix=prefix, glob=glob)
            if common_prefix(info.name, prefix or "", delimiter) is None
        ]
        return sorted(found, key=lambda info: info.name)

    def copy(
        self,
        source_bucket: str,
        source_name: str,
        dest_bucket: str,
        dest_name: str,
        *,
        allow_missing_digest: bool = False,
        source_version_id: str | None = None,
    ) -> ObjectInfo:
        """The core's ``copy_object`` (``natsobj.aio.copy``): the object (following a link) to
        ``dest_name`` in ``dest_bucket``, any earlier object there replaced as S3's copy does,
        keeping description, headers, metadata and chunk size. It streams chunk by chunk
        through this connection (NATS has no server-side copy), checked against the source's
        digest: the worker holds a few chunks at a time and writes nothing to disk. Reported
        to lineage as an input and an output. ``source_version_id`` (S3Hook's
        ``copy_object`` name): copy that version of the source, not its current one."""
        source = self.get_store(source_bucket)
        target = self.get_store(dest_bucket)
        info = run(
            copy_object(
                source.aio,
                source_name,
                target.aio,
                dest_name,
                allow_missing_digest=allow_missing_digest,
                version=source_version_id,
            )
        )
        self._lineage_input(source_bucket, source_name)
        self._lineage_output(dest_bucket, dest_name)
        return info

    def delete(
        self,
        bucket: str,
        name: str,
        *,
        version_id: str | None = None,
        bypass_governance: bool = False,
    ) -> ObjectInfo:
        """Delete the object (in a versioned bucket: add a delete marker, its versions stay),
        or with ``version_id`` remove that version for good. A version under a lock is
        ObjectLocked; ``bypass_governance`` (S3's ``BypassGovernanceRetention``) lets a
        governance-mode retention give way. Returns the record written or removed."""
        return self.get_store(bucket).delete(
            name, version=version_id, bypass_governance=bypass_governance
        )

    # -- versions and locks (docs/versioning.md) --------------------------------------------------

    def versioning(self, bucket: str) -> Versioning:
        """S3's GetBucketVersioning: ``Versioning.UNVERSIONED`` (never versioned), ``ENABLED``
        or ``SUSPENDED``."""
        return self.get_store(bucket).versioning()

    def set_versioning(self, bucket: str, state: Versioning | str) -> Versioning:
        """S3's PutBucketVersioning: ``"Enabled"`` or ``"Suspended"`` (any case); a bucket once
        versioned is never unversioned again."""
        return self.get_store(bucket).set_versioning(state)

    def list_versions(
        self, bucket: str, *, prefix: str | None = None, glob: str | None = None
    ) -> list[ObjectVersion]:
        """S3's ListObjectVersions: every version of the names under ``prefix`` matching
        ``glob``, by name and newest first, delete markers and lost versions marked."""
        return self.get_store(bucket).versions(prefix=prefix, glob=glob)

    def restore(
        self, bucket: str, name: str, version_id: str, *, allow_missing_digest: bool = False
    ) -> ObjectInfo:
        """Make version ``version_id`` of ``name`` its current version again: that version
        copied over the current one (``copy``), which the bucket then keeps as a version.
        A delete marker has no bytes to restore: remove it (``delete(version_id=)``) to
        undelete."""
        return self.copy(
            bucket,
            name,
            bucket,
            name,
            allow_missing_digest=allow_missing_digest,
            source_version_id=version_id,
        )

    def lock(
        self,
        bucket: str,
        name: str,
        *,
        version_id: str | None = None,
        mode: LockMode | str | None = None,
        retain_until: datetime | None = None,
        legal_hold: bool | None = None,
        clear_retention: bool = False,
        bypass_governance: bool = False,
    ) -> VersionLock:
        """S3's PutObjectRetention and PutObjectLegalHold on version ``version_id`` (default:
        the current one): ``ObjectStore.lock``, whose rules (a compliance retention is never
        shortened; a governance one only with ``bypass_governance``) hold here."""
        return self.get_store(bucket).lock(
            name,
            version=version_id,
            mode=mode,
            retain_until=retain_until,
            legal_hold=legal_hold,
            clear_retention=clear_retention,
            bypass_governance=bypass_governance,
        )

    def lock_info(self, bucket: str, name: str, *, version_id: str | None = None) -> VersionLock:
        """S3's GetObjectRetention and GetObjectLegalHold of a version (default: the current)."""
        return self.get_store(bucket).lock_info(name, version=version_id)

    def sync_to_local_dir(
        self,
        bucket_name: str,
        local_dir: str | Path,
        prefix: str = "",
        delete_stale: bool = True,
        *,
        allow_missing_digest: bool = False,
    ) -> list[str]:
        """S3Hook's ``sync_to_local_dir``: make ``local_dir`` hold the objects below the
        directory ``prefix`` (relative to it), fetching only those whose file differs, as
        ``natsobj sync`` decides (``natsobj.local.mirror``: size, then the SHA-256 the store
        recorded, where S3Hook compares modification times). With ``delete_stale``, files no
        object maps to are removed, and the directories that leaves empty. Links are left
        alone. A name with no place below ``local_dir`` (a ``..``; names that share a local
        path, or one whose file another needs as a directory: ``natsobj.local.mirror``'s
        layout) raises UnsafeLocalPath before anything is written, as does a symlink leading
        out when its object is fetched. Returns the names fetched; each is reported to
        lineage as an input."""
        root = Path(local_dir)
        store = self.get_store(bucket_name)
        below = objects_below(store.iter_list(prefix=as_dir(prefix) or None), prefix)
        layout = lay_out(below.values(), prefix)
        _refuse_left_out(layout, bucket_name, root)
        root.mkdir(parents=True, exist_ok=True)
        fetched: list[str] = []
        for relative, info in sorted(layout.targets.items()):
            target = layout.path(root, relative)
            if up_to_date(target, info):
                continue
            store.get_file(
                info.name, target, within=root, allow_missing_digest=allow_missing_digest
            )
            self._lineage_input(bucket_name, info.name)
            fetched.append(info.name)
        if delete_stale:
            _delete_stale(root, layout.claimed)
        return fetched

    def _lineage_input(self, bucket: str, name: str) -> None:
        from airflow_natsobj.lineage import get_hook_lineage_collector

        get_hook_lineage_collector().add_input_asset(context=self, uri=asset_uri(bucket, name))

    def _lineage_output(self, bucket: str, name: str) -> None:
        from airflow_natsobj.lineage import get_hook_lineage_collector

        get_hook_lineage_collector().add_output_asset(context=self, uri=asset_uri(bucket, name))
