"""The gateway through boto3, against a real nats-server: what an S3 client sees, and what a
NATS client sees of the same objects."""

from __future__ import annotations

import hashlib
import os
import threading
import uuid
from datetime import UTC, datetime, timedelta

import botocore.auth
import botocore.exceptions
import pytest
import urllib3
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.gateway.conftest import ACCESS_KEY, SECRET, GatewayThread, make_s3
from tests.raw import FORGED_DIGEST, rewrite_record


@pytest.fixture
def bucket(s3) -> str:  # type: ignore[no-untyped-def]
    name = f"gw-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def _code(error: pytest.ExceptionInfo[botocore.exceptions.ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def test_put_get_head_delete_keep_bytes_and_metadata(s3, bucket: str, sync_client) -> None:  # type: ignore[no-untyped-def]
    body = os.urandom(300_000)
    put = s3.put_object(
        Bucket=bucket,
        Key="dir/data.bin",
        Body=body,
        ContentType="application/x-test",
        CacheControl="max-age=60",
        Metadata={"Owner": "etl"},
    )
    got = s3.get_object(Bucket=bucket, Key="dir/data.bin")
    assert got["Body"].read() == body
    assert got["ETag"] == put["ETag"]
    assert got["ContentType"] == "application/x-test"
    assert got["CacheControl"] == "max-age=60"
    assert got["Metadata"] == {"owner": "etl"}
    head = s3.head_object(Bucket=bucket, Key="dir/data.bin")
    assert head["ContentLength"] == len(body) and head["ETag"] == put["ETag"]
    # what another NATS client sees: ADR-20 headers and metadata, the same bytes
    info = sync_client.store(bucket).get_info("dir/data.bin")
    assert info.headers["Content-Type"] == ["application/x-test"]
    assert info.metadata == {"owner": "etl"}
    assert put["ETag"] == f'"{hashlib.md5(body).hexdigest()}"'
    s3.delete_object(Bucket=bucket, Key="dir/data.bin")
    with pytest.raises(botocore.exceptions.ClientError) as missing:
        s3.get_object(Bucket=bucket, Key="dir/data.bin")
    assert _code(missing) == "NoSuchKey"


def test_object_written_by_nats_has_the_digest_etag(s3, bucket: str, sync_client) -> None:  # type: ignore[no-untyped-def]
    sync_client.store(bucket).put("from-nats", b"abc")
    got = s3.get_object(Bucket=bucket, Key="from-nats")
    assert got["Body"].read() == b"abc"
    assert got["ETag"] == f'"{hashlib.sha256(b"abc").digest()[:16].hex()}"'
    assert got["ContentType"] == "binary/octet-stream"


def _md5_tag(body: bytes) -> str:
    return f'"{hashlib.md5(body).hexdigest()}"'


def test_gateway_etag_is_the_md5_and_holds_only_for_its_bytes(s3, bucket: str, sync_client) -> None:  # type: ignore[no-untyped-def]
    put = s3.put_object(Bucket=bucket, Key="m", Body=b"bar")
    assert put["ETag"] == '"37b51d194a7513e45b56f6524f2d51f2"' == _md5_tag(b"bar")
    assert s3.head_object(Bucket=bucket, Key="m")["ETag"] == put["ETag"]
    assert s3.get_object(Bucket=bucket, Key="m", IfMatch=put["ETag"])["Body"].read() == b"bar"
    listed = s3.list_objects_v2(Bucket=bucket)["Contents"]
    assert [(o["Key"], o["ETag"]) for o in listed] == [("m", put["ETag"])]
    with pytest.raises(botocore.exceptions.ClientError) as cached:
        s3.get_object(Bucket=bucket, Key="m", IfNoneMatch=put["ETag"])
    assert cached.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    # server-side copies keep it, whichever metadata directive
    kept = s3.copy_object(Bucket=bucket, Key="kept", CopySource=f"{bucket}/m")
    assert kept["CopyObjectResult"]["ETag"] == put["ETag"]
    replaced = s3.copy_object(
        Bucket=bucket,
        Key="replaced",
        CopySource=f"{bucket}/m",
        MetadataDirective="REPLACE",
        Metadata={"a": "b"},
    )
    assert replaced["CopyObjectResult"]["ETag"] == put["ETag"]
    assert s3.head_object(Bucket=bucket, Key="replaced")["ETag"] == put["ETag"]
    # another NATS client rewrites the object with the gateway's headers copied across: the
    # stored MD5 is not this content's, so the ETag is the new digest's
    store = sync_client.store(bucket)
    store.put("m", b"other bytes", headers=store.get_info("m").headers)
    rewritten = s3.head_object(Bucket=bucket, Key="m")["ETag"]
    assert rewritten == f'"{hashlib.sha256(b"other bytes").digest()[:16].hex()}"'
    with pytest.raises(botocore.exceptions.ClientError) as stale:
        s3.get_object(Bucket=bucket, Key="m", IfMatch=put["ETag"])
    assert _code(stale) == "PreconditionFailed"


