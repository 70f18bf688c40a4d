"""``aws-chunked`` uploads and S3's additional checksums, against a real nats-server.

boto3 sends its trailing checksums in ``aws-chunked`` bodies over https only, so the chunked
bodies here are framed and signed by the test itself, the chunk signatures computed from
AWS's SigV4 streaming rules independently of the gateway's code; the request's own signature
comes from botocore's signer. Every lie (a chunk, its signature, the trailer's checksum, the
decoded length) must store nothing."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import uuid
import zlib

import boto3
import botocore.exceptions
import pytest
import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from tests.gateway.conftest import ACCESS_KEY, SECRET, GatewayThread

EMPTY = hashlib.sha256(b"").hexdigest()


@pytest.fixture
def bucket(s3) -> str:  # type: ignore[no-untyped-def]
    name = f"gw-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode()


def _crc32(data: bytes) -> str:
    return _b64(zlib.crc32(data).to_bytes(4, "big"))


def _signing_key(day: str) -> bytes:
    key = ("AWS4" + SECRET).encode()
    for part in (day, "us-east-1", "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def _sign(key: bytes, lines: list[str]) -> str:
    return hmac.new(key, "\n".join(lines).encode(), hashlib.sha256).hexdigest()


def _put_chunked(
    gateway: GatewayThread,
    path: str,
    chunks: list[bytes],
    mode: str,
    *,
    trailer: tuple[str, str] | None = None,
    decoded_length: int | None = None,
    tamper: bool = False,
    first_signature: str | None = None,
) -> urllib3.BaseHTTPResponse:
    """PUT ``chunks`` as an ``aws-chunked`` body in ``mode``; ``tamper`` flips a byte of the
    first chunk after it was signed; ``first_signature`` is sent as the first chunk's."""
    headers = {
        "x-amz-content-sha256": mode,
        "Content-Encoding": "aws-chunked",
        "x-amz-decoded-content-length": str(
            sum(map(len, chunks)) if decoded_length is None else decoded_length
        ),
    }
    if trailer is not None:
        headers["x-amz-trailer"] = trailer[0]
    request = AWSRequest(method="PUT", url=f"{gateway.endpoint}{path}", headers=headers)
    SigV4Auth(Credentials(ACCESS_KEY, SECRET), "s3", "us-east-1").add_auth(request)
    sent = dict(request.headers)
    signed = mode.startswith("STREAMING-AWS4-HMAC-SHA256")
    amz_date = sent["X-Amz-Date"]
    scope = f"{amz_date[:8]}/us-east-1/s3/aws4_request"
    key = _signing_key(amz_date[:8])
    previous = sent["Authorization"].rsplit("Signature=", 1)[1]
    body = b""
    for index, data in enumerate([*chunks, b""]):
        extension = ""
        if signed:
            previous = _sign(
                key,
                [
                    "AWS4-HMAC-SHA256-PAYLOAD",
                    amz_date,
                    scope,
                    previous,
                    EMPTY,
                    hashlib.sha256(data).hexdigest(),
                ],
            )
            extension = f";chunk-signature={previous}"
            if index == 0 and first_signature is not None:
                extension = f";chunk-signature={first_signature}"
        if tamper and index == 0:
            data = bytes([data[0] ^ 1]) + data[1:]
        body += f"{len(data):x}{extension}\r\n".encode() + data
        body += b"\r\n" if data else b""
    if trailer is not None:
        line = f"{trailer[0]}:{trailer[1]}"
        body += line.encode() + b"\r\n"
        if signed:
            signature = _sign(
                key,
                [
                    "AWS4-HMAC-SHA256-TRAILER",
                    amz_date,
                    scope,
                    previous,
                    hashlib.sha256((line + "\n").encode()).hexdigest(),
                ],
            )
            body += f"x-amz-trailer-signature:{signature}\r\n".encode()
    body += b"\r\n"
    return urllib3.request("PUT", request.url, body=body, headers=sent)


MODES = [
    "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
]


@pytest.mark.parametrize("mode", MODES)
def test_aws_chunked_put_stores_the_decoded_bytes(
    s3, gateway: GatewayThread, bucket: str, mode: str
) -> None:  # type: ignore[no-untyped-def]
    chunks = [os.urandom(65_536), os.urandom(300_000), os.urandom(17)]
    whole = b"".join(chunks)
    trailer = None if mode == MODES[1] else ("x-amz-checksum-crc32", _crc32(whole))
    answer = _put_chunked(gateway, f"/{bucket}/chunked", chunks, mode, trailer=trailer)
    assert answer.status == 200, answer.data
    if trailer is not None:
        assert answer.headers["x-amz-checksum-crc32"] == trailer[1]
    got = s3.get_object(Bucket=bucket, Key="chunked")
    assert got["Body"].read() == whole
    assert "ContentEncoding" not in got  # aws-chunked framed the transfer, not the object


def _crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli, reflected polynomial 0x82F63B78) bit by bit: a reference written
    from the definition, independent of the library the gateway computes it with."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


@pytest.mark.parametrize(
    ("algorithm", "digest"),
    [
        ("crc32c", lambda data: _b64(_crc32c(data).to_bytes(4, "big"))),
        ("sha1", lambda data: _b64(hashlib.sha1(data).digest())),
        ("sha256", lambda data: _b64(hashlib.sha256(data).digest())),
    ],
)
def test_trailing_checksums_of_each_algorithm(
    gateway: GatewayThread, bucket: str, algorithm: str, digest
) -> None:  # type: ignore[no-untyped-def]
    data = os.urandom(10_000)
    header = f"x-amz-checksum-{algorithm}"
    answer = _put_chunked(gateway, f"/{bucket}/a", [data], MODES[0], trailer=(header, digest(data)))
    assert answer.status == 200, answer.data
    assert answer.headers[header] == digest(data)
    lie = _put_chunked(
        gateway, f"/{bucket}/b", [data], MODES[2], trailer=(header, digest(b"other"))
    )
    assert lie.status == 400 and b"<Code>BadDigest</Code>" in lie.data


