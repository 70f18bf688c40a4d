"""The blocking facade: the same names as the async core, run on one background event loop per
process. There is no second implementation; every method forwards to ``natsobj.aio``."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Generic, Literal, TypeVar, Unpack, cast, overload

from natsobj import aio
from natsobj.aio import copy, listing, put_modes
from natsobj.aio.client import DEFAULT_PUT_WINDOW, DEFAULT_READ_WINDOW
from natsobj.aio.compaction import CompactResult
from natsobj.aio.put_modes import OVERWRITE, PutMode
from natsobj.aio.scans import Changes
from natsobj.aio.sources import PutSource
from natsobj.cursors import ChangeCursor
from natsobj.lifecycle import LifecycleRule
from natsobj.model import ObjectInfo, StoreStatus, Tiering
from natsobj.settings import ConnectionSettings
from natsobj.store_config import StoreConfig, StoreSettings
from natsobj.version_events import Change
from natsobj.versioning import (
    DefaultRetention,
    LockMode,
    ObjectVersion,
    Versioning,
    VersionLock,
)

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
_core = aio  # the classes below have an ``aio`` property that hides the module in their bodies


class _LoopThread:
    """A daemon thread running an event loop; recreated after fork (Spark workers fork)."""

    _lock = threading.Lock()
    _instance: _LoopThread | None = None

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="natsobj-loop", daemon=True
        )
        self.thread.start()

    @classmethod
    def get(cls) -> _LoopThread:
        with cls._lock:
            if cls._instance is None or cls._instance.pid != os.getpid():
                cls._instance = cls()
            return cls._instance

    @classmethod
    def after_fork(cls) -> None:
        """In a forked child: a new lock, as another thread may have held the parent's at
        the fork and nothing in the child would release it (the loop itself is replaced by
        ``get``, which sees the new pid)."""
        cls._lock = threading.Lock()


os.register_at_fork(after_in_child=_LoopThread.after_fork)


def shared_loop() -> asyncio.AbstractEventLoop:
    """The process's one event loop for blocking calls (fsspec runs the filesystem on it too)."""
    return _LoopThread.get().loop


def run(awaitable: Awaitable[T], timeout: float | None = None) -> T:
    """Run a coroutine on the background loop and wait for it (callable from any thread).

    Also one step of an async iterator (``anext(it)``, ``it.__anext__()``): what that returns
    is a coroutine to asyncio (it has send, throw and close), though typed as an awaitable."""
    coro = cast(Coroutine[Any, Any, T], awaitable)
    loop_thread = _LoopThread.get()
    if threading.current_thread() is loop_thread.thread:
        coro.close()
        raise RuntimeError(
            "blocking natsobj call made from inside its own event loop; use natsobj.aio"
        )
    future = asyncio.run_coroutine_threadsafe(coro, loop_thread.loop)
    try:
        return future.result(timeout)
    except BaseException:
        future.cancel()
        raise


def _mirrors(async_method: Callable[..., Any]) -> Callable[[F], F]:
    """Give a blocking method its async counterpart's docstring: one text for ``help()`` on
    both faces. The signatures are written out here and compared by a test."""

    def decorate(method: F) -> F:
        method.__doc__ = async_method.__doc__
        return method

    return decorate


class ObjectReader:
    """Blocking view of ``aio.ObjectReader``: ``info``, ``read(n)`` and iteration."""

    def __init__(self, reader: aio.ObjectReader) -> None:
        self._reader = reader
        self.info: ObjectInfo = reader.info
        self._iterator = reader.__aiter__()

    @_mirrors(_core.ObjectReader.read)
    def read(self, n: int = -1) -> bytes:
        return run(self._reader.read(n))

    @_mirrors(_core.ObjectReader.copy_to)
    def copy_to(
        self, write: Callable[[bytes], object], progress: Callable[[int], None] | None = None
    ) -> None:
        run(self._reader.copy_to(write, progress))

    @_mirrors(_core.ObjectReader.close)
    def close(self) -> None:
        run(self._reader.close())

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                yield run(self._iterator.__anext__())
            except StopAsyncIteration:
                return


