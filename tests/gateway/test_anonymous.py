"""Unsigned requests: refused, except GET and HEAD of a bucket published ``public-read``, acting as
the credentials file's ``[anonymous]`` identity; canned ACLs; HTTPS."""

from __future__ import annotations

import datetime
import ipaddress
import itertools
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import botocore.exceptions
import pytest
import urllib3
from botocore import UNSIGNED
from botocore.config import Config

from natsobj.gateway import BadTlsFiles, tls_context
from natsobj.gateway.acl import PUBLIC_READ_METADATA
from natsobj.store_config import tag_metadata
from tests.gateway.conftest import ACCESS_KEY, SECRET, GatewayThread, make_s3

_names = itertools.count()


@pytest.fixture(scope="module")
def credentials_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's gateway lets unsigned requests act as its own connection."""
    path = tmp_path_factory.mktemp("gateway-anon") / "keys.toml"
    path.write_text(f'[keys.{ACCESS_KEY}]\nsecret = "{SECRET}"\n\n[anonymous]\n')
    path.chmod(0o600)
    return path


def _anonymous(endpoint: str, verify: str | None = None):  # type: ignore[no-untyped-def]
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        verify=verify,
        config=Config(
            signature_version=UNSIGNED,
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1},
        ),
    )


def _code(error: pytest.ExceptionInfo[botocore.exceptions.ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


@pytest.fixture
def public(s3) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A bucket created published, holding ``k``."""
    name = f"gw-anon-{next(_names)}"
    s3.create_bucket(Bucket=name, ACL="public-read")
    s3.put_object(Bucket=name, Key="k", Body=b"public bytes", ACL="public-read")
    yield name
    for item in s3.list_objects_v2(Bucket=name).get("Contents", []):
        s3.delete_object(Bucket=name, Key=item["Key"])
    s3.delete_bucket(Bucket=name)


def test_published_bucket_is_readable_unsigned(gateway: GatewayThread, public: str) -> None:
    anonymous = _anonymous(gateway.endpoint)
    assert anonymous.get_object(Bucket=public, Key="k")["Body"].read() == b"public bytes"
    assert anonymous.head_object(Bucket=public, Key="k")["ContentLength"] == 12
    assert [o["Key"] for o in anonymous.list_objects(Bucket=public)["Contents"]] == ["k"]
    assert anonymous.list_objects_v2(Bucket=public)["KeyCount"] == 1
    ranged = anonymous.get_object(Bucket=public, Key="k", Range="bytes=0-5")
    assert ranged["Body"].read() == b"public"
    with pytest.raises(botocore.exceptions.ClientError) as missing:
        anonymous.get_object(Bucket=public, Key="absent")
    assert _code(missing) == "NoSuchKey"
    with pytest.raises(botocore.exceptions.ClientError) as gone:
        anonymous.get_object(Bucket="gw-anon-never-made", Key="k")
    assert _code(gone) == "NoSuchBucket"


def test_every_unsigned_write_and_owner_read_is_refused(
    gateway: GatewayThread,
    s3,  # type: ignore[no-untyped-def]
    public: str,
) -> None:
    anonymous = _anonymous(gateway.endpoint)
    writes = [
        lambda: anonymous.put_object(Bucket=public, Key="new", Body=b"x"),
        lambda: anonymous.put_object(Bucket=public, Key="k", Body=b"overwritten"),
        lambda: anonymous.delete_object(Bucket=public, Key="k"),
        lambda: anonymous.delete_objects(Bucket=public, Delete={"Objects": [{"Key": "k"}]}),
        lambda: anonymous.copy_object(Bucket=public, Key="copy", CopySource=f"{public}/k"),
        lambda: anonymous.create_multipart_upload(Bucket=public, Key="mp"),
        lambda: anonymous.put_bucket_acl(Bucket=public, ACL="private"),
        lambda: anonymous.put_object_acl(Bucket=public, Key="k", ACL="public-read"),
        lambda: anonymous.delete_bucket(Bucket=public),
        lambda: anonymous.create_bucket(Bucket="gw-anon-made-unsigned"),
        lambda: anonymous.list_buckets(),
        # reads the public-read grant does not cover: they are the owner's
        lambda: anonymous.get_bucket_acl(Bucket=public),
        lambda: anonymous.get_object_acl(Bucket=public, Key="k"),
        lambda: anonymous.get_bucket_location(Bucket=public),
    ]
    for write in writes:
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            write()
        assert _code(refused) == "AccessDenied"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=public)["Contents"]] == ["k"]
    assert s3.get_object(Bucket=public, Key="k")["Body"].read() == b"public bytes"
    assert s3.list_multipart_uploads(Bucket=public).get("Uploads", []) == []
    assert "gw-anon-made-unsigned" not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


def test_private_until_published_and_again_after(
    gateway: GatewayThread,
    s3,  # type: ignore[no-untyped-def]
    sync_client,  # type: ignore[no-untyped-def]
) -> None:
    name = f"gw-anon-{next(_names)}"
    s3.create_bucket(Bucket=name)
    s3.put_object(Bucket=name, Key="k", Body=b"x")
    anonymous = _anonymous(gateway.endpoint)
    with pytest.raises(botocore.exceptions.ClientError) as private:
        anonymous.get_object(Bucket=name, Key="k")
    assert _code(private) == "AccessDenied"
    assert [g["Permission"] for g in s3.get_bucket_acl(Bucket=name)["Grants"]] == ["FULL_CONTROL"]

    s3.put_bucket_acl(Bucket=name, ACL="public-read")
    assert anonymous.get_object(Bucket=name, Key="k")["Body"].read() == b"x"
    grants = s3.get_bucket_acl(Bucket=name)["Grants"]
    assert {"Permission": "READ", "Grantee": {"Type": "Group", "URI": _ALL_USERS}} in grants
    assert s3.get_object_acl(Bucket=name, Key="k")["Grants"] == grants
    status = sync_client.store(name).status()
    assert status.metadata[PUBLIC_READ_METADATA] == "true"
    assert PUBLIC_READ_METADATA not in tag_metadata(status.metadata)

    s3.put_bucket_acl(Bucket=name, ACL="private")
    with pytest.raises(botocore.exceptions.ClientError) as again:
        anonymous.list_objects_v2(Bucket=name)
    assert _code(again) == "AccessDenied"
    s3.delete_object(Bucket=name, Key="k")
    s3.delete_bucket(Bucket=name)


_ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"


def test_acls_beyond_private_and_public_read_are_not_implemented(
    s3,  # type: ignore[no-untyped-def]
    public: str,
) -> None:
    refused = [
        lambda: s3.create_bucket(Bucket=f"gw-anon-{next(_names)}", ACL="public-read-write"),
        lambda: s3.put_bucket_acl(Bucket=public, ACL="authenticated-read"),
        lambda: s3.put_bucket_acl(Bucket=public, GrantRead="uri=" + _ALL_USERS),
        lambda: s3.put_object(Bucket=public, Key="p", Body=b"x", ACL="private"),
        lambda: s3.put_object_acl(Bucket=public, Key="k", ACL="private"),
    ]
    for request in refused:
        with pytest.raises(botocore.exceptions.ClientError) as error:
            request()
        assert _code(error) == "NotImplemented"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=public)["Contents"]] == ["k"]
    s3.put_object_acl(Bucket=public, Key="k", ACL="public-read")
    owner = s3.get_object_acl(Bucket=public, Key="k")["Owner"]
    assert s3.list_objects(Bucket=public)["Contents"][0]["Owner"] == owner


def test_cors_preflight_is_answered_as_s3_without_cors(gateway: GatewayThread, public: str) -> None:
    bare = urllib3.request("OPTIONS", f"{gateway.endpoint}/{public}/k")
    assert bare.status == 400 and b"<Code>BadRequest</Code>" in bare.data
    cors = urllib3.request(
        "OPTIONS", f"{gateway.endpoint}/{public}/k", headers={"Origin": "https://a.example"}
    )
    assert cors.status == 403 and b"<Code>AccessForbidden</Code>" in cors.data


def test_without_an_anonymous_table_nothing_is_public(
    nats_url: str,
    tmp_path: Path,
    s3,  # type: ignore[no-untyped-def]
    public: str,
) -> None:
    keys = tmp_path / "keys.toml"
    keys.write_text(f'[keys.{ACCESS_KEY}]\nsecret = "{SECRET}"\n')
    keys.chmod(0o600)
    closed = GatewayThread(nats_url, keys)
    try:
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            _anonymous(closed.endpoint).get_object(Bucket=public, Key="k")
        assert _code(refused) == "AccessDenied"
    finally:
        closed.stop()


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made here (no network, no openssl binary)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "natsobj gateway test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path


def test_https_with_a_certificate(nats_url: str, credentials_file: Path, tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    served = GatewayThread(nats_url, credentials_file, tls=tls_context(cert, key))
    try:
        assert served.endpoint.startswith("https://127.0.0.1:")
        s3 = make_s3(served.endpoint, verify=str(cert))
        s3.create_bucket(Bucket="gw-tls")
        s3.put_object(Bucket="gw-tls", Key="k", Body=b"over tls")
        assert s3.get_object(Bucket="gw-tls", Key="k")["Body"].read() == b"over tls"
        s3.delete_object(Bucket="gw-tls", Key="k")
        s3.delete_bucket(Bucket="gw-tls")
        plain = served.endpoint.replace("https://", "http://")
        with pytest.raises(urllib3.exceptions.HTTPError):
            urllib3.request("GET", plain, retries=False)
        with pytest.raises(botocore.exceptions.SSLError):
            make_s3(served.endpoint).list_buckets()  # not trusted without the certificate
    finally:
        served.stop()
    with pytest.raises(BadTlsFiles, match=r"key\.pem"):
        tls_context(key, key)


def test_gateway_command_serves_https(
    nats_url: str, credentials_file: Path, tmp_path: Path
) -> None:
    cert, key = _self_signed(tmp_path)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "natsobj.cli",
            "--url",
            nats_url,
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--credentials",
            str(credentials_file),
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("S3 gateway on https://127.0.0.1:"), line
        assert "Buckets" in make_s3(line.split()[-1], verify=str(cert)).list_buckets()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
