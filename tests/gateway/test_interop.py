"""Objects written through the gateway are ordinary ADR-20 objects: the official JavaScript
client (tests/interop_js) and nats-py's own ObjectStore read them, bytes, digest, headers and
metadata included, a multipart upload's result as any other; and an object nats.js wrote is
served to S3 clients with its headers and metadata as S3 headers and a stable ETag.

nats-py's ObjectInfo has no ``metadata`` field (it drops the record's), so the metadata is read
from the object's record with nats-py's JetStream API."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import uuid
from pathlib import Path

import nats
import pytest

from natsobj.sync import run
from tests.core.test_interop_js import js

PART = 5 << 20
HEADERS = {"Content-Type": "application/x-report", "Cache-Control": "max-age=600"}


@pytest.fixture
def bucket(s3) -> str:  # type: ignore[no-untyped-def]
    name = f"io-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def _digest(data: bytes) -> str:
    return "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()


def _natspy_get(url: str, bucket: str, name: str):  # type: ignore[no-untyped-def]
    """nats-py's ObjectStore ``get`` (it checks the digest as it reads), and the object's
    ADR-20 record as nats-py's JetStream API reads it, for the metadata its ObjectInfo drops."""

    async def body():  # type: ignore[no-untyped-def]
        nc = await nats.connect(url)
        try:
            js = nc.jetstream()
            got = await (await js.object_store(bucket)).get(name)
            subject = f"$O.{bucket}.M.{base64.urlsafe_b64encode(name.encode()).decode()}"
            record = await js.get_last_msg(f"OBJ_{bucket}", subject)
            return got, json.loads(record.data)
        finally:
            await nc.close()

    return run(body())


def _written_through_the_gateway(s3, bucket: str) -> dict[str, bytes]:  # type: ignore[no-untyped-def]
    """A PutObject and a three-part multipart upload, each with headers and metadata."""
    single = os.urandom(300_000)
    s3.put_object(
        Bucket=bucket,
        Key="put/report.bin",
        Body=single,
        ContentType=HEADERS["Content-Type"],
        CacheControl=HEADERS["Cache-Control"],
        Metadata={"owner": "etl", "run": "42"},
    )
    parts = [os.urandom(PART), os.urandom(PART), os.urandom(123_457)]
    upload = s3.create_multipart_upload(
        Bucket=bucket,
        Key="mp/report.bin",
        ContentType=HEADERS["Content-Type"],
        CacheControl=HEADERS["Cache-Control"],
        Metadata={"owner": "etl", "run": "42"},
    )["UploadId"]
    etags = [
        s3.upload_part(
            Bucket=bucket, Key="mp/report.bin", UploadId=upload, PartNumber=number, Body=data
        )["ETag"]
        for number, data in enumerate(parts, start=1)
    ]
    s3.complete_multipart_upload(
        Bucket=bucket,
        Key="mp/report.bin",
        UploadId=upload,
        MultipartUpload={
            "Parts": [{"PartNumber": n, "ETag": etag} for n, etag in enumerate(etags, start=1)]
        },
    )
    return {"put/report.bin": single, "mp/report.bin": b"".join(parts)}


def test_javascript_and_natspy_read_what_the_gateway_writes(  # type: ignore[no-untyped-def]
    s3, bucket: str, nats_url: str, tmp_path: Path
) -> None:
    written = _written_through_the_gateway(s3, bucket)
    for name, data in written.items():
        out = tmp_path / "js.bin"
        info = js("get", nats_url, bucket, name, str(out))  # nats.js checks the digest too
        assert out.read_bytes() == data, name
        assert info["digest"] == _digest(data) and info["size"] == len(data), name
        assert {key: info["headers"].get(key) for key in HEADERS} == {
            key: [value] for key, value in HEADERS.items()
        }, name
        assert info["metadata"] == {"owner": "etl", "run": "42"}, name

        theirs, record = _natspy_get(nats_url, bucket, name)
        assert theirs.data == data, name
        assert theirs.info.digest == _digest(data) and theirs.info.size == len(data), name
        assert {key: theirs.info.headers.get(key) for key in HEADERS} == {
            key: [value] for key, value in HEADERS.items()
        }, name
        assert record["metadata"] == {"owner": "etl", "run": "42"}, name
    assert sorted(js("list", nats_url, bucket)) == sorted(written)


def test_the_gateway_serves_what_javascript_writes(  # type: ignore[no-untyped-def]
    s3, bucket: str, nats_url: str, tmp_path: Path
) -> None:
    data = os.urandom(400_000)
    source = tmp_path / "in.bin"
    source.write_bytes(data)
    record = {
        "headers": {
            "Content-Type": "text/csv",
            "Cache-Control": "no-cache",
            "Content-Disposition": 'attachment; filename="x.csv"',
            "Content-Encoding": "identity",
        },
        "metadata": {"owner": "js", "stage": "raw"},
    }
    written = js("put", nats_url, bucket, "from-js.csv", str(source), json.dumps(record))
    assert written["digest"] == _digest(data)

    etag = f'"{hashlib.sha256(data).digest()[:16].hex()}"'  # from the digest nats.js recorded
    head = s3.head_object(Bucket=bucket, Key="from-js.csv")
    got = s3.get_object(Bucket=bucket, Key="from-js.csv")
    assert got["Body"].read() == data
    for answer in (head, got):
        assert answer["ETag"] == etag
        assert answer["ContentLength"] == len(data)
        assert answer["ContentType"] == "text/csv"
        assert answer["CacheControl"] == "no-cache"
        assert answer["ContentDisposition"] == 'attachment; filename="x.csv"'
        assert answer["ContentEncoding"] == "identity"
        assert answer["Metadata"] == {"owner": "js", "stage": "raw"}
    # stable: every read, a listing and a conditional read agree on it
    again = s3.get_object(Bucket=bucket, Key="from-js.csv", IfMatch=etag, Range="bytes=10-19")
    assert again["ETag"] == etag and again["Body"].read() == data[10:20]
    assert [o["ETag"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == [etag]
