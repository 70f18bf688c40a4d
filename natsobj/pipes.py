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

A writer of the bucket is not trusted to speak for either side. Each session's params carry a
fresh secret (``secret``), which goes to the process in its launch environment and never into
the bucket; the context object and every message chunk are sealed with it (``seal``): an
HMAC-SHA256 over the object's name, its sequence number and its text. The job refuses a
context that does not open with the secret (``PipesObjectForged``), and Dagster's reader
reports a chunk that does not and goes on (``dagster_natsobj.pipes``).
"""

from __future__ import annotations

from natsobj.extras import require_extra

require_extra("pipes", "natsobj.pipes")

import hashlib
import hmac
import json
import secrets
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
SECRET_PARAM = "secret"  # the session's sealing key: in the launch environment, never stored
CONTEXT_SEQUENCE = 0  # the context's place in the session's sequence; the chunks count from 1
_SEAL_VERSION = 1


def chunk_name(key_prefix: str, index: int) -> str:
    """The object holding message chunk ``index`` (counted from 1 on both sides)."""
    return f"{key_prefix}/{index}.json"


def new_secret() -> str:
    """A session's sealing key: 256 random bits, text so that it fits in the params."""
    return secrets.token_urlsafe(32)


class PipesObjectForged(NatsObjError, DagsterPipesError):
    """A Pipes object (the context or a message chunk) is not what the session's other side
    sealed: someone else wrote it, it was moved from another name or place in the sequence, or
    it is not a sealed object at all. A ``DagsterPipesError`` too, so the job stops as it does
    for any Pipes failure."""

    hint = (
        "Some other writer of the bucket replaced or planted it; check who may publish to the"
        " bucket."
    )


def _mac(secret: str, name: str, sequence: int, text: str) -> str:
    signed = json.dumps([_SEAL_VERSION, name, sequence, text], separators=(",", ":"))
    return hmac.new(secret.encode(), signed.encode(), hashlib.sha256).hexdigest()


def seal(secret: str, name: str, sequence: int, text: str) -> bytes:
    """The object to store as ``name``: ``text`` with its sequence number and the MAC that
    binds both to the name under the session's secret."""
    sealed = {
        "natsobj_pipes": _SEAL_VERSION,
        "seq": sequence,
        "text": text,
        "mac": _mac(secret, name, sequence, text),
    }
    return json.dumps(sealed, separators=(",", ":")).encode()


def unseal(secret: str, bucket: str, name: str, sequence: int, data: bytes) -> str:
    """The text ``seal`` put in ``data``, read from ``name`` expecting ``sequence``; raises
    ``PipesObjectForged`` saying why when the object is not exactly that."""

    def forged(why: str) -> PipesObjectForged:
        return PipesObjectForged(
            f"the Pipes object is not what this session wrote: {why}", bucket=bucket, name=name
        )

    try:
        sealed = json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise forged("it is not JSON") from None
    if not isinstance(sealed, dict) or sealed.get("natsobj_pipes") != _SEAL_VERSION:
        raise forged("it is not a sealed Pipes object (no natsobj_pipes envelope)")
    text, mac, seq = sealed.get("text"), sealed.get("mac"), sealed.get("seq")
    if not isinstance(text, str) or not isinstance(mac, str) or type(seq) is not int:
        raise forged("its envelope lacks text, seq or mac")
    if not hmac.compare_digest(mac.encode(), _mac(secret, name, seq, text).encode()):
        raise forged("its MAC does not match under the session's secret")
    if seq != sequence:
        raise forged(f"it is number {seq} of the session's sequence, expected {sequence}")
    return text


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
        # the names only: a value may be the session's secret
        raise PipesParamsMismatch(
            f"{user} found no {key!r} in the Dagster Pipes params (it has {sorted(params)})"
        )
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
        user = type(self).__name__
        bucket = _param(params, BUCKET_PARAM, user)
        key = _param(params, KEY_PARAM, user)
        secret = _param(params, SECRET_PARAM, user)
        data = self._connected.store(bucket).get_bytes(key)
        yield json.loads(unseal(secret, bucket, key, CONTEXT_SEQUENCE, data))


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
        secret = _param(params, SECRET_PARAM, user)
        return PipesNatsMessageWriterChannel(
            self._connected.store(bucket), key_prefix, secret, interval=self.interval
        )


class PipesNatsMessageWriterChannel(PipesBlobStoreMessageWriterChannel):
    """Puts each buffered batch of messages as the next numbered chunk, sealed with the
    session's secret."""

    def __init__(
        self, store: ObjectStore, key_prefix: str, secret: str, *, interval: float = 10
    ) -> None:
        super().__init__(interval=interval)
        self._store = store
        self._key_prefix = key_prefix
        self._secret = secret

    def upload_messages_chunk(self, payload: IO[str], index: int) -> None:
        name = chunk_name(self._key_prefix, index)
        self._store.put(name, seal(self._secret, name, index, payload.read()))


__all__ = [
    "BUCKET_PARAM",
    "CONTEXT_SEQUENCE",
    "KEY_PARAM",
    "KEY_PREFIX_PARAM",
    "SECRET_PARAM",
    "PipesNatsContextLoader",
    "PipesNatsMessageWriter",
    "PipesNatsMessageWriterChannel",
    "PipesObjectForged",
    "PipesParamsMismatch",
    "chunk_name",
    "new_secret",
    "seal",
    "unseal",
]
