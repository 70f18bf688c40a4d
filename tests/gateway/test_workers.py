"""``--workers``: processes sharing the port, one gateway to Prometheus, and a SIGTERM that
drains: a part in flight when the gateway is told to stop is stored, and the upload completes
on another gateway."""

from __future__ import annotations

import http.client
import os
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from prometheus_client.parser import text_string_to_metric_families

from tests.gateway.conftest import make_s3
from tests.gateway.processes import GatewayProcess

MiB = 1 << 20


def scrape(endpoint: str) -> dict[str, float]:
    """``/metrics`` read by Prometheus' own text-format parser: sample name and labels → value."""
    with urllib.request.urlopen(f"{endpoint}/metrics", timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=")
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples


def wait_for(condition: Callable[[], bool], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        time.sleep(0.05)


def workers_of(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in children]


def test_workers_share_the_port_and_count_as_one_gateway(
    nats_url: str, credentials_file: Path, tmp_path: Path
) -> None:
    with GatewayProcess(
        nats_url, tmp_path / "gateway.log",
        "--credentials", str(credentials_file), "--workers", "2", "--metrics",
    ) as gateway:  # fmt: skip
        assert len(workers_of(gateway.process.pid)) == 2
        s3 = make_s3(gateway.endpoint)
        s3.create_bucket(Bucket="workers")
        for number in range(20):
            # a new connection each: the kernel hands them to either worker
            make_s3(gateway.endpoint).put_object(Bucket="workers", Key=f"k{number}", Body=b"x")
        samples = scrape(gateway.endpoint)
        answered = sum(
            value
            for name, value in samples.items()
            if name.startswith("natsobj_gateway_requests_total{")
        )
        assert answered == 21
        received = sum(
            value
            for name, value in samples.items()
            if name.startswith("natsobj_gateway_received_bytes_total{")
        )
        assert received == 20
        assert samples["natsobj_gateway_nats_connected{}"] == 1
        assert gateway.terminate() == 0


def test_sigterm_mid_upload_loses_nothing(
    nats_url: str, credentials_file: Path, tmp_path: Path
) -> None:
    first_part, last_part = os.urandom(5 * MiB), os.urandom(MiB)
    with GatewayProcess(
        nats_url, tmp_path / "first.log",
        "--credentials", str(credentials_file), "--workers", "2", "--metrics",
    ) as first:  # fmt: skip
        s3 = make_s3(first.endpoint)
        s3.create_bucket(Bucket="drain")
        upload = s3.create_multipart_upload(Bucket="drain", Key="big")["UploadId"]
        etag1 = s3.upload_part(
            Bucket="drain", Key="big", UploadId=upload, PartNumber=1, Body=first_part
        )["ETag"]
        url = urlsplit(
            s3.generate_presigned_url(
                "upload_part",
                Params={"Bucket": "drain", "Key": "big", "UploadId": upload, "PartNumber": 2},
            )
        )
        in_flight = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
        in_flight.putrequest("PUT", f"{url.path}?{url.query}", skip_accept_encoding=True)
        in_flight.putheader("Content-Length", str(len(last_part)))
        in_flight.endheaders()
        in_flight.send(last_part[: MiB // 2])
        wait_for(lambda: scrape(first.endpoint)["natsobj_gateway_requests_in_progress{}"] == 1)
        first.process.send_signal(15)  # SIGTERM to the gateway, passed to its workers
        # the rest of the body arrives only once the worker is draining (it has stopped
        # accepting): aiohttp's own shutdown would no longer read it
        wait_for(lambda: "draining 1 request(s) in progress" in first.log_text())
        in_flight.send(last_part[MiB // 2 :])
        answer = in_flight.getresponse()
        assert answer.status == 200, answer.read()
        etag2 = answer.getheader("ETag")
        assert first.terminate() == 0
    with GatewayProcess(
        nats_url, tmp_path / "second.log", "--credentials", str(credentials_file)
    ) as second:
        s3 = make_s3(second.endpoint)
        s3.complete_multipart_upload(
            Bucket="drain",
            Key="big",
            UploadId=upload,
            MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": etag1}, {"PartNumber": 2, "ETag": etag2}]
            },
        )
        assert s3.get_object(Bucket="drain", Key="big")["Body"].read() == first_part + last_part
        assert second.terminate() == 0
