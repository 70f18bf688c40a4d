"""The blocking facade: the same names as the async core, run on one background event loop per
process. There is no second implementation; every method forwards to ``natsobj.aio``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from natsobj import aio
from natsobj.aio import listing
from natsobj.aio.sources import PutSource
from natsobj.aio.store import Changes, CompactResult
from natsobj.model import ObjectInfo, StoreStatus
from natsobj.settings import ConnectionSettings

T = TypeVar("T")


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


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run a coroutine on the background loop and wait for it (callable from any thread)."""
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


class ObjectReader:
    """Blocking view of ``aio.ObjectReader``: ``info``, ``read(n)`` and iteration."""

    def __init__(self, reader: aio.ObjectReader) -> None:
        self._reader = reader
        self.info: ObjectInfo = reader.info
        self._iterator = reader.__aiter__()

    def read(self, n: int = -1) -> bytes:
        return run(self._reader.read(n))

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                yield run(self._iterator.__anext__())
            except StopAsyncIteration:
                return


class ObjectWatcher:
    """Blocking view of ``aio.ObjectWatcher``: iterate, or ``next(timeout)``."""

    def __init__(self, watcher: aio.ObjectWatcher) -> None:
        self._watcher = watcher

    @property
    def initial_done(self) -> bool:
        return self._watcher.initial_done

    def next(self, timeout: float | None = None) -> ObjectInfo | None:
        return run(self._watcher.next(timeout))

    def __iter__(self) -> Iterator[ObjectInfo]:
        while True:
            info = self.next()
            if info is not None:
                yield info

    def stop(self) -> None:
        run(self._watcher.stop())

    def __enter__(self) -> ObjectWatcher:
        run(self._watcher.start())
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ObjectStore:
    """Blocking view of ``aio.ObjectStore``; see it for what each method promises."""

    def __init__(self, store: aio.ObjectStore) -> None:
        self._store = store
        self.bucket = store.bucket

    def __repr__(self) -> str:
        return f"ObjectStore(bucket={self.bucket!r})"

    @property
    def aio(self) -> aio.ObjectStore:
        return self._store

    def put(self, name: str, source: PutSource, **options: Any) -> ObjectInfo:
        return run(self._store.put(name, source, **options))

    @contextlib.contextmanager
    def get(self, name: str, *, min_sequence: int | None = None) -> Iterator[ObjectReader]:
        manager = self._store.get(name, min_sequence=min_sequence)
        reader = run(manager.__aenter__())
        try:
            yield ObjectReader(reader)
        finally:
            run(manager.__aexit__(None, None, None))

    def get_bytes(
        self, name: str, *, max_size: int | None = None, min_sequence: int | None = None
    ) -> bytes:
        return run(self._store.get_bytes(name, max_size=max_size, min_sequence=min_sequence))

    def get_file(
        self,
        name: str,
        path: str | os.PathLike[str],
        *,
        progress: Callable[[int], None] | None = None,
        min_sequence: int | None = None,
    ) -> ObjectInfo:
        return run(self._store.get_file(name, path, progress=progress, min_sequence=min_sequence))

    def get_info(
        self, name: str, *, include_deleted: bool = False, min_sequence: int | None = None
    ) -> ObjectInfo:
        return run(
            self._store.get_info(name, include_deleted=include_deleted, min_sequence=min_sequence)
        )

    def update_meta(self, name: str, **changes: Any) -> ObjectInfo:
        return run(self._store.update_meta(name, **changes))

    def delete(self, name: str) -> ObjectInfo:
        return run(self._store.delete(name))

    def seal(self) -> StoreStatus:
        return run(self._store.seal())

    def status(self) -> StoreStatus:
        return run(self._store.status())

    def list(
        self,
        *,
        prefix: str | None = None,
        glob: str | None = None,
        include_deleted: bool = False,
    ) -> list[ObjectInfo]:
        return run(self._store.list(prefix=prefix, glob=glob, include_deleted=include_deleted))

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
            self._store, prefix=prefix, glob=glob, include_deleted=include_deleted
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

    def changes(
        self, after_sequence: int = 0, *, limit: int = 100, include_deletes: bool = True
    ) -> Changes:
        return run(
            self._store.changes(after_sequence, limit=limit, include_deletes=include_deletes)
        )

    def watch(self, **options: Any) -> ObjectWatcher:
        return ObjectWatcher(self._store.watch(**options))

    def add_link(self, name: str, target: ObjectInfo) -> ObjectInfo:
        return run(self._store.add_link(name, target))

    def add_bucket_link(self, name: str, target_bucket: str | ObjectStore) -> ObjectInfo:
        bucket = target_bucket.bucket if isinstance(target_bucket, ObjectStore) else target_bucket
        return run(self._store.add_bucket_link(name, bucket))

    def compact(self, *, min_age: float = 3600.0) -> CompactResult:
        return run(self._store.compact(min_age=min_age))


class Client:
    """Blocking view of ``aio.Client``."""

    def __init__(self, client: aio.Client) -> None:
        self._client = client
        self.settings: ConnectionSettings = client.settings

    def __repr__(self) -> str:
        return f"Client({self.settings.redacted_url()!r})"

    @property
    def aio(self) -> aio.Client:
        return self._client

    def create_store(self, bucket: str, **config: Any) -> ObjectStore:
        return ObjectStore(run(self._client.create_store(bucket, **config)))

    def ensure_store(self, bucket: str, **config: Any) -> ObjectStore:
        return ObjectStore(run(self._client.ensure_store(bucket, **config)))

    def update_store(self, bucket: str, **config: Any) -> ObjectStore:
        return ObjectStore(run(self._client.update_store(bucket, **config)))

    def store(self, bucket: str) -> ObjectStore:
        return ObjectStore(run(self._client.store(bucket)))

    def delete_store(self, bucket: str) -> None:
        run(self._client.delete_store(bucket))

    def store_names(self) -> list[str]:
        return run(self._client.store_names())

    def close(self) -> None:
        run(self._client.close())

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(
    url_or_settings: str | ConnectionSettings | None = None,
    *,
    api_timeout: float = 5.0,
    **overrides: Any,
) -> Client:
    """Blocking ``connect``: same arguments as ``natsobj.aio.connect``."""
    return Client(run(aio.connect(url_or_settings, api_timeout=api_timeout, **overrides)))


__all__ = ["Client", "ObjectReader", "ObjectStore", "ObjectWatcher", "connect", "run"]
