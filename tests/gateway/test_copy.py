"""CopyObject through boto3 against a real nats-server: the copy streams through the gateway
(NATS has no server-side copy) and keeps or replaces the source's headers and metadata."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta

import botocore.exceptions
import pytest


@pytest.fixture
def bucket(s3) -> str:  # type: ignore[no-untyped-def]
    name = f"gw-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def _code(error: pytest.ExceptionInfo[botocore.exceptions.ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def test_copy_keeps_bytes_headers_and_metadata_across_buckets(s3, bucket: str, sync_client) -> None:  # type: ignore[no-untyped-def]
    other = f"gw-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=other)
    body = os.urandom(700_000)  # several chunks
    put = s3.put_object(
        Bucket=bucket, Key="a b/ü+%.bin", Body=body, ContentType="text/x-src", Metadata={"k": "v"}
    )
    copied = s3.copy_object(
        Bucket=other, Key="dst", CopySource={"Bucket": bucket, "Key": "a b/ü+%.bin"}
    )
    assert copied["CopyObjectResult"]["ETag"] == put["ETag"]
    got = s3.get_object(Bucket=other, Key="dst")
    assert got["Body"].read() == body
    assert got["ContentType"] == "text/x-src" and got["Metadata"] == {"k": "v"}
    info = sync_client.store(other).get_info("dst")
    assert info.metadata == {"k": "v"} and info.headers["Content-Type"] == ["text/x-src"]


def test_copy_replace_sets_the_request_metadata(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    s3.put_object(Bucket=bucket, Key="src", Body=b"abc", ContentType="a/b", Metadata={"old": "1"})
    s3.copy_object(
        Bucket=bucket,
        Key="dst",
        CopySource=f"{bucket}/src",
        MetadataDirective="REPLACE",
        ContentType="c/d",
        Metadata={"new": "2"},
    )
    head = s3.head_object(Bucket=bucket, Key="dst")
    assert head["ContentType"] == "c/d" and head["Metadata"] == {"new": "2"}
    assert s3.head_object(Bucket=bucket, Key="src")["Metadata"] == {"old": "1"}


def test_copy_onto_itself_needs_replace(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    s3.put_object(Bucket=bucket, Key="self", Body=b"same bytes", Metadata={"v": "1"})
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        s3.copy_object(Bucket=bucket, Key="self", CopySource=f"{bucket}/self")
    assert _code(refused) == "InvalidRequest"
    s3.copy_object(
        Bucket=bucket,
        Key="self",
        CopySource=f"{bucket}/self",
        MetadataDirective="REPLACE",
        Metadata={"v": "2"},
    )
    got = s3.get_object(Bucket=bucket, Key="self")
    assert got["Body"].read() == b"same bytes" and got["Metadata"] == {"v": "2"}


def test_copy_source_conditions(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    tag = s3.put_object(Bucket=bucket, Key="src", Body=b"x")["ETag"]
    past = datetime.now(UTC) - timedelta(days=1)
    future = datetime.now(UTC) + timedelta(days=1)
    refused = [
        {"CopySourceIfMatch": '"0123"'},
        {"CopySourceIfNoneMatch": tag},
        {"CopySourceIfModifiedSince": future},
        {"CopySourceIfUnmodifiedSince": past},
    ]
    for condition in refused:
        with pytest.raises(botocore.exceptions.ClientError) as failed:
            s3.copy_object(Bucket=bucket, Key="dst", CopySource=f"{bucket}/src", **condition)
        assert _code(failed) == "PreconditionFailed", condition
    with pytest.raises(botocore.exceptions.ClientError) as missing:
        s3.head_object(Bucket=bucket, Key="dst")
    assert missing.value.response["Error"]["Code"] == "404"  # nothing was written
    for condition in [
        {"CopySourceIfMatch": tag},
        {"CopySourceIfNoneMatch": '"0123"'},
        {"CopySourceIfModifiedSince": past},
        {"CopySourceIfUnmodifiedSince": future},
    ]:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource=f"{bucket}/src", **condition)


def test_copy_of_a_missing_source_is_no_such_key(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(botocore.exceptions.ClientError) as missing:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource=f"{bucket}/nothing")
    assert _code(missing) == "NoSuchKey"


def test_a_copy_source_key_no_key_may_be_is_invalid_uri(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    """The source of a copy is held to the rule of a request's own key: a control character
    (or bytes that are not UTF-8) is InvalidURI, not a lookup of some other key."""
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        s3.copy_object(Bucket=bucket, Key="dst", CopySource=f"{bucket}/a\x01b")
    assert _code(refused) == "InvalidURI"
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)
