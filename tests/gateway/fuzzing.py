"""The gateway's parsers as fuzz targets: what a client controls (the request line's path and
query, headers, an ``aws-chunked`` body, Range and copy-source values, XML bodies) in, and
the one outcome that is a defect out: an exception other than ``S3Error``, which ``handle``
would answer 500 InternalError with a traceback in the log.

Each target takes bytes, split on NUL into the fields it needs (``fields``: a structure both
libFuzzer's mutations and a plain regression test read the same way), decoded as aiohttp
decodes a request (UTF-8 with surrogate escapes). SigV4 targets sign what the fuzzer chose
with the right secret when the flags say so, so the checks after the signature are reached
too, in every mode: header-signed with each payload declaration (``UNSIGNED-PAYLOAD``, a
SHA-256, the three ``STREAMING-*`` forms) and presigned.

``python -m tests.gateway.fuzzing TARGET [libFuzzer flags] [CORPUS...]`` fuzzes one target with
atheris (coverage-guided); ``tests/gateway/test_fuzz.py`` runs every target for a fixed budget
(slow) and replays ``tests/gateway/fuzz_corpus/`` (always).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import parse_qsl, quote

ACCESS_KEY = "AKIAFUZZ"
SECRET = "fuzz-secret"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
_TARGET_SAFE = "/%?=&;:@!$'()*+,-._~"
PAYLOADS = (
    "UNSIGNED-PAYLOAD",
    hashlib.sha256(b"").hexdigest(),
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
    "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
)


def fields(data: bytes, count: int) -> list[str]:
    """``count`` text fields of ``data`` (split on NUL, missing ones empty)."""
    parts = data.split(b"\0", count - 1)
    parts += [b""] * (count - len(parts))
    return [part.decode("utf-8", "surrogateescape") for part in parts]


def _flag(text: str, bit: int) -> bool:
    return bool(text) and bool(ord(text[0]) & (1 << bit))


def _secret_of(access_key: str) -> str | None:
    return SECRET if access_key == ACCESS_KEY else None


def _amz_date(text: str) -> str:
    """The fuzzer's date when it looks like one, else the fixed now (so signing proceeds)."""
    if len(text) == 16 and text.isascii() and text[8] == "T" and text.endswith("Z"):
        return text
    return NOW.strftime("%Y%m%dT%H%M%SZ")


