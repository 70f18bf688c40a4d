"""The loopback cluster of ``natsobj serve --cluster`` with what failover tests and benchmarks
need on top: faults injected by signal to a node's PID, and which node leads what, read from
each node's ``/jsz`` monitoring document."""

from __future__ import annotations

import contextlib
import signal
import time

from natsobj.errors import NotConnected
from natsobj.local.embedded import NatsCluster


class ClusterHarness(NatsCluster):
    """A ``NatsCluster`` whose nodes can be killed, restarted as the same peer, and asked
    which of them leads the meta group or a stream."""

    def kill(self, index: int, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` (SIGKILL by default) to node ``index`` and reap it."""
        node = self.nodes[index]
        if node.process is None or node.process.poll() is not None:
            return
        node.process.send_signal(sig)
        node.process.wait()

    def restart(self, index: int, timeout: float = 60.0) -> None:
        """Stop node ``index`` (if running) and start it again as the same peer."""
        self.nodes[index].stop()
        self.start_node(index)
        self.wait_for_meta_leader(timeout)

    def meta_leader(self) -> str | None:
        """The server name of the JetStream meta leader, as a running node sees it."""
        for index in self._running():
            with contextlib.suppress(OSError, ValueError):
                leader = (self.jsz(index).get("meta_cluster") or {}).get("leader")
                if leader:
                    return leader
        return None

    def leader_of(self, stream: str, timeout: float = 30.0) -> int:
        """The index of the node that leads ``stream``, waiting out an election."""
        deadline = time.monotonic() + timeout
        names = [self.node_name(i) for i in range(len(self.nodes))]
        while time.monotonic() < deadline:
            for index in self._running():
                with contextlib.suppress(OSError, ValueError):
                    leader = stream_leader(self.jsz(index, "?accounts=1&streams=1"), stream)
                    if leader in names and self.is_running(names.index(leader)):
                        return names.index(leader)
            time.sleep(0.1)
        raise NotConnected(f"stream {stream!r} has no leader after {timeout:g}s")


def stream_leader(jsz: dict, stream: str) -> str | None:
    """The server name leading ``stream`` in a ``/jsz?accounts=1&streams=1`` document."""
    for account in jsz.get("account_details") or []:
        for detail in account.get("stream_detail") or []:
            if detail.get("name") == stream:
                return (detail.get("cluster") or {}).get("leader")
    return None