class RangeReader(io.RawIOBase):
    """Blocking view of ``aio.RangeReader``: a seekable, read-only binary file (pyarrow,
    pandas and ``io.BufferedReader`` take it) whose reads fetch only the chunks they need."""

    def __init__(self, reader: aio.RangeReader) -> None:
        super().__init__()
        self._reader = reader
        self.info: ObjectInfo = reader.info
        self.size: int = reader.size

    @property
    def bytes_fetched(self) -> int:
        return self._reader.bytes_fetched

    def _check_open(self) -> None:
        """What io's own files raise when used closed (io's check of it is private)."""
        if self.closed:
            raise ValueError("I/O operation on closed file.")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    @_mirrors(_core.RangeReader.read)
    def read(self, n: int = -1) -> bytes:
        self._check_open()
        return run(self._reader.read(-1 if n is None else n))

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(memoryview(buffer)))
        memoryview(buffer).cast("B")[: len(data)] = data
        return len(data)

    @_mirrors(_core.RangeReader.read_range)
    def read_range(self, start: int | None, end: int | None = None) -> bytes:
        self._check_open()
        return run(self._reader.read_range(start, end))

    @_mirrors(_core.RangeReader.seek)
    def seek(self, offset: int, whence: int = 0) -> int:
        self._check_open()
        return self._reader.seek(offset, whence)

    @_mirrors(_core.RangeReader.tell)
    def tell(self) -> int:
        self._check_open()
        return self._reader.tell()

    @_mirrors(_core.RangeReader.close)
    def close(self) -> None:
        # Not forwarded: the reader holds nothing on the server, and a file's finalizer may
        # close it on the loop's own thread, where a blocking call cannot run.
        super().close()


C = TypeVar("C", bound=Change)


class ObjectWatcher(Generic[C]):
    """Blocking view of ``aio.ObjectWatcher``: iterate, or ``next(timeout)``."""

    def __init__(self, watcher: aio.ObjectWatcher[C]) -> None:
        self._watcher = watcher

    @property
    def initial_done(self) -> bool:
        return self._watcher.initial_done

    @property
    def position(self) -> str | int:
        return self._watcher.position

    @property
    def include_deletes(self) -> bool:
        return self._watcher.include_deletes

    @property
    def include_version_events(self) -> bool:
        return self._watcher.include_version_events

    @property
    def cursor(self) -> ChangeCursor:
        return self._watcher.cursor

    @_mirrors(_core.ObjectWatcher.start)
    def start(self) -> ObjectWatcher[C]:
        run(self._watcher.start())
        return self

    @_mirrors(_core.ObjectWatcher.next)
    def next(self, timeout: float | None = None) -> C | None:
        return run(self._watcher.next(timeout))

    def __iter__(self) -> Iterator[C]:
        while True:
            info = self.next()
            if info is not None:
                yield info

    @_mirrors(_core.ObjectWatcher.stop)
    def stop(self) -> None:
        run(self._watcher.stop())

    def __enter__(self) -> ObjectWatcher[C]:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        run(self._watcher.__aexit__(exc_type, exc, tb))


