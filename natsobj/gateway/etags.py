"""Values an S3 client verifies that the gateway keeps in a record's headers (the ETag of an
object written through the gateway, a stored checksum) and that hold only for the bytes they
were computed over.

Headers are the record's, and any NATS client may rewrite an object and copy its headers
across (a copy with new content, a tool that keeps headers on overwrite). So each such value is
stored with the digest of the bytes it was computed over (``bind``), and believed only while
the record still has that digest (``bound``); otherwise the caller falls back to what it can
derive from the record itself (the ETag from the SHA-256 digest)."""

from __future__ import annotations

from natsobj.model import ObjectInfo, digest_bytes

ETAG = "S3-ETag"
"""The header holding the ETag S3 gives what the gateway wrote: the body's MD5 for a PutObject,
the MD5 of the parts' ETags with ``-count`` for an object completed from parts."""


def bind(header: str, value: str, digest: str) -> dict[str, list[str]]:
    """The record header storing ``value`` for the content whose digest is ``digest``
    (``SHA-256=…``, as the record keeps it; ``value`` holds no space): what the core put's
    ``digest_headers`` returns, e.g. ``lambda digest: bind(ETAG, tag, digest)``."""
    return {header: [f"{value} {digest}"]}


def bound(info: ObjectInfo, header: str) -> str | None:
    """The value ``bind`` stored in ``header`` when it was bound to this record's digest;
    None when there is none, it is malformed, or the content has changed since."""
    values = info.headers.get(header)
    if not values or not info.digest:
        return None
    value, _, digest = values[0].rpartition(" ")
    current = digest_bytes(info.digest)
    if not value or current is None or digest_bytes(digest) != current:
        return None
    return value
