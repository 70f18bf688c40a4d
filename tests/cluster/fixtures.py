"""A 3-node JetStream cluster on loopback for the whole session, and R3 stores on it.

Tests that kill nodes leave healing to the ``cluster`` fixture: after each test every stopped
node is started again and the cluster waits for a meta leader, so the next test starts whole.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator

import pytest

import natsobj
from natsobj.names import stream_name
from natsobj.placement import wait_until_placeable
from tests.cluster.harness import ClusterHarness

REPLICAS = 3


@pytest.fixture(scope="session")
def nats_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHarness]:
    """Three nats-server processes from the pinned wheel; fails (never skips) without it."""
    cluster = ClusterHarness(tmp_path_factory.mktemp("nats-cluster"), size=3)
    cluster.start()
    yield cluster
    cluster.stop()


def heal(cluster: ClusterHarness) -> None:
    """Start every stopped node again and wait until the cluster can place R3 streams: the
    meta leader takes a moment to see a restarted peer as online ("no suitable peers for
    placement, peer offline" until then)."""
    stopped = [i for i in range(len(cluster.nodes)) if not cluster.is_running(i)]
    for index in stopped:
        cluster.start_node(index)
    cluster.wait_for_meta_leader()
    if stopped:
        wait_until_placeable(cluster.url, REPLICAS)


@pytest.fixture
def cluster(nats_cluster: ClusterHarness) -> Iterator[ClusterHarness]:
    """The session cluster, with every node running again after the test."""
    yield nats_cluster
    heal(nats_cluster)


@pytest.fixture
def node_urls(cluster: ClusterHarness) -> list[str]:
    """One URL per node, for connections pinned to a single node."""
    return cluster.urls


@pytest.fixture
def cluster_url(cluster: ClusterHarness) -> str:
    """A URL naming every node, the way production clients connect."""
    return cluster.url


@pytest.fixture
def connect_node(cluster: ClusterHarness) -> Iterator[Callable[..., natsobj.Client]]:
    """``connect_node(i)``: a blocking client pinned to node ``i``; closed after the test."""
    clients: list[natsobj.Client] = []

    def connect(index: int, **options: object) -> natsobj.Client:
        client = natsobj.connect(cluster.urls[index], **options)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        with contextlib.suppress(Exception):
            client.close()


@pytest.fixture
def r3_bucket(cluster: ClusterHarness) -> Iterator[str]:
    """A fresh replicas=3 bucket, created through every node's view; deleted afterwards."""
    bucket = f"c{uuid.uuid4().hex[:12]}"
    client = natsobj.connect(cluster.url)
    try:
        client.create_store(bucket, replicas=REPLICAS)
        cluster.leader_of(stream_name(bucket))
        yield bucket
    finally:
        heal(cluster)
        with contextlib.suppress(Exception):
            client.delete_store(bucket)
        client.close()


@pytest.fixture
def kill_leader(cluster: ClusterHarness) -> Callable[[str], int]:
    """``kill_leader(bucket)``: SIGKILL the node leading the bucket's stream; its index."""

    def kill(bucket: str) -> int:
        index = cluster.leader_of(stream_name(bucket))
        cluster.kill(index)
        return index

    return kill


@pytest.fixture
def kill_follower(cluster: ClusterHarness) -> Callable[[str], int]:
    """``kill_follower(bucket)``: SIGKILL a node that replicates but does not lead the stream."""

    def kill(bucket: str) -> int:
        leader = cluster.leader_of(stream_name(bucket))
        index = next(i for i in range(len(cluster.nodes)) if i != leader)
        cluster.kill(index)
        return index

    return kill
