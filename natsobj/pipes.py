"""Dagster Pipes over the object store, the external process's side: a message writer and a
context loader for ``open_dagster_pipes`` that need only ``dagster-pipes`` and natsobj.

A Spark driver (or any process Dagster launches) reports logs, materializations and asset
checks back to Dagster without installing Dagster: the context comes from the object the
orchestrator's ``dagster_natsobj.PipesNatsContextInjector`` put, and the messages go up as
numbered chunks ``<key_prefix>/<n>.json`` that ``dagster_natsobj.PipesNatsMessageReader``
polls, as dagster-pipes' S3 writer and dagster-aws' reader do with S3 keys. The names of the
params and of the chunks are defined here once, for both sides.

The connection is the process's own (``NATS_URL`` and the other ``NATS_*`` variables, or a
client passed in): the orchestrator passes only the bucket and the object names, never
credentials, as the S3 pair passes a bucket and keys but no AWS keys.
"""

from __future__ import annotations

from natsobj.extras import require_extra

require_extra("pipes", "natsobj.pipes")

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from dagster_pipes import (
    DagsterPipesError,
    PipesBlobStoreMessageWriter,
    PipesBlobStoreMessageWriterChannel,
    PipesContextData,
    PipesContextLoader,
    PipesParams,
)

from natsobj.errors import NatsObjError
from natsobj.settings import ConnectionSettings
from natsobj.shared import shared_client
from natsobj.sync import Client, ObjectStore

# The params both sides exchange; the same keys as dagster-aws' S3 reader and injector.
BUCKET_PARAM = "bucket"
KEY_PREFIX_PARAM = "key_prefix"  # where the message chunks go
KEY_PARAM = "key"  # the context object


def chunk_name(key_prefix: str, index: int) -> str:
    """The object holding message chunk ``index`` (counted from 1 on both sides)."""
    return f"{key_prefix}/{index}.json"


class PipesParamsMismatch(NatsObjError, DagsterPipesError):
    """The params Dagster passed lack what the natsobj writer or loader needs: the
    orchestration side uses another message reader or context injector. A ``DagsterPipesError``
    too, as dagster-pipes raises for params its own writers cannot use."""

    hint = (
        "Pair PipesNatsMessageWriter with dagster_natsobj.PipesNatsMessageReader and"
        " PipesNatsContextLoader with dagster_natsobj.PipesNatsContextInjector on the Dagster side."
    )


def _param(params: PipesParams, key: str, user: str) -> str:
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise PipesParamsMismatch(f"{user} found no {key!r} in the Dagster Pipes params {params}")
    return value


class _Connected:
    """A blocking client given by the user, or the process's shared one from the environment
    (opened on first use, so building the writer or loader connects nowhere)."""

    def __init__(self, client: Client | None) -> None:
        self._client = client

    def store(self, bucket: str) -> ObjectStore:
        client = self._client or shared_client(ConnectionSettings.from_env())
        return client.store(bucket)


class PipesNatsContextLoader(PipesContextLoader):
    """Reads the context Dagster's ``PipesNatsContextInjector`` put in the object store (the
    twin of dagster-pipes' ``PipesS3ContextLoader``).

    Args:
        client: the blocking natsobj client to read with; by default the process's shared
            connection from ``NATS_URL`` and the other ``NATS_*`` variables.
    """

    def __init__(self, client: Client | None = None) -> None:
        self._connected = _Connected(client)

    @contextmanager
    def load_context(self, params: PipesParams) -> Iterator[PipesContextData]:
        bucket = _param(params, BUCKET_PARAM, type(self).__name__)
        key = _param(params, KEY_PARAM, type(self).__name__)
        yield json.loads(self._connected.store(bucket).get_bytes(key))


class PipesNatsMessageWriter(PipesBlobStoreMessageWriter["PipesNatsMessageWriterChannel"]):
    """Sends the process's Pipes messages to Dagster as chunks in the object store, every
    ``interval`` seconds and when the process closes Pipes (the twin of dagster-pipes'
    ``PipesS3MessageWriter``). With the reader's ``include_stdio_in_messages``, stdout and
    stderr go along in the chunks.

    Args:
        client: the blocking natsobj client to write with; by default the process's shared
            connection from ``NATS_URL`` and the other ``NATS_*`` variables.
        interval: seconds between uploads of the messages buffered meanwhile.
    """

    def __init__(self, client: Client | None = None, *, interval: float = 10) -> None:
        super().__init__(interval=interval)
        self._connected = _Connected(client)

    def make_channel(self, params: PipesParams) -> PipesNatsMessageWriterChannel:
        user = type(self).__name__
        bucket = _param(params, BUCKET_PARAM, user)
        key_prefix = _param(params, KEY_PREFIX_PARAM, user)
        return PipesNatsMessageWriterChannel(
            self._connected.store(bucket), key_prefix, interval=self.interval
        )


class PipesNatsMessageWriterChannel(PipesBlobStoreMessageWriterChannel):
    """Puts each buffered batch of messages as the next numbered chunk."""

    def __init__(self, store: ObjectStore, key_prefix: str, *, interval: float = 10) -> None:
        super().__init__(interval=interval)
        self._store = store
        self._key_prefix = key_prefix

    def upload_messages_chunk(self, payload: IO[str], index: int) -> None:
        self._store.put(chunk_name(self._key_prefix, index), payload.read().encode())


__all__ = [
    "BUCKET_PARAM",
    "KEY_PARAM",
    "KEY_PREFIX_PARAM",
    "PipesNatsContextLoader",
    "PipesNatsMessageWriter",
    "PipesNatsMessageWriterChannel",
    "PipesParamsMismatch",
    "chunk_name",
]
