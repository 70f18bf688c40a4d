"""Presigned URLs natsobj makes (``natsobj presign``, the ``nats://`` filesystem's ``sign``),
fetched with a plain HTTP client from a real gateway on a real nats-server: they work until
they expire, a tampered one is refused, and they are the very URLs ``aws s3 presign`` makes
for the same key, object and time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from click.testing import CliRunner

from natsobj.cli.app import cli
from natsobj.errors import GatewayNotConfigured
from natsobj.fs import NatsObjectFileSystem
from natsobj.s3.sigv4 import presign
from tests.gateway.conftest import ACCESS_KEY, SECRET, GatewayThread

KEY = "reports/q1 2025+final.csv"  # a space and a plus: the encodings a signature covers
BODY = b"day,amount\nmon,3\n"


@pytest.fixture(scope="module")
def bucket(s3) -> str:  # type: ignore[no-untyped-def]
    name = f"ps-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    s3.put_object(Bucket=name, Key=KEY, Body=BODY)
    return name


def fetch(url: str, *, method: str = "GET", data: bytes | None = None) -> tuple[int, bytes]:
    """Status and body of a plain urllib request (an S3 error document for a refusal)."""
    request = urllib.request.Request(url, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read()


def test_fsspec_sign_is_a_url_urllib_reads(gateway: GatewayThread, bucket: str, nats_url) -> None:
    fs = NatsObjectFileSystem(
        url=nats_url,
        gateway_url=gateway.endpoint,
        gateway_access_key=ACCESS_KEY,
        gateway_secret=SECRET,
        skip_instance_cache=True,
    )
    url = fs.sign(f"nats://{bucket}/{KEY}", expiration=60)
    assert url.startswith(f"{gateway.endpoint}/{bucket}/reports/q1%202025%2Bfinal.csv?")
    assert parse_qs(urlsplit(url).query)["X-Amz-Expires"] == ["60"]
    assert fetch(url) == (200, BODY)


def test_fsspec_sign_without_a_gateway_is_not_implemented(nats_url: str, monkeypatch) -> None:
    for var in ("NATSOBJ_GATEWAY_URL", "NATSOBJ_GATEWAY_ACCESS_KEY", "NATSOBJ_GATEWAY_SECRET"):
        monkeypatch.delenv(var, raising=False)
    fs = NatsObjectFileSystem(url=nats_url, skip_instance_cache=True)
    with pytest.raises(NotImplementedError, match="no S3 gateway endpoint") as raised:
        fs.sign("nats://b/k")
    assert isinstance(raised.value, GatewayNotConfigured)
    assert "NATSOBJ_GATEWAY_URL" in raised.value.hint


def test_expired_and_tampered_urls_are_refused(gateway: GatewayThread, bucket: str) -> None:
    def signed(**overrides: object) -> str:
        given: dict = {"access_key": ACCESS_KEY, "secret": SECRET, "expires_in": 60, **overrides}
        return presign(gateway.endpoint, bucket, KEY, **given)

    assert fetch(signed()) == (200, BODY)

    status, body = fetch(signed(now=datetime.now(UTC) - timedelta(seconds=120)))
    assert status == 403 and b"<Code>AccessDenied</Code>" in body and b"expired" in body

    url = signed()
    tampered = {
        "signature": url[:-1] + ("0" if url[-1] != "0" else "1"),
        "expiry": url.replace("X-Amz-Expires=60", "X-Amz-Expires=600"),
        "key": url.replace("q1%202025", "q2%202025"),
        "secret": signed(secret=SECRET + "x"),
    }
    for what, bad in tampered.items():
        status, body = fetch(bad)
        assert (status, what) == (403, what) and b"SignatureDoesNotMatch" in body, body


def test_natsobj_presign_get_and_put(gateway: GatewayThread, bucket: str, s3, tmp_path) -> None:  # type: ignore[no-untyped-def]
    keys = tmp_path / "keys.toml"
    keys.write_text(f'[keys.{ACCESS_KEY}]\nsecret = "{SECRET}"\n')
    keys.chmod(0o600)
    runner = CliRunner()
    common = ["--endpoint-url", gateway.endpoint, "--credentials", str(keys)]
    got = runner.invoke(
        cli, ["presign", f"s3://{bucket}/{KEY}", *common, "--expires-in", "120"], env={}
    )
    assert got.exit_code == 0, got.output
    assert fetch(got.output.strip()) == (200, BODY)

    put = runner.invoke(cli, ["presign", f"nats://{bucket}/up.txt", *common, "--method", "PUT"])
    assert put.exit_code == 0, put.output
    assert fetch(put.output.strip(), method="PUT", data=b"uploaded")[0] == 200
    assert s3.get_object(Bucket=bucket, Key="up.txt")["Body"].read() == b"uploaded"
    # a GET URL does not let its holder write
    status, body = fetch(got.output.strip(), method="PUT", data=b"nope")
    assert status == 403 and b"SignatureDoesNotMatch" in body

    too_long = runner.invoke(cli, ["presign", f"s3://{bucket}/{KEY}", "--expires-in", "604801"])
    assert too_long.exit_code == 2 and "604801" in too_long.output


def test_aws_s3_presign_and_ours_are_the_same_url(
    gateway: GatewayThread, bucket: str, tmp_path: Path
) -> None:
    executable = shutil.which("aws", path=str(Path(sys.executable).parent))
    assert executable is not None, "the AWS CLI (aws, in the dev extra) is not installed"
    (tmp_path / "config").write_text("[default]\ns3 =\n    signature_version = s3v4\n")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
    }
    done = subprocess.run(
        [executable, "--endpoint-url", gateway.endpoint, "s3", "presign", f"s3://{bucket}/{KEY}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    theirs = done.stdout.strip()
    signed_at = datetime.strptime(
        parse_qs(urlsplit(theirs).query)["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ"
    ).replace(tzinfo=UTC)
    ours = presign(
        gateway.endpoint, bucket, KEY, access_key=ACCESS_KEY, secret=SECRET, now=signed_at
    )
    assert ours == theirs
    assert fetch(theirs) == (200, BODY)
    assert fetch(ours) == (200, BODY)


@pytest.mark.unit
def test_a_gateway_url_that_is_not_http_is_refused_at_once() -> None:
    from natsobj.settings import ConnectionSettings

    with pytest.raises(ValueError, match="gateway_url must look like http://HOST:PORT"):
        ConnectionSettings(servers=["nats://127.0.0.1:4222"], gateway_url="nats://h:4222")
