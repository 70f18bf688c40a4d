"""The change-feed cursor kept in NATS (natsobj.orchestration.cursor_keeper): what an Airflow
trigger with no asset state store (before 3.3.2) resumes from after a triggerer restart."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import natsobj.aio
from natsobj.errors import NatsObjError
from natsobj.local.embedded import NatsServerProcess
from natsobj.orchestration.cursor_keeper import CURSORS_BUCKET, NatsCursorKeeper, kv_key
from natsobj.sync import run


async def _round_trip(url: str) -> tuple[str | None, str | None, str | None]:
    async with await natsobj.aio.connect(url) as client:
        keeper = NatsCursorKeeper(client)
        before = await keeper.aget("nats_meta_sequence:raw:abc123")
        await keeper.aset("nats_meta_sequence:raw:abc123", "raw@7")
        await keeper.aset("nats_meta_sequence:raw:abc123", "raw@9")
    async with await natsobj.aio.connect(url) as again:  # a restarted triggerer
        keeper = NatsCursorKeeper(again)
        after = await keeper.aget("nats_meta_sequence:raw:abc123")
        other = await keeper.aget("nats_meta_sequence:raw:def456")
    return before, after, other


def test_a_cursor_outlives_the_connection_that_kept_it(nats_url: str) -> None:
    before, after, other = run(_round_trip(nats_url))
    assert before is None
    assert after == "raw@9"  # the last one kept, by a new connection
    assert other is None  # another watch's key is its own


def test_a_key_is_made_a_valid_kv_key() -> None:
    assert kv_key("nats_meta_sequence:my-bucket:0a1b") == "nats_meta_sequence.my-bucket.0a1b"


# a user who may use JetStream but not the cursors' bucket
DENIED = """
authorization {
  users = [{
    user: "watcher", password: "s3cret",
    permissions: {
      publish: {
        allow: [">"]
        deny: ["$JS.API.STREAM.*.KV_natsobj_cursors", "$KV.natsobj_cursors.>"]
      }
      subscribe: { allow: [">"] }
    }
  }]
}
"""


@pytest.fixture
def denying_server(tmp_path) -> Iterator[NatsServerProcess]:
    server = NatsServerProcess(tmp_path / "server", config=DENIED)
    server.start()
    yield server
    server.kill()


async def _refused(url: str) -> None:
    async with await natsobj.aio.connect(url) as client:
        await NatsCursorKeeper(client).aset("k", "v")


def test_a_refused_bucket_is_a_typed_error_naming_it(denying_server) -> None:
    url = denying_server.url.replace("nats://", "nats://watcher:s3cret@")
    with pytest.raises(NatsObjError, match=CURSORS_BUCKET):
        run(_refused(url))
