"""One core client per NATS identity the access keys act as, connected on first use.

Keys without identity fields share the gateway's own connection; keys naming the same identity
share one connection too. NATS permissions of that identity decide what the key may do: the
gateway adds no rights of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from natsobj.aio import Client, connect
from natsobj.gateway_keys import AccessKey
from natsobj.settings import ConnectionSettings


class ClientPool:
    """The connections of the gateway's identities; ``close`` ends them all."""

    def __init__(self, settings: ConnectionSettings, keys: Mapping[str, AccessKey]) -> None:
        self.settings = settings
        self.keys = dict(keys)
        self._clients: dict[tuple[tuple[str, str], ...], asyncio.Task[Client]] = {}

    def secret_of(self, access_key: str) -> str | None:
        key = self.keys.get(access_key)
        return key.secret if key is not None else None

    async def client(self, access_key: str) -> Client:
        """The connection ``access_key`` acts through (one connect, however many ask at once;
        a failed connect is forgotten, so the next request tries again)."""
        key = self.keys[access_key]
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
