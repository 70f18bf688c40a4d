"""api_error maps the JetStream API's error codes, not its English: each error is provoked on a
real nats-server and its real reply mapped. The words are only a fallback for a reply without a
code, and a reply whose words mislead (a config error that mentions "sealed") is not misread."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NatsConnection

from natsobj.aio.jetstream.api_errors import api_error
from natsobj.errors import (
    BucketExists,
    BucketNotFound,
    ChunkTooLarge,
    NatsObjError,
    NotConnected,
    ObjectChanged,
    ObjectNotFound,
    StoreFull,
    StoreSealed,
)
from natsobj.local.embedded import NatsServerProcess
from natsobj.sync import run

ACCOUNTS = """
accounts {
  NOJS { users = [{user: nojs, password: nojs}] }
  ONE {
    jetstream { max_streams: 1, max_file: 1MB, max_mem: 1MB }
    users = [{user: one, password: one}]
  }
}
"""

Provoke = Callable[[NatsConnection, str], Awaitable[dict[str, Any]]]


async def _api(nc: NatsConnection, subject: str, body: dict[str, Any] | None = None) -> Any:
    reply = await nc.request(subject, json.dumps(body or {}).encode(), timeout=5)
    return json.loads(reply.data)


async def _publish(
    nc: NatsConnection, subject: str, data: bytes, headers: dict[str, str] | None = None
) -> Any:
    return json.loads((await nc.request(subject, data, headers=headers, timeout=5)).data)


async def _stream(nc: NatsConnection, name: str, **config: Any) -> None:
    response = await _api(
        nc, f"$JS.API.STREAM.CREATE.{name}", {"name": name, "subjects": [f"{name}.>"], **config}
    )
    assert "error" not in response, response


async def stream_not_found(nc: NatsConnection, name: str) -> Any:
    return await _api(nc, f"$JS.API.STREAM.INFO.{name}")


async def no_message_found(nc: NatsConnection, name: str) -> Any:
    await _stream(nc, name)
    return await _api(nc, f"$JS.API.STREAM.MSG.GET.{name}", {"last_by_subj": f"{name}.none"})


async def stream_name_in_use(nc: NatsConnection, name: str) -> Any:
    await _stream(nc, name, max_bytes=1000)
    return await _api(
        nc,
        f"$JS.API.STREAM.CREATE.{name}",
        {"name": name, "subjects": [f"{name}.>"], "max_bytes": 2000},
    )


async def wrong_last_sequence(nc: NatsConnection, name: str) -> Any:
    await _stream(nc, name)
    return await _publish(
        nc, f"{name}.a", b"x", headers={"Nats-Expected-Last-Subject-Sequence": "5"}
    )


async def message_exceeds_maximum(nc: NatsConnection, name: str) -> Any:
    await _stream(nc, name, max_msg_size=100)
    return await _publish(nc, f"{name}.a", b"x" * 200)


async def maximum_bytes_exceeded(nc: NatsConnection, name: str) -> Any:
    await _stream(nc, name, max_bytes=1000, discard="new")
    while "error" not in (reply := await _publish(nc, f"{name}.a", b"x" * 300)):
        pass
    return reply


async def insufficient_storage(nc: NatsConnection, name: str) -> Any:
    return await _api(
        nc,
        f"$JS.API.STREAM.CREATE.{name}",
        {"name": name, "subjects": [f"{name}.>"], "max_bytes": 10**18},
    )


async def sealed(nc: NatsConnection, name: str) -> Any:
    await _stream(nc, name)
    update = {"name": name, "subjects": [f"{name}.>"], "sealed": True}
    assert "error" not in await _api(nc, f"$JS.API.STREAM.UPDATE.{name}", update)
    return await _publish(nc, f"{name}.a", b"x")


async def sealed_in_a_create(nc: NatsConnection, name: str) -> Any:
    """10052, a configuration error whose words say "sealed": not a sealed store."""
    return await _api(
        nc,
        f"$JS.API.STREAM.CREATE.{name}",
        {"name": name, "subjects": [f"{name}.>"], "sealed": True},
    )


# (provoke, the code the server must send, the typed error, whether its words alone map it)
SESSION_CASES: dict[str, tuple[Provoke, int, type[NatsObjError], bool]] = {
    "stream-not-found": (stream_not_found, 10059, BucketNotFound, True),
    "no-message-found": (no_message_found, 10037, ObjectNotFound, True),
    "stream-name-in-use": (stream_name_in_use, 10058, BucketExists, True),
    "wrong-last-sequence": (wrong_last_sequence, 10071, ObjectChanged, False),
    "message-exceeds-maximum": (message_exceeds_maximum, 10054, ChunkTooLarge, False),
    "maximum-bytes-exceeded": (maximum_bytes_exceeded, 10077, StoreFull, True),
    "insufficient-storage": (insufficient_storage, 10047, StoreFull, False),
    "sealed": (sealed, 10109, StoreSealed, True),
}


def _error_of(provoke: Provoke, url: str, **auth: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        nc = await nats.connect(url, **auth)
        try:
            response = await provoke(nc, f"E{uuid.uuid4().hex[:10]}")
        finally:
            await nc.close()
        assert "error" in response, response
        return response["error"]

    return run(go())


def _check(error: dict[str, Any], err_code: int, expected: type[NatsObjError], text: bool) -> None:
    assert error["err_code"] == err_code, error
    mapped = api_error(error, bucket="models", name="a.bin")
    assert type(mapped) is expected, (error, mapped)
    assert mapped.bucket == "models"
    if text:  # a server that sends no code: its words still find the same error
        assert type(api_error({**error, "err_code": 0})) is expected


@pytest.mark.parametrize("case", SESSION_CASES)
def test_a_real_error_maps_by_its_code(nats_url: str, case: str) -> None:
    provoke, err_code, expected, text = SESSION_CASES[case]
    _check(_error_of(provoke, nats_url), err_code, expected, text)


@pytest.fixture(scope="module")
def accounts_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server whose accounts lack JetStream or have tight JetStream limits: the session
    server's one account has neither."""
    server = NatsServerProcess(Path(tmp_path_factory.mktemp("accounts")), config=ACCOUNTS)
    server.start()
    yield server.url
    server.stop()


