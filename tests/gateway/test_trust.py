"""What a holder of a presigned URL, an unsigned client, and a NATS writer of a shared bucket can
make the gateway do (issue 39, findings 2 to 8), each tried as found: raw HTTP where boto3
would not send the request, nats-py where a writer publishes records natsobj never would.

The ``[anonymous]`` identity here is the gateway's own, wider than the published buckets (the
empty table the docs allow), so every refusal below is the gateway's, not NATS's."""

from __future__ import annotations

import base64
import hashlib
import http.client
import itertools
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import botocore.exceptions
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from natsobj.gateway.etags import ETAG
from natsobj.gateway.multipart import part_name, uploads_store
from natsobj.model import ObjectInfo, ObjectLink, format_digest
from natsobj.names import chunk_subject, meta_subject
from tests.core.test_ranges_adversarial import publish_record, raw_object
from tests.gateway.conftest import ACCESS_KEY, SECRET, GatewayThread, make_s3
from tests.raw import RawJetStream

_names = itertools.count()
SECRET_BYTES = b"name,salary\nceo,1000000\n"


@pytest.fixture(scope="module")
def credentials_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Unsigned requests act as the gateway's own connection, which can read every bucket."""
    path = tmp_path_factory.mktemp("gw-trust") / "keys.toml"
    path.write_text(f'[keys.{ACCESS_KEY}]\nsecret = "{SECRET}"\n\n[anonymous]\n')
    path.chmod(0o600)
    return path


