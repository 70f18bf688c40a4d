"""Multipart upload through the gateway with boto3, against a real nats-server: the object it
makes is an ordinary ADR-20 object, its state lives in NATS (a second gateway carries on an
upload the first began), and nothing of an upload shows in listings or survives an Abort."""

from __future__ import annotations

import base64
import hashlib
import os
import uuid
import zlib
from pathlib import Path

import botocore.exceptions
import pytest
from awscrt.checksums import crc64nvme
from boto3.s3.transfer import TransferConfig

from natsobj.gateway.multipart import uploads_store
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
    """Whatever of ``bucket``'s uploads is still in its hidden store, tombstones included."""
    uploads = sync_client.store(uploads_store(bucket))
    return [info.name for info in uploads.list(include_deleted=True)]


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
        assert bucket in sync_client.store_names()
        assert uploads_store(bucket) in sync_client.store_names()
        assert uploads_store(bucket) not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
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


def test_deleting_a_bucket_takes_its_uploads_in_progress(s3, sync_client) -> None:  # type: ignore[no-untyped-def]
    """A bucket created again under the name starts with no uploads of the one deleted."""
    name = f"mp-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    upload = s3.create_multipart_upload(Bucket=name, Key="k")["UploadId"]
    s3.upload_part(Bucket=name, Key="k", UploadId=upload, PartNumber=1, Body=b"x")
    assert uploads_store(name) in sync_client.store_names()
    s3.delete_bucket(Bucket=name)
    assert uploads_store(name) not in sync_client.store_names()
    s3.create_bucket(Bucket=name)
    assert "Uploads" not in s3.list_multipart_uploads(Bucket=name)
    with pytest.raises(botocore.exceptions.ClientError) as gone:
        s3.list_parts(Bucket=name, Key="k", UploadId=upload)
    assert _code(gone) == "NoSuchUpload"
    s3.delete_bucket(Bucket=name)


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


# --- checksums ---------------------------------------------------------------------------------


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


def _checksum(algorithm: str, data: bytes) -> str:
    if algorithm == "CRC32":
        return _b64(zlib.crc32(data).to_bytes(4, "big"))
    if algorithm == "CRC64NVME":
        return _b64(crc64nvme(data).to_bytes(8, "big"))
    return _b64(hashlib.new(algorithm.lower(), data).digest())


@pytest.mark.parametrize(
    ("algorithm", "kind"),
    [("SHA256", "COMPOSITE"), ("CRC32", "FULL_OBJECT"), ("CRC64NVME", "FULL_OBJECT")],
)
def test_multipart_checksums_as_s3_serves_them(  # type: ignore[no-untyped-def]
    s3, bucket: str, algorithm: str, kind: str
) -> None:
    """Each part's checksum is verified (or computed when the client sent none), echoed and
    listed; Complete answers the composite or full-object checksum, and HEAD with
    ChecksumMode, GetObjectAttributes and GET by partNumber serve what was kept."""
    field = "Checksum" + algorithm
    key = "sums/object.bin"
    first, second = os.urandom(PART), os.urandom(1000)
    created = s3.create_multipart_upload(
        Bucket=bucket, Key=key, ChecksumAlgorithm=algorithm, ChecksumType=kind
    )
    assert created["ChecksumAlgorithm"] == algorithm
    assert created["ChecksumType"] == kind
    upload_id = created["UploadId"]
    one = s3.upload_part(
        Bucket=bucket,
        Key=key,
        UploadId=upload_id,
        PartNumber=1,
        Body=first,
        ChecksumAlgorithm=algorithm,
        **{field: _checksum(algorithm, first)},
    )
    assert one[field] == _checksum(algorithm, first)
    with pytest.raises(botocore.exceptions.ClientError) as bad:
        s3.upload_part(
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            PartNumber=2,
            Body=second,
            ChecksumAlgorithm=algorithm,
            **{field: _checksum(algorithm, first)},
        )
    assert _code(bad) == "BadDigest"
    # no checksum sent with the part: the gateway computes the upload's algorithm's
    two = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=2, Body=second)
    listed = s3.list_parts(Bucket=bucket, Key=key, UploadId=upload_id)
    assert [part[field] for part in listed["Parts"]] == [
        _checksum(algorithm, first),
        _checksum(algorithm, second),
    ]
    if kind == "COMPOSITE":
        whole = hashlib.new(algorithm.lower())
        whole.update(base64.b64decode(_checksum(algorithm, first)))
        whole.update(base64.b64decode(_checksum(algorithm, second)))
        expected = f"{_b64(whole.digest())}-2"
    else:
        expected = _checksum(algorithm, first + second)
    done = s3.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=upload_id,
        MultipartUpload={
            "Parts": [
                {"PartNumber": 1, "ETag": one["ETag"], field: one[field]},
                {"PartNumber": 2, "ETag": two["ETag"]},
            ]
        },
        **{field: expected},
    )
    assert (done[field], done["ChecksumType"]) == (expected, kind)

    assert field not in s3.head_object(Bucket=bucket, Key=key)
    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert (head[field], head["ChecksumType"]) == (expected, kind)
    attributes = s3.get_object_attributes(
        Bucket=bucket, Key=key, ObjectAttributes=["ETag", "Checksum", "ObjectParts", "ObjectSize"]
    )
    assert attributes["ETag"] == done["ETag"].strip('"')
    assert attributes["Checksum"] == {field: expected, "ChecksumType": kind}
    assert attributes["ObjectSize"] == PART + 1000
    parts = attributes["ObjectParts"]
    assert parts["TotalPartsCount"] == 2
    assert [(p["PartNumber"], p["Size"], p[field]) for p in parts["Parts"]] == [
        (1, PART, _checksum(algorithm, first)),
        (2, 1000, _checksum(algorithm, second)),
    ]
    got = s3.get_object(Bucket=bucket, Key=key, PartNumber=2)
    assert got["Body"].read() == second
    assert got["PartsCount"] == 2
    assert got["ContentRange"] == f"bytes {PART}-{PART + 999}/{PART + 1000}"
    assert (got[field], got["ChecksumType"]) == (_checksum(algorithm, second), kind)
    with pytest.raises(botocore.exceptions.ClientError) as past:
        s3.head_object(Bucket=bucket, Key=key, PartNumber=3)
    assert past.value.response["ResponseMetadata"]["HTTPStatusCode"] == 416


