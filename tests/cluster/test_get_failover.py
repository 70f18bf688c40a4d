"""Failover of reads (issue 10, item 3): SIGKILL of the stream leader during a 64 MiB get. The
read resumes after the last chunk it received, on the new leader, and the digest still matches;
killing a follower changes nothing; a cluster that cannot elect a leader ends the read with a
ClusterUnavailable that says so, and no destination file (unless the read could finish,
verified, from the surviving replica)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import natsobj
from natsobj.names import stream_name
from tests.cluster.harness import ClusterHarness

SIZE = 64 * 1024 * 1024
KILL_AFTER = 8 * 1024 * 1024  # well into the read, far from its end


@pytest.fixture(scope="module")
def payload() -> bytes:
    return os.urandom(SIZE)


def stored(cluster: ClusterHarness, bucket: str, data: bytes) -> natsobj.ObjectInfo:
    """Put ``data`` and wait until every replica has it, so that the kill that follows tests
    the read, not a race with replication on a loaded machine."""
    with natsobj.connect(cluster.url) as writer:
        info = writer.store(bucket).put("big", data)
    wait_until_replicas_current(cluster, bucket)
    return info


def wait_until_replicas_current(cluster: ClusterHarness, bucket: str, timeout: float = 60) -> None:
    stream = stream_name(bucket)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jsz = cluster.jsz(cluster.leader_of(stream), "?accounts=1&streams=1")
        for account in jsz.get("account_details") or []:
            for detail in account.get("stream_detail") or []:
                replicas = (detail.get("cluster") or {}).get("replicas") or []
                caught_up = all(r.get("current") and not r.get("lag") for r in replicas)
                if detail.get("name") == stream and len(replicas) == 2 and caught_up:
                    return
        time.sleep(0.2)
    raise AssertionError(f"the replicas of {stream} did not catch up within {timeout}s")


def read_killing(
    client: natsobj.Client, bucket: str, kill: Callable[[], object]
) -> tuple[bytes, natsobj.ObjectInfo]:
    """Stream the object, calling ``kill`` once KILL_AFTER bytes have arrived."""
    received = bytearray()
    killed = False
    with client.store(bucket).get("big") as reader:
        for chunk in reader:
            received += chunk
            if not killed and len(received) >= KILL_AFTER:
                kill()
                killed = True
        info = reader.info  # the iteration ended without DigestMismatch: the digest matched
    assert killed
    return bytes(received), info


class killing_progress:
    """A get_file ``progress`` callback that calls ``kill`` once KILL_AFTER bytes arrived."""

    def __init__(self, kill: Callable[[], object]) -> None:
        self.kill = kill
        self.seen = 0
        self.killed = False

    def __call__(self, size: int) -> None:
        self.seen += size
        if not self.killed and self.seen >= KILL_AFTER:
            self.kill()
            self.killed = True


def node_other_than(cluster: ClusterHarness, bucket: str) -> int:
    leader = cluster.leader_of(stream_name(bucket))
    return next(i for i in range(len(cluster.nodes)) if i != leader)


@pytest.mark.timeout(240)
def test_leader_killed_mid_get_resumes_on_the_new_leader(cluster, r3_bucket, connect_node, payload):
    """The connection stays up (pinned to a follower); the consumer dies with the leader and
    is recreated after the last chunk received."""
    stored(cluster, r3_bucket, payload)
    old_leader = cluster.leader_of(stream_name(r3_bucket))
    client = connect_node(node_other_than(cluster, r3_bucket))
    data, info = read_killing(client, r3_bucket, lambda: cluster.kill(old_leader))
    assert len(data) == SIZE and hashlib.sha256(data).digest() == hashlib.sha256(payload).digest()
    assert info.size == SIZE
    assert cluster.leader_of(stream_name(r3_bucket)) != old_leader


@pytest.mark.timeout(240)
def test_leader_killed_mid_get_file_while_connected_to_it(
    cluster, r3_bucket, payload, tmp_path: Path
):
    """The connection is to the leader itself: the client reconnects to another node and the
    file still ends up complete and verified."""
    stored(cluster, r3_bucket, payload)
    old_leader = cluster.leader_of(stream_name(r3_bucket))
    target = tmp_path / "big.bin"
    progress = killing_progress(lambda: cluster.kill(old_leader))
    with natsobj.connect(cluster.urls[old_leader]) as client:
        info = client.store(r3_bucket).get_file("big", target, progress=progress)
    assert progress.killed
    assert info.size == SIZE
    assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(payload).digest()


@pytest.mark.timeout(240)
def test_follower_killed_mid_get_changes_nothing(cluster, r3_bucket, connect_node, payload):
    stored(cluster, r3_bucket, payload)
    leader = cluster.leader_of(stream_name(r3_bucket))
    follower = node_other_than(cluster, r3_bucket)
    client = connect_node(leader)
    data, _ = read_killing(client, r3_bucket, lambda: cluster.kill(follower))
    assert hashlib.sha256(data).digest() == hashlib.sha256(payload).digest()
    assert cluster.leader_of(stream_name(r3_bucket)) == leader


@pytest.mark.timeout(240)
def test_no_quorum_mid_get_file_is_named_or_the_data_is_verified(
    cluster, r3_bucket, connect_node, payload, tmp_path: Path
):
    """Two of three nodes die mid-read: no leader can be elected. A consumer that lived on the
    surviving replica may still finish the read from its copy, verified; otherwise, within the
    failover timeout, the read ends with ClusterUnavailable naming the missing leader or
    quorum, and no file is left."""
    stored(cluster, r3_bucket, payload)
    survivor = node_other_than(cluster, r3_bucket)
    others = [i for i in range(len(cluster.nodes)) if i != survivor]
    client = connect_node(survivor, failover_timeout=5.0)
    target = tmp_path / "big.bin"
    progress = killing_progress(lambda: [cluster.kill(index) for index in others])
    try:
        client.store(r3_bucket).get_file("big", target, progress=progress)
    except natsobj.ClusterUnavailable as error:
        assert "leader" in str(error) and "quorum" in str(error)
        assert list(tmp_path.iterdir()) == []  # neither the destination nor a partial file
    else:
        assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(payload).digest()
    assert progress.killed


@pytest.mark.timeout(240)
def test_get_without_quorum_is_named_and_leaves_no_file(
    cluster, r3_bucket, connect_node, payload, tmp_path: Path
):
    stored(cluster, r3_bucket, payload)
    survivor = node_other_than(cluster, r3_bucket)
    client = connect_node(survivor, failover_timeout=5.0)
    store = client.store(r3_bucket)
    for index in range(len(cluster.nodes)):
        if index != survivor:
            cluster.kill(index)
    with pytest.raises(natsobj.ClusterUnavailable) as err:
        store.get_file("big", tmp_path / "big.bin")
    assert "leader" in str(err.value) and "quorum" in str(err.value)
    assert err.value.bucket == r3_bucket
    assert list(tmp_path.iterdir()) == []