class Answer:
    def __init__(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.status, self.body, self.headers = status, body, headers

    def code(self) -> str:
        start, end = self.body.find(b"<Code>"), self.body.find(b"</Code>")
        assert start >= 0 and end > start, (self.status, self.body[:300])
        return self.body[start + 6 : end].decode()

    def message(self) -> str:
        start, end = self.body.find(b"<Message>"), self.body.find(b"</Message>")
        assert start >= 0 and end > start, (self.status, self.body[:300])
        return self.body[start + 9 : end].decode()


def send(
    endpoint: str,
    method: str,
    target: str,
    headers: list[tuple[str, str]] | None = None,
    body: bytes = b"",
) -> Answer:
    """One request as given: ``target`` is the path and query exactly as sent, ``headers``
    a list (a name may come twice)."""
    where = urlsplit(endpoint)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        connection.putrequest(method, target, skip_accept_encoding=True)
        for name, value in headers or []:
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return Answer(response.status, response.read(), dict(response.getheaders()))
    finally:
        connection.close()


def target_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


def _code(error: pytest.ExceptionInfo[botocore.exceptions.ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def _message(error: pytest.ExceptionInfo[botocore.exceptions.ClientError]) -> str:
    return str(error.value.response["Error"].get("Message", ""))


def _keys(s3, bucket: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]


def _empty(s3, bucket: str) -> None:  # type: ignore[no-untyped-def]
    for key in _keys(s3, bucket):
        s3.delete_object(Bucket=bucket, Key=key)
    s3.delete_bucket(Bucket=bucket)


@pytest.fixture
def raw(nats_url: str) -> Iterator[RawJetStream]:
    client = RawJetStream(nats_url)
    yield client
    client.close()


@pytest.fixture
def buckets(s3) -> Iterator[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """``(pub, priv)``: a published bucket holding ``k``, a private one holding the salaries."""
    number = next(_names)
    pub, priv = f"gw-trust-pub-{number}", f"gw-trust-priv-{number}"
    s3.create_bucket(Bucket=pub, ACL="public-read")
    s3.put_object(Bucket=pub, Key="k", Body=b"public bytes")
    s3.create_bucket(Bucket=priv)
    s3.put_object(Bucket=priv, Key="salaries.csv", Body=SECRET_BYTES)
    yield pub, priv
    for bucket in (pub, priv):
        _empty(s3, bucket)


# -- 2: a presigned URL's unsigned headers ---------------------------------------------------


def test_a_presigned_put_turned_copy_by_an_unsigned_header_is_refused(
    gateway: GatewayThread, s3, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, priv = buckets
    url = s3.generate_presigned_url(
        "put_object", Params={"Bucket": pub, "Key": "inbox/upload-123.csv"}, ExpiresIn=300
    )
    copied = send(
        gateway.endpoint, "PUT", target_of(url), [("x-amz-copy-source", f"/{priv}/salaries.csv")]
    )
    assert (copied.status, copied.code()) == (403, "AccessDenied")
    assert "x-amz-copy-source" in copied.message()
    assert _keys(s3, pub) == ["k"]
    # the URL as it was made still works
    put = send(gateway.endpoint, "PUT", target_of(url), body=b"the upload")
    assert put.status == 200, put.body
    assert s3.get_object(Bucket=pub, Key="inbox/upload-123.csv")["Body"].read() == b"the upload"


@pytest.mark.parametrize(
    "header",
    [
        ("x-amz-meta-owner", "mallory"),
        ("x-amz-acl", "public-read"),
        ("x-amz-metadata-directive", "REPLACE"),
        ("x-amz-checksum-crc32", base64.b64encode(zlib.crc32(b"body").to_bytes(4, "big")).decode()),
        ("X-Amz-Storage-Class", "STANDARD"),
    ],
    ids=lambda header: header[0],
)
def test_every_unsigned_amz_header_on_a_presigned_url_is_refused(
    gateway: GatewayThread, s3, buckets: tuple[str, str], header: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, _ = buckets
    url = s3.generate_presigned_url(
        "put_object", Params={"Bucket": pub, "Key": "presigned"}, ExpiresIn=300
    )
    answer = send(gateway.endpoint, "PUT", target_of(url), [header], b"body")
    assert (answer.status, answer.code()) == (403, "AccessDenied")
    assert _keys(s3, pub) == ["k"]


def test_a_presigned_upload_part_turned_part_copy_is_refused(
    gateway: GatewayThread, s3, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, priv = buckets
    upload = s3.create_multipart_upload(Bucket=pub, Key="big")["UploadId"]
    params = {"Bucket": pub, "Key": "big", "UploadId": upload, "PartNumber": 1}
    url = s3.generate_presigned_url("upload_part", Params=params, ExpiresIn=300)
    answer = send(
        gateway.endpoint, "PUT", target_of(url), [("x-amz-copy-source", f"{priv}/salaries.csv")]
    )
    assert (answer.status, answer.code()) == (403, "AccessDenied")
    assert s3.list_parts(Bucket=pub, Key="big", UploadId=upload).get("Parts", []) == []
    assert send(gateway.endpoint, "PUT", target_of(url), body=b"part one").status == 200
    parts = s3.list_parts(Bucket=pub, Key="big", UploadId=upload)["Parts"]
    assert [(part["PartNumber"], part["Size"]) for part in parts] == [(1, 8)]
    s3.abort_multipart_upload(Bucket=pub, Key="big", UploadId=upload)


def _signed_headers(
    endpoint: str, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> dict:
    """``headers`` and a valid header signature (botocore's) for ``method path`` and ``body``."""
    request = AWSRequest(method=method, url=endpoint + path, headers=headers, data=body)
    S3SigV4Auth(Credentials(ACCESS_KEY, SECRET), "s3", "us-east-1").add_auth(request)
    return dict(request.headers)


def test_a_signed_header_sent_twice_is_refused(
    gateway: GatewayThread, s3, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    """The signature covers the first value; the second, unsigned, was the one stored."""
    pub, _ = buckets
    body = b"twice"
    signed = _signed_headers(
        gateway.endpoint,
        "PUT",
        f"/{pub}/twice",
        {"x-amz-meta-owner": "alice"},
        body,
    )
    headers = [(name, value) for name, value in signed.items() if name.lower() != "host"]
    headers.append(("x-amz-meta-owner", "mallory"))
    answer = send(gateway.endpoint, "PUT", f"/{pub}/twice", headers, body)
    assert (answer.status, answer.code()) == (400, "InvalidRequest")
    assert _keys(s3, pub) == ["k"]


# -- 3: links out of a published bucket -------------------------------------------------------


@pytest.fixture
def planted(sync_client, buckets: tuple[str, str]) -> tuple[str, str]:
    """``pub/report.csv``, a link to ``priv/salaries.csv`` as a NATS user allowed to publish
    on ``$O.pub.>`` only may plant it; and ``pub/alias``, a link within the bucket."""
    pub, priv = buckets
    store = sync_client.store(pub)
    store.add_link("report.csv", sync_client.store(priv).get_info("salaries.csv"))
    store.add_link("alias", store.get_info("k"))
    return pub, priv


def _refused_without_leak(answer: Answer, priv: str) -> None:
    assert answer.status == 403, (answer.status, answer.body[:200])
    assert SECRET_BYTES not in answer.body and priv.encode() not in answer.body
    assert str(len(SECRET_BYTES)) != answer.headers.get("Content-Length")
    assert "x-amz-checksum-crc32" not in {name.lower() for name in answer.headers}


@pytest.mark.parametrize(
    ("method", "query", "headers"),
    [
        ("GET", "", []),
        ("GET", "", [("Range", "bytes=0-9")]),
        ("GET", "?partNumber=1", []),
        ("HEAD", "", []),
        ("HEAD", "", [("If-Match", "*")]),
        ("GET", "?attributes", [("x-amz-object-attributes", "ETag,ObjectSize,Checksum")]),
    ],
    ids=["get", "ranged", "part", "head", "conditional-head", "attributes"],
)
def test_an_unsigned_read_never_reaches_out_of_a_published_bucket(
    gateway: GatewayThread,
    planted: tuple[str, str],
    method: str,
    query: str,
    headers: list[tuple[str, str]],
) -> None:
    pub, priv = planted
    answer = send(gateway.endpoint, method, f"/{pub}/report.csv{query}", headers)
    _refused_without_leak(answer, priv)
    if method == "GET":
        assert (answer.code(), answer.message()) == ("AccessDenied", "Access Denied")
    # a link within the published bucket is still followed
    inside = send(gateway.endpoint, "GET", f"/{pub}/alias")
    assert (inside.status, inside.body) == (200, b"public bytes")


def test_a_signed_read_of_a_link_into_another_bucket_says_so(
    gateway: GatewayThread, s3, planted: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    """The gateway acts for its key's holder, so it follows no link out of a bucket either:
    the error names the link and its target; HEAD and attributes describe nothing of it."""
    pub, priv = planted
    with pytest.raises(botocore.exceptions.ClientError) as read:
        s3.get_object(Bucket=pub, Key="report.csv")
    assert _code(read) == "AccessDenied"
    assert "report.csv" in _message(read) and f"{priv}/salaries.csv" in _message(read)
    with pytest.raises(botocore.exceptions.ClientError) as head:
        s3.head_object(Bucket=pub, Key="report.csv")
    assert head.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    with pytest.raises(botocore.exceptions.ClientError) as attributes:
        s3.get_object_attributes(Bucket=pub, Key="report.csv", ObjectAttributes=["ObjectSize"])
    assert _code(attributes) == "AccessDenied"
    assert s3.get_object(Bucket=pub, Key="alias")["Body"].read() == b"public bytes"


def test_copies_of_a_planted_link_are_refused(
    gateway: GatewayThread, s3, planted: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, priv = planted
    with pytest.raises(botocore.exceptions.ClientError) as copy:
        s3.copy_object(Bucket=pub, Key="leak", CopySource={"Bucket": pub, "Key": "report.csv"})
    assert _code(copy) == "AccessDenied" and priv in _message(copy)
    upload = s3.create_multipart_upload(Bucket=pub, Key="leak")["UploadId"]
    with pytest.raises(botocore.exceptions.ClientError) as part_copy:
        s3.upload_part_copy(
            Bucket=pub,
            Key="leak",
            UploadId=upload,
            PartNumber=1,
            CopySource={"Bucket": pub, "Key": "report.csv"},
        )
    assert _code(part_copy) == "AccessDenied"
    assert s3.list_parts(Bucket=pub, Key="leak", UploadId=upload).get("Parts", []) == []
    s3.abort_multipart_upload(Bucket=pub, Key="leak", UploadId=upload)
    assert "leak" not in _keys(s3, pub)


# -- 4: parts replaced under a multipart upload ----------------------------------------------


def _one_part_upload(s3, bucket: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    upload = s3.create_multipart_upload(Bucket=bucket, Key="shared.csv")["UploadId"]
    tag = s3.upload_part(
        Bucket=bucket, Key="shared.csv", UploadId=upload, PartNumber=1, Body=b"our part"
    )["ETag"]
    return upload, tag


def _complete(s3, bucket: str, upload: str, tag: str):  # type: ignore[no-untyped-def]
    return s3.complete_multipart_upload(
        Bucket=bucket,
        Key="shared.csv",
        UploadId=upload,
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": tag}]},
    )


def _kept_header(raw: RawJetStream, bucket: str, name: str) -> list[str]:
    record = json.loads(raw.last_msg(meta_subject(bucket, name), bucket).data)
    return list(record["headers"][ETAG])


def test_complete_refuses_a_link_planted_among_the_parts(
    gateway: GatewayThread, s3, raw: RawJetStream, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    """A NATS writer of the shared bucket replaces the part with a link to the private
    bucket, carrying the part's ETag and the target's digest: Complete must not copy it."""
    pub, priv = buckets
    upload, tag = _one_part_upload(s3, pub)
    hidden, name = uploads_store(pub), part_name(upload, 1)
    digest = format_digest(hashlib.sha256(SECRET_BYTES).digest())
    publish_record(
        raw,
        ObjectInfo(
            name=name,
            bucket=hidden,
            nuid="L" * 22,
            link=ObjectLink(bucket=priv, name="salaries.csv"),
            digest=digest,
            size=len(SECRET_BYTES),
            headers={ETAG: [f"{tag} {digest}"]},
        ),
    )
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        _complete(s3, pub, upload, tag)
    assert _code(refused) == "InvalidPart"
    assert "shared.csv" not in _keys(s3, pub)


def test_complete_refuses_other_bytes_under_a_parts_etag(
    gateway: GatewayThread, s3, raw: RawJetStream, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    """The writer replaces the part's bytes and copies its ETag header, bound to the digest
    of its own bytes as any publisher can compute it."""
    pub, _ = buckets
    upload, tag = _one_part_upload(s3, pub)
    hidden, name = uploads_store(pub), part_name(upload, 1)
    forged = b"their bytes"
    digest = format_digest(hashlib.sha256(forged).digest())
    assert _kept_header(raw, hidden, name)  # the gateway kept the part's ETag there
    raw_object(raw, hidden, name, [forged], headers={ETAG: [f"{tag} {digest}"]})
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        _complete(s3, pub, upload, tag)
    assert _code(refused) == "InvalidPart"
    assert "shared.csv" not in _keys(s3, pub)


def test_an_untouched_upload_completes(
    gateway: GatewayThread, s3, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, _ = buckets
    upload, tag = _one_part_upload(s3, pub)
    done = _complete(s3, pub, upload, tag)
    expected = hashlib.md5(bytes.fromhex(tag.strip('"')), usedforsecurity=False).hexdigest()
    assert done["ETag"] == f'"{expected}-1"'
    assert s3.get_object(Bucket=pub, Key="shared.csv")["Body"].read() == b"our part"


# -- 5: ETags and checksums a NATS writer vouches for ----------------------------------------


def test_a_forged_etag_and_checksum_are_not_served(
    gateway: GatewayThread, s3, raw: RawJetStream, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    """The writer stores its own bytes with the ETag (MD5) and CRC32 of the real report,
    bound to its own bytes' digest: HEAD, listings, checksum mode and If-Match must not
    take them for its bytes."""
    pub, _ = buckets
    real = b"the real report"
    put = s3.put_object(Bucket=pub, Key="real", Body=real, ChecksumAlgorithm="CRC32")
    real_tag, real_crc = put["ETag"], put["ChecksumCRC32"]
    assert real_tag == f'"{hashlib.md5(real, usedforsecurity=False).hexdigest()}"'
    forged = b"a forgery"
    digest = format_digest(hashlib.sha256(forged).digest())
    raw_object(
        raw,
        pub,
        "report",
        [forged],
        headers={
            ETAG: [f"{real_tag} {digest}"],
            "S3-Checksum": [f"crc32:FULL_OBJECT:{real_crc} {digest}"],
        },
    )
    head = s3.head_object(Bucket=pub, Key="report", ChecksumMode="ENABLED")
    derived = f'"{hashlib.sha256(forged).digest()[:16].hex()}"'
    assert head["ETag"] == derived
    assert "ChecksumCRC32" not in head
    listed = {item["Key"]: item["ETag"] for item in s3.list_objects_v2(Bucket=pub)["Contents"]}
    assert listed["report"] == derived and listed["real"] == real_tag
    with pytest.raises(botocore.exceptions.ClientError) as conditional:
        s3.get_object(Bucket=pub, Key="report", IfMatch=real_tag)
    assert _code(conditional) == "PreconditionFailed"
    # the gateway's own object keeps its S3 ETag and checksum
    own = s3.head_object(Bucket=pub, Key="real", ChecksumMode="ENABLED")
    assert (own["ETag"], own["ChecksumCRC32"]) == (real_tag, real_crc)


def test_a_gateway_with_another_seal_believes_no_kept_etag(
    gateway: GatewayThread, s3, nats_url: str, tmp_path: Path, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    """Gateways reading one credentials file agree on ETags; one sealing with another key
    (another file) serves the ETag derived from the digest instead."""
    pub, _ = buckets
    tag = s3.put_object(Bucket=pub, Key="sealed", Body=b"sealed bytes")["ETag"]
    keys = tmp_path / "other.toml"
    keys.write_text(
        f'[keys.{ACCESS_KEY}]\nsecret = "{SECRET}"\n\n[gateway]\nseal_secret = "{"s" * 32}"\n'
    )
    keys.chmod(0o600)
    other = GatewayThread(nats_url, keys)
    try:
        seen = make_s3(other.endpoint).head_object(Bucket=pub, Key="sealed")["ETag"]
    finally:
        other.stop()
    assert seen == f'"{hashlib.sha256(b"sealed bytes").digest()[:16].hex()}"' != tag
    assert s3.head_object(Bucket=pub, Key="sealed")["ETag"] == tag


# -- 6: DeleteBucket of a bucket holding what natsobj's listing skips -------------------------


def test_delete_bucket_keeps_a_bucket_holding_an_unlisted_object(
    gateway: GatewayThread, s3, sync_client, raw: RawJetStream
) -> None:  # type: ignore[no-untyped-def]
    """A nats.go client's record of over 64 KiB (a long description), which natsobj cannot
    read and so does not list."""
    bucket = f"gw-trust-full-{next(_names)}"
    s3.create_bucket(Bucket=bucket)
    data = b"nats.go bytes"
    nuid = "G" * 22
    raw.publish(chunk_subject(bucket, nuid), data)
    record = {
        "name": "big-record",
        "bucket": bucket,
        "nuid": nuid,
        "size": len(data),
        "chunks": 1,
        "digest": format_digest(hashlib.sha256(data).digest()),
        "description": "d" * (70 << 10),
    }
    raw.publish(
        meta_subject(bucket, "big-record"),
        json.dumps(record).encode(),
        {"Nats-Rollup": "sub"},
    )
    assert _keys(s3, bucket) == []
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        s3.delete_bucket(Bucket=bucket)
    assert _code(refused) == "BucketNotEmpty"
    assert bucket in sync_client.store_names()
    sync_client.delete_store(bucket)


def test_delete_bucket_takes_a_bucket_of_deleted_objects(
    gateway: GatewayThread, s3, sync_client
) -> None:  # type: ignore[no-untyped-def]
    bucket = f"gw-trust-emptied-{next(_names)}"
    s3.create_bucket(Bucket=bucket)
    for key in ("a", "b"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
        s3.delete_object(Bucket=bucket, Key=key)
    s3.delete_bucket(Bucket=bucket)
    assert bucket not in sync_client.store_names()


# -- 7: the hidden store of uploads ------------------------------------------------------------


def test_the_uploads_store_answers_as_no_bucket(
    gateway: GatewayThread, s3, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, _ = buckets
    upload, _ = _one_part_upload(s3, pub)
    hidden = uploads_store(pub)
    attempts = {
        "ListObjectsV2": lambda: s3.list_objects_v2(Bucket=hidden),
        "GetObject": lambda: s3.get_object(Bucket=hidden, Key=part_name(upload, 1)),
        "HeadBucket": lambda: s3.head_bucket(Bucket=hidden),
        "DeleteObject": lambda: s3.delete_object(Bucket=hidden, Key=part_name(upload, 1)),
        "CopyObject": lambda: s3.copy_object(
            Bucket=pub, Key="stolen", CopySource={"Bucket": hidden, "Key": part_name(upload, 1)}
        ),
    }
    for operation, attempt in attempts.items():
        with pytest.raises(botocore.exceptions.ClientError) as refused:
            attempt()
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404, operation
    assert [
        part["Size"]
        for part in s3.list_parts(Bucket=pub, Key="shared.csv", UploadId=upload)["Parts"]
    ] == [8]
    s3.abort_multipart_upload(Bucket=pub, Key="shared.csv", UploadId=upload)


# -- 8: the smaller ones ------------------------------------------------------------------------


def test_unsigned_gets_may_not_override_response_headers(
    gateway: GatewayThread, s3, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, _ = buckets
    answer = send(gateway.endpoint, "GET", f"/{pub}/k?response-content-type=text/html")
    assert (answer.status, answer.code()) == (400, "InvalidRequest")
    signed = s3.get_object(Bucket=pub, Key="k", ResponseContentType="text/plain")
    assert signed["ContentType"] == "text/plain"


@pytest.mark.parametrize(
    ("range_header", "status"),
    [
        ("bytes=" + "9" * 5000 + "-", 416),
        ("bytes=0-" + "9" * 5000, 206),
        ("bytes=-" + "9" * 5000, 206),
    ],
    ids=["start", "end", "suffix"],
)
def test_a_range_of_thousands_of_digits_is_answered(
    gateway: GatewayThread, buckets: tuple[str, str], range_header: str, status: int
) -> None:
    """Past the end (InvalidRange), or the whole object, as for any number that large: not a
    500 from converting it."""
    pub, _ = buckets
    answer = send(gateway.endpoint, "GET", f"/{pub}/k", [("Range", range_header)])
    assert answer.status == status, answer.body[:300]
    if status == 416:
        assert answer.code() == "InvalidRange"
    else:
        assert answer.body == b"public bytes"


def test_a_control_character_in_an_override_is_invalid_argument(
    gateway: GatewayThread, s3, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, _ = buckets
    url = s3.generate_presigned_url(
        "get_object",
        Params={"Bucket": pub, "Key": "k", "ResponseContentDisposition": "inline\r\nX-Evil: 1"},
    )
    answer = send(gateway.endpoint, "GET", target_of(url))
    assert (answer.status, answer.code()) == (400, "InvalidArgument")


def test_malformed_signatures_in_each_mode_are_400_class(
    gateway: GatewayThread, s3, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, _ = buckets
    url = s3.generate_presigned_url("get_object", Params={"Bucket": pub, "Key": "k"})
    tampered = target_of(url).rsplit("=", 1)[0] + "=%C3%A9"
    presigned = send(gateway.endpoint, "GET", tampered)
    assert (presigned.status, presigned.code()) == (403, "SignatureDoesNotMatch")
    valid = _signed_headers(
        gateway.endpoint,
        "GET",
        f"/{pub}/k",
        {"x-amz-content-sha256": hashlib.sha256(b"").hexdigest()},
    )
    valid["Authorization"] = valid["Authorization"].rsplit("=", 1)[0] + "=" + "\u00e9" * 64
    header = send(
        gateway.endpoint,
        "GET",
        f"/{pub}/k",
        [(name, value) for name, value in valid.items() if name.lower() != "host"],
    )
    assert (header.status, header.code()) == (403, "SignatureDoesNotMatch")


def test_a_huge_copy_source_range_is_invalid_range(
    gateway: GatewayThread, s3, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, _ = buckets
    upload = s3.create_multipart_upload(Bucket=pub, Key="ranged")["UploadId"]
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        s3.upload_part_copy(
            Bucket=pub,
            Key="ranged",
            UploadId=upload,
            PartNumber=1,
            CopySource={"Bucket": pub, "Key": "k"},
            CopySourceRange="bytes=0-" + "9" * 5000,
        )
    assert _code(refused) == "InvalidRange"
    s3.abort_multipart_upload(Bucket=pub, Key="ranged", UploadId=upload)


@pytest.mark.parametrize("method", ["GET", "HEAD", "DELETE"])
def test_a_version_that_is_not_there_never_reaches_the_current_object(
    gateway: GatewayThread, s3, buckets: tuple[str, str], method: str
) -> None:  # type: ignore[no-untyped-def]
    """An id that cannot be natsobj's is InvalidArgument; one that could but is not there is
    NoSuchVersion (a DELETE of it removes nothing): neither is carried out on the current
    object, which the caller did not name."""
    pub, _ = buckets
    call = {
        "GET": lambda version: s3.get_object(Bucket=pub, Key="k", VersionId=version),
        "HEAD": lambda version: s3.head_object(Bucket=pub, Key="k", VersionId=version),
        "DELETE": lambda version: s3.delete_object(Bucket=pub, Key="k", VersionId=version),
    }[method]
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        call("3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    absent = "A" * 22
    if method == "DELETE":
        assert call(absent)["ResponseMetadata"]["HTTPStatusCode"] == 204
    else:
        with pytest.raises(botocore.exceptions.ClientError) as missing:
            call(absent)
        assert missing.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert s3.get_object(Bucket=pub, Key="k")["Body"].read() == b"public bytes"
    call("null")  # the current object of a bucket without versioning


def test_delete_objects_naming_a_version_deletes_only_it(
    gateway: GatewayThread, s3, buckets: tuple[str, str]
) -> None:  # type: ignore[no-untyped-def]
    pub, _ = buckets
    s3.put_object(Bucket=pub, Key="other", Body=b"o")
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        s3.delete_objects(
            Bucket=pub,
            Delete={"Objects": [{"Key": "other"}, {"Key": "k", "VersionId": "an-old-one"}]},
        )
    assert _code(refused) == "InvalidArgument"
    assert sorted(_keys(s3, pub)) == ["k", "other"]
    s3.delete_objects(Bucket=pub, Delete={"Objects": [{"Key": "k", "VersionId": "A" * 22}]})
    assert sorted(_keys(s3, pub)) == ["k", "other"]
    deleted = s3.delete_objects(
        Bucket=pub, Delete={"Objects": [{"Key": "other", "VersionId": "null"}]}
    )
    assert [item["Key"] for item in deleted["Deleted"]] == ["other"]
