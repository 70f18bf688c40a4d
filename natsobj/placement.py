"""Wait until a freshly started cluster can place a replicated store.

A cluster whose nodes agree on a JetStream meta leader still refuses replicated streams for a
moment ("no suitable peers for placement"): the leader places streams only on peers whose
state reports it has received, and a node that just joined has not sent one yet. Whoever hands
out a new cluster's URL (``natsobj serve --cluster``, the test harness after a restart) waits
here first, so the first ``create_store(replicas=3)`` it serves succeeds.
"""

from __future__ import annotations

import time
import uuid

from natsobj.errors import ClusterUnavailable
from natsobj.sync import connect

_PROBE_SECONDS = 0.5


def wait_until_placeable(url: str, replicas: int, timeout: float = 60.0) -> None:
    """Create and delete a throwaway store of ``replicas`` replicas until the cluster at
    ``url`` places one; ClusterUnavailable when it still cannot after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    with connect(url, failover_timeout=5.0) as client:
        while True:
            probe = f"natsobj-placement-{uuid.uuid4().hex[:10]}"
            try:
                client.create_store(probe, replicas=replicas, storage="memory")
            except ClusterUnavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(_PROBE_SECONDS)
                continue
            client.delete_store(probe)
            return
