"""Hostile requests to the gateway, sent byte for byte over a socket where boto3 would refuse
to make them: malformed and stale signatures, oversized headers, keys and bodies, traversal in
keys, bodies that lie about their length or checksum, hostile XML. Each gets a clean S3 error
(its code asserted), stores nothing (the bucket's listing AND its raw stream: no chunk left
behind, no record in another bucket), and leaves the process serving."""

from __future__ import annotations

import base64
import hashlib
import itertools
import socket
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.client import HTTPResponse
from urllib.parse import quote, unquote, urlsplit

import botocore.auth
import pytest
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.gateway.conftest import ACCESS_KEY, SECRET, GatewayThread

UNSIGNED = "UNSIGNED-PAYLOAD"
_names = itertools.count()


class Answer:
    def __init__(self, status: int, body: bytes) -> None:
        self.status, self.body = status, body

    def code(self) -> str:
        start = self.body.find(b"<Code>")
        end = self.body.find(b"</Code>")
        assert start >= 0 and end > start, (self.status, self.body[:300])
        return self.body[start + 6 : end].decode()


def _sign(
    endpoint: str, method: str, path: str, headers: dict[str, str], payload: str
) -> dict[str, str]:
    """``headers`` with a valid SigV4 signature for ``method path`` (the path signed exactly as
    it will be sent)."""
    request = AWSRequest(method=method, url=endpoint + path, headers=headers)
    _Signer(payload).add_auth(request)
    return dict(request.headers)


class _Signer(S3SigV4Auth):
    """botocore's S3 signer (the path signed as given, not normalised), declaring ``payload``
    as the body's SHA-256 whatever the body is."""

    def __init__(self, payload: str) -> None:
        super().__init__(Credentials(ACCESS_KEY, SECRET), "s3", "us-east-1")
        self.declared = payload

    def payload(self, request: AWSRequest) -> str:
        return self.declared


def _send(
    endpoint: str,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes = b"",
    *,
    close_early: bool = False,
    close: bool = True,
) -> Answer | None:
    """One request written to a socket as given (no client fixes it up); the answer, or None
    when the gateway closed the connection without one."""
    where = urlsplit(endpoint)
    assert where.hostname is not None and where.port is not None
    lines = [f"{method} {path} HTTP/1.1", f"Host: {where.hostname}:{where.port}"]
    lines += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "host"]
    if not any(k.lower() in ("content-length", "transfer-encoding") for k in headers):
        lines.append(f"Content-Length: {len(body)}")
    if close:
        lines.append("Connection: close")
    with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        if close_early:
            sock.shutdown(socket.SHUT_WR)
        response = HTTPResponse(sock, method=method)
        try:
            response.begin()
        except (ConnectionError, OSError, ValueError) as exc:
            if "closed" in str(exc).lower() or isinstance(exc, ConnectionError):
                return None
            raise
        from http.client import RemoteDisconnected

        try:
            return Answer(response.status, response.read())
        except RemoteDisconnected:
            return None


def _canonical(path: str) -> str:
    """The path as SigV4 signs it: each segment decoded, then encoded once."""
    return "/".join(quote(unquote(segment), safe="-_.~") for segment in path.split("/"))


def _signed(
    gateway: GatewayThread,
    method: str,
    path: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    *,
    payload: str | None = None,
) -> Answer:
    """``path`` sent as given, signed in its canonical form (what a client that encodes
    differently still signs), so the request reaches routing rather than failing its
    signature."""
    payload = payload if payload is not None else hashlib.sha256(body).hexdigest()
    query = "?" + path.split("?", 1)[1] if "?" in path else ""
    signed = _sign(
        gateway.endpoint, method, _canonical(path.split("?", 1)[0]) + query, headers or {}, payload
    )
    answer = _send(gateway.endpoint, method, path, signed, body)
    assert answer is not None
    return answer