def test_multipart_etag_is_s3s_md5_of_the_parts_md5s(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    parts = [os.urandom(5 * 1024 * 1024), b"tail"]
    upload = s3.create_multipart_upload(Bucket=bucket, Key="mp")["UploadId"]
    tags = [
        s3.upload_part(Bucket=bucket, Key="mp", UploadId=upload, PartNumber=n, Body=body)["ETag"]
        for n, body in enumerate(parts, 1)
    ]
    assert tags == [_md5_tag(body) for body in parts]
    done = s3.complete_multipart_upload(
        Bucket=bucket,
        Key="mp",
        UploadId=upload,
        MultipartUpload={"Parts": [{"PartNumber": n, "ETag": t} for n, t in enumerate(tags, 1)]},
    )
    joined = b"".join(hashlib.md5(body).digest() for body in parts)
    assert done["ETag"] == f'"{hashlib.md5(joined).hexdigest()}-2"'
    assert s3.head_object(Bucket=bucket, Key="mp")["ETag"] == done["ETag"]


@pytest.mark.parametrize(
    ("header", "start", "end"),
    [
        ("bytes=100-199", 100, 200),
        ("bytes=-50", 950_000, 950_050),
        ("bytes=949990-", 949_990, None),
    ],
)
def test_range_get(s3, bucket: str, header: str, start: int, end: int | None) -> None:  # type: ignore[no-untyped-def]
    body = os.urandom(950_050)  # several chunks: a range is cut from the ones that hold it
    s3.put_object(Bucket=bucket, Key="r", Body=body)
    got = s3.get_object(Bucket=bucket, Key="r", Range=header)
    assert got["Body"].read() == body[start:end]
    last = (len(body) if end is None else end) - 1
    assert got["ContentRange"] == f"bytes {start}-{last}/{len(body)}"


def test_range_past_the_end_is_invalid_range(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    s3.put_object(Bucket=bucket, Key="r", Body=b"0123456789")
    with pytest.raises(botocore.exceptions.ClientError) as error:
        s3.get_object(Bucket=bucket, Key="r", Range="bytes=10-20")
    assert _code(error) == "InvalidRange"
    assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 416


def test_list_v2_pages_in_key_order_with_common_prefixes(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    keys = [f"k{i:02d}" for i in range(13)] + [f"dir{d}/f{i}" for d in range(3) for i in range(4)]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    pages = list(
        s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, PaginationConfig={"PageSize": 5}
        )
    )
    assert [len(p.get("Contents", [])) for p in pages] == [5, 5, 5, 5, 5]
    assert [o["Key"] for p in pages for o in p["Contents"]] == sorted(keys)
    grouped = list(
        s3.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Delimiter="/", PaginationConfig={"PageSize": 2}
        )
    )
    assert [c["Prefix"] for p in grouped for c in p.get("CommonPrefixes", [])] == [
        "dir0/",
        "dir1/",
        "dir2/",
    ]
    assert [o["Key"] for p in grouped for o in p.get("Contents", [])] == sorted(
        k for k in keys if "/" not in k
    )
    under = s3.list_objects_v2(Bucket=bucket, Prefix="dir1/", StartAfter="dir1/f1")
    assert [o["Key"] for o in under["Contents"]] == ["dir1/f2", "dir1/f3"]
    v1 = s3.list_objects(Bucket=bucket, Prefix="dir", Delimiter="/", MaxKeys=2)
    assert v1["IsTruncated"] and v1["NextMarker"] == "dir1/"
    rest = s3.list_objects(Bucket=bucket, Prefix="dir", Delimiter="/", Marker=v1["NextMarker"])
    assert [c["Prefix"] for c in rest["CommonPrefixes"]] == ["dir2/"]


def test_buckets(s3) -> None:  # type: ignore[no-untyped-def]
    name = f"gw-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    assert name in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    # as S3 in us-east-1 (the region the gateway reports): re-creating one's bucket succeeds
    assert s3.create_bucket(Bucket=name)["ResponseMetadata"]["HTTPStatusCode"] == 200
    s3.put_object(Bucket=name, Key="k", Body=b"x")
    with pytest.raises(botocore.exceptions.ClientError) as full:
        s3.delete_bucket(Bucket=name)
    assert _code(full) == "BucketNotEmpty"
    s3.delete_object(Bucket=name, Key="k")
    s3.delete_bucket(Bucket=name)
    with pytest.raises(botocore.exceptions.ClientError) as gone:
        s3.head_bucket(Bucket=name)
    assert gone.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    with pytest.raises(botocore.exceptions.ClientError) as missing:
        s3.list_objects_v2(Bucket=name)
    assert _code(missing) == "NoSuchBucket"


def test_bad_signature_is_refused(gateway: GatewayThread, bucket: str) -> None:
    wrong = make_s3(gateway.endpoint, secret="not-the-secret")
    with pytest.raises(botocore.exceptions.ClientError) as error:
        wrong.put_object(Bucket=bucket, Key="k", Body=b"x")
    assert _code(error) == "SignatureDoesNotMatch"
    anonymous = urllib3.request("GET", f"{gateway.endpoint}/{bucket}")
    assert anonymous.status == 403 and b"<Code>AccessDenied</Code>" in anonymous.data


def _signed(gateway: GatewayThread, method: str, path: str, body: bytes, sha256: str):  # type: ignore[no-untyped-def]
    request = AWSRequest(
        method=method,
        url=f"{gateway.endpoint}{path}",
        data=body,
        headers={"x-amz-content-sha256": sha256},
    )
    SigV4Auth(Credentials(ACCESS_KEY, SECRET), "s3", "us-east-1").add_auth(request)
    return urllib3.request(method, request.url, body=body, headers=dict(request.headers))


def test_body_that_lies_about_its_sha256_stores_nothing(
    s3, gateway: GatewayThread, bucket: str
) -> None:  # type: ignore[no-untyped-def]
    lie = hashlib.sha256(b"something else").hexdigest()
    answer = _signed(gateway, "PUT", f"/{bucket}/lied", b"the real body", lie)
    assert answer.status == 400 and b"XAmzContentSHA256Mismatch" in answer.data
    with pytest.raises(botocore.exceptions.ClientError) as error:
        s3.head_object(Bucket=bucket, Key="lied")
    assert error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_a_forged_object_never_reaches_the_client_whole(
    sync_client, raw, gateway: GatewayThread, bucket: str
) -> None:  # type: ignore[no-untyped-def]
    """An object whose bytes do not match its recorded digest: the GET stops before the last
    chunk, so the client gets fewer bytes than Content-Length (an error), never a body that
    looks complete. The last chunk went out before the digest was checked, and the error
    answer after it, its bytes inside the body."""
    body = os.urandom(5 * 128 * 1024 + 7)  # six chunks
    sync_client.store(bucket).put("forged", body)
    rewrite_record(raw, bucket, "forged", digest=FORGED_DIGEST)
    empty = hashlib.sha256(b"").hexdigest()
    request = AWSRequest(
        method="GET",
        url=f"{gateway.endpoint}/{bucket}/forged",
        headers={"x-amz-content-sha256": empty},
    )
    SigV4Auth(Credentials(ACCESS_KEY, SECRET), "s3", "us-east-1").add_auth(request)
    answer = urllib3.request(
        "GET", request.url, headers=dict(request.headers), preload_content=False
    )
    assert answer.status == 200 and int(answer.headers["Content-Length"]) == len(body)
    received = b""
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for piece in answer.stream(64 * 1024):
            received += piece
    assert 0 < len(received) < len(body)
    assert body.startswith(received)  # what did arrive is the object's, nothing else


def test_presigned_get_and_its_expiry(
    s3, gateway: GatewayThread, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    s3.put_object(Bucket=bucket, Key="shared", Body=b"presigned bytes")
    url = s3.generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "shared"}, ExpiresIn=60
    )
    assert urllib3.request("GET", url).data == b"presigned bytes"
    old = AWSRequest(method="GET", url=f"{gateway.endpoint}/{bucket}/shared")
    signer = SigV4QueryAuth(Credentials(ACCESS_KEY, SECRET), "s3", "us-east-1", expires=60)
    # signed five minutes ago for one minute: a URL replayed past its expiry
    signed_at = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=5)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: signed_at)
    signer.add_auth(old)
    expired = urllib3.request("GET", old.url)
    assert expired.status == 403 and b"Request has expired" in expired.data
    tampered = urllib3.request("GET", url.replace("shared", "sharee"))
    assert tampered.status == 403 and b"SignatureDoesNotMatch" in tampered.data


