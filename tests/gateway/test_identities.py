"""Each access key acts as the NATS identity its table names, so the server's permissions
decide what the key may do: the gateway's own (wider) identity never leaks to another key."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import boto3
import botocore.exceptions
import pytest
from botocore import UNSIGNED
from botocore.config import Config

import natsobj
from natsobj.gateway.multipart import uploads_store
from natsobj.local.embedded import NatsServerProcess
from tests.gateway.conftest import GatewayThread, make_s3
from tests.security.support import with_userinfo
from tests.security.test_authorization import bucket_permissions, user

GOOD, OTHER = "good", "other"
# A writer of GOOD: the bucket and its store of uploads, which its first upload creates.
WRITER = [
    *bucket_permissions(GOOD, write=True),
    *bucket_permissions(uploads_store(GOOD), write=True),
    f"$JS.API.STREAM.CREATE.OBJ_{uploads_store(GOOD)}",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerProcess]:
    config = (
        "authorization { users: [\n  {user: admin, password: admin-pw}\n"
        + user("reader", bucket_permissions(GOOD, write=False))
        + user("writer", WRITER)
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
        '[keys.AKIAWRITER]\nsecret = "writer-secret"\nuser = "writer"\npassword = "writer-pw"\n'
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


def test_an_unsigned_clients_errors_carry_no_nats_detail(gateway: GatewayThread) -> None:
    """NATS's refusal names subjects, grant advice, the server's address and the NATS user:
    the operator's log has it, an unsigned client gets S3's words (issue 39, 8). A signed
    client still gets natsobj's message."""
    admin = make_s3(gateway.endpoint)
    admin.put_bucket_acl(Bucket=OTHER, ACL="public-read")
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{gateway.endpoint}/{OTHER}/secret", timeout=30)
    finally:
        admin.put_bucket_acl(Bucket=OTHER, ACL="private")
    body = refused.value.read().decode()
    assert refused.value.code == 403
    assert "<Message>Access Denied</Message>" in body
    for detail in ("$O.", "$JS", "reader", "127.0.0.1", "allow", "grant", "permission"):
        assert detail not in body, detail
    reader = make_s3(gateway.endpoint, access_key="AKIAREADER", secret="reader-secret")
    with pytest.raises(botocore.exceptions.ClientError) as signed:
        reader.get_object(Bucket=OTHER, Key="secret")
    assert OTHER in signed.value.response["Error"]["Message"]


def test_a_key_reaches_the_uploads_of_its_own_buckets_only(gateway: GatewayThread) -> None:
    """Each bucket keeps its uploads in progress in a store of its own, so the rights a key
    has on a bucket's uploads are NATS's, granted with the bucket's: a writer of GOOD can
    neither list, add to, nor abort an upload to OTHER, nor read its parts."""
    admin = make_s3(gateway.endpoint)
    writer = make_s3(gateway.endpoint, access_key="AKIAWRITER", secret="writer-secret")
    theirs = admin.create_multipart_upload(Bucket=OTHER, Key="payroll")["UploadId"]
    admin.upload_part(Bucket=OTHER, Key="payroll", UploadId=theirs, PartNumber=1, Body=b"$$$")
    attempts = {
        "ListParts": lambda: writer.list_parts(Bucket=OTHER, Key="payroll", UploadId=theirs),
        "UploadPart": lambda: writer.upload_part(
            Bucket=OTHER, Key="payroll", UploadId=theirs, PartNumber=1, Body=b"forged"
        ),
        "AbortMultipartUpload": lambda: writer.abort_multipart_upload(
            Bucket=OTHER, Key="payroll", UploadId=theirs
        ),
        "ListMultipartUploads": lambda: writer.list_multipart_uploads(Bucket=OTHER),
    }
    for operation, attempt in attempts.items():
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            attempt()
        assert _code(refused) == "AccessDenied", operation
    parts = admin.list_parts(Bucket=OTHER, Key="payroll", UploadId=theirs)["Parts"]
    assert [(part["PartNumber"], part["Size"]) for part in parts] == [(1, 3)]
    admin.abort_multipart_upload(Bucket=OTHER, Key="payroll", UploadId=theirs)
    # the writer's own uploads to GOOD work on the rights granted with the bucket
    mine = writer.create_multipart_upload(Bucket=GOOD, Key="report")["UploadId"]
    tag = writer.upload_part(Bucket=GOOD, Key="report", UploadId=mine, PartNumber=1, Body=b"mine")[
        "ETag"
    ]
    writer.complete_multipart_upload(
        Bucket=GOOD,
        Key="report",
        UploadId=mine,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": tag}]},
    )
    assert writer.get_object(Bucket=GOOD, Key="report")["Body"].read() == b"mine"