class Bucket:
    """A bucket with one object, ``keep``, and how to tell that nothing else got in."""

    def __init__(self, s3, sync_client, name: str) -> None:  # type: ignore[no-untyped-def]
        self.s3, self.sync_client, self.name = s3, sync_client, name
        s3.create_bucket(Bucket=name)
        s3.put_object(Bucket=name, Key="keep", Body=b"kept")
        self.messages = self.raw_messages()

    def raw_messages(self) -> int:
        """The bucket stream's message count: chunks and records, orphans included."""
        return int(self.sync_client.store(self.name).status().messages)

    def assert_untouched(self) -> None:
        listed = self.s3.list_objects_v2(Bucket=self.name).get("Contents", [])
        assert [item["Key"] for item in listed] == ["keep"]
        assert self.raw_messages() == self.messages
        assert self.s3.list_multipart_uploads(Bucket=self.name).get("Uploads", []) == []

    def assert_serving(self) -> None:
        """The process is unharmed: a normal round trip works afterwards."""
        self.s3.put_object(Bucket=self.name, Key="after", Body=b"fine")
        assert self.s3.get_object(Bucket=self.name, Key="after")["Body"].read() == b"fine"
        self.s3.delete_object(Bucket=self.name, Key="after")


@pytest.fixture
def target(s3, sync_client) -> Iterator[Bucket]:  # type: ignore[no-untyped-def]
    bucket = Bucket(s3, sync_client, f"gw-hostile-{next(_names)}")
    yield bucket
    for item in s3.list_objects_v2(Bucket=bucket.name).get("Contents", []):
        s3.delete_object(Bucket=bucket.name, Key=item["Key"])
    s3.delete_bucket(Bucket=bucket.name)


@pytest.fixture
def bystander(s3, sync_client) -> Iterator[Bucket]:  # type: ignore[no-untyped-def]
    """Another bucket, which no request against ``target`` may reach."""
    bucket = Bucket(s3, sync_client, f"gw-hostile-other-{next(_names)}")
    yield bucket
    for item in s3.list_objects_v2(Bucket=bucket.name).get("Contents", []):
        s3.delete_object(Bucket=bucket.name, Key=item["Key"])
    s3.delete_bucket(Bucket=bucket.name)


def _auth(value: str, day: str | None = None) -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "Authorization": value,
        "x-amz-date": now.strftime("%Y%m%dT%H%M%SZ"),
        "x-amz-content-sha256": UNSIGNED,
    }


_SCOPE = f"{datetime.now(UTC):%Y%m%d}/us-east-1/s3/aws4_request"
_SIG = "0" * 64


@pytest.mark.parametrize(
    ("authorization", "code"),
    [
        ("AWS4-HMAC-SHA256", "AuthorizationHeaderMalformed"),
        ("AWS4-HMAC-SHA256 ", "AuthorizationHeaderMalformed"),
        (f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{_SCOPE}", "AuthorizationHeaderMalformed"),
        (
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{_SCOPE},SignedHeaders=host",
            "AuthorizationHeaderMalformed",
        ),
        (
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20250101/us-east-1/ec2/aws4_request,"
            f"SignedHeaders=host,Signature={_SIG}",
            "AuthorizationHeaderMalformed",
        ),
        (
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY},SignedHeaders=host,Signature={_SIG}",
            "AuthorizationHeaderMalformed",
        ),
        (
            f"AWS4-HMAC-SHA256 Credential=AKIANOSUCHKEY/{_SCOPE},SignedHeaders=host,"
            f"Signature={_SIG}",
            "InvalidAccessKeyId",
        ),
        (
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{_SCOPE},SignedHeaders=host,"
            f"Signature={_SIG}",
            "SignatureDoesNotMatch",
        ),
        (
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/{_SCOPE},SignedHeaders=x-amz-date,"
            f"Signature={_SIG}",
            "AccessDenied",
        ),
        (
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/19990101/us-east-1/s3/aws4_request,"
            f"SignedHeaders=host,Signature={_SIG}",
            "SignatureDoesNotMatch",
        ),
        (f"AWS {ACCESS_KEY}:c2lnbmF0dXJl", "AccessDenied"),
        ("AWS4-ECDSA-P256-SHA256 Credential=x", "AccessDenied"),
        ("Bearer eyJhbGciOiJub25lIn0.e30.", "AccessDenied"),
    ],
)
def test_malformed_authorization_is_refused(
    gateway: GatewayThread, target: Bucket, authorization: str, code: str
) -> None:
    path = f"/{target.name}/planted"
    answer = _send(gateway.endpoint, "PUT", path, _auth(authorization), b"planted")
    assert answer is not None and answer.code() == code
    assert answer.status in (400, 403)
    target.assert_untouched()
    target.assert_serving()


