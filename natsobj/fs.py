"""``nats://bucket/path`` as an fsspec filesystem, so pandas, pyarrow and Airflow's
ObjectStoragePath read and write NATS object stores.

Buckets are top-level directories; inside a bucket, ``/`` in object names makes prefix
"directories" that exist while an object lives under them (as in S3). Connection options are
the ``ConnectionSettings`` fields (``servers``, ``user``, ``token``, ...) or ``url``; with none
the ``NATS_*`` environment is used (no ``NATS_URL``: the embedded server already running here,
never a new one). Any other option is refused, naming the known ones.
``allow_missing_digest=True`` also reads objects whose record has no digest, and
``follow_links=True`` reads through ADR-20 links into other buckets (each refused by default,
as by ``ObjectStore.get``). ``version_aware=True`` reaches object versions as s3fs's option of
that name does (``natsobj.fs_versions``, docs/versioning.md).

Blocking use runs on the facade's one loop thread with the process's shared connection
(``natsobj.shared``), so pandas, Airflow and Dagster reading ``nats://`` paths add no loop and
no connection; driven from an application's own loop (``asynchronous=True``) it connects there.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from collections.abc import Iterable, Iterator
from datetime import datetime
from glob import has_magic
from pathlib import Path
from typing import Any

from fsspec.asyn import AsyncFileSystem, sync, sync_wrapper
from fsspec.caching import ReadAheadCache
from fsspec.callbacks import DEFAULT_CALLBACK, Callback
from fsspec.config import conf
from fsspec.implementations.local import LocalFileSystem, make_path_posix, trailing_sep
from fsspec.spec import AbstractBufferedFile
from fsspec.utils import other_paths

from natsobj import aio
from natsobj.aio.copy import copy_object
from natsobj.aio.put_modes import CREATE, OVERWRITE, PutMode, create_sequence
from natsobj.errors import (
    BucketNotFound,
    NatsObjError,
    ObjectChanged,
    ObjectExists,
    ObjectNotFound,
    UnsafeLocalPath,
)
from natsobj.fs_versions import (
    VERSION_OPTIONS,
    VersionedPath,
    entry_of_version,
    list_versions_option,
    split_version,
    version_aware_option,
    version_info_entry,
)
from natsobj.local.files import local_relative
from natsobj.model import ObjectInfo
from natsobj.operation_options import Face, ReadOptions, for_face, reading
from natsobj.paths import SCHEME, as_dir, listing_prefix, parse_nats_url, split_level, under
from natsobj.s3.presign import gateway_access, presigned_url
from natsobj.settings import OPTION_FIELDS, URL_FIELD, ConnectionSettings, check_options
from natsobj.shared import on_shared_loop, shared_aio_client
from natsobj.store_config import STORE_SETTINGS
from natsobj.sync import shared_loop

# Filesystem options that set a ConnectionSettings field: the field's name or an alias, as in
# a NATS URL's query and Spark's options (natsobj.settings' table).
SETTINGS_OPTIONS = {URL_FIELD: URL_FIELD, **OPTION_FIELDS}
GET_BATCH = 128  # files get() fetches at once unless told: fsspec's default for local files
# What fsspec's own base classes take (AsyncFileSystem, and the listings cache every
# filesystem is documented to accept); any other option is refused, naming the known ones.
FSSPEC_OPTIONS = ("batch_size", "use_listings_cache", "listings_expiry_time", "max_paths")
GET_OPTIONS = tuple(for_face(Face.FSSPEC, "get"))  # allow_missing_digest, follow_links
KNOWN_OPTIONS = frozenset(
    (
        "url",
        "asynchronous",
        "loop",
        *GET_OPTIONS,
        *VERSION_OPTIONS,
        *SETTINGS_OPTIONS,
        *FSSPEC_OPTIONS,
    )
)
_END = object()


def strip_protocol(path: Any) -> str:
    """``bucket/key`` of a ``nats://`` URL or of a path already without the scheme: the path
    form every call of this filesystem takes and returns (fsspec's ``_strip_protocol``), and
    the one pyarrow and polars are handed by ``natsobj.arrow`` and ``natsobj.polars``."""
    text = str(path)
    if text.startswith(SCHEME):
        return parse_nats_url(text).path  # drops an Airflow "conn_id@"
    return text.strip("/")


def _split(path: str) -> tuple[str, str]:
    bucket, _, key = path.strip("/").partition("/")
    return bucket, key


def _file_entry(info: ObjectInfo, versioned: bool = False) -> dict[str, Any]:
    """An object's entry; a version-aware filesystem's carries s3fs's ``VersionId`` too."""
    return {
        **({"VersionId": info.nuid} if versioned else {}),
        "name": f"{info.bucket}/{info.name}",
        "type": "file",
        "size": info.size,
        "mtime": info.mtime,
        "digest": info.digest,
        "nuid": info.nuid,
        "sequence": info.sequence,
        "metadata": info.metadata,
    }


def _dir_entry(name: str) -> dict[str, Any]:
    return {"name": name.rstrip("/"), "type": "directory", "size": 0}


def _below(root: str, path: str) -> str | None:
    """``root`` when ``path`` was made below it (None: the caller named ``path`` itself)."""
    return None if path.rstrip("/") == root else root


def _not_found(path: str, exc: Exception | None = None) -> FileNotFoundError:
    error = FileNotFoundError(2, f"no such object or prefix: nats://{path}", path)
    if exc is not None:
        error.__cause__ = exc
    return error


def _missing(at: VersionedPath, exc: ObjectNotFound) -> FileNotFoundError:
    """``_not_found`` of a call's path; one naming a version says what of it is missing (no
    such version, a delete marker, lost to another client's purge)."""
    if at.version is None:
        return _not_found(at.path, exc)
    error = FileNotFoundError(
        errno.ENOENT,
        f"bucket {at.bucket!r}, object {at.key!r}, version {at.version}: {exc.message}"
        f" (nats://{at.shown})",
        at.shown,
    )
    error.__cause__ = exc
    return error


def _no_bucket(bucket: str, exc: BucketNotFound) -> FileNotFoundError:
    """A path whose bucket is missing, said in this face's words: fsspec callers (pandas'
    ``to_parquet``, ``open``) create a bucket with the filesystem's ``mkdir``, not with the
    core's ``create_store`` that ``BucketNotFound`` names."""
    error = FileNotFoundError(
        errno.ENOENT,
        f"bucket {bucket!r} does not exist (nats://{bucket}): create it with "
        f'fsspec.filesystem("nats").mkdir("{bucket}") or `natsobj store create {bucket}`',
        bucket,
    )
    error.__cause__ = exc
    return error


def _put_mode(mode: str) -> PutMode:
    """The put of a write in fsspec's ``mode``: ``"create"`` only creates (S3's
    ``If-None-Match: *``), ``"overwrite"`` overwrites; any other mode is refused, not taken
    as an overwrite."""
    if mode not in ("overwrite", "create"):
        raise ValueError(f"write mode must be 'overwrite' or 'create', not {mode!r}")
    return CREATE if mode == "create" else OVERWRITE


@contextlib.contextmanager
def _creating(path: str) -> Iterator[None]:
    """A create-only put refused, as fsspec's FileExistsError: the object was there
    (ObjectExists), or another writer created the name first (ObjectChanged from the
    compare-and-swap put), so racing creators have exactly one winner."""
    try:
        yield
    except (ObjectExists, ObjectChanged) as exc:
        raise FileExistsError(
            errno.EEXIST, f"object exists: nats://{path} ({exc.message})", path
        ) from exc


async def _has_objects(store: aio.ObjectStore, prefix: str) -> bool:
    """Whether anything lives below ``prefix``: stops at the first object found."""
    async with contextlib.aclosing(store.iter_list(prefix=prefix)) as listing:
        async for _ in listing:
            return True
    return False


class NatsObjectFileSystem(AsyncFileSystem):
    protocol = "nats"
    root_marker = ""
    async_impl = True

    def __init__(
        self,
        url: str | None = None,
        *,
        asynchronous: bool = False,
        loop: Any = None,
        **options: Any,
    ) -> None:
        check_options(options, KNOWN_OPTIONS, "option of the nats:// filesystem")
        # storage options often arrive as text ("false"): the table's parser reads them
        given = {name: options.pop(name) for name in GET_OPTIONS if name in options}
        self.reading: ReadOptions = reading(Face.FSSPEC, given)
        self.version_aware: bool = version_aware_option(options)
        settings_options = {
            SETTINGS_OPTIONS[k]: options.pop(k) for k in list(options) if k in SETTINGS_OPTIONS
        }
        if loop is None and not asynchronous:
            loop = shared_loop()  # no second loop thread beside the blocking facade's
        super().__init__(asynchronous=asynchronous, loop=loop, **options)
        self.settings = ConnectionSettings.coerce(url, **settings_options)
        self._client: aio.Client | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._stores: dict[str, aio.ObjectStore] = {}

    @classmethod
    def _strip_protocol(cls, path: Any) -> str:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]  # type: ignore[return-value]
        return strip_protocol(path)

    def unstrip_protocol(self, name: str) -> str:
        return f"nats://{name}"

    @staticmethod
    def _get_kwargs_from_urls(urlpath: str) -> dict[str, Any]:
        """A URL naming a version (``?versionId=``) opens a version-aware filesystem, as
        s3fs's does, so ``fsspec.open("nats://b/k?versionId=ID")`` reads that version."""
        return {"version_aware": True} if VersionedPath.QUERY in str(urlpath) else {}

    def _versioned(self, path: str, version_id: str | None = None) -> VersionedPath:
        """``bucket``, ``key`` and the version a call names (``split_version``)."""
        return split_version(self._strip_protocol(path), version_id, aware=self.version_aware)

    # -- connection -------------------------------------------------------------------------------

    async def _get_client(self) -> aio.Client:
        """The process's shared connection on the facade's loop; a connection of its own when
        driven from another loop (``asynchronous=True`` inside an application's loop)."""
        running = asyncio.get_running_loop()
        if on_shared_loop():
            client = await shared_aio_client(self.settings)
            if client is not self._client:
                self._client, self._client_loop, self._stores = client, running, {}
        elif self._client is None or self._client_loop is not running:
            self._client = await aio.connect(self.settings)
            self._client_loop = running
            self._stores = {}
        return self._client

    async def _store(self, bucket: str) -> aio.ObjectStore:
        client = await self._get_client()
        store = self._stores.get(bucket)
        if store is None:
            try:
                store = await client.store(bucket)
            except BucketNotFound as exc:
                raise _no_bucket(bucket, exc) from exc
            self._stores[bucket] = store
        return store

    async def _close(self) -> None:
        if self._client is not None and not on_shared_loop():  # the shared one stays open
            with contextlib.suppress(Exception):
                await self._client.close()
        self._client = None
        self._stores = {}

    close = sync_wrapper(_close)

    # -- metadata ---------------------------------------------------------------------------------

    async def _info(
        self, path: str, version_id: str | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        at = self._versioned(path, version_id)
        path, bucket, key = at.path, at.bucket, at.key
        if not bucket:
            return _dir_entry("")
        store = await self._store(bucket)
        if not key:
            return _dir_entry(bucket)
        try:
            return _file_entry(await store.get_info(key, version=at.version), self.version_aware)
        except ObjectNotFound as exc:
            if at.version is not None:
                raise _missing(at, exc) from None
        if await _has_objects(store, as_dir(key)):
            return _dir_entry(path)
        raise _not_found(path)

    async def _modified(self, path: str, version_id: str | None = None) -> datetime:
        """The object's modification time (DuckDB asks before it reads a file)."""
        info = await self._info(path, version_id)
        if info["type"] != "file":
            raise IsADirectoryError(path)
        return info["mtime"]

    modified = sync_wrapper(_modified)

    async def _ls(
        self, path: str, detail: bool = True, versions: Any = False, **kwargs: Any
    ) -> list[Any]:
        """One level of ``path``; with ``versions=True`` (a version-aware filesystem only, as
        on s3fs) every version of each object there, named ``bucket/key?versionId=ID``."""
        path = self._strip_protocol(path)
        bucket, key = _split(path)
        every = self._list_versions(versions)
        if not bucket:
            entries = [
                _dir_entry(name) for name in sorted(await (await self._get_client()).store_names())
            ]
        else:
            entries = await self._ls_bucket(bucket, key, every)
        return entries if detail else [e["name"] for e in entries]

    def _list_versions(self, versions: Any) -> bool:
        every: bool = list_versions_option(versions)
        if every and not self.version_aware:
            raise ValueError("versions cannot be specified if the filesystem is not version aware")
        return every

    async def _ls_bucket(self, bucket: str, key: str, versions: bool) -> list[dict[str, Any]]:
        store = await self._store(bucket)
        objects = await store.list(prefix=listing_prefix(key))
        if key and not key.endswith("/"):
            exact = [info for info in objects if info.name == key]
            if exact:
                if versions:
                    return await self._version_entries(store, key, exact=True)
                return [_file_entry(exact[0], self.version_aware)]
        below, inside = split_level(objects, key)
        if key and not below and not inside:
            raise _not_found(f"{bucket}/{key}")
        dirs = [_dir_entry(f"{bucket}/{name.rstrip('/')}") for name in below]
        if versions:
            files = await self._version_entries(store, as_dir(key), exact=False)
        else:
            files = [_file_entry(info, self.version_aware) for info in inside]
        return sorted([*dirs, *files], key=lambda e: e["name"])

    async def _version_entries(
        self, store: aio.ObjectStore, key: str, *, exact: bool
    ) -> list[dict[str, Any]]:
        """The entries of every version (not delete markers, as s3fs lists them) of the name
        ``key`` (``exact``) or of the names directly inside the directory ``key``."""
        found = await store.versions(prefix=key)
        return [
            entry_of_version(v, _file_entry(v.info, versioned=True))
            for v in found
            if not v.delete_marker and (v.name == key if exact else "/" not in v.name[len(key) :])
        ]

    async def _object_version_info(self, path: str, **kwargs: Any) -> list[dict[str, Any]]:
        """s3fs's ``object_version_info``: every version (not delete markers) of the names
        starting with ``path``'s key, as S3's ListObjectVersions lists them (``Key``,
        ``VersionId``, ``IsLatest``, ``LastModified``, ``Size``), and ``Lost`` for a kept
        version another client's purge took (listed, never read)."""
        if not self.version_aware:
            raise ValueError(
                "version specific functionality is disabled for non-version aware filesystems"
            )
        at = self._versioned(path)
        store = await self._store(at.bucket)
        found = await store.versions(prefix=at.key)
        return [version_info_entry(v) for v in found if not v.delete_marker]

    object_version_info = sync_wrapper(_object_version_info)

    async def _find(
        self, path: str, maxdepth: int | None = None, withdirs: bool = False, **kwargs: Any
    ) -> Any:
        """One prefix listing for everything below ``path`` (so ``glob`` too), where fsspec's
        walk would list every directory level on its own."""
        path = self._strip_protocol(path)
        bucket, key = _split(path)
        if not bucket or maxdepth is not None:
            return await super()._find(path, maxdepth=maxdepth, withdirs=withdirs, **kwargs)
        detail = kwargs.pop("detail", False)
        store = await self._store(bucket)
        infos = await store.list(prefix=listing_prefix(key))
        directory = as_dir(key)
        found: dict[str, dict[str, Any]] = {}
        for info in under(infos, directory):
            if withdirs:
                parents = info.name[len(directory) :].split("/")[:-1]
                for depth in range(1, len(parents) + 1):
                    name = f"{bucket}/{directory}{'/'.join(parents[:depth])}"
                    found.setdefault(name, _dir_entry(name))
            entry = _file_entry(info)
            found[entry["name"]] = entry
        if withdirs and found:
            found[path] = _dir_entry(path)
        exact = [i for i in infos if i.name == key]
        if not found and exact:
            found[path] = _file_entry(exact[0])
        names = sorted(found)
        return {name: found[name] for name in names} if detail else names

    # -- reading ----------------------------------------------------------------------------------

    async def _cat_file(
        self,
        path: str,
        start: int | None = None,
        end: int | None = None,
        version_id: str | None = None,
        **kwargs: Any,
    ) -> bytes:
        at = self._versioned(path, version_id)
        bucket, key, version = at.bucket, at.key, at.version
        store = await self._store(bucket)
        try:
            if start is None and end is None:
                return await store.get_bytes(key, **self.reading, version=version)
            # only the chunks that hold [start, end) are fetched (docs/random-access.md)
            return await store.get_range(
                key,
                0 if start is None else start,
                end,
                **self.reading,
                version=version,
            )
        except ObjectNotFound as exc:
            raise _missing(at, exc) from None

    async def _cat_ranges(
        self,
        paths: list[str],
        starts: Any,
        ends: Any,
        max_gap: int | None = None,
        batch_size: int | None = None,
        on_error: str = "return",
        **kwargs: Any,
    ) -> list[Any]:
        """fsspec's ``cat_ranges``, reading each object's record once: all its ranges come
        from that one version (fsspec's default reads the record again per range, so ranges
        of one call could come from two versions), fetched at once with its chunk map shared."""
        if max_gap is not None:
            raise NotImplementedError("max_gap: every range fetches only its own chunks")
        if not isinstance(paths, list):
            raise TypeError("paths must be a list")
        starts = starts if isinstance(starts, Iterable) else [starts] * len(paths)
        ends = ends if isinstance(ends, Iterable) else [ends] * len(paths)
        if not len(starts) == len(ends) == len(paths):
            raise ValueError("paths, starts and ends differ in length")
        unique = list(dict.fromkeys(paths))
        opened = await asyncio.gather(
            *(self._version(path) for path in unique), return_exceptions=True
        )
        versions = dict(zip(unique, opened, strict=True))

        async def read(path: str, start: int | None, end: int | None) -> bytes:
            reader = versions[path]
            if isinstance(reader, BaseException):
                raise reader
            return await reader.read_range(start, end)  # reads at once share one chunk map

        limit = asyncio.Semaphore(batch_size or self.batch_size or len(paths) or 1)

        async def bounded(path: str, start: int | None, end: int | None) -> bytes:
            async with limit:
                return await read(path, start, end)

        out = await asyncio.gather(
            *(bounded(*item) for item in zip(paths, starts, ends, strict=True)),
            return_exceptions=True,
        )
        if on_error != "return":
            error = next((item for item in out if isinstance(item, BaseException)), None)
            if error is not None:
                raise error
        return out

    async def _version(self, path: str, version_id: str | None = None) -> aio.RangeReader:
        """A ranged reader of the object's current version, or of the one the path or
        ``version_id`` names (its record read once)."""
        at = self._versioned(path, version_id)
        store = await self._store(at.bucket)
        try:
            return await store.open_range(at.key, **self.reading, version=at.version)
        except ObjectNotFound as exc:
            raise _missing(at, exc) from None

    async def _get(
        self,
        rpath: Any,
        lpath: Any,
        recursive: bool = False,
        callback: Callback = DEFAULT_CALLBACK,
        maxdepth: int | None = None,
        **kwargs: Any,
    ) -> None:
        """fsspec's bulk ``get``, with every file kept below the local directory it fills.

        fsspec makes each file's directories (through any symlink already there) before a
        file is fetched, and only recent releases refuse a name with ``..``; here a file whose
        place leads out of ``lpath`` is refused (``UnsafeLocalPath``, see
        ``ObjectStore.get_file``'s ``within``), the rest is fetched, and the refusals are
        raised at the end. A list of local paths names each destination: taken as given."""
        if not isinstance(lpath, str):
            await super()._get(rpath, lpath, recursive, callback, maxdepth, **kwargs)
            return
        root = make_path_posix(lpath).rstrip("/") or "/"
        pairs = await self._local_targets(rpath, lpath, recursive, maxdepth)
        refused: list[UnsafeLocalPath] = []
        batch = (
            kwargs.pop("batch_size", None)
            or self.batch_size
            or conf.get("gather_batch_size", GET_BATCH)
        )
        limit = asyncio.Semaphore(batch if batch and batch > 0 else len(pairs) or 1)
        callback.set_size(len(pairs))

        async def one(source: str, target: str) -> None:
            async with limit:
                try:
                    await self._get_file(source, target, within=_below(root, target), **kwargs)
                except UnsafeLocalPath as exc:
                    refused.append(exc)
                callback.relative_update(1)

        for result in await asyncio.gather(*(one(*pair) for pair in pairs), return_exceptions=True):
            if isinstance(result, BaseException):
                raise result
        if len(refused) == 1:
            raise refused[0]
        if refused:
            raise UnsafeLocalPath(
                f"{len(refused)} of {len(pairs)} files not written below {root}, the rest "
                "fetched: "
                + "; ".join(f"bucket {e.bucket!r}, object {e.name!r}: {e.message}" for e in refused)
            )

    async def _local_targets(
        self, rpath: Any, lpath: str, recursive: bool, maxdepth: int | None
    ) -> list[tuple[str, str]]:
        """``(object path, local path)`` of every file a ``get`` writes: fsspec's own mapping
        (``AsyncFileSystem._get``), without making any directory. A prefix directory is left
        to the objects below it."""
        source_is_str = isinstance(rpath, str)
        source_not_trailing_sep = source_is_str and not trailing_sep(rpath)
        rpath = self._strip_protocol(rpath)
        rpaths = await self._expand_path(rpath, recursive=recursive, maxdepth=maxdepth)
        if source_is_str and (not recursive or maxdepth is not None):
            rpaths = [p for p in rpaths if not (trailing_sep(p) or await self._isdir(p))]
            if not rpaths:
                return []
        lpath = make_path_posix(lpath)
        dest_is_dir = trailing_sep(lpath) or LocalFileSystem().isdir(lpath)
        exists = source_is_str and (
            (has_magic(rpath) and len(rpaths) == 1)
            or (not has_magic(rpath) and dest_is_dir and source_not_trailing_sep)
        )
        lpaths = other_paths(rpaths, lpath, exists=exists, flatten=not source_is_str)
        directories = {p.rsplit("/", 1)[0] for p in rpaths if "/" in p}
        return [pair for pair in zip(rpaths, lpaths, strict=True) if pair[0] not in directories]

    async def _get_file(
        self,
        rpath: str,
        lpath: str,
        within: str | None = None,
        version_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        """One object (or the version ``rpath`` or ``version_id`` names) to ``lpath``;
        ``within`` as for ``ObjectStore.get_file`` (``_get`` passes the directory it fills)."""
        at = self._versioned(rpath, version_id)
        bucket, key = at.bucket, at.key
        if within is not None:
            relative = lpath[len(within) :].lstrip("/")
            try:
                lpath = os.path.join(within, local_relative(relative))
            except ValueError as reason:
                raise UnsafeLocalPath(
                    f"not written below {within}: the name has no local path there ({reason})",
                    bucket=bucket,
                    name=key,
                ) from None
        if os.path.isdir(lpath):
            return
        store = await self._store(bucket)
        try:
            await store.get_file(key, lpath, **self.reading, within=within, version=at.version)
        except ObjectNotFound as exc:
            raise _missing(at, exc) from None

    # -- writing ----------------------------------------------------------------------------------

    async def _pipe_file(
        self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any
    ) -> ObjectInfo:
        """One object from bytes; ``mode="create"`` is a put-if-absent (FileExistsError)."""
        bucket, key = self._versioned(path).written()
        store, put_mode = await self._store(bucket), _put_mode(mode)
        with _creating(f"{bucket}/{key}"):
            return await store.put(key, bytes(value), mode=put_mode, **_put_options(kwargs))

    async def _put_file(
        self, lpath: str, rpath: str, mode: str = "overwrite", **kwargs: Any
    ) -> ObjectInfo | None:
        """One local file as an object; ``mode="create"`` as for ``pipe_file``."""
        put_mode = _put_mode(mode)
        if os.path.isdir(lpath):
            return None  # prefixes need no directory objects
        bucket, key = self._versioned(rpath).written()
        store = await self._store(bucket)
        with _creating(f"{bucket}/{key}"):
            return await store.put(key, Path(lpath), mode=put_mode, **_put_options(kwargs))

    async def _create_sequence(self, path: str) -> int:
        """The compare-and-swap sequence of a put that creates ``path`` (``open("xb")``):
        FileExistsError when an object is there now, and the put it is given fails the same
        way if another writer creates the name before the file closes."""
        bucket, key = _split(self._strip_protocol(path))
        store = await self._store(bucket)
        with _creating(f"{bucket}/{key}"):
            return await create_sequence(store, key)

    async def _rm_file(self, path: str, version_id: str | None = None, **kwargs: Any) -> None:
        """Delete the object (a delete marker where the bucket keeps versions), or remove the
        version the path or ``version_id`` names for good (S3's DeleteObject with a
        VersionId; s3fs deletes the current object whatever version the path names)."""
        at = self._versioned(path, version_id)
        try:
            await (await self._store(at.bucket)).delete(at.key, version=at.version)
        except ObjectNotFound as exc:
            raise _missing(at, exc) from None
        finally:
            self.invalidate_cache(f"{at.bucket}/{at.key}")

    async def _rm(
        self, path: Any, recursive: bool = False, batch_size: Any = None, **kwargs: Any
    ) -> None:
        if self.version_aware:  # a path naming a version is that version, never a pattern
            given = [path] if isinstance(path, str) else list(path)
            named = [p for p in given if self._versioned(p).version is not None]
            for p in named:
                await self._rm_file(p)
            path = [p for p in given if p not in named]
            if not path:
                return
        paths = await self._expand_path(path, recursive=recursive)
        live: dict[str, set[str]] = {}
        for p in paths:
            bucket, _ = _split(p)
            if bucket not in live:
                live[bucket] = {info.name for info in await (await self._store(bucket)).list()}
        for p in paths:
            bucket, key = _split(p)
            if key in live[bucket]:
                await self._rm_file(p)
        for bucket in live:
            if recursive and bucket in paths:
                await (await self._get_client()).delete_store(bucket)
                self._stores.pop(bucket, None)
        self.invalidate_cache()

    async def _mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        """A bucket is created; a prefix needs nothing until an object is written under it."""
        bucket, _ = _split(self._strip_protocol(path))
        options = {k: v for k, v in kwargs.items() if k in STORE_SETTINGS}  # not pathlib's mode
        await (await self._get_client()).ensure_store(bucket, **options)

    async def _makedirs(self, path: str, exist_ok: bool = False) -> None:
        await self._mkdir(path)

    async def _rmdir(self, path: str) -> None:
        bucket, key = _split(self._strip_protocol(path))
        if key:
            return
        if await _has_objects(await self._store(bucket), ""):
            raise OSError(39, f"bucket {bucket!r} is not empty", bucket)
        await (await self._get_client()).delete_store(bucket)
        self._stores.pop(bucket, None)

    rmdir = sync_wrapper(_rmdir)

    async def _cp_file(self, path1: str, path2: str, **kwargs: Any) -> ObjectInfo:
        """Stream one object into another (any buckets on this server). A source naming a
        version copies that version: ``cp_file("b/k?versionId=ID", "b/k")`` restores it."""
        at = self._versioned(path1)
        dst_bucket, dst_key = self._versioned(path2).written()
        source = await self._store(at.bucket)
        target = await self._store(dst_bucket)
        try:
            return await copy_object(
                source, at.key, target, dst_key, **self.reading, version=at.version
            )
        except ObjectNotFound as exc:
            raise _missing(at, exc) from None

    # -- files ------------------------------------------------------------------------------------

    def sign(self, path: str, expiration: int = 100, **kwargs: Any) -> str:
        """A presigned URL of the object at the S3 gateway in front of this server, valid
        ``expiration`` seconds (``natsobj.s3.presign``: the settings' ``gateway_url``,
        ``gateway_access_key`` and ``gateway_secret``, or the embedded server's generated key).
        Without a gateway ``GatewayNotConfigured``, a ``NotImplementedError`` as fsspec's own
        ``sign`` raises: NATS has no HTTP URLs."""
        if kwargs:
            raise TypeError(f"sign() takes no options {sorted(kwargs)}")
        bucket, key = _split(self._strip_protocol(path))
        if not bucket or not key:
            raise ValueError(f"sign() needs one object, nats://BUCKET/KEY, not {path!r}")
        access = gateway_access(self.settings)
        return presigned_url(access, bucket, key, expires_in=int(expiration))

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: Any = None,
        autocommit: bool = True,
        cache_options: Any = None,
        version_id: str | None = None,
        **kwargs: Any,
    ) -> NatsObjectFile:
        """A file of the object; reading, of the version the path or ``version_id`` names
        (a version-aware filesystem only, as on s3fs). A write names no version."""
        at = self._versioned(path, version_id)
        if mode == "rb":
            kwargs["version_id"] = at.version
        else:
            at.written()
        return NatsObjectFile(
            self,
            self._strip_protocol(path),
            mode=mode,
            block_size=block_size,
            cache_options=cache_options,
            **kwargs,
        )


# put's keywords a write may carry (pipe, put_file, open("wb", ...)); ttl: the object expires
PUT_KEYS = ("description", "headers", "metadata", "chunk_size", "ttl")


def _put_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: kwargs[k] for k in PUT_KEYS if k in kwargs}


