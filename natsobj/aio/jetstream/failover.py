"""The failover policy: how a JetStream request rides out a cluster's leader election or lost
node, and the ``ClusterUnavailable`` that names what is missing when it does not recover.

Outside a cluster the first failure is final (a missing answer there is a setup problem). In a
cluster, a missing answer, no responders or "temporarily unavailable" are what an election
looks like: the request is repeated (``natsobj.retry.FAILOVER``) until the connection's
``failover_timeout`` has passed, and then the error says what is missing, the stream's leader
or the cluster's quorum.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from natsobj.errors import ClusterUnavailable, NatsObjError
from natsobj.retry import FAILOVER, RetryableError
from natsobj.wire import ACCOUNT_INFO

# While a cluster recovers, each attempt waits this long at most for its answer.
FAILOVER_ATTEMPT_TIMEOUT = 2.0


class FailoverApi(Protocol):
    """What the policy needs of ``jsapi.JetStreamApi`` (named here, not imported: the API's
    ``call`` is the policy's main user)."""

    nc: Any
    timeout: float
    failover_timeout: float

    @property
    def in_cluster(self) -> bool: ...

    async def call_once(
        self,
        operation: str,
        body: dict[str, Any] | None = None,
        *,
        bucket: str | None = None,
        name: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]: ...


class Failover:
    """Retries of one request while a cluster recovers from a lost node (see the module)."""

    def __init__(
        self, api: FailoverApi, subject: str, bucket: str | None, name: str | None = None
    ) -> None:
        self.api = api
        self.subject = subject
        self.bucket = bucket
        self.name = name
        self.deadline: float | None = None
        self.retries = 0

    @property
    def attempt_timeout(self) -> float | None:
        if self.deadline is None:
            return None
        return min(self.api.timeout, FAILOVER_ATTEMPT_TIMEOUT)

    async def wait(self, error: NatsObjError) -> None:
        """Return when the request should be tried again; raise when it should not (the
        error a ``RetryableError`` stands for, or ``ClusterUnavailable`` after the deadline)."""
        if isinstance(error, RetryableError):
            error = error.final
        if self.api.nc.is_closed or not self.api.in_cluster:
            raise error
        now = asyncio.get_running_loop().time()
        if self.deadline is None:
            self.deadline = now + self.api.failover_timeout
        if now >= self.deadline:
            raise await cluster_unavailable(
                self.api, self.subject, self.bucket, self.name
            ) from error
        self.retries += 1
        await FAILOVER.pause(self.retries, deadline=self.deadline)


async def cluster_unavailable(
    api: FailoverApi, subject: str, bucket: str | None, name: str | None = None
) -> ClusterUnavailable:
    """The error for a cluster that did not recover in time, naming what is missing: the
    meta layer answers account info only with a quorum of servers."""
    waited = f"{api.failover_timeout:g}s"
    if not api.nc.is_connected:
        return ClusterUnavailable(
            f"no node of the cluster could be reached within {waited} (calling {subject!r})",
            bucket=bucket,
            name=name,
        )
    try:
        await api.call_once(ACCOUNT_INFO, timeout=FAILOVER_ATTEMPT_TIMEOUT)
        meta_ok = True
    except NatsObjError:
        meta_ok = False
    if not meta_ok:
        return ClusterUnavailable(
            f"the cluster has had no JetStream meta leader for {waited} (no quorum: fewer than"
            f" a majority of its servers are up and routed) while calling {subject!r}",
            bucket=bucket,
            name=name,
        )
    return ClusterUnavailable(
        f"no leader was elected for the stream within {waited} (no quorum: fewer than a"
        f" majority of its replicas are up) while calling {subject!r}",
        bucket=bucket,
        name=name,
    )