def _as_received(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Query pairs as the gateway reads them: percent-encoded into the URL a client sends,
    then parsed as ``handle`` parses the raw query string."""

    def encoded(text: str) -> str:
        return quote(text.encode("utf-8", "surrogateescape"), safe="")

    raw = "&".join(f"{encoded(name)}={encoded(value)}" for name, value in pairs)
    return parse_qsl(raw, keep_blank_values=True)


def sigv4(data: bytes) -> None:
    """A request's SigV4 verification, header-signed or presigned, then the payload check."""
    from multidict import CIMultiDict

    from natsobj.gateway import authentication as gateway_sigv4
    from natsobj.s3.sigv4 import ALGORITHM, Request, signature

    (method, raw_path, query_text, date, payload, signed_text, name, value, flags, extra) = fields(
        data, 10
    )
    # what aiohttp's parser lets through: a token for the method and a header's name, an
    # ASCII request target, path and query (other bytes are refused with 400), no CR or LF in
    # a header's value
    method = "".join(c for c in method if c.isascii() and c.isalnum()) or "GET"
    raw_path = "/" + quote(raw_path.encode("utf-8", "surrogateescape"), safe=_TARGET_SAFE)
    query_text = quote(query_text.encode("utf-8", "surrogateescape"), safe=_TARGET_SAFE)
    name = "".join(c for c in name if c.isascii() and (c.isalnum() or c in "-_"))
    value = value.replace("\r", "").replace("\n", "")
    amz_date = _amz_date(date)
    scope = f"{amz_date[:8]}/us-east-1/s3/aws4_request"
    if payload[:1].isdigit() and len(payload) == 1:
        payload = PAYLOADS[int(payload) % len(PAYLOADS)]
    headers = CIMultiDict({"host": "127.0.0.1:9000"})
    if name:
        headers.add(name, value)
    signed = signed_text.split(";") if signed_text else ["host", "x-amz-content-sha256"]
    query = parse_qsl(query_text, keep_blank_values=True)
    presigned = _flag(flags, 1)
    if presigned:
        query = _as_received(
            [
                *query,
                ("X-Amz-Algorithm", ALGORITHM),
                ("X-Amz-Credential", extra or f"{ACCESS_KEY}/{scope}"),
                ("X-Amz-Date", amz_date),
                ("X-Amz-Expires", "3600"),
                ("X-Amz-SignedHeaders", ";".join(signed)),
            ]
        )
    else:
        headers["x-amz-date"] = amz_date
        headers["x-amz-content-sha256"] = payload
    request = Request(method, raw_path, query, headers)
    mac = "0" * 64
    if _flag(flags, 0):
        # what cannot be signed (lone surrogates) reaches the gateway with a wrong signature
        with contextlib.suppress(UnicodeEncodeError):
            mac = signature(
                SECRET, request, signed, "UNSIGNED-PAYLOAD" if presigned else payload,
                scope, amz_date, "X-Amz-Signature" if presigned else None,
            )  # fmt: skip
    if presigned:
        request = Request(
            request.method, request.raw_path, [*query, ("X-Amz-Signature", mac)], headers
        )
    else:
        credential = extra or f"{ACCESS_KEY}/{scope}"
        headers["authorization"] = (
            f"{ALGORITHM} Credential={credential}, SignedHeaders={';'.join(signed)},"
            f" Signature={mac}"
        )
    verified = gateway_sigv4.verify(request, _secret_of, NOW)
    if verified is not None:
        check = gateway_sigv4.PayloadCheck(verified.payload_hash)
        check.update(value.encode("utf-8", "surrogateescape"))
        check.finish()


_LOOP: asyncio.AbstractEventLoop | None = None


def aws_chunked(data: bytes) -> None:
    """An ``aws-chunked`` body decoded to its end, in each streaming mode."""
    from aiohttp import StreamReader
    from aiohttp.base_protocol import BaseProtocol

    from natsobj.gateway.authentication import Verified
    from natsobj.gateway.chunked import Decoder
    from natsobj.s3.sigv4 import signing_key

    global _LOOP
    mode, length, trailer, _ = fields(data, 4)
    body = data.split(b"\0", 3)[3] if data.count(b"\0") >= 3 else b""
    scope = "20260102/us-east-1/s3/aws4_request"
    payload = PAYLOADS[2 + (ord(mode[0]) % 3 if mode else 0)]
    verified = Verified(
        ACCESS_KEY, payload, "0" * 64, "20260102T030405Z", scope, signing_key(SECRET, scope)
    )
    headers = {"x-amz-decoded-content-length": length, "x-amz-trailer": trailer}
    if not length:
        del headers["x-amz-decoded-content-length"]
    _LOOP = _LOOP or asyncio.new_event_loop()
    loop = _LOOP

    async def decode() -> None:
        content = StreamReader(BaseProtocol(loop), 1 << 16, loop=loop)
        content.feed_data(body)
        content.feed_eof()
        decoder = Decoder(content, headers, verified)
        async for _ in decoder.pieces():
            pass

    loop.run_until_complete(decode())


def ranges(data: bytes) -> None:
    """Range, x-amz-copy-source-range and partNumber values against an object's size."""
    from natsobj.gateway import multipart, objects, parts

    header, size_text = fields(data, 2)
    size = int.from_bytes(size_text.encode("utf-8", "surrogateescape")[:8], "big")
    objects.parse_range(header, size)
    multipart.parse_copy_range(header, size)
    parts.part_number(header)


def copy_source(data: bytes) -> None:
    """An x-amz-copy-source value, and a request path's key, as the routing decodes them."""
    from natsobj.gateway import copying, object_keys

    value, path = fields(data, 2)
    copying.parse_source(value)
    key = object_keys.decoded(path, "bucket")
    if key:
        object_keys.check(key, "bucket")


def xml_bodies(data: bytes) -> None:
    """The XML bodies the gateway reads: DeleteObjects, CompleteMultipartUpload, any."""
    from natsobj.gateway import deletes, multipart, xml
    from natsobj.gateway.s3errors import S3Error

    for parse in (xml.parse, deletes.parse, multipart.parse_complete):
        with contextlib.suppress(S3Error):
            parse(data)


def headers(data: bytes) -> None:
    """Checksum declarations among the headers a request sends."""
    from natsobj.gateway import checksums

    name, value, other = fields(data, 3)
    sent = {name.lower(): value, "x-amz-sdk-checksum-algorithm": other}
    checksums.declared(sent)
    checksums.upload_algorithm(sent)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "sigv4": sigv4,
    "aws_chunked": aws_chunked,
    "ranges": ranges,
    "copy_source": copy_source,
    "xml_bodies": xml_bodies,
    "headers": headers,
}


def run(target: str, data: bytes) -> None:
    """One input: returns, or raises what the gateway would answer 500 to."""
    from natsobj.gateway.s3errors import S3Error

    with contextlib.suppress(S3Error):
        TARGETS[target](data)


def main() -> None:
    import atheris

    target = sys.argv.pop(1)
    with atheris.instrument_imports():
        import natsobj.gateway.authentication
        import natsobj.gateway.chunked
        import natsobj.gateway.copying
        import natsobj.gateway.deletes
        import natsobj.gateway.multipart
        import natsobj.s3.sigv4  # noqa: F401
    atheris.Setup(sys.argv, lambda data: run(target, data))
    atheris.Fuzz()


if __name__ == "__main__":
    main()