@pytest.mark.parametrize("skew", [timedelta(minutes=-20), timedelta(minutes=20)])
def test_a_signature_from_too_far_in_the_past_or_future_is_refused(
    gateway: GatewayThread, target: Bucket, monkeypatch: pytest.MonkeyPatch, skew: timedelta
) -> None:
    when = datetime.now(UTC).replace(tzinfo=None) + skew
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: when)
    answer = _signed(gateway, "PUT", f"/{target.name}/planted", b"planted")
    assert answer.status == 403 and answer.code() == "RequestTimeTooSkewed"
    monkeypatch.undo()
    target.assert_untouched()
    target.assert_serving()


def test_malformed_request_time_is_refused(gateway: GatewayThread, target: Bucket) -> None:
    headers = _sign(gateway.endpoint, "PUT", f"/{target.name}/planted", {}, UNSIGNED)
    headers["X-Amz-Date"] = "yesterday"
    answer = _send(gateway.endpoint, "PUT", f"/{target.name}/planted", headers, b"x")
    assert answer is not None and answer.code() == "AccessDenied"
    target.assert_untouched()


def _presign(
    gateway: GatewayThread, method: str, path: str, *, expires: int, signed_at: datetime
) -> str:
    request = AWSRequest(method=method, url=gateway.endpoint + path)
    signer = S3SigV4QueryAuth(Credentials(ACCESS_KEY, SECRET), "s3", "us-east-1", expires=expires)
    original = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = lambda: signed_at.replace(tzinfo=None)  # type: ignore[assignment]
    try:
        signer.add_auth(request)
    finally:
        botocore.auth.get_current_datetime = original  # type: ignore[assignment]
    split = urlsplit(request.url)
    return f"{split.path}?{split.query}"


def test_presigned_put_replayed_past_expiry_or_not_yet_valid_stores_nothing(
    gateway: GatewayThread, target: Bucket
) -> None:
    now = datetime.now(UTC)
    path = f"/{target.name}/planted"
    fresh = _presign(gateway, "PUT", path, expires=60, signed_at=now)
    expired = _presign(gateway, "PUT", path, expires=60, signed_at=now - timedelta(minutes=5))
    future = _presign(gateway, "PUT", path, expires=60, signed_at=now + timedelta(hours=1))
    too_long = _presign(gateway, "PUT", path, expires=7 * 24 * 3600 + 1, signed_at=now)
    for url, message in (
        (expired, b"Request has expired"),
        (future, b"not valid yet"),
        (too_long, b"X-Amz-Expires"),
    ):
        answer = _send(gateway.endpoint, "PUT", url, {}, b"planted")
        assert answer is not None and answer.code() == "AccessDenied" and message in answer.body
    target.assert_untouched()
    # the same URL, unexpired, works: the refusals above were for their dates alone
    answer = _send(gateway.endpoint, "PUT", fresh, {}, b"planted")
    assert answer is not None and answer.status == 200
    target.s3.delete_object(Bucket=target.name, Key="planted")
    target.assert_serving()


def test_oversized_headers_are_refused_before_any_work(
    gateway: GatewayThread, target: Bucket
) -> None:
    """aiohttp's parser refuses these (its own plain 400, not S3's XML: no handler runs)."""
    path = f"/{target.name}/planted"
    long_line = _sign(gateway.endpoint, "PUT", path, {"x-amz-meta-big": "v" * 9000}, UNSIGNED)
    answer = _send(gateway.endpoint, "PUT", path, long_line, b"x")
    assert answer is None or answer.status in (400, 431)
    many = {f"x-amz-meta-h{i}": "v" for i in range(200)}
    answer = _send(
        gateway.endpoint, "PUT", path, _sign(gateway.endpoint, "PUT", path, many, UNSIGNED), b"x"
    )
    assert answer is None or answer.status in (400, 431)
    answer = _send(gateway.endpoint, "GET", f"/{target.name}/{'k' * 20000}", {})
    assert answer is None or answer.status in (400, 414)
    target.assert_untouched()
    target.assert_serving()


