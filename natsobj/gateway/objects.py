"""Object operations: PutObject (streamed), GetObject (whole or one ``Range``, the latter from
the chunks that hold it), HeadObject, DeleteObject."""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import logging
import re
from collections.abc import AsyncIterable, AsyncIterator

from aiohttp import web

from natsobj.aio import Client, ObjectStore, RangeReader
from natsobj.errors import ObjectNotFound
from natsobj.gateway import (
    checksums,
    chunked,
    conditions,
    etags,
    metadata,
    object_lock,
    parts,
    versions,
)
from natsobj.gateway.authentication import STREAMING_PREFIX, UNSIGNED, PayloadCheck, Verified
from natsobj.gateway.s3errors import S3Error
from natsobj.model import ObjectInfo

log = logging.getLogger(__name__)

MAX_UPLOAD_BYTES = 5 << 30
"""S3's largest single PutObject and largest part: a bigger body is EntityTooLarge, whether
it declares its length or streams past it."""
RANGE_PIECE = 1 << 20
"""Bytes a ranged GET reads from the core per write to the client: its memory per request."""
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
# GetObject's query parameters that override a response header (S3's response-* overrides)
OVERRIDES = {
    "response-content-type": "Content-Type",
    "response-content-language": "Content-Language",
    "response-expires": "Expires",
    "response-cache-control": "Cache-Control",
    "response-content-disposition": "Content-Disposition",
    "response-content-encoding": "Content-Encoding",
}


_HEADER_VALUE = re.compile(r"[\t\x20-\x7e\x80-\U0010ffff]*")
"""What an override may hold: no control character (a CR LF would end the header)."""
MAX_OFFSET = 1 << 62
"""Any byte offset at least this is past every object's end (and a number of thousands of
digits is not converted at all: Python refuses such an ``int``)."""


def offset(digits: str) -> int:
    """A byte offset written in decimal digits, capped at ``MAX_OFFSET``."""
    significant = digits.lstrip("0")
    if len(significant) > len(str(MAX_OFFSET)):
        return MAX_OFFSET
    return min(int(significant or "0"), MAX_OFFSET)


def _response_headers(request: web.Request, info: ObjectInfo) -> dict[str, str]:
    """What a GET or HEAD answers with: the object's headers, with the request's overrides
    (InvalidArgument for one no header can carry)."""
    headers = metadata.response_headers(info)
    for parameter, header in OVERRIDES.items():
        value = request.query.get(parameter)
        if value is not None:
            if not _HEADER_VALUE.fullmatch(value):
                raise S3Error("InvalidArgument", f"{parameter} holds a control character")
            headers[header] = value
    return headers


class UploadBody:
    """An upload's request body as it arrives (aiohttp pauses the socket while the core is
    behind): plain, or ``aws-chunked`` decoded (``natsobj.gateway.chunked``). Its length,
    SHA-256, ``Content-MD5`` and ``x-amz-checksum-*`` (header or trailer) are checked at the
    end: a failed check fails the put, which then writes no meta record (nothing is stored).
    ``checksums`` holds the verified ``x-amz-checksum-*`` afterwards, which S3 echoes, and
    ``etag`` the body's MD5 (S3's ETag), which the put binds to its digest. Public
    so that every upload (UploadPart as well as PutObject) checks its body by the same rules.
    ``algorithm``: a checksum the body must have whether or not the client sent it (a part
    of an upload created with ``x-amz-checksum-algorithm``), computed when it did not."""

    def __init__(
        self, request: web.Request, verified: Verified, algorithm: str | None = None
    ) -> None:
        self.request = request
        self.decoder: chunked.Decoder | None = None
        self.length = request.content_length
        self.payload = PayloadCheck(verified.payload_hash)
        if verified.payload_hash.startswith(STREAMING_PREFIX):
            self.decoder = chunked.Decoder(request.content, request.headers, verified)
            self.length = self.decoder.decoded_length
            self.payload = PayloadCheck(UNSIGNED)
        self.declared = checksums.declared(request.headers)
        self.checksums: dict[str, str] = {}
        if self.length is not None and self.length > MAX_UPLOAD_BYTES:
            raise _too_large()
        self.md5 = hashlib.md5(usedforsecurity=False)
        self.algorithm = algorithm
        self.computed: checksums.Checksum | None = None
        if algorithm is not None and (
            self.declared is None or self.declared[0].algorithm != algorithm
        ):
            self.computed = checksums.Checksum(algorithm)

    def etag(self) -> str:
        """S3's ETag of the body read: its MD5, quoted."""
        return f'"{self.md5.hexdigest()}"'

    async def pieces(self) -> AsyncIterator[bytes]:
        md5_header = self.request.headers.get("Content-MD5")
        md5 = self.md5
        source = (
            self.decoder.pieces() if self.decoder is not None else self.request.content.iter_any()
        )
        received = 0
        async for piece in source:
            received += len(piece)
            if received > MAX_UPLOAD_BYTES:
                raise _too_large()
            self.payload.update(piece)
            md5.update(piece)
            if self.declared is not None:
                self.declared[0].update(piece)
            if self.computed is not None:
                self.computed.update(piece)
            yield piece
        if self.length is not None and received != self.length:
            raise S3Error(
                "IncompleteBody",
                "You did not provide the number of bytes specified by the Content-Length HTTP "
                "header",
            )
        self.payload.finish()
        if md5_header is not None:
            try:
                wanted = base64.b64decode(md5_header, validate=True)
            except (binascii.Error, ValueError):
                raise S3Error(
                    "InvalidDigest", "The Content-MD5 you specified was invalid"
                ) from None
            if not hmac.compare_digest(md5.digest(), wanted):
                raise S3Error(
                    "BadDigest", "The Content-MD5 you specified did not match what we received."
                )
        if self.declared is not None:
            checksum, value = self.declared
            self.checksums[checksum.header] = checksum.verify(value)
        if self.decoder is not None and self.decoder.checksum is not None:
            header, value = self.decoder.checksum
            self.checksums[header] = value
        if self.computed is not None:
            self.checksums.setdefault(self.computed.header, self.computed.value())

    def keep(self, digest: str) -> dict[str, list[str]]:
        """The core put's ``digest_headers``: the ETag and the verified checksum kept with
        the object, bound to its digest (``metadata.etag`` and ``checksums.stored`` read
        them back)."""
        kept = checksums.only_one(self.checksums, self.algorithm)
        return {
            **etags.bind(etags.ETAG, self.etag(), digest),
            **(kept.bind(digest) if kept is not None else {}),
        }