def test_batch_delete_and_the_unversioned_version_listing(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    for key in ("a", "b", "c/d"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    versions = s3.list_object_versions(Bucket=bucket, MaxKeys=2)
    assert [(v["Key"], v["VersionId"], v["IsLatest"]) for v in versions["Versions"]] == [
        ("a", "null", True),
        ("b", "null", True),
    ]
    assert versions["IsTruncated"] and versions["NextKeyMarker"] == "b"
    done = s3.delete_objects(
        Bucket=bucket, Delete={"Objects": [{"Key": "a"}, {"Key": "c/d"}, {"Key": "never"}]}
    )
    assert sorted(d["Key"] for d in done["Deleted"]) == ["a", "c/d", "never"]
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["b"]


def test_conditional_reads_and_writes(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    tag = s3.put_object(Bucket=bucket, Key="c", Body=b"one")["ETag"]
    assert s3.get_object(Bucket=bucket, Key="c", IfMatch=tag)["Body"].read() == b"one"
    with pytest.raises(botocore.exceptions.ClientError) as failed:
        s3.get_object(Bucket=bucket, Key="c", IfMatch='"0000"')
    assert _code(failed) == "PreconditionFailed"
    with pytest.raises(botocore.exceptions.ClientError) as same:
        s3.get_object(Bucket=bucket, Key="c", IfNoneMatch=tag)
    assert same.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    later = datetime.now(UTC) + timedelta(days=1)
    with pytest.raises(botocore.exceptions.ClientError) as unmodified:
        s3.get_object(Bucket=bucket, Key="c", IfModifiedSince=later)
    assert unmodified.value.response["ResponseMetadata"]["HTTPStatusCode"] == 304
    earlier = datetime.now(UTC) - timedelta(days=1)
    with pytest.raises(botocore.exceptions.ClientError) as modified:
        s3.get_object(Bucket=bucket, Key="c", IfUnmodifiedSince=earlier)
    assert _code(modified) == "PreconditionFailed"
    with pytest.raises(botocore.exceptions.ClientError) as exists:
        s3.put_object(Bucket=bucket, Key="c", Body=b"two", IfNoneMatch="*")
    assert _code(exists) == "PreconditionFailed"
    with pytest.raises(botocore.exceptions.ClientError) as stale:
        s3.put_object(Bucket=bucket, Key="c", Body=b"two", IfMatch='"0000"')
    assert _code(stale) == "PreconditionFailed"
    s3.put_object(Bucket=bucket, Key="c", Body=b"two", IfMatch=tag)
    s3.put_object(Bucket=bucket, Key="new", Body=b"x", IfNoneMatch="*")
    assert s3.get_object(Bucket=bucket, Key="c")["Body"].read() == b"two"


def test_conditional_writes_against_a_named_etag_and_a_missing_key(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(botocore.exceptions.ClientError) as missing:
        s3.put_object(Bucket=bucket, Key="w", Body=b"x", IfMatch="*")
    assert _code(missing) == "NoSuchKey"
    first = s3.put_object(Bucket=bucket, Key="w", Body=b"one", IfNoneMatch='"other"')["ETag"]
    with pytest.raises(botocore.exceptions.ClientError) as same:
        s3.put_object(Bucket=bucket, Key="w", Body=b"two", IfNoneMatch=first)
    assert _code(same) == "PreconditionFailed"
    s3.put_object(Bucket=bucket, Key="w", Body=b"two", IfMatch="*")
    with pytest.raises(botocore.exceptions.ClientError) as cached:
        s3.head_object(
            Bucket=bucket, Key="w", IfNoneMatch=s3.head_object(Bucket=bucket, Key="w")["ETag"]
        )
    assert cached.value.response["ResponseMetadata"]["HTTPHeaders"]["etag"]


def test_unknown_bucket_long_key_and_unserved_subresource(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(botocore.exceptions.ClientError) as nobucket:
        s3.put_object(Bucket=f"{bucket}-absent", Key="k", Body=b"x")
    assert _code(nobucket) == "NoSuchBucket"
    with pytest.raises(botocore.exceptions.ClientError) as long_key:
        s3.put_object(Bucket=bucket, Key="k" * 1025, Body=b"x")
    assert _code(long_key) == "KeyTooLongError"
    with pytest.raises(botocore.exceptions.ClientError) as tagging:
        s3.get_object_tagging(Bucket=bucket, Key="k")
    assert _code(tagging) == "NotImplemented"


def test_s3_habits_of_naming_listing_and_overrides(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    for bad in ("ab", "Upper-case", "under_score", "-leading"):
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            s3.create_bucket(Bucket=bad)
        assert _code(refused) == "InvalidBucketName", bad
    s3.put_object(Bucket=bucket, Key="o", Body=b"x", ContentType="text/plain")
    empty = s3.list_objects_v2(Bucket=bucket, MaxKeys=0)
    assert empty["KeyCount"] == 0 and not empty["IsTruncated"]
    got = s3.get_object(
        Bucket=bucket, Key="o", ResponseContentType="foo/bar", ResponseContentDisposition="x"
    )
    assert (got["ContentType"], got["ContentDisposition"]) == ("foo/bar", "x")
    too_long = s3.generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": "o"}, ExpiresIn=7 * 24 * 3600 + 1
    )
    assert urllib3.request("GET", too_long).status == 403


def test_key_not_utf8_or_with_a_control_character_is_invalid_uri(  # type: ignore[no-untyped-def]
    s3, gateway: GatewayThread, bucket: str
) -> None:
    with pytest.raises(botocore.exceptions.ClientError) as unreadable:
        s3.get_object(Bucket=bucket, Key="\xae\x8a-")
    assert unreadable.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert _code(unreadable) == "InvalidURI"
    assert unreadable.value.response["Error"]["Message"] == "Couldn't parse the specified URI."
    with pytest.raises(botocore.exceptions.ClientError) as newline:
        s3.put_object(Bucket=bucket, Key="a\nb", Body=b"x")
    assert _code(newline) == "InvalidURI"
    # bytes that are not UTF-8 were read as U+FFFD: another key's lookup
    s3.put_object(Bucket=bucket, Key="\ufffd", Body=b"x")
    raw = urllib3.request("GET", f"{gateway.endpoint}/{bucket}/%FF")
    assert raw.status == 400 and b"<Code>InvalidURI</Code>" in raw.data
    assert [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]] == ["\ufffd"]


def test_list_buckets_in_pages_under_a_prefix(s3, gateway: GatewayThread) -> None:  # type: ignore[no-untyped-def]
    prefix = f"lb-{uuid.uuid4().hex[:8]}-"
    names = [f"{prefix}{n}" for n in ("c", "a", "b")]
    for name in names:
        s3.create_bucket(Bucket=name)
    first = s3.list_buckets(MaxBuckets=2, Prefix=prefix)
    assert [b["Name"] for b in first["Buckets"]] == sorted(names)[:2]
    assert first["Prefix"] == prefix
    second = s3.list_buckets(
        MaxBuckets=2, Prefix=prefix, ContinuationToken=first["ContinuationToken"]
    )
    assert [b["Name"] for b in second["Buckets"]] == sorted(names)[2:]
    assert "ContinuationToken" not in second
    whole = s3.list_buckets(Prefix=prefix)
    assert [b["Name"] for b in whole["Buckets"]] == sorted(names)
    assert "ContinuationToken" not in whole
    zero = _signed(gateway, "GET", "/?max-buckets=0", b"", hashlib.sha256(b"").hexdigest())
    assert zero.status == 400 and b"<Code>InvalidArgument</Code>" in zero.data


def test_list_buckets_while_buckets_come_and_go(s3, sync_client) -> None:  # type: ignore[no-untyped-def]
    """A bucket deleted between ListBuckets' names and its lookup is left out; it made the
    whole listing NoSuchBucket."""
    prefix = f"churn-{uuid.uuid4().hex[:8]}-"
    stop = threading.Event()
    churned = 0

    def churn() -> None:
        nonlocal churned
        while not stop.is_set():
            name = f"{prefix}{churned}"
            sync_client.create_store(name)
            sync_client.delete_store(name)
            churned += 1

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        listed = 0
        while churned < 60 or listed < 60:
            names = [b["Name"] for b in s3.list_buckets(Prefix=prefix)["Buckets"]]
            assert len(names) <= 1
            listed += 1
    finally:
        stop.set()
        worker.join()


def _s3_pages(keys: list[str], delimiter: str, max_keys: int) -> list[list[str]]:
    """S3's pages of ``keys``: entries (keys, or common prefixes) in order, ``max_keys`` each."""
    entries = sorted(
        {k[: k.index(delimiter) + 1] if delimiter and delimiter in k else k for k in keys}
    )
    return [entries[i : i + max_keys] for i in range(0, len(entries), max_keys)]


@pytest.mark.parametrize(("delimiter", "max_keys"), [("/", 2), ("", 7), ("/", 1000)])
def test_listing_pages_in_key_order_with_deletes_and_common_prefixes(  # type: ignore[no-untyped-def]
    s3, bucket: str, sync_client, delimiter: str, max_keys: int
) -> None:
    store = sync_client.store(bucket)
    keys = [f"d{i % 4}/k{i:02d}" for i in range(24)] + [f"top{i}" for i in range(5)] + ["d9/x"]
    for key in keys:
        store.put(key, b"x")
    for gone in ("d9/x", "top2", "d1/k01", "d1/k05"):
        store.delete(gone)
        keys.remove(gone)
    pages, token = [], None
    while True:
        extra = {"ContinuationToken": token} if token else {}
        answer = s3.list_objects_v2(Bucket=bucket, Delimiter=delimiter, MaxKeys=max_keys, **extra)
        pages.append(
            [o["Key"] for o in answer.get("Contents", [])]
            + [p["Prefix"] for p in answer.get("CommonPrefixes", [])]
        )
        if not answer["IsTruncated"]:
            break
        token = answer["NextContinuationToken"]
    assert [sorted(page) for page in pages] == _s3_pages(keys, delimiter, max_keys)
    v1, marker = [], ""
    while True:
        answer = s3.list_objects(
            Bucket=bucket, Delimiter=delimiter, MaxKeys=max_keys, Marker=marker
        )
        page = [o["Key"] for o in answer.get("Contents", [])]
        page += [p["Prefix"] for p in answer.get("CommonPrefixes", [])]
        v1.append(sorted(page))
        if not answer["IsTruncated"]:
            break
        marker = answer.get("NextMarker") or max(page)
    assert v1 == _s3_pages(keys, delimiter, max_keys)
    after = s3.list_objects_v2(Bucket=bucket, StartAfter="d2/k05", Prefix="d2/")["Contents"]
    assert [o["Key"] for o in after] == sorted(k for k in keys if "d2/" in k and k > "d2/k05")