def test_oversized_keys_metadata_and_bodies_get_s3_errors(
    gateway: GatewayThread, target: Bucket
) -> None:
    long_key = _signed(gateway, "PUT", f"/{target.name}/{'k' * 1025}", b"x")
    assert long_key.status == 400 and long_key.code() == "KeyTooLongError"
    metadata = {f"x-amz-meta-m{i}": "v" * 200 for i in range(11)}  # over 2 KiB, each line short
    answer = _signed(gateway, "PUT", f"/{target.name}/meta", b"x", metadata)
    assert answer.status == 400 and answer.code() == "MetadataTooLarge"
    # a 6 GiB body announced: refused before a byte of it is read
    path = f"/{target.name}/huge"
    headers = _sign(gateway.endpoint, "PUT", path, {"Content-Length": str(6 << 30)}, UNSIGNED)
    answer = _send(gateway.endpoint, "PUT", path, headers, b"just the start")
    assert answer is not None and answer.code() == "EntityTooLarge"
    upload = target.s3.create_multipart_upload(Bucket=target.name, Key="parts")["UploadId"]
    try:
        part = f"/{target.name}/parts?partNumber=1&uploadId={upload}"
        headers = _sign(gateway.endpoint, "PUT", part, {"Content-Length": str(6 << 30)}, UNSIGNED)
        answer = _send(gateway.endpoint, "PUT", part, headers, b"just the start")
        assert answer is not None and answer.code() == "EntityTooLarge"
    finally:
        target.s3.abort_multipart_upload(Bucket=target.name, Key="parts", UploadId=upload)
    target.assert_untouched()
    target.assert_serving()


@pytest.mark.parametrize(
    "raw_key",
    [
        "../planted",
        "%2e%2e/planted",
        "%2E%2E%2Fplanted",
        "..%5Cplanted",
        "a//b",
        "/leading",
        "a/./b",
        "a%00b",
        "%00",
    ],
)
def test_traversal_in_keys_stays_in_the_bucket(
    gateway: GatewayThread, target: Bucket, bystander: Bucket, raw_key: str
) -> None:
    """A key is a name, never a path: stored literally (and read back by the same name) or
    refused with an S3 error; nothing reaches another bucket."""
    path = f"/{target.name}/{raw_key}"
    answer = _signed(gateway, "PUT", path, b"traversal")
    if answer.status == 200:
        got = _signed(gateway, "GET", path)
        assert got.status == 200 and got.body == b"traversal"
        listed = target.s3.list_objects_v2(Bucket=target.name)["Contents"]
        assert len(listed) == 2
        key = next(item["Key"] for item in listed if item["Key"] != "keep")
        assert key == unquote(raw_key)
        target.s3.delete_object(Bucket=target.name, Key=key)
        assert target.raw_messages() > target.messages  # the delete's tombstone, in this bucket
    else:
        assert answer.status == 400 and answer.code() in (
            "InvalidArgument",
            "InvalidRequest",
            "InvalidURI",
        )
        target.assert_untouched()
    bystander.assert_untouched()
    target.assert_serving()


def test_traversal_out_of_the_bucket_in_the_path_never_writes_the_other(
    gateway: GatewayThread, target: Bucket, bystander: Bucket
) -> None:
    path = f"/{target.name}/../{bystander.name}/planted"
    answer = _signed(gateway, "PUT", path, b"traversal")
    if answer.status == 200:
        target.s3.delete_object(Bucket=target.name, Key=f"../{bystander.name}/planted")
    bystander.assert_untouched()
    target.assert_serving()


def test_a_body_shorter_than_its_length_then_closed_stores_nothing(
    gateway: GatewayThread, target: Bucket
) -> None:
    path = f"/{target.name}/short"
    headers = _sign(gateway.endpoint, "PUT", path, {"Content-Length": str(3 << 20)}, UNSIGNED)
    answer = _send(gateway.endpoint, "PUT", path, headers, b"x" * (1 << 20), close_early=True)
    assert answer is None or answer.code() == "IncompleteBody"
    target.assert_untouched()
    target.assert_serving()


