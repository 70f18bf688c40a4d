"""Put failover: SIGKILL of the stream leader mid-put, a follower, the quorum, the whole
cluster. The put finishes on its own, nothing is stored twice, the previous version survives."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterator

import pytest

import natsobj
from natsobj.names import chunk_subject, stream_name
from natsobj.sync import run
from tests.cluster.harness import ClusterHarness

BIG = 64 * 1024 * 1024
KILL_AFTER = 0.15


def _chunk_count(client: natsobj.Client, bucket: str, nuid: str) -> int:
    """Messages on one put's chunk subject, as the stream leader counts them."""
    reply = run(
        client.aio.api.call(
            f"STREAM.INFO.{stream_name(bucket)}",
            {"subjects_filter": chunk_subject(bucket, nuid)},
        )
    )
    return sum((reply["state"].get("subjects") or {}).values())


def _put_while(
    store: natsobj.ObjectStore, name: str, data: bytes, fault: Callable[[], object]
) -> natsobj.ObjectInfo:
    """Put ``data`` and inject ``fault`` KILL_AFTER seconds into it; the put's result."""
    timer = threading.Timer(KILL_AFTER, fault)
    timer.start()
    try:
        return store.put(name, data)
    finally:
        timer.join()


def _pieces_then(data: bytes, fault: Callable[[], object], after: int) -> Iterator[bytes]:
    """``data`` in 1 MiB pieces, with ``fault`` injected once ``after`` pieces were handed to
    the put: the fault lands mid-put however fast the machine is (a timer can miss a short
    put on a quiet machine)."""
    piece = 1024 * 1024
    for index, start in enumerate(range(0, len(data), piece)):
        if index == after:
            fault()
        yield data[start : start + piece]


def _node_other_than(cluster: ClusterHarness, index: int) -> int:
    return next(i for i in range(len(cluster.nodes)) if i != index)


@pytest.mark.parametrize("connected_to", ["a follower", "the leader"])
def test_put_completes_when_the_leader_is_killed(
    cluster: ClusterHarness, r3_bucket: str, connected_to: str
) -> None:
    leader = cluster.leader_of(stream_name(r3_bucket))
    node = leader if connected_to == "the leader" else _node_other_than(cluster, leader)
    # a client on the leader's node reconnects to another node (it knows them all)
    with natsobj.connect(cluster.urls[node] if node != leader else cluster.url) as client:
        store = client.store(r3_bucket)
        previous = store.put("model.bin", b"previous version")
        data = os.urandom(BIG)
        started = time.monotonic()
        info = _put_while(store, "model.bin", data, lambda: cluster.kill(leader))
        took = time.monotonic() - started
        assert not cluster.is_running(leader)
        assert cluster.leader_of(stream_name(r3_bucket)) != leader
        assert info.size == BIG
        assert info.digest == "SHA-256=" + _b64(hashlib.sha256(data).digest())
        assert info.sequence > previous.sequence
        # nothing stored twice: exactly one message per chunk, and one meta record
        assert _chunk_count(client, r3_bucket, info.nuid) == info.chunks
        assert _chunk_count(client, r3_bucket, previous.nuid) == 0  # replaced and purged
        assert store.get_bytes("model.bin") == data
        assert store.get_info("model.bin").sequence == info.sequence
        assert [i.name for i in store.list()] == ["model.bin"]
    assert took < 120


def test_killing_a_follower_changes_nothing(cluster: ClusterHarness, r3_bucket: str) -> None:
    leader = cluster.leader_of(stream_name(r3_bucket))
    follower = _node_other_than(cluster, leader)
    with natsobj.connect(cluster.urls[leader]) as client:
        store = client.store(r3_bucket)
        data = os.urandom(BIG // 4)
        info = _put_while(store, "data.bin", data, lambda: cluster.kill(follower))
        assert cluster.leader_of(stream_name(r3_bucket)) == leader
        assert _chunk_count(client, r3_bucket, info.nuid) == info.chunks
        assert store.get_bytes("data.bin") == data


def test_no_quorum_is_a_typed_error_and_the_previous_version_survives(
    cluster: ClusterHarness, r3_bucket: str
) -> None:
    leader = cluster.leader_of(stream_name(r3_bucket))
    survivor = _node_other_than(cluster, leader)
    with natsobj.connect(cluster.urls[survivor], failover_timeout=6.0) as client:
        store = client.store(r3_bucket)
        previous = store.put("model.bin", b"previous version")

        def lose_quorum() -> None:
            for index in range(len(cluster.nodes)):
                if index != survivor:
                    cluster.kill(index)

        started = time.monotonic()
        with pytest.raises(natsobj.ClusterUnavailable) as failure:
            store.put("model.bin", _pieces_then(os.urandom(BIG // 4), lose_quorum, after=2))
        waited = time.monotonic() - started
        message = str(failure.value)
        assert "quorum" in message and "leader" in message
        assert "JetStream is enabled" not in message
        assert r3_bucket in message and "model.bin" in message
        assert isinstance(failure.value, natsobj.NotConnected)
        assert waited >= 6.0
        for index in range(len(cluster.nodes)):
            if index != survivor:
                cluster.start_node(index)
        cluster.wait_for_meta_leader()
        cluster.leader_of(stream_name(r3_bucket), timeout=60)  # the stream elects again
    with natsobj.connect(cluster.urls[survivor]) as client:
        store = client.store(r3_bucket)
        assert store.get_bytes("model.bin") == b"previous version"
        assert store.get_info("model.bin").sequence == previous.sequence


def test_an_open_client_survives_a_restart_of_the_whole_cluster(
    cluster: ClusterHarness, r3_bucket: str
) -> None:
    with natsobj.connect(cluster.url) as client:
        store = client.store(r3_bucket)
        before = store.put("kept.bin", b"before the restart")
        for index in range(len(cluster.nodes)):
            cluster.kill(index)
        for index in range(len(cluster.nodes)):
            cluster.start_node(index)
        cluster.wait_for_meta_leader()
        assert store.get_bytes("kept.bin") == b"before the restart"
        after = store.put("new.bin", b"after the restart")
        assert after.sequence > before.sequence
        assert sorted(i.name for i in store.list()) == ["kept.bin", "new.bin"]


def test_a_cluster_timeout_names_the_cluster_not_jetstream_settings(
    cluster: ClusterHarness, r3_bucket: str
) -> None:
    leader = cluster.leader_of(stream_name(r3_bucket))
    survivor = _node_other_than(cluster, leader)
    with natsobj.connect(cluster.urls[survivor], failover_timeout=3.0) as client:
        for index in range(len(cluster.nodes)):
            if index != survivor:
                cluster.kill(index)
        with pytest.raises(natsobj.ClusterUnavailable) as failure:
            client.store(r3_bucket).get_info("anything")
    message = str(failure.value)
    assert "no JetStream meta leader" in message or "no leader was elected" in message
    assert "check that JetStream is enabled" not in message.lower()


def _b64(digest: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(digest).decode()