class ExactReadAhead(ReadAheadCache):
    """fsspec's "readahead" cache, except that a read of at least a block that the cache
    does not start in is fetched as asked, without the block read ahead after it: a columnar
    reader asks for whole column chunks (or coalesced runs of them) and then jumps elsewhere,
    so bytes read ahead of one are fetched for nothing, and the fetched bytes are handed back
    as they came instead of sliced into a copy. Small reads (``readline``, CSV parsers) are
    served as by "readahead"."""

    name = "nats-readahead"

    def _fetch(self, start: int | None, end: int | None) -> bytes:
        start = 0 if start is None else start
        end = self.size if end is None else min(end, self.size)
        # fsspec's cache sets start and end in its __init__ without types mypy can read
        if end - start < self.blocksize or self.start <= start < self.end:  # type: ignore[has-type]
            return super()._fetch(start, end)
        self.miss_count += 1
        self.total_requested_bytes += end - start
        self.cache = self.fetcher(start, end)
        self.start, self.end = start, start + len(self.cache)
        return self.cache


class NatsObjectFile(AbstractBufferedFile):
    """Reads fetch only the chunks that hold the requested bytes, from the version of the
    object current when the file was opened (its record, read once, gives the file its size
    and its ranged reader; an overwrite after that raises ObjectChanged on the next fetch,
    so a reader never sees one version's size with another's bytes); writes stream into one
    put that is published when the file closes cleanly and abandoned (no object) otherwise.
    Mode ``"xb"`` refuses an existing object when opened, and its put is a compare-and-swap
    on the name's state at that moment (``natsobj.aio.put_modes``): of writers that opened
    the same absent name, only the first to close creates it, the others get FileExistsError.

    Reads go through ``ExactReadAhead`` with a block of one default chunk (128 KiB): a columnar
    reader (pyarrow, DuckDB) asks for the footer and then for exactly the column chunks it needs,
    which a large read-ahead only inflates (fsspec's default 4 MiB block fetches bytes nobody asked
    for: docs/random-access.md), while a reader of small pieces (``readline``, CSV parsers) still
    gets whole chunks per request.
    ``block_size`` and ``cache_type`` of ``open`` override it.
    """

    DEFAULT_BLOCK_SIZE = 4 * 2**20
    READ_AHEAD = 128 * 2**10

    def __init__(
        self, fs: NatsObjectFileSystem, path: str, mode: str = "rb", **kwargs: Any
    ) -> None:
        self._ranged: aio.RangeReader | None = None
        self._queue: asyncio.Queue[Any] | None = None
        self._put_task: asyncio.Future[Any] | None = None
        self._put_options = {k: kwargs.pop(k) for k in PUT_KEYS if k in kwargs}
        version_id = kwargs.pop("version_id", None)
        if mode == "ab":
            raise NotImplementedError("objects cannot be appended to; write a new object")
        if mode == "xb":
            created = sync(fs.loop, fs._create_sequence, path)
            self._put_options["mode"] = PutMode.update(created)
        if mode == "rb" and kwargs.get("block_size") in (None, "default"):
            kwargs["block_size"] = self.READ_AHEAD
        exact = mode == "rb" and kwargs.get("cache_type") in (None, ExactReadAhead.name)
        if exact:
            kwargs.pop("cache_type", None)
        if mode == "rb":
            # one record lookup for the size and the reader, not one each
            self._ranged = sync(fs.loop, fs._version, path, version_id)
            kwargs["size"] = self._ranged.size
        super().__init__(fs, path, mode=mode.replace("x", "w"), **kwargs)
        if self._ranged is not None:
            entry = _file_entry(self._ranged.info, fs.version_aware)
            self._details = {**entry, "name": self.path}
        if exact:
            self.cache = ExactReadAhead(self.blocksize, self._fetch_range, self.size)
        self.info_after_put: ObjectInfo | None = None

    # reading

    def _fetch_range(self, start: int, end: int) -> bytes:
        return sync(self.fs.loop, self._afetch, start, end)

    async def _afetch(self, start: int, end: int) -> bytes:
        if self._ranged is None:
            raise ValueError(f"nats://{self.path} is closed")
        return await self._ranged.read_range(start, end)

    async def _aclose_reader(self) -> None:
        if self._ranged is not None:
            with contextlib.suppress(Exception):
                await self._ranged.close()
        self._ranged = None

    # writing

    def _initiate_upload(self) -> None:
        sync(self.fs.loop, self._astart_put)

    async def _astart_put(self) -> None:
        bucket, key = _split(self.path)
        store = await self.fs._store(bucket)
        self._queue = asyncio.Queue(maxsize=2)

        async def chunks() -> Any:
            while (item := await self._queue.get()) is not _END:  # type: ignore[union-attr]
                if isinstance(item, BaseException):
                    raise item
                yield item

        put = store.put(key, chunks(), **self._put_options)
        creates = "mode" in self._put_options  # "xb"
        self._put_task = asyncio.ensure_future(self._created(put) if creates else put)

    async def _created(self, put: Any) -> ObjectInfo:
        with _creating(self.path):
            return await put

    def _upload_chunk(self, final: bool = False) -> bool:
        data = self.buffer.getvalue()
        sync(self.fs.loop, self._asend, data, final)
        return True

    async def _asend(self, data: bytes, final: bool) -> None:
        assert self._queue is not None and self._put_task is not None
        if data:
            await self._send(data)
        if final:
            await self._send(_END)
            self.info_after_put = await self._put_task
            self.fs.invalidate_cache(self.path)

    async def _send(self, item: Any) -> None:
        """Queue an item unless the put already failed (then surface its error)."""
        queue, put_task = self._queue, self._put_task
        assert queue is not None and put_task is not None  # both set when the upload began
        getter = asyncio.ensure_future(queue.put(item))
        done, _ = await asyncio.wait({getter, put_task}, return_when=asyncio.FIRST_COMPLETED)
        if put_task in done and getter not in done:
            getter.cancel()
            put_task.result()
            raise NatsObjError("put ended before all data was sent", name=self.path)

    def discard(self) -> None:
        """Abandon a write: the put fails, so no object (and no partial object) appears."""
        if self._put_task is not None and not self._put_task.done():
            sync(self.fs.loop, self._aabort)

    async def _aabort(self) -> None:
        assert self._queue is not None and self._put_task is not None
        with contextlib.suppress(Exception):
            await self._send(OSError("write abandoned before close"))
        with contextlib.suppress(BaseException):
            await self._put_task

    def __exit__(self, exc_type: Any, *rest: Any) -> None:
        if exc_type is not None and self.writable() and not self.closed:  # type: ignore[has-type]
            self.discard()
            self.closed = True
            return
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        if self.readable() and self._ranged is not None:
            # Not waited for: close() may run from __del__ inside some other running loop.
            asyncio.run_coroutine_threadsafe(self._aclose_reader(), self.fs.loop)
        try:
            super().close()
        finally:
            # Closed even when the put failed (a create-only write that lost, a server gone),
            # as fsspec's own close does since 2024.10: a second close must not try again.
            self.closed = True
