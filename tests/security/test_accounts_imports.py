"""ADR-19 across accounts, the positive side, under the configuration of issue 10: account A
owns the store, account I reaches it through the API prefix ``fromA`` and the inbox prefix
``forI``, with no ``response_type: stream`` on the API export. Every operation works there,
including those that read through a consumer (multi-chunk get, list, watch, changes), and the
official JavaScript client is run under the same configuration as the comparison."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

import natsobj
from natsobj.local.embedded import NatsServerProcess
from tests.core.test_interop_js import js
from tests.jetstream.test_prefix import two_accounts, url_for
from tests.security.support import PROMPT, stopwatch

PREFIXES = ("fromA", "forI")
# Several flow-control windows (the server asks every 1 MiB): deliveries, flow-control answers
# and acknowledgement subjects all cross the account boundary many times.
BIG = os.urandom(9 * 1024 * 1024 + 12345)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    with NatsServerProcess(tmp_path_factory.mktemp("imports"), config=two_accounts()) as server:
        yield server


@pytest.fixture
def shared(server: NatsServerProcess, bucket_name: str) -> Iterator[str]:
    """A store in account A, deleted afterwards by its owner."""
    with natsobj.connect(url_for(server, "a")) as owner:
        owner.create_store(bucket_name)
        yield bucket_name
        owner.delete_store(bucket_name)


def importer(server: NatsServerProcess, **options) -> natsobj.sync.Client:
    api_prefix, inbox_prefix = PREFIXES
    return natsobj.connect(
        url_for(server, "i"), api_prefix=api_prefix, inbox_prefix=inbox_prefix, **options
    )


def test_every_operation_from_the_importing_account(server, shared, tmp_path: Path):
    with importer(server) as client:
        store = client.store(shared)
        info = store.put("big.bin", BIG, metadata={"from": "I"})
        assert info.chunks > 70
        assert store.get_bytes("big.bin") == BIG
        assert store.get_file("big.bin", tmp_path / "big.bin").digest == info.digest
        assert (tmp_path / "big.bin").read_bytes() == BIG
        with store.get("big.bin") as reader:  # a slow reader: flow control holds the server
            first = reader.read(1000)
            rest = reader.read()
        assert first + rest == BIG
        store.put("small", b"s")
        assert sorted(i.name for i in store.list()) == ["big.bin", "small"]
        with store.watch() as watcher:
            initial = {watcher.next(10).name, watcher.next(10).name}
            assert initial == {"big.bin", "small"}
            store.update_meta("small", description="updated from I")
            assert watcher.next(10).description == "updated from I"
            store.delete("small")
            deleted = watcher.next(10)
            assert (deleted.name, deleted.deleted) == ("small", True)
        changes = store.changes(0, limit=100)  # meta records roll up: the latest per name
        assert [(c.name, c.deleted) for c in changes] == [("big.bin", False), ("small", True)]
        assert store.changes(changes.last_sequence).last_sequence == changes.last_sequence
        assert [i.name for i in store.list()] == ["big.bin"]
    # the owner reads exactly what the importer wrote, on the stream's own subjects
    with natsobj.connect(url_for(server, "a")) as owner:
        assert owner.store(shared).get_bytes("big.bin") == BIG


def test_the_javascript_client_under_the_same_configuration(server, shared, tmp_path: Path):
    """The comparison the issue names: nats.js gets and lists from account I with push
    consumers under the inbox prefix, and so do we. (nats.js publishes chunks to the bare
    ``$O`` subjects, without the API prefix, so its object is written from account A.)"""
    source = tmp_path / "from-js.bin"
    source.write_bytes(BIG)
    js("put", url_for(server, "a"), shared, "from-js", str(source))
    with importer(server) as client:
        store = client.store(shared)
        assert store.get_bytes("from-js") == BIG
        store.put("from-python", BIG[::-1])
        ours = sorted(i.name for i in store.list())
    url = url_for(server, "i")
    read_back = tmp_path / "read-by-js.bin"
    info = js("get", url, shared, "from-python", str(read_back), prefixes=PREFIXES)
    assert hashlib.sha256(read_back.read_bytes()).digest() == hashlib.sha256(BIG[::-1]).digest()
    assert info["size"] == len(BIG)
    assert sorted(js("list", url, shared, prefixes=PREFIXES)) == ours == ["from-js", "from-python"]


def test_missing_flow_control_import_is_named(tmp_path, bucket_name):
    """Without the ``$JS.FC.>`` import the server waits forever for our flow-control answers:
    the read says which import is missing instead of hanging."""
    config = two_accounts(import_flow_control=False)
    with NatsServerProcess(tmp_path, config=config) as server:
        with natsobj.connect(url_for(server, "a")) as owner:
            owner.create_store(bucket_name).put("big", BIG)
        with importer(server) as client:
            store = client.store(bucket_name)
            with stopwatch() as took, pytest.raises(natsobj.NotConnected) as err:
                store.get_bytes("big")
    assert "'$JS.FC.>'" in str(err.value)
    assert err.value.bucket == bucket_name
    assert took.seconds < PROMPT + 10, f"took {took.seconds:.1f}s"