def test_a_body_longer_than_its_length_stores_nothing_of_the_lie(
    gateway: GatewayThread, target: Bucket
) -> None:
    """The bytes past Content-Length are the next request (garbage, refused by the parser); the
    first request declared the SHA-256 of the whole, so its short body fails its check if it
    is handled at all."""
    path = f"/{target.name}/long"
    body = b"0123456789" * 100
    headers = _sign(
        gateway.endpoint, "PUT", path, {"Content-Length": "500"}, hashlib.sha256(body).hexdigest()
    )
    answer = _send(gateway.endpoint, "PUT", path, headers, body, close=False)
    assert answer is not None and answer.status == 400
    if b"<Code>" in answer.body:  # the request answered before the trailing bytes were parsed
        assert answer.code() == "XAmzContentSHA256Mismatch"
    else:  # aiohttp met the garbage in the same read and dropped the request unhandled
        assert b"Invalid method" in answer.body
    target.assert_untouched()
    target.assert_serving()


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({"Content-MD5": _b64(hashlib.md5(b"other").digest())}, "BadDigest"),
        ({"Content-MD5": "not base64!"}, "InvalidDigest"),
        (
            {"x-amz-checksum-crc32": _b64(zlib.crc32(b"other").to_bytes(4, "big"))},
            "BadDigest",
        ),
        ({"x-amz-checksum-sha256": _b64(hashlib.sha256(b"other").digest())}, "BadDigest"),
    ],
)
def test_a_body_that_lies_about_its_checksum_stores_nothing(
    gateway: GatewayThread, target: Bucket, headers: dict[str, str], code: str
) -> None:
    body = b"the real body " * 100_000  # over one chunk, so chunks were published before the check
    answer = _signed(gateway, "PUT", f"/{target.name}/lied", body, headers, payload=UNSIGNED)
    assert answer.status == 400 and answer.code() == code
    target.assert_untouched()
    target.assert_serving()


def test_a_body_that_lies_about_its_sha256_leaves_no_chunk(
    gateway: GatewayThread, target: Bucket
) -> None:
    body = b"the real body " * 100_000
    lie = hashlib.sha256(b"something else").hexdigest()
    answer = _signed(gateway, "PUT", f"/{target.name}/lied", body, payload=lie)
    assert answer.status == 400 and answer.code() == "XAmzContentSHA256Mismatch"
    target.assert_untouched()
    target.assert_serving()


_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
        for i in range(1, 10)
    )
    + b"]>\n<Delete><Object><Key>&lol9;</Key></Object></Delete>"
)
_EXTERNAL = (
    b'<?xml version="1.0"?>\n<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
    b"<Delete><Object><Key>&x;</Key></Object></Delete>"
)


@pytest.mark.parametrize("body", [_LAUGHS, _EXTERNAL], ids=["billion-laughs", "external-entity"])
def test_xml_with_a_document_type_is_refused(
    gateway: GatewayThread, target: Bucket, body: bytes
) -> None:
    md5 = {"Content-MD5": _b64(hashlib.md5(body).digest())}
    answer = _signed(gateway, "POST", f"/{target.name}?delete=", body, md5)
    assert answer.status == 400 and answer.code() == "MalformedXML"
    upload = target.s3.create_multipart_upload(Bucket=target.name, Key="parts")["UploadId"]
    try:
        complete = body.replace(b"Delete", b"CompleteMultipartUpload")
        answer = _signed(gateway, "POST", f"/{target.name}/parts?uploadId={upload}", complete)
        assert answer.status == 400 and answer.code() == "MalformedXML"
    finally:
        target.s3.abort_multipart_upload(Bucket=target.name, Key="parts", UploadId=upload)
    target.assert_untouched()
    target.assert_serving()


def test_oversized_xml_bodies_are_refused_unread(gateway: GatewayThread, target: Bucket) -> None:
    keys = b"".join(b"<Object><Key>keep</Key></Object>" for _ in range(80_000))
    body = b"<Delete>" + keys + b"</Delete>"  # over 2 MiB, every entry naming the kept object
    answer = _signed(gateway, "POST", f"/{target.name}?delete=", body)
    assert answer.status == 400 and answer.code() == "MaxMessageLengthExceeded"
    target.assert_untouched()
    target.assert_serving()
