"""One core client per NATS identity the access keys act as, connected on first use.

Keys without identity fields share the gateway's own connection; keys naming the same identity
share one connection too. NATS permissions of that identity decide what the key may do: the
gateway adds no rights of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from natsobj.aio import Client, connect
from natsobj.s3.access_keys import AccessKey, Credentials
from natsobj.settings import ConnectionSettings


class ClientPool:
    """The connections of the gateway's identities; ``close`` ends them all."""

    def __init__(self, settings: ConnectionSettings, credentials: Credentials) -> None:
        self.settings = settings
        self.keys: Mapping[str, AccessKey] = dict(credentials.keys)
        self.anonymous = credentials.anonymous
        self.seal_key = credentials.seal_key
        self._clients: dict[tuple[tuple[str, str], ...], asyncio.Task[Client]] = {}

    def secret_of(self, access_key: str) -> str | None:
        key = self.keys.get(access_key)
        return key.secret if key is not None else None

    async def client(self, access_key: str) -> Client:
        """The connection ``access_key`` acts through (one connect, however many ask at once;
        a failed connect is forgotten, so the next request tries again)."""
        return await self._client(self.keys[access_key])

    async def anonymous_client(self) -> Client | None:
        """The connection unsigned requests act through; None when the credentials file has
        no ``[anonymous]`` table (every unsigned request is then refused)."""
        return None if self.anonymous is None else await self._client(self.anonymous)

    async def own_client(self) -> Client:
        """The gateway's own connection (its root connection options), which readiness asks."""
        return await self._client(AccessKey("", ""))

    def connections(self) -> list[Any]:
        """The NATS connections made so far (nats-py clients), for the metrics to sample."""
        return [
            task.result().nc
            for task in self._clients.values()
            if task.done() and not task.cancelled() and task.exception() is None
        ]

    async def _client(self, key: AccessKey) -> Client:
        identity = tuple(sorted(key.identity.items()))
        task = self._clients.get(identity)
        if task is None:
            task = asyncio.ensure_future(connect(key.settings(self.settings)))
            self._clients[identity] = task
        try:
            return await asyncio.shield(task)
        except BaseException:
            if task.done() and (task.cancelled() or task.exception() is not None):
                self._clients.pop(identity, None)
            raise

    async def close(self) -> None:
        tasks, self._clients = list(self._clients.values()), {}
        for task in tasks:
            if not task.done():
                task.cancel()
            elif not task.cancelled() and task.exception() is None:
                await task.result().close()
