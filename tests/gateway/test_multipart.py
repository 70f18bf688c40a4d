"""Multipart upload through the gateway with boto3, against a real nats-server: the object it
makes is an ordinary ADR-20 object, its state lives in NATS (a second gateway carries on an
upload the first began), and nothing of an upload shows in listings or survives an Abort."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import botocore.exceptions
import pytest
from boto3.s3.transfer import TransferConfig

from natsobj.gateway.multipart import UPLOADS_STORE
from tests.gateway.conftest import GatewayThread, make_s3

PART = 5 << 20


@pytest.fixture
def bucket(s3) -> str:  # type: ignore[no-untyped-def]
    name = f"mp-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def _code(error: pytest.ExceptionInfo[botocore.exceptions.ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def _leftovers(sync_client, bucket: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Whatever of ``bucket``'s uploads is still in the hidden store, tombstones included."""
    uploads = sync_client.store(UPLOADS_STORE)
    return [
        info.name
        for info in uploads.list(include_deleted=True)
        if info.name.startswith((f"uploads/{bucket}/", f"parts/{bucket}/"))
    ]


def test_upload_file_above_the_threshold_is_one_nats_object(  # type: ignore[no-untyped-def]
    s3, bucket: str, sync_client, tmp_path: Path
) -> None:
    data = os.urandom(2 * PART + 12345)
    source = tmp_path / "big.bin"
    source.write_bytes(data)
    config = TransferConfig(multipart_threshold=PART, multipart_chunksize=PART)
    s3.upload_file(
        str(source),
        bucket,
        "big/data.bin",
        Config=config,
        ExtraArgs={"ContentType": "application/x-big", "Metadata": {"Owner": "etl"}},
    )
    head = s3.head_object(Bucket=bucket, Key="big/data.bin")
    assert head["ContentLength"] == len(data)
    assert head["ETag"].endswith('-3"')
    assert head["ContentType"] == "application/x-big"
    assert head["Metadata"] == {"owner": "etl"}
    assert s3.get_object(Bucket=bucket, Key="big/data.bin")["Body"].read() == data
    ranged = s3.get_object(Bucket=bucket, Key="big/data.bin", Range=f"bytes={PART - 5}-{PART + 4}")
    assert ranged["Body"].read() == data[PART - 5 : PART + 5]
    # a plain natsobj client reads it as any object: bytes, digest, headers, metadata
    store = sync_client.store(bucket)
    assert store.get_bytes("big/data.bin") == data
    info = store.get_info("big/data.bin")
    assert info.headers["Content-Type"] == ["application/x-big"]
    assert info.metadata == {"owner": "etl"}
    assert [i.name for i in store.list()] == ["big/data.bin"]
    assert not [name for name in _leftovers(sync_client, bucket) if name.startswith("parts/")]


def test_parts_on_two_gateways_listing_and_abort(  # type: ignore[no-untyped-def]
    s3, bucket: str, sync_client, nats_url: str, credentials_file: Path
) -> None:
    other = GatewayThread(nats_url, credentials_file)
    try:
        s3b = make_s3(other.endpoint)
        upload = s3.create_multipart_upload(Bucket=bucket, Key="k")["UploadId"]
        first = s3.upload_part(
            Bucket=bucket, Key="k", UploadId=upload, PartNumber=1, Body=b"a" * PART
        )
        second = s3b.upload_part(
            Bucket=bucket, Key="k", UploadId=upload, PartNumber=2, Body=b"b" * 10
        )
        parts = s3b.list_parts(Bucket=bucket, Key="k", UploadId=upload)["Parts"]
        assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in parts] == [
            (1, PART, first["ETag"]),
            (2, 10, second["ETag"]),
        ]
        listed = s3.list_multipart_uploads(Bucket=bucket)["Uploads"]
        assert [(u["Key"], u["UploadId"]) for u in listed] == [("k", upload)]
        # neither the bucket's listing nor ListBuckets shows anything of the upload
        assert "Contents" not in s3.list_objects_v2(Bucket=bucket)
        assert UPLOADS_STORE not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
        with pytest.raises(botocore.exceptions.ClientError) as absent:
            s3.head_object(Bucket=bucket, Key="k")
        assert absent.value.response["Error"]["Code"] == "404"
        s3b.abort_multipart_upload(Bucket=bucket, Key="k", UploadId=upload)
    finally:
        other.stop()
    assert _leftovers(sync_client, bucket) == []
    assert "Uploads" not in s3.list_multipart_uploads(Bucket=bucket)
    with pytest.raises(botocore.exceptions.ClientError) as gone:
        s3.abort_multipart_upload(Bucket=bucket, Key="k", UploadId=upload)
    assert _code(gone) == "NoSuchUpload"


def test_complete_checks_parts_as_s3_does(s3, bucket: str, sync_client) -> None:  # type: ignore[no-untyped-def]
    s3.put_object(Bucket=bucket, Key="k", Body=b"old")
    upload = s3.create_multipart_upload(Bucket=bucket, Key="k")["UploadId"]
    tags = [
        s3.upload_part(Bucket=bucket, Key="k", UploadId=upload, PartNumber=n, Body=body)["ETag"]
        for n, body in ((1, b"x" * 100), (2, b"y" * 100))
    ]

    def complete(parts: list[dict[str, object]], **extra: str) -> str:
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            s3.complete_multipart_upload(
                Bucket=bucket, Key="k", UploadId=upload, MultipartUpload={"Parts": parts}, **extra
            )
        return _code(refused)

    one = {"PartNumber": 1, "ETag": tags[0]}
    two = {"PartNumber": 2, "ETag": tags[1]}
    assert complete([one, two]) == "EntityTooSmall"
    assert complete([two, one]) == "InvalidPartOrder"
    assert complete([{"PartNumber": 1, "ETag": '"' + "f" * 32 + '"'}]) == "InvalidPart"
    assert complete([{"PartNumber": 3, "ETag": tags[0]}]) == "InvalidPart"
    assert complete([one], IfNoneMatch="*") == "PreconditionFailed"
    # nothing refused touched the object
    assert s3.get_object(Bucket=bucket, Key="k")["Body"].read() == b"old"
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key="k", UploadId=upload, MultipartUpload={"Parts": [one]}
    )
    assert done["ETag"].endswith('-1"')
    again = s3.complete_multipart_upload(
        Bucket=bucket, Key="k", UploadId=upload, MultipartUpload={"Parts": [one]}
    )
    assert again["ETag"] == done["ETag"]
    assert s3.get_object(Bucket=bucket, Key="k", IfMatch=done["ETag"])["Body"].read() == b"x" * 100
    assert not [n for n in _leftovers(sync_client, bucket) if n.startswith("parts/")]
    with pytest.raises(botocore.exceptions.ClientError) as unknown:
        s3.upload_part(Bucket=bucket, Key="k", UploadId="0" * 32, PartNumber=1, Body=b"x")
    assert _code(unknown) == "NoSuchUpload"
