"""``/health/live`` and ``/health/ready`` (``--health``): for a load balancer or Kubernetes'
probes, unsigned.

Live: the process serves HTTP. Ready: it can serve S3 now, i.e. it is not stopping and its own
NATS connection is up and JetStream answers an account-info request within
``READY_TIMEOUT``. The answer says only yes or no and which of the two failed, never the NATS
server's address or the error (anyone can ask); the gateway's log has the cause.
"""

from __future__ import annotations

import asyncio
import json
import logging

from aiohttp import web

from natsobj.errors import NatsObjError
from natsobj.gateway.clients import ClientPool

log = logging.getLogger(__name__)

LIVE = "/health/live"
READY = "/health/ready"
READY_TIMEOUT = 2.0


def _answer(status: int, **fields: object) -> web.Response:
    return web.Response(
        status=status, body=json.dumps(fields).encode(), content_type="application/json"
    )


def live() -> web.Response:
    return _answer(200, live=True)


async def ready(pool: ClientPool, *, stopping: bool) -> web.Response:
    if stopping:
        return _answer(503, ready=False, reason="stopping")
    try:
        async with asyncio.timeout(READY_TIMEOUT):
            client = await pool.own_client()
            await client.api.call_once("INFO", timeout=READY_TIMEOUT)
    except (NatsObjError, TimeoutError) as exc:
        log.warning("not ready: %s", exc or "JetStream did not answer in time")
        return _answer(503, ready=False, reason="nats")
    return _answer(200, ready=True)
