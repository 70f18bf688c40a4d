"""The cluster fixture itself: three clustered nodes, an R3 stream with one leader, a killed
leader replaced by an election, a killed node rejoining as the same peer."""

from __future__ import annotations

from natsobj.local.embedded import cluster_node_config
from natsobj.names import stream_name
from tests.cluster.harness import ClusterHarness


def test_three_nodes_share_one_meta_leader(cluster: ClusterHarness) -> None:
    leader = cluster.wait_for_meta_leader()
    assert leader in {"n1", "n2", "n3"}
    for index in range(3):
        meta = cluster.jsz(index)["meta_cluster"]
        assert meta["leader"] == leader
        assert meta["cluster_size"] == 3


def test_node_config_files_are_on_disk(cluster: ClusterHarness) -> None:
    for index, node in enumerate(cluster.nodes):
        text = (node.data_dir / "server.conf").read_text()
        assert f"server_name: n{index + 1}" in text
        for other, ports in enumerate(cluster.ports):
            route = f"nats-route://127.0.0.1:{ports.route}"
            assert (route in text) == (other != index)


def test_config_lists_every_other_route() -> None:
    from natsobj.local.embedded import NodePorts

    ports = [NodePorts(4222 + i, 6222 + i, 8222 + i) for i in range(3)]
    text = cluster_node_config("n2", ports[1], [ports[0], ports[2]])
    assert "listen: 127.0.0.1:4223" in text
    assert '"nats-route://127.0.0.1:6222", "nats-route://127.0.0.1:6224"' in text


def test_killed_leader_is_replaced_and_rejoins(cluster: ClusterHarness, r3_bucket: str) -> None:
    stream = stream_name(r3_bucket)
    old = cluster.leader_of(stream)
    old_pid = cluster.pids[old]
    cluster.kill(old)
    assert not cluster.is_running(old)
    new = cluster.leader_of(stream, timeout=60)
    assert new != old
    cluster.restart(old)
    assert cluster.is_running(old)
    assert cluster.pids[old] != old_pid
    assert cluster.leader_of(stream) in range(3)
