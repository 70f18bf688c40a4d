"""One NATS connection per process and connection settings, shared by every face.

Dagster resources and IO managers, the fsspec filesystem and the Airflow hook all ask for a
client many times per process (an IO manager once per input and output). Each of those used to
connect, and the filesystem ran a second event loop beside the blocking facade's. Here they
get the same connection, living on the facade's single loop thread, with bound stores cached
so that stream info is read once per bucket.

The shared connections last as long as the process: closing a shared client is a no-op, and
an ``atexit`` hook drains them. A forked child (Spark workers fork) starts with an empty
registry, as the facade starts a new loop thread there.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
from dataclasses import fields
from typing import Any

from natsobj import aio, sync
from natsobj.settings import ConnectionSettings

log = logging.getLogger("natsobj")

SettingsKey = tuple[Any, ...]
CLOSE_TIMEOUT = 10.0


# Labels and patience, not identity: a Dagster resource named "dagster" and an Airflow hook
# reaching the same server as the same user share one connection (the first one's name shows).
_NOT_IDENTITY = frozenset(("name", "connect_timeout"))


def settings_key(settings: ConnectionSettings) -> SettingsKey:
    """Settings that reach the same server as the same user share a connection (secrets are
    part of the key, so two users of one server never share one)."""
    return tuple(
        tuple(value) if isinstance(value, list) else value
        for value in (
            getattr(settings, f.name) for f in fields(settings) if f.name not in _NOT_IDENTITY
        )
    )


class _Registry:
    """The process's shared clients; touched only on the facade's loop thread."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.clients: dict[SettingsKey, asyncio.Future[aio.Client]] = {}
        self.stores: dict[tuple[SettingsKey, str], aio.ObjectStore] = {}

    async def client(self, settings: ConnectionSettings) -> aio.Client:
        key = settings_key(settings)
        pending = self.clients.get(key)
        if pending is None or (pending.done() and _unusable(pending)):
            pending = asyncio.ensure_future(aio.connect(settings))
            self.clients[key] = pending
            self.stores = {k: v for k, v in self.stores.items() if k[0] != key}
        try:
            return await asyncio.shield(pending)
        except BaseException:
            if self.clients.get(key) is pending and pending.done():
                del self.clients[key]  # the next caller tries again
            raise

    async def store(self, settings: ConnectionSettings, bucket: str) -> aio.ObjectStore:
        client = await self.client(settings)
        key = (settings_key(settings), bucket)
        store = self.stores.get(key)
        if store is None or store.client is not client:
            store = await client.store(bucket)
            self.stores[key] = store
        return store

    def forget_store(self, settings: ConnectionSettings, bucket: str) -> None:
        self.stores.pop((settings_key(settings), bucket), None)

    async def close_all(self) -> None:
        pending, self.clients, self.stores = list(self.clients.values()), {}, {}
        for future in pending:
            if future.done() and not future.cancelled() and future.exception() is None:
                with contextlib.suppress(Exception):
                    await future.result().close()


def _unusable(future: asyncio.Future[aio.Client]) -> bool:
    if future.cancelled() or future.exception() is not None:
        return True
    nc = future.result().nc
    return nc is None or nc.is_closed


_registries: dict[int, _Registry] = {}


def _registry() -> _Registry:
    """This process's registry (a forked child gets its own, empty one)."""
    pid = os.getpid()
    registry = _registries.get(pid)
    if registry is None:
        _registries.clear()
        registry = _registries[pid] = _Registry()
    return registry


def on_shared_loop() -> bool:
    """True when running on the facade's loop thread, where the shared clients live."""
    try:
        return asyncio.get_running_loop() is sync.shared_loop()
    except RuntimeError:
        return False


async def shared_aio_client(settings: ConnectionSettings) -> aio.Client:
    """The process's async client for ``settings``; await it on the facade's loop only."""
    if not on_shared_loop():
        raise RuntimeError("shared natsobj clients live on the facade's loop; use run()")
    return await _registry().client(settings)


async def shared_aio_store(settings: ConnectionSettings, bucket: str) -> aio.ObjectStore:
    """A bound store of the shared client, cached per bucket (BucketNotFound when missing)."""
    if not on_shared_loop():
        raise RuntimeError("shared natsobj clients live on the facade's loop; use run()")
    return await _registry().store(settings, bucket)


class SharedClient(sync.Client):
    """A blocking client on the process's shared connection.

    ``close()`` and leaving a ``with`` block leave the connection open for the other users in
    the process; it is drained when the process exits. ``cached_store`` binds a bucket once.
    """

    def __init__(self, client: aio.Client, settings: ConnectionSettings) -> None:
        super().__init__(client)
        self._shared_settings = settings

    def cached_store(self, bucket: str) -> sync.ObjectStore:
        """``store(bucket)``, bound once per process: later calls read no stream info."""
        return sync.ObjectStore(sync.run(shared_aio_store(self._shared_settings, bucket)))

    def forget_store(self, bucket: str) -> None:
        """Drop the cached binding (after deleting the bucket, say)."""
        _registry().forget_store(self._shared_settings, bucket)

    def delete_store(self, bucket: str) -> None:
        super().delete_store(bucket)
        self.forget_store(bucket)

    def close(self) -> None:
        """Leave the shared connection open for the rest of the process."""

    def __exit__(self, *exc: object) -> None:
        self.close()


def shared_client(settings: ConnectionSettings) -> SharedClient:
    """The blocking client on this process's connection for ``settings``."""
    return SharedClient(sync.run(shared_aio_client(settings)), settings)


def close_shared_clients(timeout: float = CLOSE_TIMEOUT) -> None:
    """Drain every shared connection of this process (at exit; tests may call it too)."""
    registry = _registries.get(os.getpid())
    if registry is None or not registry.clients:
        return
    try:
        sync.run(registry.close_all(), timeout)
    except Exception as exc:
        log.debug("closing shared NATS connections failed: %s", exc)


atexit.register(close_shared_clients)

__all__ = [
    "SharedClient",
    "close_shared_clients",
    "on_shared_loop",
    "settings_key",
    "shared_aio_client",
    "shared_aio_store",
    "shared_client",
]