class ObjectStore:
    """Blocking view of ``aio.ObjectStore``; each method has its async twin's signature and
    docstring."""

    def __init__(self, store: aio.ObjectStore) -> None:
        self._store = store
        self.bucket = store.bucket

    def __repr__(self) -> str:
        return f"ObjectStore(bucket={self.bucket!r})"

    @property
    def aio(self) -> aio.ObjectStore:
        return self._store

    @_mirrors(_core.ObjectStore.put)
    def put(
        self,
        name: str,
        source: PutSource,
        *,
        description: str | None = None,
        headers: Mapping[str, list[str] | str] | None = None,
        metadata: dict[str, str] | None = None,
        chunk_size: int | None = None,
        mode: PutMode = OVERWRITE,
        tiering: Tiering | None = None,
        ttl: float | str | timedelta | None = None,
        digest_headers: Callable[[str], Mapping[str, list[str]]] | None = None,
        expected_sequence: int | None = None,
        if_absent: bool = False,
    ) -> ObjectInfo:
        return run(
            self._store.put(
                name,
                source,
                description=description,
                headers=headers,
                metadata=metadata,
                chunk_size=chunk_size,
                mode=put_modes.from_keywords(mode, expected_sequence, if_absent),
                tiering=tiering,
                ttl=ttl,
                digest_headers=digest_headers,
            )
        )

    @_mirrors(_core.ObjectStore.reader)
    def reader(self, info: ObjectInfo) -> ObjectReader:
        return ObjectReader(self._store.reader(info))

    @contextlib.contextmanager
    @_mirrors(_core.ObjectStore.get)
    def get(
        self,
        name: str,
        *,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        follow_links: bool = False,
        version: str | None = None,
    ) -> Iterator[ObjectReader]:
        manager = self._store.get(
            name,
            min_sequence=min_sequence,
            allow_missing_digest=allow_missing_digest,
            follow_links=follow_links,
            version=version,
        )
        reader = run(manager.__aenter__())
        try:
            yield ObjectReader(reader)
        except BaseException as exc:
            # the async side sees the real exception, as `async with` would show it
            if not run(manager.__aexit__(type(exc), exc, exc.__traceback__)):
                raise
        else:
            run(manager.__aexit__(None, None, None))

    @_mirrors(_core.ObjectStore.get_bytes)
    def get_bytes(
        self,
        name: str,
        *,
        max_size: int | None = None,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        follow_links: bool = False,
        version: str | None = None,
    ) -> bytes:
        return run(
            self._store.get_bytes(
                name,
                max_size=max_size,
                min_sequence=min_sequence,
                allow_missing_digest=allow_missing_digest,
                follow_links=follow_links,
                version=version,
            )
        )

    @_mirrors(_core.ObjectStore.get_file)
    def get_file(
        self,
        name: str,
        path: str | os.PathLike[str],
        *,
        progress: Callable[[int], None] | None = None,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        within: str | os.PathLike[str] | None = None,
        follow_links: bool = False,
        version: str | None = None,
    ) -> ObjectInfo:
        return run(
            self._store.get_file(
                name,
                path,
                progress=progress,
                min_sequence=min_sequence,
                allow_missing_digest=allow_missing_digest,
                within=within,
                follow_links=follow_links,
                version=version,
            )
        )

    @_mirrors(_core.ObjectStore.get_range)
    def get_range(
        self,
        name: str,
        start: int,
        end: int | None = None,
        *,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        follow_links: bool = False,
        version: str | None = None,
    ) -> bytes:
        return run(
            self._store.get_range(
                name,
                start,
                end,
                min_sequence=min_sequence,
                allow_missing_digest=allow_missing_digest,
                follow_links=follow_links,
                version=version,
            )
        )

    @_mirrors(_core.ObjectStore.open_range)
    def open_range(
        self,
        name: str,
        *,
        min_sequence: int | None = None,
        allow_missing_digest: bool = False,
        follow_links: bool = False,
        version: str | None = None,
    ) -> RangeReader:
        return RangeReader(
            run(
                self._store.open_range(
                    name,
                    min_sequence=min_sequence,
                    allow_missing_digest=allow_missing_digest,
                    follow_links=follow_links,
                    version=version,
                )
            )
        )

    @_mirrors(_core.ObjectStore.ttl_left)
    def ttl_left(self, info: ObjectInfo) -> int | None:
        return run(self._store.ttl_left(info))

    @_mirrors(_core.ObjectStore.range_reader)
    def range_reader(self, info: ObjectInfo) -> RangeReader:
        return RangeReader(self._store.range_reader(info))

    @_mirrors(_core.ObjectStore.get_info)
    def get_info(
        self,
        name: str,
        *,
        include_deleted: bool = False,
        min_sequence: int | None = None,
        version: str | None = None,
    ) -> ObjectInfo:
        return run(
            self._store.get_info(
                name, include_deleted=include_deleted, min_sequence=min_sequence, version=version
            )
        )

    @_mirrors(_core.ObjectStore.update_meta)
    def update_meta(
        self,
        name: str,
        *,
        new_name: str | None = None,
        description: str | None = None,
        headers: Mapping[str, list[str] | str] | None = None,
        metadata: dict[str, str] | None = None,
    ) -> ObjectInfo:
        return run(
            self._store.update_meta(
                name,
                new_name=new_name,
                description=description,
                headers=headers,
                metadata=metadata,
            )
        )

    @_mirrors(_core.ObjectStore.delete)
    def delete(
        self, name: str, *, version: str | None = None, bypass_governance: bool = False
    ) -> ObjectInfo:
        return run(self._store.delete(name, version=version, bypass_governance=bypass_governance))

    @_mirrors(_core.ObjectStore.seal)
    def seal(self) -> StoreStatus:
        return run(self._store.seal())

    @_mirrors(_core.ObjectStore.lifecycle_rules)
    def lifecycle_rules(self) -> list[LifecycleRule]:
        return run(self._store.lifecycle_rules())

    @_mirrors(_core.ObjectStore.set_lifecycle_rules)
    def set_lifecycle_rules(self, rules: list[LifecycleRule]) -> list[LifecycleRule]:
        return run(self._store.set_lifecycle_rules(rules))

    @_mirrors(_core.ObjectStore.versioning)
    def versioning(self) -> Versioning:
        return run(self._store.versioning())

    @_mirrors(_core.ObjectStore.set_versioning)
    def set_versioning(self, state: Versioning | str) -> Versioning:
        return run(self._store.set_versioning(state))

    def restore(self, name: str, version: str) -> ObjectInfo:
        """Make ``version`` of ``name`` its current version again (``natsobj.aio.copy.restore``:
        the version's bytes are copied over the current ones, digest-checked, so where the
        bucket keeps versions the version current until now is kept too)."""
        return run(copy.restore(self._store, name, version))

    @_mirrors(_core.ObjectStore.lock)
    def lock(
        self,
        name: str,
        *,
        version: str | None = None,
        mode: LockMode | str | None = None,
        retain_until: datetime | None = None,
        legal_hold: bool | None = None,
        clear_retention: bool = False,
        bypass_governance: bool = False,
    ) -> VersionLock:
        return run(
            self._store.lock(
                name,
                version=version,
                mode=mode,
                retain_until=retain_until,
                legal_hold=legal_hold,
                clear_retention=clear_retention,
                bypass_governance=bypass_governance,
            )
        )

    @_mirrors(_core.ObjectStore.lock_info)
    def lock_info(self, name: str, *, version: str | None = None) -> VersionLock:
        return run(self._store.lock_info(name, version=version))

    @_mirrors(_core.ObjectStore.object_lock)
    def object_lock(self) -> bool:
        return run(self._store.object_lock())

    @_mirrors(_core.ObjectStore.enable_object_lock)
    def enable_object_lock(self) -> None:
        run(self._store.enable_object_lock())

    @_mirrors(_core.ObjectStore.default_retention)
    def default_retention(self) -> DefaultRetention | None:
        return run(self._store.default_retention())

    @_mirrors(_core.ObjectStore.set_default_retention)
    def set_default_retention(self, retention: DefaultRetention | None) -> None:
        run(self._store.set_default_retention(retention))

    @_mirrors(_core.ObjectStore.versions)
    def versions(
        self, *, prefix: str | None = None, glob: str | None = None
    ) -> list[ObjectVersion]:
        return run(self._store.versions(prefix=prefix, glob=glob))

    @_mirrors(_core.ObjectStore.status)
    def status(self, *, count_offloaded: bool = False) -> StoreStatus:
        return run(self._store.status(count_offloaded=count_offloaded))

    @_mirrors(_core.ObjectStore.list)
    def list(
        self,
        *,
        prefix: str | None = None,
        glob: str | None = None,
        include_deleted: bool = False,
    ) -> list[ObjectInfo]:
        return run(self._store.list(prefix=prefix, glob=glob, include_deleted=include_deleted))

    @_mirrors(_core.ObjectStore.iter_list)
    def iter_list(
        self,
        *,
        prefix: str | None = None,
        glob: str | None = None,
        include_deleted: bool = False,
    ) -> Iterator[ObjectInfo]:
        """A generator over the listing; crosses to the loop thread once per batch, not per
        object, and holds one batch at a time."""
        batches = listing.iter_batches(
            self._store.bucket_stream, prefix=prefix, glob=glob, include_deleted=include_deleted
        )
        try:
            while True:
                try:
                    batch = run(anext(batches))
                except StopAsyncIteration:
                    return
                yield from batch
        finally:
            run(batches.aclose())

    @overload
    def changes(
        self,
        after_sequence: int | ChangeCursor = 0,
        *,
        limit: int = 100,
        include_deletes: bool = True,
        include_version_events: Literal[False] = False,
    ) -> Changes[ObjectInfo]: ...

    @overload
    def changes(
        self,
        after_sequence: int | ChangeCursor = 0,
        *,
        limit: int = 100,
        include_deletes: bool = True,
        include_version_events: bool,
    ) -> Changes[Change]: ...

    @_mirrors(_core.ObjectStore.changes)
    def changes(
        self,
        after_sequence: int | ChangeCursor = 0,
        *,
        limit: int = 100,
        include_deletes: bool = True,
        include_version_events: bool = False,
    ) -> Changes[Any]:
        return run(
            self._store.changes(
                after_sequence,
                limit=limit,
                include_deletes=include_deletes,
                include_version_events=include_version_events,
            )
        )

    @overload
    def watch(
        self,
        *,
        start: str | int | None = None,
        include_deletes: bool | str | None = None,
        after_sequence: int | ChangeCursor | None = None,
        include_version_events: Literal[False] = False,
        include_history: bool = False,
        updates_only: bool = False,
        ignore_deletes: bool = False,
    ) -> ObjectWatcher[ObjectInfo]: ...

    @overload
    def watch(
        self,
        *,
        start: str | int | None = None,
        include_deletes: bool | str | None = None,
        after_sequence: int | ChangeCursor | None = None,
        include_version_events: bool | str,
        include_history: bool = False,
        updates_only: bool = False,
        ignore_deletes: bool = False,
    ) -> ObjectWatcher[Change]: ...

    @_mirrors(_core.ObjectStore.watch)
    def watch(
        self,
        *,
        start: str | int | None = None,
        include_deletes: bool | str | None = None,
        after_sequence: int | ChangeCursor | None = None,
        include_version_events: bool | str = False,
        include_history: bool = False,
        updates_only: bool = False,
        ignore_deletes: bool = False,
    ) -> ObjectWatcher[Any]:
        return ObjectWatcher(
            self._store.watch(
                start=start,
                include_deletes=include_deletes,
                after_sequence=after_sequence,
                include_version_events=include_version_events,
                include_history=include_history,
                updates_only=updates_only,
                ignore_deletes=ignore_deletes,
            )
        )

    @_mirrors(_core.ObjectStore.add_link)
    def add_link(self, name: str, target: ObjectInfo) -> ObjectInfo:
        return run(self._store.add_link(name, target))

    @_mirrors(_core.ObjectStore.add_bucket_link)
    def add_bucket_link(self, name: str, target_bucket: str | ObjectStore) -> ObjectInfo:
        bucket = target_bucket.bucket if isinstance(target_bucket, ObjectStore) else target_bucket
        return run(self._store.add_bucket_link(name, bucket))

    @_mirrors(_core.ObjectStore.compact)
    def compact(self, *, min_age: float = 3600.0) -> CompactResult:
        return run(self._store.compact(min_age=min_age))


