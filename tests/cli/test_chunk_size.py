"""A chunk size above the server's max_payload is refused before anything is sent, with the
limit named, instead of "check that the server is running" from a connection the server cut.
Against a real nats-server configured with a small max_payload."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

import natsobj
from natsobj.aio.put_pipeline import CHUNK_HEADER_ROOM
from natsobj.cli import cli
from natsobj.errors import ChunkTooLarge
from natsobj.local.embedded import NatsServerProcess

MAX_PAYLOAD = 65536
LIMIT = MAX_PAYLOAD - CHUNK_HEADER_ROOM


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    config = f"max_payload: {MAX_PAYLOAD}\n"
    with NatsServerProcess(tmp_path_factory.mktemp("small-payload"), config=config) as server:
        yield server


@pytest.fixture
def small_store(small_server, bucket_name) -> Iterator[natsobj.sync.ObjectStore]:
    with natsobj.connect(small_server.url) as client:
        yield client.create_store(bucket_name)
        client.delete_store(bucket_name)


@pytest.mark.parametrize("chunk_size", [2 * MAX_PAYLOAD, MAX_PAYLOAD, LIMIT + 1])
def test_cli_put_names_the_limit(small_server, small_store, tmp_path, chunk_size):
    source = tmp_path / "data.bin"
    source.write_bytes(os.urandom(3 * MAX_PAYLOAD))
    args = ["--url", small_server.url, "put", "--chunk-size", str(chunk_size)]
    result = CliRunner().invoke(cli, [*args, small_store.bucket, "data.bin", str(source)])
    assert result.exit_code != 0
    message = result.output
    assert "server is running" not in message
    assert f"max_payload is {MAX_PAYLOAD}" in message
    assert f"at most {LIMIT} bytes" in message
    assert "data.bin" in message and small_store.bucket in message
    assert small_store.status().messages == 0  # not one chunk was sent


def test_the_largest_chunk_size_allowed_works_and_the_store_stays_usable(small_store):
    data = os.urandom(3 * MAX_PAYLOAD)
    with pytest.raises(ChunkTooLarge):
        small_store.put("too-big", data, chunk_size=LIMIT + 1)
    small_store.put("limit", data, chunk_size=LIMIT)
    assert small_store.get_bytes("limit") == data
    # without a chunk size the default (128 KiB) shrinks to what this server takes
    info = small_store.put("default", data)
    assert info.chunk_size == LIMIT
    assert small_store.get_bytes("default") == data
