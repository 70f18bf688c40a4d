"""How an S3 object's metadata maps onto ADR-20's record, both ways, so other NATS clients see
what an S3 client set and an S3 client sees what they set.

* ``x-amz-meta-<name>`` ↔ the record's ``metadata`` (``<name>`` lower-cased, as S3 keeps it);
* ``Content-Type`` and the other representation headers S3 stores ↔ the record's ``headers``;
* the ETag is S3's (the body's MD5) for an object the gateway wrote, kept in the record bound
  to its digest (natsobj.gateway.etags); any other object's is derived from the record's
  SHA-256 digest, the same for every reader.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from email.utils import format_datetime

from natsobj.gateway import etags
from natsobj.model import ObjectInfo, digest_bytes

META_PREFIX = "x-amz-meta-"
STORED_HEADERS = (
    "Content-Type",
    "Content-Encoding",
    "Cache-Control",
    "Content-Disposition",
    "Content-Language",
    "Expires",
)
DEFAULT_CONTENT_TYPE = "binary/octet-stream"  # what S3 answers for an object stored without one


def from_request(
    headers: Mapping[str, str],
) -> tuple[dict[str, list[str]], dict[str, str]]:
    """``(ADR-20 headers, ADR-20 metadata)`` from an upload's HTTP headers. ``aws-chunked`` in
    ``Content-Encoding`` is how the body was framed in transit, not the object's encoding: it is
    not stored (as S3 does not)."""
    stored = {name: [headers[name]] for name in STORED_HEADERS if name in headers}
    encodings = [
        part.strip()
        for part in headers.get("Content-Encoding", "").split(",")
        if part.strip() and part.strip().lower() != "aws-chunked"
    ]
    if encodings:
        stored["Content-Encoding"] = [", ".join(encodings)]
    else:
        stored.pop("Content-Encoding", None)
    meta = {
        name[len(META_PREFIX) :].lower(): value
        for name, value in headers.items()
        if name.lower().startswith(META_PREFIX)
    }
    return stored, meta


def etag(info: ObjectInfo) -> str:
    """A quoted entity tag: the one the gateway stored with the object for these very bytes
    (``etags.ETAG``: the body's MD5, or the multipart form Complete answered with), else the
    first half of the object's SHA-256 in hex (the nuid's hash for a record without a digest,
    which still changes with every version)."""
    stored = etags.bound(info, etags.ETAG)
    if stored is not None:
        return stored
    digest = digest_bytes(info.digest) if info.digest else None
    if digest is None:
        digest = hashlib.sha256(info.nuid.encode()).digest()
    return f'"{digest[:16].hex()}"'


def response_headers(info: ObjectInfo) -> dict[str, str]:
    """The headers a GET or HEAD of ``info`` answers with (the length is the caller's)."""
    out = {
        "ETag": etag(info),
        "Accept-Ranges": "bytes",
        "Content-Type": DEFAULT_CONTENT_TYPE,
    }
    if info.mtime is not None:
        out["Last-Modified"] = format_datetime(info.mtime, usegmt=True)
    for name in STORED_HEADERS:
        values = info.headers.get(name)
        if values:
            out[name] = values[0]
    for name, value in info.metadata.items():
        out[META_PREFIX + name] = value
    return out
