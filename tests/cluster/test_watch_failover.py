"""Failover of watches (issue 10, item 3): while a writer puts a run of objects, SIGKILL the
stream leader (or a follower). The watch sees every put exactly once, in stream order: its
consumer is recreated after the last sequence it handed out, on the new leader."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest

import natsobj
from natsobj.names import stream_name
from tests.cluster.harness import ClusterHarness

COUNT = 60
KILL_AT = 20  # after this many puts


def names() -> list[str]:
    return [f"in/{i:03d}.csv" for i in range(COUNT)]


def write_killing(
    cluster: ClusterHarness, bucket: str, kill: Callable[[], object]
) -> threading.Thread:
    """Put every name once from a client on all nodes, calling ``kill`` after KILL_AT puts;
    a failed put is re-raised by ``join_writer``."""

    def run() -> None:
        try:
            with natsobj.connect(cluster.url) as writer:
                store = writer.store(bucket)
                for index, name in enumerate(names()):
                    if index == KILL_AT:
                        kill()
                    store.put(name, name.encode())
        except BaseException as exc:  # handed to the test thread
            thread.error = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.error = None
    thread.start()
    return thread


def join_writer(thread: threading.Thread) -> None:
    thread.join(180)
    assert not thread.is_alive(), "the writer did not finish"
    if thread.error is not None:
        raise thread.error


def watched(watcher: natsobj.sync.ObjectWatcher, deadline: float = 120) -> list[natsobj.ObjectInfo]:
    """Every change until all names were seen (or the deadline), then a quiet second more to
    catch duplicates."""
    seen: list[natsobj.ObjectInfo] = []
    end = time.monotonic() + deadline
    while len({i.name for i in seen}) < COUNT and time.monotonic() < end:
        info = watcher.next(5)
        if info is not None:
            seen.append(info)
    while (extra := watcher.next(2)) is not None:
        seen.append(extra)
    return seen


def assert_each_once(seen: list[natsobj.ObjectInfo]) -> None:
    counts = Counter(i.name for i in seen)
    assert set(counts) == set(names()), f"missed: {sorted(set(names()) - set(counts))}"
    assert [n for n, c in counts.items() if c > 1] == []
    sequences = [i.sequence for i in seen]
    assert sequences == sorted(sequences)


def node_other_than(cluster: ClusterHarness, bucket: str) -> int:
    leader = cluster.leader_of(stream_name(bucket))
    return next(i for i in range(len(cluster.nodes)) if i != leader)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("connected_to", ["follower", "leader"])
def test_leader_killed_mid_watch_misses_nothing_and_repeats_nothing(
    cluster, r3_bucket, connect_node, connected_to
):
    leader = cluster.leader_of(stream_name(r3_bucket))
    node = leader if connected_to == "leader" else node_other_than(cluster, r3_bucket)
    store = connect_node(node).store(r3_bucket)
    with store.watch(start="latest") as watcher:
        writer = write_killing(cluster, r3_bucket, lambda: cluster.kill(leader))
        seen = watched(watcher)
        join_writer(writer)
    assert_each_once(seen)
    assert cluster.leader_of(stream_name(r3_bucket)) != leader


@pytest.mark.timeout(300)
def test_follower_killed_mid_watch_changes_nothing(cluster, r3_bucket, connect_node):
    leader = cluster.leader_of(stream_name(r3_bucket))
    follower = node_other_than(cluster, r3_bucket)
    store = connect_node(leader).store(r3_bucket)
    with store.watch(start="latest") as watcher:
        writer = write_killing(cluster, r3_bucket, lambda: cluster.kill(follower))
        seen = watched(watcher)
        join_writer(writer)
    assert_each_once(seen)
    assert cluster.leader_of(stream_name(r3_bucket)) == leader
