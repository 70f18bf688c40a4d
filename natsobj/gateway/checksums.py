"""S3's additional checksums (``x-amz-checksum-<algorithm>``): computed over a body as it
streams and compared with what the client declared, in a header or in an ``aws-chunked``
trailer, before the put commits. The value is base64 of the big-endian digest, as S3 has it."""

from __future__ import annotations

import base64
import hashlib
import hmac
import zlib
from collections.abc import Callable, Mapping
from typing import Protocol

from natsobj.gateway.s3errors import S3Error

PREFIX = "x-amz-checksum-"


class Hasher(Protocol):
    def update(self, data: bytes, /) -> None: ...

    def digest(self) -> bytes: ...


class _Crc32:
    def __init__(self) -> None:
        self.value = 0

    def update(self, data: bytes) -> None:
        self.value = zlib.crc32(data, self.value)

    def digest(self) -> bytes:
        return self.value.to_bytes(4, "big")


def _crc32c() -> Hasher:
    """google-crc32c's hasher (its C extension: CRC32C in pure Python is far too slow for a
    streamed body); NotImplemented when the package is not installed."""
    try:
        import google_crc32c
    except ImportError:
        raise S3Error(
            "NotImplemented", "CRC32C checksums need the google-crc32c package on the gateway"
        ) from None
    return google_crc32c.Checksum()


ALGORITHMS: dict[str, Callable[[], Hasher]] = {
    "crc32": _Crc32,
    "crc32c": _crc32c,
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
