"""A put window whose acknowledgements the lost connection failed before the window awaited them
(the chunks were out, the window not yet full): in a cluster those are lost acknowledgements
like any other, and the window is sent again once a new leader answers. Before, the
acknowledgement that was already failed raised ``NotConnected`` straight out of the put, which
``tests/cluster/test_put_failover.py`` met now and then when the kill landed between two
chunks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from natsobj import aio
from natsobj.aio.jetstream.publish import PublishWindow
from natsobj.local.embedded import NatsCluster
from natsobj.names import chunk_subject, stream_name
from natsobj.wire import stream_api

CHUNKS = [bytes([n]) * 1000 for n in range(4)]


async def _until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, what
        await asyncio.sleep(0.01)


def test_acknowledgements_failed_by_the_loss_are_sent_again(
    cluster: NatsCluster, r3_bucket: str
) -> None:
    stream = stream_name(r3_bucket)
    leader = cluster.leader_of(stream)
    others = [index for index in range(len(cluster.nodes)) if index != leader]
    subject = chunk_subject(r3_bucket, "lostacks")

    async def scenario() -> dict[str, int]:
        # on the leader's node; it learns the others from the server and reconnects to them
        client = await aio.connect(cluster.urls[leader], failover_timeout=60.0)
        try:
            window = PublishWindow(
                client.api,
                subject,
                stream,
                nuid="lostacks",
                put_id="lostacks.test",
                max_bytes=1 << 20,  # never full: nothing awaits an acknowledgement yet
                bucket=r3_bucket,
                name="lost.bin",
                ack_timeout=5.0,
            )
            for index in others:  # the leader alone cannot store anything: no acks come
                cluster.kill(index)
            for chunk in CHUNKS:
                await window.publish(chunk)
            cluster.kill(leader)
            replies = [entry.reply for entry in window._inflight]
            await _until(lambda: all(reply.done() for reply in replies), "acks failed")
            for index in others:
                await asyncio.to_thread(cluster.start_node, index)
            # the cluster has recovered (the two restarted nodes elected a leader) before the
            # window sends again: what is tested is the resend, not the election's pace
            await asyncio.to_thread(cluster.leader_of, stream, 60.0)
            await window.drain()
            info = await client.api.call(
                stream_api("INFO", stream), {"subjects_filter": subject}, bucket=r3_bucket
            )
            return dict(info["state"].get("subjects") or {})
        finally:
            await client.close()

    assert asyncio.run(scenario()) == {subject: len(CHUNKS)}  # each chunk stored once