class Client:
    """Blocking view of ``aio.Client``; each method has its async twin's signature and
    docstring."""

    def __init__(self, client: aio.Client) -> None:
        self._client = client
        self.settings: ConnectionSettings = client.settings

    def __repr__(self) -> str:
        return f"Client({self.settings.redacted_url()!r})"

    @property
    def aio(self) -> aio.Client:
        return self._client

    @_mirrors(_core.Client.create_store)
    def create_store(
        self,
        bucket: str | StoreConfig,
        *,
        versioning: Versioning | str | None = None,
        **settings: Unpack[StoreSettings],
    ) -> ObjectStore:
        return ObjectStore(
            run(self._client.create_store(bucket, versioning=versioning, **settings))
        )

    @_mirrors(_core.Client.ensure_store)
    def ensure_store(
        self,
        bucket: str | StoreConfig,
        *,
        versioning: Versioning | str | None = None,
        **settings: Unpack[StoreSettings],
    ) -> ObjectStore:
        return ObjectStore(
            run(self._client.ensure_store(bucket, versioning=versioning, **settings))
        )

    @_mirrors(_core.Client.update_store)
    def update_store(
        self,
        bucket: str | StoreConfig,
        *,
        versioning: Versioning | str | None = None,
        **changes: Unpack[StoreSettings],
    ) -> ObjectStore:
        return ObjectStore(run(self._client.update_store(bucket, versioning=versioning, **changes)))

    @_mirrors(_core.Client.store)
    def store(self, bucket: str) -> ObjectStore:
        return ObjectStore(run(self._client.store(bucket)))

    @_mirrors(_core.Client.delete_store)
    def delete_store(self, bucket: str) -> None:
        run(self._client.delete_store(bucket))

    @_mirrors(_core.Client.store_names)
    def store_names(self) -> list[str]:
        return run(self._client.store_names())

    @_mirrors(_core.Client.close)
    def close(self) -> None:
        run(self._client.close())

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        run(self._client.__aexit__(exc_type, exc, tb))


@_mirrors(_core.connect)
def connect(
    url_or_settings: str | ConnectionSettings | None = None,
    *,
    put_window_bytes: int = DEFAULT_PUT_WINDOW,
    read_window_bytes: int = DEFAULT_READ_WINDOW,
    **overrides: Any,
) -> Client:
    return Client(
        run(
            aio.connect(
                url_or_settings,
                put_window_bytes=put_window_bytes,
                read_window_bytes=read_window_bytes,
                **overrides,
            )
        )
    )


__all__ = [
    "Client",
    "ObjectReader",
    "ObjectStore",
    "ObjectWatcher",
    "connect",
    "run",
    "shared_loop",
]
