"""SIGKILL the server in the middle of a put and a get; restart it on the same data."""

from __future__ import annotations

import hashlib
import os
import time

import pytest

import natsobj

CHUNK = 64 * 1024


def killing_source(server, data: bytes, kill_after_chunks: int, bucket: str = "crash"):
    """Yields the data in chunks and SIGKILLs the server part way, like a crash mid-upload:
    once the server has stored some of the chunks already sent (on a loaded machine they may
    still be in flight), so the crash leaves orphan chunks behind. The stored count is asked
    through a connection of its own."""
    with natsobj.connect(server.url) as watcher:
        store = watcher.store(bucket)
        before = store.status().messages  # the meta record, an earlier version's chunks
        for index, start in enumerate(range(0, len(data), CHUNK)):
            if index == kill_after_chunks:
                deadline = time.monotonic() + 20
                while store.status().messages <= before:
                    assert time.monotonic() < deadline, "the server stored none of the chunks"
                    time.sleep(0.05)
                server.kill()
            yield data[start : start + CHUNK]


def wait_until_usable(
    client: natsobj.Client, bucket: str, timeout: float = 20.0
) -> natsobj.ObjectStore:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return client.store(bucket)
        except natsobj.NotConnected:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.parametrize("existing", [True, False], ids=["overwrite", "new-object"])
def test_sigkill_mid_put_leaves_previous_version_or_nothing(own_server, own_client, existing):
    store = own_client.create_store("crash")
    previous = os.urandom(300_000)
    if existing:
        store.put("artifact", previous)
    data = os.urandom(8 * 1024 * 1024)
    with pytest.raises(natsobj.NatsObjError):
        store.put("artifact", killing_source(own_server, data, 40), chunk_size=CHUNK)
    own_server.start()
    store = wait_until_usable(own_client, "crash")
    if existing:
        info = store.get_info("artifact")
        assert info.size == len(previous)
        assert store.get_bytes("artifact") == previous  # digest verified on read
    else:
        with pytest.raises(natsobj.ObjectNotFound):
            store.get_info("artifact")
    assert [i.name for i in store.list()] == (["artifact"] if existing else [])
    # the interrupted put's chunks are orphans: compaction finds and reclaims them
    result = store.compact(min_age=0)
    assert result.purged_messages > 0 and len(result.purged_subjects) == 1
    if existing:
        assert store.get_bytes("artifact") == previous


def test_sigkill_mid_get_raises_and_retry_succeeds(own_server, own_client):
    store = own_client.create_store("crashread")
    data = os.urandom(16 * 1024 * 1024)
    store.put("big", data, chunk_size=CHUNK)
    received = bytearray()
    with pytest.raises(natsobj.NatsObjError), store.get("big") as reader:
        for chunk in reader:
            received += chunk
            if len(received) >= 2 * 1024 * 1024 and own_server.process.poll() is None:
                own_server.kill()
    assert len(received) < len(data)  # it raised instead of returning short data
    own_server.start()
    store = wait_until_usable(own_client, "crashread")
    assert hashlib.sha256(store.get_bytes("big")).digest() == hashlib.sha256(data).digest()


def test_client_reconnects_after_restart_between_operations(own_server, own_client):
    store = own_client.create_store("reconnect")
    store.put("before", b"1")
    own_server.restart()
    store = wait_until_usable(own_client, "reconnect")
    store.put("after", b"2")
    assert sorted(i.name for i in store.list()) == ["after", "before"]
    assert store.get_bytes("before") == b"1"


def test_watch_survives_a_server_restart(own_server, own_client):
    store = own_client.create_store("watched")
    store.put("first", b"1")
    with store.watch(start="earliest") as watcher:
        assert watcher.next(5).name == "first"
        own_server.restart()
        wait_until_usable(own_client, "watched")
        store.put("second", b"2")
        change = watcher.next(30)  # the consumer is recreated after the last seen sequence
        assert change is not None and change.name == "second"
