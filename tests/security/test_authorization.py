"""Subject permissions scoped to one bucket: the user works in its bucket, and everything
outside it is refused at once with PermissionDenied naming what was refused, never a timeout.

``bucket_permissions`` is the minimal permission set documented in docs/security.md."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
from collections.abc import Iterator

import pytest

import natsobj
from natsobj import aio
from natsobj.local.embedded import NatsServerProcess
from natsobj.sync import run
from tests.security.support import PROMPT, stopwatch, with_userinfo

GOOD, OTHER = "good", "other"
BIG = os.urandom(700_000)  # several chunks: exercises the publish window and the pull consumer


def bucket_permissions(bucket: str, *, write: bool) -> list[str]:
    """What a client of one bucket publishes to (replies come back on its inbox)."""
    stream = f"OBJ_{bucket}"
    read = [
        f"$JS.API.STREAM.INFO.{stream}",  # store(), status()
        f"$JS.API.DIRECT.GET.{stream}.>",  # get_info(), small objects
        f"$JS.API.DIRECT.GET.{stream}",  # list(): batched gets of the listed names
        f"$JS.API.STREAM.MSG.GET.{stream}",  # the same, for streams without direct get
        f"$JS.API.CONSUMER.CREATE.{stream}.>",  # get(), list(), watch(), changes()
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.>",
        f"$JS.API.CONSUMER.DELETE.{stream}.>",  # tidy up those consumers
    ]
    writes = [
        f"$O.{bucket}.>",  # chunks and meta records
        f"$JS.API.STREAM.PURGE.{stream}",  # chunks of replaced or deleted objects
        f"$JS.API.STREAM.MSG.DELETE.{stream}",  # only when the server asks a put to slow down
    ]
    return read + (writes if write else [])


def user(name: str, publish: list[str], subscribe: tuple[str, ...] = ("_INBOX.>",)) -> str:
    def quoted(subjects: list[str] | tuple[str, ...]) -> str:
        return ", ".join(f'"{s}"' for s in subjects)

    return (
        f"  {{user: {name}, password: {name}-pw, permissions: {{"
        f" publish: {{allow: [{quoted(publish)}]}},"
        f" subscribe: {{allow: [{quoted(subscribe)}]}} }} }}\n"
    )


def config() -> str:
    worker = bucket_permissions(GOOD, write=True)
    pull = f"$JS.API.CONSUMER.MSG.NEXT.OBJ_{GOOD}.>"
    return (
        "authorization { users: [\n"
        "  {user: admin, password: admin-pw}\n"
        + user("worker", worker)
        + user("reader", bucket_permissions(GOOD, write=False))
        + user("private", worker, subscribe=("_INBOX_private.>",))
        + user("nopull", [s for s in worker if s != pull])
        + user("noinbox", worker, subscribe=("elsewhere.>",))
        + user("nobatch", [s for s in worker if s != f"$JS.API.DIRECT.GET.OBJ_{GOOD}"])
        + "] }\n"
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    with NatsServerProcess(tmp_path_factory.mktemp("authz"), config=config()) as server:
        with natsobj.connect(as_user(server, "admin")) as admin:
            admin.create_store(GOOD).put("seeded", BIG)
            admin.create_store(OTHER).put("secret-plans", b"not for workers")
        yield server


def as_user(server: NatsServerProcess, name: str) -> str:
    return with_userinfo(server.url, f"{name}:{name}-pw")


@pytest.fixture
def connect(server):
    clients: list[natsobj.Client] = []

    def open_as(name: str, **options: object) -> natsobj.Client:
        clients.append(natsobj.connect(as_user(server, name), **options))
        return clients[-1]

    yield open_as
    for client in clients:
        client.close()


def denied(action, *, names: str) -> natsobj.PermissionDenied:
    with stopwatch() as took, pytest.raises(natsobj.PermissionDenied) as err:
        action()
    assert took.seconds < PROMPT, f"refusal took {took.seconds:.1f}s"
    assert names in str(err.value)
    return err.value


def test_worker_uses_its_bucket(connect):
    store = connect("worker").store(GOOD)
    info = store.put("runs/1/data.bin", BIG, metadata={"run": "1"})
    assert info.chunks > 1
    assert store.get_bytes("runs/1/data.bin") == BIG
    assert store.get_info("runs/1/data.bin").metadata == {"run": "1"}
    with store.get("seeded") as reader:
        assert b"".join(reader) == BIG
    assert store.update_meta("runs/1/data.bin", description="ok").description == "ok"
    with store.watch(start="earliest") as watcher:
        assert watcher.next(5) is not None
    assert store.put("runs/1/data.bin", b"smaller").size == 7  # overwrite purges old chunks
    store.delete("runs/1/data.bin")
    assert [i.name for i in store.list()] == ["seeded"]
    assert store.changes(0).last_sequence > 0
    assert store.status().bucket == GOOD


def test_another_bucket_is_refused_at_once(connect):
    client = connect("worker")
    error = denied(lambda: client.store(OTHER), names=f"OBJ_{OTHER}")
    assert error.bucket == OTHER


def test_bucket_management_is_refused_at_once(server, connect):
    client = connect("worker")
    denied(lambda: client.create_store("worker-made"), names="worker-made")
    denied(lambda: client.delete_store(GOOD), names=f"OBJ_{GOOD}")
    assert connect("admin").store_names() == [GOOD, OTHER]


def test_read_only_user_reads_but_cannot_write(connect, caplog):
    store = connect("reader").store(GOOD)
    assert store.get_bytes("seeded") == BIG
    assert [i.name for i in store.list()] == ["seeded"]
    caplog.set_level(logging.WARNING)
    assert denied(lambda: store.put("sneaky", BIG), names=f"$O.{GOOD}.").bucket == GOOD
    denied(lambda: store.delete("seeded"), names=f"$O.{GOOD}.")
    gc.collect()
    assert [i.name for i in store.list()] == ["seeded"]  # nothing partial, nothing deleted
    unretrieved = [r for r in caplog.records if "never retrieved" in r.getMessage()]
    assert unretrieved == []  # every refused chunk ack was accounted for


def test_private_inbox_prefix(connect):
    """Replies on a per-user inbox, so no other user can be allowed to read them."""
    store = connect("private", inbox_prefix="_INBOX_private").store(GOOD)
    assert store.get_bytes("seeded") == BIG


@pytest.mark.timeout(20)
def test_missing_pull_permission_is_refused_not_timed_out(connect):
    store = connect("nopull").store(GOOD)
    denied(lambda: store.get_bytes("seeded"), names="CONSUMER.MSG.NEXT")


@pytest.mark.timeout(20)
def test_forbidden_reply_inbox_is_named(connect):
    error = denied(lambda: connect("noinbox").store(GOOD), names="_INBOX.")
    assert "inbox_prefix" in str(error)


def test_a_denial_reaches_every_listener_of_its_subject(server):
    """Ranged reads and listings each listen for a denied batched get on the same subject;
    one of them finishing must not leave the others deaf (they would wait out a timeout)."""

    async def body() -> list[str]:
        client = await aio.connect(as_user(server, "nobatch"))
        try:
            api, heard = client.api, []
            subject = f"$JS.API.DIRECT.GET.OBJ_{GOOD}"
            stop_first = api.listen_for_denial(subject, lambda e: heard.append("first"))
            api.listen_for_denial(subject, lambda e: heard.append("second"))
            api.listen_for_denial(subject, lambda e: heard.append("third"))
            stop_first()
            await api.nc.publish(subject, b"{}", reply=api.nc.new_inbox())
            for _ in range(100):
                if heard:
                    break
                await asyncio.sleep(0.02)
            return sorted(heard)
        finally:
            await client.close()

    assert run(body()) == ["second", "third"]
