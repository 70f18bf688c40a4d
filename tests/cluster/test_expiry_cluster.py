"""Per-object expiry on a 3-node R3 cluster (issue 23): the expiry happens once (one delete
marker, seen once by a watcher on a follower and once by changes()), and a read on a
follower after the expiry is ObjectNotFound, never the expired record or part of it."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest

import natsobj
from natsobj.errors import ObjectNotFound
from natsobj.names import stream_name
from tests.cluster.harness import ClusterHarness

DATA = bytes(range(256)) * 1024  # two chunks


def test_expiry_happens_once_and_followers_read_not_found(
    cluster: ClusterHarness, connect_node: Callable[..., natsobj.Client]
) -> None:
    bucket = f"x{uuid.uuid4().hex[:12]}"
    admin = connect_node(0)
    admin.create_store(bucket, replicas=3, delete_marker_ttl=4)
    try:
        leader = cluster.leader_of(stream_name(bucket))
        follower = next(i for i in range(len(cluster.nodes)) if i != leader)
        writer = connect_node(leader).store(bucket)
        # eventual reads: direct gets answered by the follower's own replica
        reader = connect_node(follower, consistency="eventual").store(bucket)
        start = writer.status().last_sequence
        with reader.watch(start="latest") as watcher:
            put = writer.put("scratch.bin", DATA, ttl=4)
            assert reader.get_bytes("scratch.bin", min_sequence=put.sequence) == DATA
            seen = []
            deadline = time.monotonic() + 8
            while time.monotonic() < deadline:
                change = watcher.next(timeout=0.5)
                if change is not None:
                    seen.append((change.name, change.deleted, change.expired))
                    if change.deleted:  # a second one would come within the marker's 4 s
                        deadline = min(deadline, time.monotonic() + 1.5)
        assert seen == [("scratch.bin", False, False), ("scratch.bin", True, True)]

        for store in (reader, writer):
            with pytest.raises(ObjectNotFound):
                store.get_info("scratch.bin")
            with pytest.raises(ObjectNotFound):
                store.get_bytes("scratch.bin")
            assert store.list() == []
        expired = [c for c in writer.changes(start) if c.deleted]
        assert [(c.name, c.expired) for c in expired] == [("scratch.bin", True)]  # one marker
    finally:
        admin.delete_store(bucket)
