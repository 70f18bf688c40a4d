"""JetStream API replies are not bounded by the server's max_payload: a page of subject state
(the listing's STREAM.INFO) grows with the names in the bucket. The client's check on what a
server announces (natsobj.aio.jetstream.socket_reads) must let such a reply through; against a real
nats-server with a small max_payload, so one page exceeds it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import natsobj
from natsobj.local.embedded import NatsServerProcess
from natsobj.sync import run

MAX_PAYLOAD = 65536
NAMES = [f"reports/{'n' * 200}/{i:05d}.csv" for i in range(1_000)]  # a page of ~290 KB


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    config = f"max_payload: {MAX_PAYLOAD}\n"
    with NatsServerProcess(tmp_path_factory.mktemp("small-payload"), config=config) as server:
        yield server


def test_a_listing_page_larger_than_max_payload_is_read(small_server, bucket_name) -> None:
    """make bench's 50,000-object listing met ProtocolViolation ('announced a 2251099-byte
    message, more than its own max_payload'): the server's own reply, refused as hostile."""
    with natsobj.connect(small_server.url) as client:
        store = client.create_store(bucket_name)
        for name in NAMES:
            store.put(name, b"x")

        listed = [info.name for info in store.list()]
        page = run(store.aio.bucket_stream.info(subjects_filter=f"$O.{bucket_name}.M.>"))

        assert sorted(listed) == NAMES
        assert len(page.state.subjects) == len(NAMES)
