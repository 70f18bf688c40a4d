"""What an operator watches and how an outage reads: readiness follows the NATS server (killed:
not ready, and S3 requests answered 503 ServiceUnavailable with Retry-After, which boto3
retries; back: ready), liveness does not, and the access log is JSON lines with no secret."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from natsobj.local.embedded import NatsServerProcess
from tests.gateway.conftest import ACCESS_KEY, SECRET, make_s3
from tests.gateway.processes import GatewayProcess
from tests.gateway.test_workers import scrape, wait_for


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[NatsServerProcess]:
    """A nats-server of the test's own, to kill and bring back."""
    server = NatsServerProcess(tmp_path / "nats")
    server.start()
    yield server
    server.stop()


def test_readiness_follows_the_nats_server_and_an_outage_is_a_503_boto3_retries(
    own_server: NatsServerProcess, credentials_file: Path, tmp_path: Path
) -> None:
    import boto3

    with GatewayProcess(
        own_server.url, tmp_path / "gateway.log",
        "--credentials", str(credentials_file), "--workers", "1", "--health", "--metrics",
    ) as gateway:  # fmt: skip
        ready, live = f"{gateway.endpoint}/health/ready", f"{gateway.endpoint}/health/live"
        assert status_of(ready) == 200
        s3 = make_s3(gateway.endpoint)
        s3.create_bucket(Bucket="outage")
        s3.put_object(Bucket="outage", Key="k", Body=b"kept")

        own_server.kill()
        wait_for(lambda: status_of(ready) == 503)
        assert status_of(live) == 200
        with pytest.raises(ClientError) as refused:
            s3.get_object(Bucket="outage", Key="k")
        answer = refused.value.response
        assert answer["Error"]["Code"] == "ServiceUnavailable"
        assert answer["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert answer["ResponseMetadata"]["HTTPHeaders"]["retry-after"] == "1"
        wait_for(lambda: scrape(gateway.endpoint)["natsobj_gateway_nats_connected{}"] == 0)

        # boto3 retries the 503: the server comes back while it does, and the GET succeeds
        retrying = boto3.client(
            "s3",
            endpoint_url=gateway.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET,
            region_name="us-east-1",
            config=Config(
                s3={"addressing_style": "path"},
                retries={"mode": "standard", "max_attempts": 20},
            ),
        )
        refusals = []

        def restart_on_first_refusal(http_response, **_: object) -> None:  # type: ignore[no-untyped-def]
            if http_response is not None and http_response.status_code == 503:
                refusals.append(http_response.headers.get("Retry-After"))
                if len(refusals) == 1:
                    own_server.start()

        retrying.meta.events.register("needs-retry.s3", _on_response(restart_on_first_refusal))
        assert retrying.get_object(Bucket="outage", Key="k")["Body"].read() == b"kept"
        assert refusals and refusals[0] == "1"
        wait_for(lambda: status_of(ready) == 200)
        wait_for(lambda: scrape(gateway.endpoint)["natsobj_gateway_nats_reconnects_total{}"] >= 1)
        assert gateway.terminate() == 0


def _on_response(callback):  # type: ignore[no-untyped-def]
    """A needs-retry handler that hands ``callback`` the HTTP response and decides nothing."""

    def handler(response, **_: object) -> None:  # type: ignore[no-untyped-def]
        if response is not None:
            callback(response[0])

    return handler


KEY = 'a "quoted" key, ü'  # the client's words, each line still one JSON object


def test_the_access_log_is_json_lines_without_a_secret(
    nats_url: str, credentials_file: Path, tmp_path: Path
) -> None:
    access_log = tmp_path / "access.jsonl"
    with GatewayProcess(
        nats_url, tmp_path / "gateway.log",
        "--credentials", str(credentials_file), "--workers", "1", "--access-log", str(access_log),
    ) as gateway:  # fmt: skip
        s3 = make_s3(gateway.endpoint)
        s3.create_bucket(Bucket="logged")
        s3.put_object(Bucket="logged", Key=KEY, Body=b"12345")
        presigned = s3.generate_presigned_url("get_object", Params={"Bucket": "logged", "Key": KEY})
        with urllib.request.urlopen(presigned, timeout=10) as response:
            assert response.read() == b"12345"
        assert gateway.terminate() == 0
    text = access_log.read_text()
    lines = [json.loads(line) for line in text.splitlines()]
    assert len(lines) == 3
    put, get = lines[1], lines[2]
    assert (put["method"], put["bucket"], put["key"], put["status"]) == ("PUT", "logged", KEY, 200)
    assert put["bytes_in"] == 5 and get["bytes_out"] == 5
    assert put["access_key_id"] == get["access_key_id"] == ACCESS_KEY
    assert all(line["duration_ms"] >= 0 and line["operation"] for line in lines)
    signature = presigned.split("X-Amz-Signature=")[1].split("&")[0]
    assert SECRET not in text and signature not in text and "Signature" not in text
