"""Where the change trigger's cursor is kept on the installed Airflow, for the tests that read
it: the triggerer's asset state store from 3.3.2, NATS (``natsobj.orchestration.cursor_keeper``)
before. The tests run on both and read the place that Airflow's trigger uses."""

from __future__ import annotations

import asyncio
from typing import Any

from airflow_natsobj.triggers.object_store import NatsObjectChangeTrigger

import natsobj
from natsobj.orchestration.cursor_keeper import NatsCursorKeeper

# What the trigger itself asks: 3.3.2's BaseEventTrigger sets the attribute the triggerer fills.
HAS_ASSET_STATE_STORE = hasattr(NatsObjectChangeTrigger(bucket="b"), "asset_state_store")


class NatsCursors:
    """``aget``/``aset`` of the cursors a trigger keeps in NATS, each over a connection of its
    own, as another process reads them."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def aget(self, key: str, default: Any = None) -> Any:
        async with await natsobj.aio.connect(self.url) as client:
            found = await NatsCursorKeeper(client).aget(key)
        return default if found is None else found

    async def aset(self, key: str, value: Any) -> None:
        async with await natsobj.aio.connect(self.url) as client:
            await NatsCursorKeeper(client).aset(key, str(value))


def cursor_in_nats(url: str, key: str) -> str | None:
    """The cursor stored under ``key`` in NATS, read from a thread without an event loop."""
    return asyncio.run(NatsCursors(url).aget(key))
