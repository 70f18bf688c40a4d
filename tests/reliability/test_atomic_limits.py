"""The server's atomic-batch limits, set low in its configuration: a put the server turns
away (too many messages in the batch, a batch dropped after a stall) stores nothing of the
batch and goes today's way instead."""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Iterator

import pytest

import natsobj
from natsobj.local.embedded import NatsServerProcess
from tests.raw import RawJetStream

CHUNK = 16 * 1024
LIMITS = """
jetstream {
  limits {
    batch { max_msgs: 10, timeout: "1s" }
  }
}
"""


@pytest.fixture
def limited_server(tmp_path) -> Iterator[NatsServerProcess]:
    server = NatsServerProcess(tmp_path / "server", config=LIMITS)
    server.start()
    yield server
    server.kill()


@pytest.fixture
def limited_store(limited_server) -> Iterator[natsobj.ObjectStore]:
    client = natsobj.connect(limited_server.url, put_window_bytes=2 * CHUNK)
    store = client.create_store("limited")
    store.aio.atomic_max_bytes = 1 << 40
    yield store
    client.close()


@pytest.fixture
def batched(limited_server) -> Iterator[Callable[[natsobj.ObjectInfo], bool]]:
    """Whether an object's chunks came in an atomic batch (the server keeps its headers)."""
    raw = RawJetStream(limited_server.url)

    def check(info: natsobj.ObjectInfo) -> bool:
        return "Nats-Batch-Id" in raw.last_msg(f"$O.limited.C.{info.nuid}", "limited").headers

    yield check
    raw.close()


def test_within_the_limit_the_put_is_one_batch(limited_store, batched):
    data = os.urandom(5 * CHUNK)
    info = limited_store.put("small", data, chunk_size=CHUNK)
    assert limited_store.get_bytes("small") == data and batched(info)


def test_more_messages_than_the_server_takes_go_todays_way(limited_store, batched):
    data = os.urandom(20 * CHUNK)  # 20 chunks + the record: the server takes 10
    info = limited_store.put("large", data, chunk_size=CHUNK)
    assert limited_store.get_bytes("large") == data
    assert not batched(info)
    assert limited_store.status().messages == 21  # nothing of the refused batch


class _Stalling(io.FileIO):
    """A regular file whose fifth read stalls past the server's batch timeout: by then the
    put has waited for acknowledgements (its window is two chunks), so the server holds the
    batch's first chunks."""

    reads = 0

    def read(self, size: int = -1) -> bytes:
        _Stalling.reads += 1
        if _Stalling.reads == 5:
            time.sleep(1.5)
        return super().read(size)


def test_a_batch_dropped_after_a_stall_goes_todays_way(limited_store, batched, tmp_path):
    path = tmp_path / "src.bin"
    data = os.urandom(6 * CHUNK)
    path.write_bytes(data)
    with _Stalling(path) as handle:
        info = limited_store.put("stalled", handle, chunk_size=CHUNK)
    assert limited_store.get_bytes("stalled") == data
    assert not batched(info)
    assert limited_store.status().messages == 7  # six chunks and the record, once
