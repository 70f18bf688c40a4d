"""S3's additional checksums (``x-amz-checksum-<algorithm>``): computed over a body as it
streams and compared with what the client declared, in a header or in an ``aws-chunked``
trailer, before the put commits. The value is base64 of the big-endian digest, as S3 has it.

A verified checksum is kept in the record's ``STORED`` header, bound to the record's digest
(natsobj.gateway.etags), so HEAD and GET with ``x-amz-checksum-mode: ENABLED`` and
GetObjectAttributes answer it without reading a chunk, and a record rewritten by another
client never shows a stale one. An object completed from parts has S3's two kinds: a
COMPOSITE checksum (the checksum of the parts' checksums, ``-<count>``) or, for the CRCs, a
FULL_OBJECT one (the CRC of the whole body, computed as Complete streams it)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import awscrt.checksums

from natsobj.gateway import etags, xml
from natsobj.gateway.s3errors import S3Error
from natsobj.model import ObjectInfo

PREFIX = "x-amz-checksum-"
TYPE_HEADER = "x-amz-checksum-type"
ALGORITHM_HEADER = "x-amz-checksum-algorithm"
MODE_HEADER = "x-amz-checksum-mode"
STORED = "S3-Checksum"
"""The record header keeping an object's verified checksum, ``<algorithm>:<type>:<value>``."""
COMPOSITE = "COMPOSITE"
_VALUE = re.compile(r"[A-Za-z0-9+/]{4,88}={0,2}(-[0-9]{1,5})?")
FULL_OBJECT = "FULL_OBJECT"


class Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...

    def digest(self) -> bytes: ...


class _Crc:
    """A CRC kept as an integer, ``function(data, previous)`` extending it."""

    def __init__(self, function: Callable[[bytes, int], int], width: int) -> None:
        self.function = function
        self.width = width
        self.value = 0

    def update(self, data: bytes) -> None:
        self.value = self.function(data, self.value)

    def digest(self) -> bytes:
        return self.value.to_bytes(self.width, "big")


ALGORITHMS: dict[str, Callable[[], Hasher]] = {
    "crc32": lambda: _Crc(zlib.crc32, 4),
    # awscrt: the AWS Common Runtime the AWS SDKs compute these with (docs/gateway.md says why)
    "crc32c": lambda: _Crc(awscrt.checksums.crc32c, 4),
    "crc64nvme": lambda: _Crc(awscrt.checksums.crc64nvme, 8),
    "sha1": lambda: hashlib.sha1(usedforsecurity=False),
    "sha256": hashlib.sha256,
}


class Checksum:
    """One declared checksum, checked against the bytes ``update`` sees."""

    def __init__(self, algorithm: str) -> None:
        factory = ALGORITHMS.get(algorithm)
        if factory is None:
            raise S3Error(
                "InvalidRequest",
                f"The {algorithm.upper()} checksum algorithm is not supported by this gateway",
            )
        self.algorithm = algorithm
        self.hasher = factory()

    @property
    def header(self) -> str:
        return PREFIX + self.algorithm

    def update(self, data: bytes) -> None:
        self.hasher.update(data)

    def value(self) -> str:
        return base64.b64encode(self.hasher.digest()).decode()

    def verify(self, declared: str) -> str:
        """The computed value; BadDigest when ``declared`` is not it."""
        computed = self.value()
        if not hmac.compare_digest(computed.encode(), declared.strip().encode()):
            raise S3Error(
                "BadDigest",
                f"The {self.algorithm.upper()} you specified did not match the calculated "
                "checksum.",
            )
        return computed


def algorithm_of(header: str) -> str | None:
    """``crc32`` for ``x-amz-checksum-crc32``; None for any other header (``-type``,
    ``-algorithm`` and the like are not values)."""
    name = header.lower()
    if not name.startswith(PREFIX) or name[len(PREFIX) :] in ("type", "algorithm", "mode"):
        return None
    return name[len(PREFIX) :]


def declared(headers: Mapping[str, str]) -> tuple[Checksum, str] | None:
    """The checksum a request's headers declare for its body, with the value to match; at most
    one, as S3 allows."""
    found = [
        (algorithm, value)
        for name, value in headers.items()
        if (algorithm := algorithm_of(name)) is not None
    ]
    if not found:
        return None
    if len(found) > 1:
        raise S3Error("InvalidRequest", "Expecting a single x-amz-checksum- header")
    algorithm, value = found[0]
    return Checksum(algorithm), value


