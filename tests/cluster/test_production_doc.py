"""docs/production.md shows the node configuration the cluster fixture really writes."""

from __future__ import annotations

from pathlib import Path

from natsobj.local.embedded import NodePorts, cluster_node_config

DOC = Path(__file__).resolve().parents[2] / "docs" / "production.md"


def test_the_documented_node_config_is_the_generated_one() -> None:
    ports = [NodePorts(4222 + i, 6222 + i, 8222 + i) for i in range(3)]
    generated = cluster_node_config("n1", ports[0], ports[1:])
    assert f"```\n{generated}```" in DOC.read_text()