def test_complete_with_a_wrong_full_object_checksum_stores_nothing(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    key = "sums/wrong.bin"
    upload_id = s3.create_multipart_upload(
        Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT"
    )["UploadId"]
    body = b"only part"
    part = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=1, Body=body)
    with pytest.raises(botocore.exceptions.ClientError) as bad:
        s3.complete_multipart_upload(
            Bucket=bucket,
            Key=key,
            UploadId=upload_id,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
            ChecksumCRC32=_checksum("CRC32", b"other bytes"),
        )
    assert _code(bad) == "BadDigest"
    with pytest.raises(botocore.exceptions.ClientError) as missing:
        s3.head_object(Bucket=bucket, Key=key)
    assert missing.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_put_checksum_is_kept_and_not_trusted_after_another_client_rewrites(  # type: ignore[no-untyped-def]
    s3, bucket: str, sync_client
) -> None:
    """PutObject's verified checksum answers ChecksumMode and GetObjectAttributes; a record
    another NATS client rewrote with the old headers copied across shows none (the kept value
    is bound to the digest of the bytes it was computed over)."""
    key = "sums/put.bin"
    body = b"checksummed body"
    crc = _checksum("CRC64NVME", body)
    s3.put_object(Bucket=bucket, Key=key, Body=body, ChecksumCRC64NVME=crc)
    assert "ChecksumCRC64NVME" not in s3.head_object(Bucket=bucket, Key=key)
    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert (head["ChecksumCRC64NVME"], head["ChecksumType"]) == (crc, "FULL_OBJECT")
    attributes = s3.get_object_attributes(
        Bucket=bucket, Key=key, ObjectAttributes=["Checksum", "ObjectParts", "StorageClass"]
    )
    assert attributes["Checksum"] == {"ChecksumCRC64NVME": crc, "ChecksumType": "FULL_OBJECT"}
    assert "ObjectParts" not in attributes
    assert attributes["StorageClass"] == "STANDARD"

    store = sync_client.store(bucket)
    old = store.get_info(key)
    store.put(key, b"other bytes entirely", headers=old.headers, metadata=old.metadata)
    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert "ChecksumCRC64NVME" not in head
    attributes = s3.get_object_attributes(Bucket=bucket, Key=key, ObjectAttributes=["Checksum"])
    assert "Checksum" not in attributes


def test_a_rewritten_multipart_object_has_no_parts(s3, bucket: str, sync_client) -> None:  # type: ignore[no-untyped-def]
    key = "sums/parts.bin"
    upload_id = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts = [
        {
            "PartNumber": n,
            "ETag": s3.upload_part(
                Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=n, Body=body
            )["ETag"],
        }
        for n, body in ((1, os.urandom(PART)), (2, b"tail"))
    ]
    s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
    )
    assert s3.head_object(Bucket=bucket, Key=key, PartNumber=2)["ContentLength"] == 4
    store = sync_client.store(bucket)
    old = store.get_info(key)
    store.put(key, os.urandom(PART + 4), headers=old.headers)
    with pytest.raises(botocore.exceptions.ClientError) as gone:
        s3.head_object(Bucket=bucket, Key=key, PartNumber=2)
    assert gone.value.response["ResponseMetadata"]["HTTPStatusCode"] == 416
    assert s3.head_object(Bucket=bucket, Key=key, PartNumber=1)["ContentLength"] == PART + 4


