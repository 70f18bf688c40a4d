"""Each access key acts as the NATS identity its table names, so the server's permissions
decide what the key may do: the gateway's own (wider) identity never leaks to another key."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import botocore.exceptions
import pytest
from botocore import UNSIGNED
from botocore.config import Config

import natsobj
from natsobj.embedded import NatsServerProcess
from tests.gateway.conftest import GatewayThread, make_s3
from tests.security.support import with_userinfo
from tests.security.test_authorization import bucket_permissions, user

GOOD, OTHER = "good", "other"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    config = (
        "authorization { users: [\n  {user: admin, password: admin-pw}\n"
        + user("reader", bucket_permissions(GOOD, write=False))
        + "] }\n"
    )
    with NatsServerProcess(tmp_path_factory.mktemp("gw-authz"), config=config) as server:
        with natsobj.connect(with_userinfo(server.url, "admin:admin-pw")) as admin:
            admin.create_store(GOOD).put("seeded", b"readable")
            admin.create_store(OTHER).put("secret", b"not for readers")
        yield server


@pytest.fixture(scope="module")
def gateway(
    server: NatsServerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayThread]:
    keys = tmp_path_factory.mktemp("gw-keys") / "keys.toml"
    keys.write_text(
        '[keys.AKIANATSOBJTEST]\nsecret = "natsobj-test-secret"\n'
        '[keys.AKIAREADER]\nsecret = "reader-secret"\nuser = "reader"\npassword = "reader-pw"\n'
        '[anonymous]\nuser = "reader"\npassword = "reader-pw"\n'
    )
    keys.chmod(0o600)
    running = GatewayThread(with_userinfo(server.url, "admin:admin-pw"), keys)
    yield running
    running.stop()


def _code(error: pytest.ExceptionInfo[botocore.exceptions.ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def test_a_key_gets_its_identitys_permissions_and_no_more(gateway: GatewayThread) -> None:
    admin = make_s3(gateway.endpoint)
    reader = make_s3(gateway.endpoint, access_key="AKIAREADER", secret="reader-secret")
    assert reader.get_object(Bucket=GOOD, Key="seeded")["Body"].read() == b"readable"
    with pytest.raises(botocore.exceptions.ClientError) as write:
        reader.put_object(Bucket=GOOD, Key="new", Body=b"x")
    assert _code(write) == "AccessDenied"
    with pytest.raises(botocore.exceptions.ClientError) as other:
        reader.get_object(Bucket=OTHER, Key="secret")
    assert _code(other) == "AccessDenied"
    # the gateway's own identity (admin) may do both: the reader's refusals are NATS's
    admin.put_object(Bucket=GOOD, Key="new", Body=b"x")
    assert admin.get_object(Bucket=OTHER, Key="secret")["Body"].read() == b"not for readers"


def test_unsigned_reads_act_as_the_anonymous_identity(gateway: GatewayThread) -> None:
    """Publishing a bucket lets unsigned requests read it only as far as the ``[anonymous]``
    identity may: OTHER is published too, but NATS refuses the reader."""
    admin = make_s3(gateway.endpoint)
    anonymous = boto3.client(
        "s3",
        endpoint_url=gateway.endpoint,
        region_name="us-east-1",
        config=Config(signature_version=UNSIGNED, s3={"addressing_style": "path"}),
    )
    for bucket in (GOOD, OTHER):
        admin.put_bucket_acl(Bucket=bucket, ACL="public-read")
    try:
        assert anonymous.get_object(Bucket=GOOD, Key="seeded")["Body"].read() == b"readable"
        with pytest.raises(botocore.exceptions.ClientError) as other:
            anonymous.get_object(Bucket=OTHER, Key="secret")
        assert _code(other) == "AccessDenied"
    finally:
        for bucket in (GOOD, OTHER):
            admin.put_bucket_acl(Bucket=bucket, ACL="private")
