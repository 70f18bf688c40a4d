"""A change feed's cursor kept in NATS itself, for a face whose orchestrator has nowhere to
keep it: Airflow's triggers have an asset state store only from 3.3.2, and a trigger that
keeps its place in memory alone fires again, after a triggerer restart, for every change
its ``start_at`` covers.

The cursors live in one key-value bucket (``CURSORS_BUCKET``, one value per key, created on
first use) of the connection's JetStream, under the key the face would give its own store.
The accessors are those of Airflow's asset state store (``aget``/``aset``), so a face's
cursor logic does not ask where its cursor is kept. A connection that may not create or use
the bucket gets the server's refusal as a ``NatsObjError`` naming the bucket.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import nats.errors
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from natsobj.errors import NatsObjError

if TYPE_CHECKING:
    from natsobj.aio.client import Client

CURSORS_BUCKET = "natsobj_cursors"
_NOT_A_KEY_CHARACTER = re.compile(r"[^-/_=.a-zA-Z0-9]")


def kv_key(key: str) -> str:
    """``key`` as a NATS KV key: the characters a key may not hold become ``.``."""
    return _NOT_A_KEY_CHARACTER.sub(".", key)


class NatsCursorKeeper:
    """``aget``/``aset`` of cursors, by key, in ``CURSORS_BUCKET`` over ``client``."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._kv: KeyValue | None = None

    async def _bucket(self) -> KeyValue:
        if self._kv is None:
            js = self._client.nc.jetstream(prefix=self._client.api.prefix)
            try:
                self._kv = await js.key_value(CURSORS_BUCKET)
            except NotFoundError:
                self._kv = await js.create_key_value(
                    KeyValueConfig(
                        bucket=CURSORS_BUCKET,
                        history=1,
                        description="natsobj change-feed cursors (natsobj.orchestration)",
                    )
                )
        return self._kv

    async def aget(self, key: str) -> str | None:
        try:
            entry = await (await self._bucket()).get(kv_key(key))
        except KeyNotFoundError:
            return None
        except (nats.errors.Error, TimeoutError) as exc:
            raise _failed("read", key, exc) from exc
        return entry.value.decode() if entry.value else None

    async def aset(self, key: str, value: str) -> None:
        try:
            await (await self._bucket()).put(kv_key(key), value.encode())
        except (nats.errors.Error, TimeoutError) as exc:
            raise _failed("store", key, exc) from exc


def _failed(what: str, key: str, exc: Exception) -> NatsObjError:
    return NatsObjError(
        f"could not {what} the change-feed cursor {key!r} (key-value bucket): "
        f"{exc or type(exc).__name__}",
        bucket=CURSORS_BUCKET,
    )
