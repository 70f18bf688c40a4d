"""Values an S3 client verifies that the gateway keeps in a record's headers (the ETag of an
object written through the gateway, a stored checksum, an object's parts) and that hold only
for the bytes they were computed over.

Headers are the record's, and any NATS writer of the bucket may publish a record with any
headers: the digest beside a value proves nothing, since a writer computes the digest of its
own bytes as easily as the gateway does. So each value is stored with the digest of the bytes
it was computed over and a seal: an HMAC over the header's name, the value and the digest,
keyed by the gateway's seal key (``natsobj.s3.access_keys.Credentials.seal_key``, derived from
the credentials file, which never enters a bucket). It is believed only while the seal checks
and the record still has that digest (``bound``); otherwise the caller falls back to what it
can derive from the record itself (the ETag from the SHA-256 digest), as for an object another
client wrote.

The key is the gateway's, not the request's, yet every value passes through many layers (the
ETag is read by conditions, listings, copies, multipart): ``handle`` sets it for each request
in a context variable (``using``), which tasks the request starts inherit, rather than every
signature in between carrying it."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
from collections.abc import Iterator
from contextvars import ContextVar

from natsobj.model import ObjectInfo, digest_bytes

ETAG = "S3-ETag"
"""The header holding the ETag S3 gives what the gateway wrote: the body's MD5 for a PutObject,
the MD5 of the parts' ETags with ``-count`` for an object completed from parts."""
_KEY: ContextVar[bytes] = ContextVar("natsobj_gateway_seal_key")


@contextlib.contextmanager
def using(key: bytes) -> Iterator[None]:
    """Seal and check values with ``key`` within the block (one request's handling)."""
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


def _seal(header: str, value: str, digest: bytes) -> str:
    """The HMAC of one kept value, base64url without padding (no space, as ``bind`` needs)."""
    message = b"\0".join([header.encode(), value.encode(), digest])
    mac = hmac.new(_KEY.get(), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def bind(header: str, value: str, digest: str) -> dict[str, list[str]]:
    """The record header storing ``value`` for the content whose digest is ``digest``
    (``SHA-256=…``, as the record keeps it; ``value`` holds no space), sealed: what the core
    put's ``digest_headers`` returns, e.g. ``lambda digest: bind(ETAG, tag, digest)``."""
    raw = digest_bytes(digest)
    if raw is None:
        raise ValueError(f"not a digest: {digest!r}")
    return {header: [f"{value} {digest} {_seal(header, value, raw)}"]}


def bound(info: ObjectInfo, header: str) -> str | None:
    """The value ``bind`` stored in ``header`` when it was sealed by this gateway's key for
    this record's digest; None when there is none, it is malformed or unsealed (another
    writer's), or the content has changed since."""
    values = info.headers.get(header)
    if not values or not info.digest or len(values) != 1:
        return None
    parts = values[0].split(" ")
    current = digest_bytes(info.digest)
    if len(parts) != 3 or current is None or digest_bytes(parts[1]) != current:
        return None
    value, _, seal = parts
    if not value or not hmac.compare_digest(seal.encode(), _seal(header, value, current).encode()):
        return None
    return value
