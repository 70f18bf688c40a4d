"""Atomic puts on a replicated store (3 nodes, R3), where the server stages a batch in
memory and proposes it once: small objects go as one batch by default
(``ATOMIC_MAX_BYTES_REPLICATED``), larger ones today's way, and both read back whole."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import natsobj
from natsobj.aio.atomic_put import ATOMIC_MAX_BYTES_REPLICATED
from natsobj.names import stream_name
from tests.cluster.harness import ClusterHarness
from tests.raw import RawJetStream

CHUNK = 64 * 1024


def test_replicated_store_puts_small_objects_atomically(connect_node, r3_bucket, node_urls):
    client = connect_node(0)
    store = client.store(r3_bucket)
    assert store.aio.atomic_max_bytes is None and store.aio.bucket_stream.replicas == 3
    small = os.urandom(ATOMIC_MAX_BYTES_REPLICATED)
    large = os.urandom(ATOMIC_MAX_BYTES_REPLICATED + 1)
    small_info = store.put("small", small)
    large_info = store.put("large", large)
    raw = RawJetStream(node_urls[1])
    try:
        headers = {
            info.name: raw.last_msg(f"$O.{r3_bucket}.C.{info.nuid}", r3_bucket).headers
            for info in (small_info, large_info)
        }
    finally:
        raw.close()
    assert "Nats-Batch-Id" in headers["small"]
    assert "Nats-Batch-Id" not in headers["large"]
    for name, data in (("small", small), ("large", large)):
        assert connect_node(2).store(r3_bucket).get_bytes(name) == data


class _KillingFile(io.FileIO):
    """A regular file (so the put can go atomically and be read again) that injects ``fault``
    on its ``at``-th read: mid-batch, however fast the machine is."""

    def __init__(self, path: Path, fault: Callable[[], object], at: int) -> None:
        super().__init__(path)
        self.fault, self.at, self.reads = fault, at, 0

    def read(self, size: int = -1) -> bytes:
        self.reads += 1
        if self.reads == self.at:
            self.fault()
        return super().read(size)


@pytest.mark.parametrize("connected_to", ["a follower", "the leader"])
def test_an_atomic_put_rides_out_a_leader_kill(
    cluster: ClusterHarness, r3_bucket: str, connected_to: str, tmp_path: Path
) -> None:
    """The leader dies mid-batch: the staged batch dies with it (nothing of it is stored),
    and the put goes today's way, which waits for the new leader."""
    leader = cluster.leader_of(stream_name(r3_bucket))
    follower = next(i for i in range(len(cluster.nodes)) if i != leader)
    url = cluster.url if connected_to == "the leader" else cluster.urls[follower]
    with natsobj.connect(url) as client:
        store = client.store(r3_bucket)
        store.aio.atomic_max_bytes = 1 << 40
        previous = store.put("obj", b"previous version")
        path = tmp_path / "src.bin"
        data = os.urandom(40 * CHUNK)
        path.write_bytes(data)
        with _KillingFile(path, lambda: cluster.kill(leader), at=10) as handle:
            info = store.put("obj", handle, chunk_size=CHUNK)
        assert not cluster.is_running(leader)
        assert info.size == len(data)
        assert store.get_bytes("obj") == data
        status = store.status()
        assert status.messages == info.chunks + 1  # the new version only: nothing twice
        assert store.compact(min_age=0).purged_messages == 0  # no orphans
        assert previous.nuid != info.nuid
