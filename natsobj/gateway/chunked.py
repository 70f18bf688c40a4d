"""``aws-chunked`` request bodies, decoded as they stream in (memory: one piece of a chunk and
one framing line, whatever the chunk sizes).

The body is a series of ``<hex size>[;chunk-signature=<sig>]\\r\\n<data>\\r\\n``, ended by a
zero-size chunk, then, for the ``-TRAILER`` variants, trailing headers (``x-amz-checksum-*``,
and ``x-amz-trailer-signature`` when signed) and an empty line. Signed variants chain each
chunk's signature from the previous one (the request's for the first: ``sigv4``), so a chunk
changed, dropped or reordered in transit fails. Every check (signatures, the decoded length
against ``x-amz-decoded-content-length``, the trailing checksum) fails the iteration, which
fails the put before its meta record is written: nothing is stored.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Mapping

from aiohttp import StreamReader

from natsobj.gateway import checksums
from natsobj.gateway.authentication import Verified, chained_signature, matches
from natsobj.gateway.s3errors import S3Error

UNSIGNED_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
SIGNED_TRAILER = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
PIECE = 1 << 20
"""Bytes of a chunk handed on at a time: a client's chunk size never sets the memory."""
MAX_LINE = 4096  # a chunk header or trailer line, far longer than any client sends
MAX_TRAILERS = 16
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def _malformed(what: str) -> S3Error:
    return S3Error("InvalidRequest", f"The aws-chunked request body is malformed: {what}")


def _signature_mismatch(what: str) -> S3Error:
    return S3Error(
        "SignatureDoesNotMatch",
        f"The {what} signature we calculated does not match the signature you provided.",
    )


class Decoder:
    """Decodes one request's ``aws-chunked`` body; after ``pieces`` is exhausted,
    ``checksum`` holds the trailing checksum verified (header name, value), if one was sent."""

    def __init__(self, content: StreamReader, headers: Mapping[str, str], verified: Verified):
        mode = verified.payload_hash
        if mode not in (UNSIGNED_TRAILER, SIGNED, SIGNED_TRAILER):
            raise S3Error("NotImplemented", f"{mode} request bodies are not supported")
        self.content = content
        self.verified = verified
        self.signed = mode != UNSIGNED_TRAILER
        self.trailed = mode != SIGNED
        self.previous = verified.signature
        length = headers.get("x-amz-decoded-content-length")
        try:
            self.decoded_length = int(length) if length is not None else None
        except ValueError:
            raise S3Error(
                "InvalidArgument", "x-amz-decoded-content-length is not a number"
            ) from None
        if self.decoded_length is None and self.signed:
            raise S3Error(
                "MissingContentLength", "You must provide the x-amz-decoded-content-length header."
            )
        self.trailer: checksums.Checksum | None = None
        if self.trailed:
            name = headers.get("x-amz-trailer", "").strip().lower()
            algorithm = checksums.algorithm_of(name)
            if algorithm is None:
                raise S3Error(
                    "InvalidRequest", "x-amz-trailer must name one x-amz-checksum- header"
                )
            self.trailer = checksums.Checksum(algorithm)
        self.checksum: tuple[str, str] | None = None

    async def _line(self) -> bytes:
        try:
            line = await self.content.readuntil(b"\n")
        except asyncio.IncompleteReadError:
            raise S3Error(
                "IncompleteBody", "The aws-chunked request body ended before its last chunk"
            ) from None
        except ValueError:
            raise _malformed("a line is too long") from None
        if len(line) > MAX_LINE or not line.endswith(b"\r\n"):
            raise _malformed("a line is too long or not ended by CRLF")
        return line[:-2]

    async def _exactly(self, size: int) -> bytes:
        try:
            return await self.content.readexactly(size)
        except asyncio.IncompleteReadError:
            raise S3Error(
                "IncompleteBody", "The aws-chunked request body ended inside a chunk"
            ) from None

    def _chunk_header(self, line: bytes) -> tuple[int, str | None]:
        size_text, _, extensions = line.partition(b";")
        try:
            size = int(size_text, 16)
        except ValueError:
            raise _malformed("a chunk size is not hexadecimal") from None
        if size < 0 or len(size_text) > 16:
            raise _malformed("a chunk size is out of range")
        signature = None
        for extension in extensions.split(b";") if extensions else ():
            name, _, value = extension.partition(b"=")
            if name.strip() == b"chunk-signature":
                signature = value.strip().decode("ascii", "replace")
        if self.signed and signature is None:
            raise _malformed("a chunk of a signed body has no chunk-signature")
        return size, signature

    def _check_chunk(self, signature: str | None, data_hash: str) -> None:
        if not self.signed or signature is None:
            return
        expected = chained_signature(
            self.verified, "PAYLOAD", self.previous, [_EMPTY_SHA256, data_hash]
        )
        if not matches(expected, signature):
            raise _signature_mismatch("chunk")
        self.previous = expected

    async def pieces(self) -> AsyncIterator[bytes]:
        """The decoded bytes, as they arrive."""
        total = 0
        while True:
            size, signature = self._chunk_header(await self._line())
            total += size
            if self.decoded_length is not None and total > self.decoded_length:
                raise S3Error(
                    "IncompleteBody", "The aws-chunked body is longer than its decoded length"
                )
            digest = hashlib.sha256() if self.signed else None
            left = size
            while left:
                piece = await self._exactly(min(left, PIECE))
                left -= len(piece)
                if digest is not None:
                    digest.update(piece)
                if self.trailer is not None:
                    self.trailer.update(piece)
                yield piece
            self._check_chunk(signature, digest.hexdigest() if digest else _EMPTY_SHA256)
            if size == 0:
                break
            if await self._line() != b"":
                raise _malformed("a chunk is longer than its size")
        if self.decoded_length is not None and total != self.decoded_length:
            raise S3Error(
                "IncompleteBody",
                "You did not provide the number of bytes specified by x-amz-decoded-content-length",
            )
        await self._trailers()

    async def _trailers(self) -> None:
        """The trailing headers and the empty line that ends the body."""
        lines: list[bytes] = []
        while (line := await self._line()) != b"":
            lines.append(line)
            if len(lines) > MAX_TRAILERS:
                raise _malformed("too many trailing headers")
        if self.trailer is None:
            if lines:
                raise _malformed("trailing headers in a body declared without a trailer")
            return
        fields: dict[str, str] = {}
        signed_part = b""
        for line in lines:
            name, colon, value = line.decode("ascii", "replace").partition(":")
            if not colon:
                raise _malformed("a trailing header has no colon")
            name = name.strip().lower()
            fields[name] = value.strip()
            if name != "x-amz-trailer-signature":
                signed_part += f"{name}:{value.strip()}\n".encode()
        declared = fields.get(self.trailer.header)
        if declared is None:
            raise _malformed(f"the trailer {self.trailer.header} it declared is missing")
        if self.signed:
            signature = fields.get("x-amz-trailer-signature")
            expected = chained_signature(
                self.verified, "TRAILER", self.previous, [hashlib.sha256(signed_part).hexdigest()]
            )
            if signature is None or not matches(expected, signature):
                raise _signature_mismatch("trailer")
        self.checksum = (self.trailer.header, self.trailer.verify(declared))