def upload_algorithm(headers: Mapping[str, str]) -> tuple[str, str] | None:
    """``(algorithm, type)`` a CreateMultipartUpload asks for (``x-amz-checksum-algorithm``,
    ``x-amz-checksum-type``), None for none. S3's defaults and rules: COMPOSITE unless asked,
    but CRC64NVME is FULL_OBJECT only and the SHAs are COMPOSITE only."""
    algorithm = headers.get(ALGORITHM_HEADER, "").strip().lower()
    kind = headers.get(TYPE_HEADER, "").strip().upper()
    if not algorithm:
        if kind:
            raise S3Error("InvalidRequest", "x-amz-checksum-type needs x-amz-checksum-algorithm")
        return None
    Checksum(algorithm)  # an algorithm this gateway computes
    if not kind:
        kind = FULL_OBJECT if algorithm == "crc64nvme" else COMPOSITE
    allowed = (COMPOSITE,) if algorithm.startswith("sha") else (COMPOSITE, FULL_OBJECT)
    if algorithm == "crc64nvme":
        allowed = (FULL_OBJECT,)
    if kind not in allowed:
        raise S3Error(
            "InvalidRequest",
            f"The {kind} checksum type cannot be used with the {algorithm.upper()} algorithm",
        )
    return algorithm, kind


def composite(algorithm: str, values: list[str]) -> str:
    """S3's COMPOSITE checksum of parts: the checksum of their checksums' bytes, ``-count``."""
    combined = Checksum(algorithm)
    for value in values:
        combined.update(base64.b64decode(value))
    return f"{combined.value()}-{len(values)}"


@dataclass(frozen=True)
class Stored:
    """An object's checksum as kept with it."""

    algorithm: str
    kind: str
    value: str

    @property
    def header(self) -> str:
        return PREFIX + self.algorithm

    def response_headers(self, value: str | None = None) -> dict[str, str]:
        """What HEAD/GET answer with ``x-amz-checksum-mode: ENABLED`` (``value`` instead of
        the object's: a part's)."""
        return {self.header: value or self.value, TYPE_HEADER: self.kind}

    def bind(self, digest: str) -> dict[str, list[str]]:
        """The record headers keeping this checksum for the content of ``digest``."""
        return etags.bind(STORED, f"{self.algorithm}:{self.kind}:{self.value}", digest)


def stored(info: ObjectInfo) -> Stored | None:
    """The checksum kept with ``info``, None when there is none or it was written for other
    bytes than the record's now (another client rewrote the object)."""
    value = etags.bound(info, STORED)
    if value is None:
        return None
    algorithm, _, rest = value.partition(":")
    kind, _, checksum = rest.partition(":")
    if algorithm not in ALGORITHMS or kind not in (COMPOSITE, FULL_OBJECT):
        return None
    return Stored(algorithm, kind, checksum) if well_formed(checksum) else None


def well_formed(value: str) -> bool:
    """Whether a kept checksum is one S3 could answer (base64, ``-count`` for a composite):
    a header value from a record is input, never copied into a response unchecked."""
    return _VALUE.fullmatch(value) is not None


def only_one(checksums: Mapping[str, str], algorithm: str | None = None) -> Stored | None:
    """The checksum an upload verified (``UploadBody.checksums``) as kept with it, the one of
    ``algorithm`` when given (a part's, of its upload's algorithm): a whole body's is
    FULL_OBJECT, as S3 reports it."""
    if algorithm is not None:
        value = checksums.get(PREFIX + algorithm)
        return Stored(algorithm, FULL_OBJECT, value) if value else None
    for header, value in checksums.items():
        algorithm = algorithm_of(header)
        if algorithm is not None:
            return Stored(algorithm, FULL_OBJECT, value)
    return None


def element(kept: Stored | None, value: str | None = None) -> str:
    """``<Checksum<ALGORITHM>>`` of an XML answer (ListParts, GetObjectAttributes), ``value``
    instead of the kept one when given; nothing without a checksum."""
    if kept is None:
        return ""
    return xml.element("Checksum" + kept.algorithm.upper(), value or kept.value)