def test_an_account_without_jetstream(accounts_server: str) -> None:
    error = _error_of(stream_not_found, accounts_server, user="nojs", password="nojs")
    _check(error, 10039, NotConnected, True)
    assert "has no JetStream" in str(api_error(error))


def test_an_account_at_its_stream_limit(accounts_server: str) -> None:
    async def second_stream(nc: NatsConnection, name: str) -> Any:
        await _stream(nc, name)
        return await _api(
            nc, f"$JS.API.STREAM.CREATE.{name}x", {"name": f"{name}x", "subjects": ["other.>"]}
        )

    error = _error_of(second_stream, accounts_server, user="one", password="one")
    _check(error, 10027, StoreFull, False)
    assert "account's JetStream limits" in str(api_error(error))


def test_words_that_mislead_do_not_map_when_a_code_says_otherwise(nats_url: str) -> None:
    error = _error_of(sealed_in_a_create, nats_url)
    assert error["err_code"] == 10052 and "sealed" in error["description"]
    mapped = api_error(error, bucket="models")
    assert type(mapped) is NatsObjError
    assert "10052" in str(mapped) and "can not be sealed" in str(mapped)


def test_an_unknown_code_is_never_guessed_from_its_words() -> None:
    """A code this version does not know keeps its text, even one that reads like a known
    error: the server's words may change, the codes do not."""
    error = {"code": 400, "err_code": 19999, "description": "stream not found in permission set"}
    mapped = api_error(error, bucket="models")
    assert type(mapped) is NatsObjError
    assert "19999" in str(mapped)
