"""Atomic puts on a replicated store (3 nodes, R3), where the server stages a batch in
memory and proposes it once: small objects go as one batch by default
(``ATOMIC_MAX_BYTES_REPLICATED``), larger ones today's way, and both read back whole."""

from __future__ import annotations

import os

from natsobj.aio.atomic_put import ATOMIC_MAX_BYTES_REPLICATED
from tests.raw import RawJetStream


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