def _assert_absent(s3, bucket: str, key: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(botocore.exceptions.ClientError) as missing:
        s3.head_object(Bucket=bucket, Key=key)
    assert missing.value.response["Error"]["Code"] == "404"


@pytest.mark.parametrize("mode", [MODES[0], MODES[2]])
def test_a_lying_trailing_checksum_stores_nothing(
    s3, gateway: GatewayThread, bucket: str, mode: str
) -> None:  # type: ignore[no-untyped-def]
    data = os.urandom(200_000)
    answer = _put_chunked(
        gateway,
        f"/{bucket}/lie",
        [data],
        mode,
        trailer=("x-amz-checksum-crc32", _crc32(data + b"!")),
    )
    assert answer.status == 400 and b"<Code>BadDigest</Code>" in answer.data
    _assert_absent(s3, bucket, "lie")


def test_a_changed_signed_chunk_stores_nothing(s3, gateway: GatewayThread, bucket: str) -> None:  # type: ignore[no-untyped-def]
    answer = _put_chunked(
        gateway, f"/{bucket}/changed", [os.urandom(1000), os.urandom(10)], MODES[1], tamper=True
    )
    assert answer.status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in answer.data
    _assert_absent(s3, bucket, "changed")


def test_a_non_ascii_chunk_signature_is_a_mismatch(s3, gateway: GatewayThread, bucket: str) -> None:  # type: ignore[no-untyped-def]
    """Not a 500: the comparison of a signature that is not ASCII raised (issue 39, 8)."""
    answer = _put_chunked(
        gateway, f"/{bucket}/accented", [b"data"], MODES[1], first_signature="\u00e9" * 64
    )
    assert answer.status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in answer.data
    _assert_absent(s3, bucket, "accented")


def test_a_body_longer_than_its_decoded_length_stores_nothing(
    s3, gateway: GatewayThread, bucket: str
) -> None:  # type: ignore[no-untyped-def]
    answer = _put_chunked(
        gateway, f"/{bucket}/long", [os.urandom(1000)], MODES[1], decoded_length=999
    )
    assert answer.status == 400 and b"<Code>IncompleteBody</Code>" in answer.data
    _assert_absent(s3, bucket, "long")


def test_put_with_boto3_checksums_echoes_them_and_refuses_a_lie(
    gateway: GatewayThread, bucket: str
) -> None:
    s3 = boto3.client(
        "s3",
        endpoint_url=gateway.endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET,
        region_name="us-east-1",
        config=Config(
            s3={"addressing_style": "path"},
            signature_version="s3v4",
            request_checksum_calculation="when_supported",
            response_checksum_validation="when_supported",
        ),
    )
    data = os.urandom(100_000)
    # CRC32C needs botocore[crt] on the client side: the trailer tests above cover it
    for algorithm in ("CRC32", "SHA1", "SHA256"):
        put = s3.put_object(Bucket=bucket, Key=algorithm, Body=data, ChecksumAlgorithm=algorithm)
        assert put[f"Checksum{algorithm}"]  # echoed, as S3 does; botocore checks it matches
        assert s3.get_object(Bucket=bucket, Key=algorithm)["Body"].read() == data
    lie = AWSRequest(
        method="PUT",
        url=f"{gateway.endpoint}/{bucket}/lie",
        data=data,
        headers={
            "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
            "x-amz-checksum-crc32": _crc32(b"not the body"),
        },
    )
    SigV4Auth(Credentials(ACCESS_KEY, SECRET), "s3", "us-east-1").add_auth(lie)
    answer = urllib3.request("PUT", lie.url, body=data, headers=dict(lie.headers))
    assert answer.status == 400 and b"<Code>BadDigest</Code>" in answer.data
    _assert_absent(s3, bucket, "lie")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"zz\r\nabc\r\n0\r\n\r\n", "InvalidRequest"),  # a size that is not hexadecimal
        (b"3\r\nabcdef\r\n0\r\n\r\n", "InvalidRequest"),  # a chunk longer than its size
        (b"10\r\nabc", "IncompleteBody"),  # the body ends inside a chunk
        (b"3" + b"0" * 200_000, "InvalidRequest"),  # a size line with no end
    ],
)
def test_malformed_framing_is_a_clean_error_and_stores_nothing(
    s3, gateway: GatewayThread, bucket: str, body: bytes, code: str
) -> None:  # type: ignore[no-untyped-def]
    request = AWSRequest(
        method="PUT",
        url=f"{gateway.endpoint}/{bucket}/framed",
        headers={
            "x-amz-content-sha256": MODES[0],
            "Content-Encoding": "aws-chunked",
            "x-amz-trailer": "x-amz-checksum-crc32",
        },
    )
    SigV4Auth(Credentials(ACCESS_KEY, SECRET), "s3", "us-east-1").add_auth(request)
    answer = urllib3.request("PUT", request.url, body=body, headers=dict(request.headers))
    assert answer.status == 400 and f"<Code>{code}</Code>".encode() in answer.data
    _assert_absent(s3, bucket, "framed")
    assert s3.list_buckets()  # the gateway still serves
