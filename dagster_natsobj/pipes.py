"""Dagster Pipes over the object store, Dagster's side: the message reader and context injector
an asset hands to ``PipesSubprocessClient`` (or ``open_pipes_session``) so that the process it
launches, a ``spark-submit`` say, reports back through NATS.

The twins of dagster-aws' ``PipesS3MessageReader`` and ``PipesS3ContextInjector``, with the
same params, so the process's side is ``natsobj.pipes`` (``PipesNatsMessageWriter``,
``PipesNatsContextLoader``), which needs only dagster-pipes and natsobj. The connection is the
``NatsObjectStoreResource``'s; the bucket is created on first use with the resource's
``bucket_settings``, as the IO manager's is. What a session puts is removed when it ends: the
context object when the process is done with it, the message chunks once they are read.

Each session's params carry a fresh secret that seals the context and the process's messages
(``natsobj.pipes.seal``); it reaches the process in its launch environment and never enters
the bucket. The reader takes only chunks sealed with it, in sequence: a forged, replayed or
malformed chunk is reported in the step's log (which object, why) and never stops the reading.
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
from dagster_pipes import (
    PIPES_PROTOCOL_VERSION,
    PIPES_PROTOCOL_VERSION_FIELD,
    PipesBlobStoreMessageWriter,
    PipesContextData,
    PipesParams,
)

from dagster_natsobj.resource import NatsObjectStoreResource
from natsobj.errors import BucketNotFound, NatsObjError, ObjectNotFound
from natsobj.pipes import (
    BUCKET_PARAM,
    CONTEXT_SEQUENCE,
    KEY_PARAM,
    KEY_PREFIX_PARAM,
    SECRET_PARAM,
    chunk_name,
    new_secret,
    seal,
    unseal,
)

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
        secret = new_secret()
        with self.resource.get_store(self.bucket, create=True) as store:
            store.put(key, seal(secret, key, CONTEXT_SEQUENCE, json.dumps(context_data)))
            try:
                yield {BUCKET_PARAM: self.bucket, KEY_PARAM: key, SECRET_PARAM: secret}
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

    A chunk not sealed with the session's secret for its place in the sequence is reported as
    a warning in the step's log, once, and waited on: the process's own chunk replaces a
    planted one. Once the next chunk is an authentic one, the bad chunk is given up (its
    messages, if the process sent any, are lost, and the warning says so).

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
        self._reported: set[int] = set()  # the chunks already reported as bad

    @contextmanager
    def get_params(self) -> Iterator[PipesParams]:
        key_prefix = session_prefix()
        self.counter = 1
        self._reported = set()
        with self.resource.get_store(self.bucket, create=True) as store:
            try:
                yield {
                    BUCKET_PARAM: self.bucket,
                    KEY_PREFIX_PARAM: key_prefix,
                    SECRET_PARAM: new_secret(),
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

    def download_messages(self, cursor: int | None, params: PipesParams) -> tuple[int, str] | None:
        """The next chunk's messages; for a bad chunk, a warning naming it (the counter stays,
        unless the chunk after it is authentic, which proves the process has moved on)."""
        index = self.counter
        try:
            text = self.download_messages_chunk(index, params)
        except NatsObjError as exc:
            if index in self._reported:
                text = self._authentic_successor(index, params)
                if text is None:
                    return None
                self.counter = index + 2
                return self.counter, text
            self._reported.add(index)
            return self.counter, _warning(f"[pipes] ignored message chunk {index}: {exc}")
        if text is None:
            return None
        self.counter = index + 1
        return self.counter, text

    def _authentic_successor(self, index: int, params: PipesParams) -> str | None:
        """The text of chunk ``index + 1`` when it is authentic, prefixed with a warning that
        chunk ``index`` is given up; None while it is missing or bad too."""
        try:
            text = self.download_messages_chunk(index + 1, params)
        except NatsObjError:
            return None
        if text is None:
            return None
        lost = _warning(
            f"[pipes] gave up message chunk {index}: the process wrote chunk {index + 1}"
        )
        return f"{lost}\n{text}"

    def download_messages_chunk(self, index: int, params: PipesParams) -> str | None:
        """Chunk ``index``'s messages; None while it is missing. Raises a ``NatsObjError``
        (``PipesObjectForged`` for a chunk the process did not seal) for a bad one."""
        name = chunk_name(params[KEY_PREFIX_PARAM], index)
        try:
            with self.resource.get_store(self.bucket) as store:
                data = store.get_bytes(name)
        except ObjectNotFound:
            return None
        return unseal(params[SECRET_PARAM], self.bucket, name, index, data)

    def no_messages_debug_text(self) -> str:
        return (
            f"Attempted to read messages from NATS bucket {self.bucket!r}. Expected"
            " natsobj.pipes.PipesNatsMessageWriter to be passed to open_dagster_pipes in the"
            " external process."
        )


def _warning(text: str) -> str:
    """A Pipes log message at level WARNING: how the reader's own reports reach the step's
    log through the same handler as the process's messages."""
    message = {
        PIPES_PROTOCOL_VERSION_FIELD: PIPES_PROTOCOL_VERSION,
        "method": "log",
        "params": {"message": text, "level": "WARNING"},
    }
    return json.dumps(message)


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