# --- UploadPartCopy ----------------------------------------------------------------------------


def test_upload_part_copy_ranges_and_conditions(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    """Parts copied from ranges of another object make the object they add up to; a
    copy-source condition that fails, a range past the source's end and a malformed one are
    S3's errors, and nothing is uploaded for them."""
    source = os.urandom(PART + 5000)
    put = s3.put_object(Bucket=bucket, Key="copy/source.bin", Body=source)
    key = "copy/target.bin"
    upload_id = s3.create_multipart_upload(
        Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32", ChecksumType="FULL_OBJECT"
    )["UploadId"]
    copy_source = {"Bucket": bucket, "Key": "copy/source.bin"}
    one = s3.upload_part_copy(
        Bucket=bucket,
        Key=key,
        UploadId=upload_id,
        PartNumber=1,
        CopySource=copy_source,
        CopySourceRange=f"bytes=0-{PART - 1}",
        CopySourceIfMatch=put["ETag"],
    )["CopyPartResult"]
    assert one["ChecksumCRC32"] == _checksum("CRC32", source[:PART])
    assert one["ETag"] == f'"{hashlib.md5(source[:PART]).hexdigest()}"'
    two = s3.upload_part_copy(
        Bucket=bucket,
        Key=key,
        UploadId=upload_id,
        PartNumber=2,
        CopySource=copy_source,
        CopySourceRange=f"bytes={PART}-{PART + 4999}",
    )["CopyPartResult"]
    failures = {
        "PreconditionFailed": {"CopySourceIfNoneMatch": put["ETag"]},
        "InvalidRange": {"CopySourceRange": f"bytes=0-{len(source)}"},
        "InvalidArgument": {"CopySourceRange": "bytes=0-"},
    }
    for code, arguments in failures.items():
        with pytest.raises(botocore.exceptions.ClientError) as failed:
            s3.upload_part_copy(
                Bucket=bucket,
                Key=key,
                UploadId=upload_id,
                PartNumber=3,
                CopySource=copy_source,
                **arguments,
            )
        assert _code(failed) == code
    listed = s3.list_parts(Bucket=bucket, Key=key, UploadId=upload_id)["Parts"]
    assert [part["PartNumber"] for part in listed] == [1, 2]
    done = s3.complete_multipart_upload(
        Bucket=bucket,
        Key=key,
        UploadId=upload_id,
        MultipartUpload={
            "Parts": [
                {"PartNumber": 1, "ETag": one["ETag"]},
                {"PartNumber": 2, "ETag": two["ETag"]},
            ]
        },
    )
    assert done["ChecksumCRC32"] == _checksum("CRC32", source)
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == source


def test_a_kept_value_that_is_no_checksum_is_not_answered(s3, bucket: str, sync_client) -> None:  # type: ignore[no-untyped-def]
    """Headers are any NATS client's to write: a checksum or part list bound to the right
    digest but not of S3's form is ignored, never copied into a response."""
    store = sync_client.store(bucket)
    data = os.urandom(100)
    digest = store.put("forged.bin", data).digest
    store.put(
        "forged.bin",
        data,
        headers={
            "S3-Checksum": [f"crc32:FULL_OBJECT:AAAA<x> {digest}"],
            "S3-Parts": [f"50:AAAA<x>,50 {digest}"],
        },
    )
    head = s3.head_object(Bucket=bucket, Key="forged.bin", ChecksumMode="ENABLED")
    assert not [name for name in head["ResponseMetadata"]["HTTPHeaders"] if "checksum" in name]
    assert "PartsCount" not in s3.head_object(Bucket=bucket, Key="forged.bin", PartNumber=1)
    with pytest.raises(botocore.exceptions.ClientError) as past:
        s3.head_object(Bucket=bucket, Key="forged.bin", PartNumber=2)
    assert past.value.response["ResponseMetadata"]["HTTPStatusCode"] == 416


def test_boto3_managed_copy_above_the_threshold_is_upload_part_copy(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    """boto3's managed ``copy`` (what ``aws s3 cp`` between S3 URLs uses) copies an object
    above its multipart threshold part by part with UploadPartCopy."""
    data = os.urandom(2 * PART + 777)
    s3.put_object(Bucket=bucket, Key="managed/source.bin", Body=data)
    config = TransferConfig(multipart_threshold=PART, multipart_chunksize=PART)
    s3.copy(
        {"Bucket": bucket, "Key": "managed/source.bin"}, bucket, "managed/copy.bin", Config=config
    )
    head = s3.head_object(Bucket=bucket, Key="managed/copy.bin")
    assert head["ETag"].endswith('-3"')
    assert s3.get_object(Bucket=bucket, Key="managed/copy.bin")["Body"].read() == data
