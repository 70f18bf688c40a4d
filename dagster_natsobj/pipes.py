"""Dagster Pipes over the object store, Dagster's side: the message reader and context injector
an asset hands to ``PipesSubprocessClient`` (or ``open_pipes_session``) so that the process it
launches, a ``spark-submit`` say, reports back through NATS.

The twins of dagster-aws' ``PipesS3MessageReader`` and ``PipesS3ContextInjector``, with the
same params, so the process's side is ``natsobj.pipes`` (``PipesNatsMessageWriter``,
``PipesNatsContextLoader``), which needs only dagster-pipes and natsobj. The connection is the
``NatsObjectStoreResource``'s; the bucket is created on first use with the resource's
``bucket_settings``, as the IO manager's is. What a session puts is removed when it ends: the
context object when the process is done with it, the message chunks once they are read.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO

from dagster import PipesBlobStoreMessageReader, PipesContextInjector, PipesLogReader
from dagster._core.pipes.utils import PipesChunkedLogReader
from dagster_pipes import PipesBlobStoreMessageWriter, PipesContextData, PipesParams

from dagster_natsobj.resource import NatsObjectStoreResource
from natsobj.errors import BucketNotFound, ObjectNotFound
from natsobj.pipes import BUCKET_PARAM, KEY_PARAM, KEY_PREFIX_PARAM, chunk_name

CONTEXT_OBJECT = "context.json"  # under the session's own prefix, as dagster-aws names it


def session_prefix() -> str:
    """A prefix no other session uses, so that sessions can share a bucket."""
    return uuid.uuid4().hex


class PipesNatsContextInjector(PipesContextInjector):
    """Puts the run's Pipes context in ``bucket`` for the process to read with
    ``natsobj.pipes.PipesNatsContextLoader``, and deletes it when the session ends.

    Args:
        bucket: the bucket the context object goes to.
        resource: the connection.
    """

    def __init__(self, *, bucket: str, resource: NatsObjectStoreResource) -> None:
        super().__init__()
        self.bucket = bucket
        self.resource = resource

    @contextmanager
    def inject_context(self, context_data: PipesContextData) -> Iterator[PipesParams]:
        key = f"{session_prefix()}/{CONTEXT_OBJECT}"
        with self.resource.get_store(self.bucket, create=True) as store:
            store.put(key, json.dumps(context_data).encode())
            try:
                yield {BUCKET_PARAM: self.bucket, KEY_PARAM: key}
            finally:
                store.delete(key)

    def no_messages_debug_text(self) -> str:
        return (
            f"Attempted to inject context through an object in NATS bucket {self.bucket!r}."
            " Expected natsobj.pipes.PipesNatsContextLoader to be passed to open_dagster_pipes"
            " in the external process."
        )


class PipesNatsMessageReader(PipesBlobStoreMessageReader):
    """Reads the chunks ``natsobj.pipes.PipesNatsMessageWriter`` puts in ``bucket``, polling
    every ``interval`` seconds while the process runs and once a second after it ended until
    its closing message arrives. The chunks are deleted when the session ends.

    Args:
        bucket: the bucket the process writes its messages to.
        resource: the connection.
        interval: seconds between polls while the process runs.
        log_readers: readers of the process's logs, started once their target is readable.
        include_stdio_in_messages: whether the process sends its stdout and stderr along with
            its messages (they then show in the step's logs).
    """

    def __init__(
        self,
        *,
        bucket: str,
        resource: NatsObjectStoreResource,
        interval: float = 10,
        log_readers: Sequence[PipesLogReader] | None = None,
        include_stdio_in_messages: bool = False,
    ) -> None:
        super().__init__(interval=interval, log_readers=log_readers)
        self.bucket = bucket
        self.resource = resource
        self.include_stdio_in_messages = include_stdio_in_messages

    @contextmanager
    def get_params(self) -> Iterator[PipesParams]:
        key_prefix = session_prefix()
        with self.resource.get_store(self.bucket, create=True) as store:
            try:
                yield {
                    BUCKET_PARAM: self.bucket,
                    KEY_PREFIX_PARAM: key_prefix,
                    PipesBlobStoreMessageWriter.INCLUDE_STDIO_IN_MESSAGES_KEY: (
                        self.include_stdio_in_messages
                    ),
                }
            finally:
                # the reading threads have ended: every chunk there is read or never will be
                for info in store.list(prefix=f"{key_prefix}/"):
                    store.delete(info.name)

    def messages_are_readable(self, params: PipesParams) -> bool:
        try:
            with self.resource.get_store(self.bucket) as store:
                store.get_info(chunk_name(params[KEY_PREFIX_PARAM], 1))
        except ObjectNotFound:
            return False
        return True

    def download_messages_chunk(self, index: int, params: PipesParams) -> str | None:
        try:
            with self.resource.get_store(self.bucket) as store:
                data = store.get_bytes(chunk_name(params[KEY_PREFIX_PARAM], index))
        except ObjectNotFound:
            return None
        return data.decode()

    def no_messages_debug_text(self) -> str:
        return (
            f"Attempted to read messages from NATS bucket {self.bucket!r}. Expected"
            " natsobj.pipes.PipesNatsMessageWriter to be passed to open_dagster_pipes in the"
            " external process."
        )


class PipesNatsLogReader(PipesChunkedLogReader):
    """Tails a log object that the process (or what runs it) puts again and again as it grows,
    writing what is new since the last read to ``target_stream`` (the twin of dagster-aws'
    ``PipesS3LogReader``). Started once the object exists; pass it in the message reader's
    ``log_readers``.

    Args:
        bucket: the bucket holding the log object.
        key: the log object's name.
        resource: the connection.
        interval: seconds between reads.
        target_stream: where the text goes; stdout by default.
        decode_fn: bytes of the object to text (UTF-8 by default; ``gzip`` logs need one).
        debug_info: added to the warning Dagster gives when the object never appears.
    """

    def __init__(
        self,
        *,
        bucket: str,
        key: str,
        resource: NatsObjectStoreResource,
        interval: float = 10,
        target_stream: IO[str] | None = None,
        decode_fn: Callable[[bytes], str] | None = None,
        debug_info: str | None = None,
    ) -> None:
        super().__init__(
            interval=interval, target_stream=target_stream or sys.stdout, debug_info=debug_info
        )
        self.bucket = bucket
        self.key = key
        self.resource = resource
        self.decode_fn = decode_fn or bytes.decode
        self.log_position = 0

    @property
    def name(self) -> str:
        return f"PipesNatsLogReader(nats://{self.bucket}/{self.key})"

    def target_is_readable(self, params: PipesParams) -> bool:
        try:
            with self.resource.get_store(self.bucket) as store:
                store.get_info(self.key)
        except (BucketNotFound, ObjectNotFound):
            return False
        return True

    def download_log_chunk(self, params: PipesParams) -> str | None:
        with self.resource.get_store(self.bucket) as store:
            text = self.decode_fn(store.get_bytes(self.key))
        new, self.log_position = text[self.log_position :], len(text)
        return new