def _too_large() -> S3Error:
    return S3Error(
        "EntityTooLarge",
        f"Your proposed upload exceeds the maximum allowed size ({MAX_UPLOAD_BYTES} bytes)",
    )


async def put_object(
    client: Client, request: web.Request, bucket: str, key: str, verified: Verified
) -> web.Response:
    if request.content_length is None and request.headers.get("Transfer-Encoding") is None:
        raise S3Error("MissingContentLength", "You must provide the Content-Length HTTP header.")
    body = UploadBody(request, verified)
    store = await client.store(bucket)
    headers, meta = metadata.from_request(request.headers)
    mode = await conditions.write_precondition(store, key, request.headers)
    wanted = await object_lock.requested(store, request.headers)
    info = await store.put(
        key,
        body.pieces(),
        headers=headers,
        metadata=meta,
        mode=mode,
        digest_headers=body.keep,
    )
    await object_lock.lock_new_version(store, key, info.nuid, wanted)
    kept = await versions.id_headers(store, info.nuid)
    return web.Response(headers={"ETag": metadata.etag(info), **body.checksums, **kept})


def parse_range(header: str, size: int) -> tuple[int, int] | None:
    """``[start, end)`` of a ``Range: bytes=…`` header for an object of ``size`` bytes; None
    when the header is not one range S3 honours (the whole object is served then);
    InvalidRange when it starts past the end."""
    match = _RANGE.fullmatch(header.strip())
    if match is None or (not match[1] and not match[2]):
        return None
    if not match[1]:
        suffix = offset(match[2])
        if suffix == 0:
            raise S3Error("InvalidRange", "The requested range is not satisfiable")
        return max(size - suffix, 0), size
    start = offset(match[1])
    last = offset(match[2]) if match[2] else None
    end = size if last is None else min(last + 1, size)
    if last is not None and last < start:
        return None
    if start >= size:
        raise S3Error("InvalidRange", "The requested range is not satisfiable")
    return start, end


def _checksum_headers(
    request: web.Request, info: ObjectInfo, part: parts.Part | None
) -> dict[str, str]:
    """The kept checksum, as S3 answers it: the object's to ``x-amz-checksum-mode: ENABLED``
    on a whole read; a part's on a read by ``partNumber`` (S3 answers that one unasked)."""
    kept = checksums.stored(info)
    if kept is None:
        return {}
    if part is not None:
        return kept.response_headers(part.checksum) if part.checksum else {}
    if request.headers.get(checksums.MODE_HEADER, "").upper() != "ENABLED":
        return {}
    return kept.response_headers()


