"""A refused permission says, in the user's words first, which bucket, whether reading or
writing it, and which operations were refused; the subject NATS refused comes after. Against
a real nats-server whose users have subject permissions narrower than a whole bucket."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

import natsobj
from natsobj.local.embedded import NatsServerProcess
from tests.security.test_authorization import as_user, bucket_permissions, user

BUCKET = "cli"
STREAM_INFO = f"$JS.API.STREAM.INFO.OBJ_{BUCKET}"


def config() -> str:
    writer = bucket_permissions(BUCKET, write=True)
    return (
        "authorization { users: [\n"
        "  {user: admin, password: admin-pw}\n"
        + user("writer", writer)
        + user("reader", bucket_permissions(BUCKET, write=False))
        + user("noinfo", [s for s in writer if s != STREAM_INFO])
        + "] }\n"
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    with NatsServerProcess(tmp_path_factory.mktemp("words"), config=config()) as server:
        with natsobj.connect(as_user(server, "admin")) as admin:
            admin.create_store(BUCKET).put("seeded", b"data")
        yield server


def refusal(
    server: NatsServerProcess, name: str, action: Callable[[natsobj.Client], object]
) -> natsobj.PermissionDenied:
    with (
        natsobj.connect(as_user(server, name)) as client,
        pytest.raises(natsobj.PermissionDenied) as err,
    ):
        action(client)
    return err.value


def test_no_stream_info_reads_as_no_read_access_to_the_bucket(server: NatsServerProcess) -> None:
    error = refusal(server, "noinfo", lambda client: client.store(BUCKET))
    assert str(error).startswith(
        f"bucket 'cli': no read access (opening the bucket, status):"
        f" NATS: not allowed to publish to '{STREAM_INFO}'"
    ), error
    assert error.bucket == BUCKET


def test_a_reader_that_puts_reads_as_no_write_access(server: NatsServerProcess) -> None:
    error = refusal(server, "reader", lambda client: client.store(BUCKET).put("x", b"1"))
    assert str(error).startswith(
        "bucket 'cli': no write access (put, delete, update_meta):"
        " NATS: not allowed to publish to '$O.cli."
    ), error


def test_creating_a_bucket_and_listing_buckets_name_what_was_refused(
    server: NatsServerProcess,
) -> None:
    error = refusal(server, "writer", lambda client: client.create_store("made"))
    assert str(error).startswith(
        "bucket 'made': no write access (create_store):"
        " NATS: not allowed to publish to '$JS.API.STREAM.CREATE.OBJ_made'"
    ), error
    error = refusal(server, "writer", lambda client: client.store_names())
    assert str(error).startswith(
        "no read access to the account's buckets (listing buckets):"
        " NATS: not allowed to publish to '$JS.API.STREAM.NAMES'"
    ), error


def test_the_cli_says_it_the_same_way(server: NatsServerProcess) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "natsobj.cli", "--url", as_user(server, "noinfo"),
         "get", BUCKET, "seeded", "-"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.stderr.startswith(
        "natsobj: bucket 'cli': no read access (opening the bucket, status): NATS: not allowed"
    ), done.stderr
    assert done.returncode == 5, done.stderr