async def get_object(
    client: Client,
    request: web.Request,
    bucket: str,
    key: str,
    *,
    head: bool,
    version: str | None = None,
) -> web.StreamResponse:
    """GET or HEAD. A ranged GET (``Range`` or ``partNumber``) reads through the core's range
    reader (only the chunks that hold the bytes); a whole GET streams the object and checks
    its digest at the end (a mismatch aborts the connection: the client never gets a
    complete-looking bad body). ``version``: that version (``versionId``), not the current."""
    store: ObjectStore = await client.store(bucket)
    range_header = request.headers.get("Range")
    number_text = request.query.get("partNumber")
    number = parts.part_number(number_text) if number_text is not None else None
    if not head and range_header is None and number is None:
        async with contextlib.AsyncExitStack() as stack:
            whole = await versions.named(
                version, lambda: stack.enter_async_context(store.get(key, version=version))
            )
            conditions.check_read(request.headers, whole.info)
            headers = _response_headers(request, whole.info)
            headers.update(await versions.id_headers(store, whole.info.nuid))
            headers.update(await object_lock.answer_headers(store, whole.info))
            headers.update(_checksum_headers(request, whole.info, None))
            headers["Content-Length"] = str(whole.info.size)
            response = web.StreamResponse(status=200, headers=headers)
            await response.prepare(request)
            return await _send(request, response, whole, bucket, key)
    reader = await versions.named(version, lambda: store.open_range(key, version=version))
    try:
        info = reader.info
        conditions.check_read(request.headers, info)
        headers = _response_headers(request, info)
        headers.update(await versions.id_headers(store, info.nuid))
        headers.update(await object_lock.answer_headers(store, info))
        part: parts.Part | None = None
        if number is not None:
            if range_header is not None:
                raise S3Error("InvalidRequest", "Cannot specify both Range header and partNumber")
            part, count = parts.select(info, number)
            span: tuple[int, int] | None = (part.start, part.start + part.size)
            if count > 1:
                headers["x-amz-mp-parts-count"] = str(count)
            else:
                span = None  # an object of one part: the whole of it, as S3 answers
        else:
            try:
                span = parse_range(range_header, info.size) if range_header is not None else None
            except S3Error as exc:
                exc.bucket, exc.key = bucket, key
                exc.headers["Content-Range"] = f"bytes */{info.size}"
                raise
        if range_header is None:
            headers.update(_checksum_headers(request, info, part))
        start, end = span if span is not None else (0, info.size)
        headers["Content-Length"] = str(end - start)
        status = 200
        if span is not None:
            status = 206
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{info.size}"
        if head:
            return web.Response(status=status, headers=headers)
        response = web.StreamResponse(status=status, headers=headers)
        await response.prepare(request)
        return await _send(request, response, range_pieces(reader, start, end), bucket, key)
    finally:
        await reader.close()


async def _send(
    request: web.Request,
    response: web.StreamResponse,
    pieces: AsyncIterable[bytes],
    bucket: str,
    key: str,
) -> web.StreamResponse:
    """Write a prepared answer's body. The core yields a whole object's last chunk only once
    its digest is checked, so a mismatch ends the body short of ``Content-Length``; once the
    head is out an error answer cannot follow (its bytes would land inside the body), so a
    failed read aborts the connection instead. A client that goes away mid-body (a reader
    that had what it needed, a cancelled download) ends the answer with one log line rather
    than aiohttp's traceback of a server error: nothing failed on our side."""
    try:
        async for piece in pieces:
            await response.write(piece)
        await response.write_eof()
    except ConnectionResetError:
        log.info("GET %s/%s: the client closed the connection mid-body", bucket, key)
    except Exception as exc:
        log.warning("GET %s/%s: the read failed mid-body, connection aborted: %s", bucket, key, exc)
        if request.transport is not None:
            request.transport.abort()
    return response


async def range_pieces(reader: RangeReader, start: int, end: int) -> AsyncIterator[bytes]:
    """Bytes ``[start, end)`` of an open range reader in ``RANGE_PIECE`` steps: the memory of
    one step, whatever the span (a ranged GET, an UploadPartCopy)."""
    position = start
    while position < end:
        piece = await reader.read_range(position, min(position + RANGE_PIECE, end))
        yield piece
        position += len(piece)


async def delete_object(
    client: Client, request: web.Request, bucket: str, key: str, version: str | None = None
) -> web.Response:
    """S3 answers 204 whether or not the key (or the version) existed. In a versioned bucket
    the delete leaves a marker, whose id it answers with; ``version`` removes that version
    for good (a locked one is AccessDenied unless a governance retention is bypassed)."""
    store = await client.store(bucket)
    bypass = object_lock.bypasses(request.headers)
    try:
        removed = await store.delete(key, version=version, bypass_governance=bypass)
    except ObjectNotFound:
        return web.Response(status=204)
    headers = await versions.id_headers(store, removed.nuid, marker=removed.deleted)
    return web.Response(status=204, headers=headers)
