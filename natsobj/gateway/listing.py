"""ListObjectsV2 and ListObjects (v1) pages: S3's order, delimiter grouping and continuation.

A page holds the ``max_keys`` smallest *entries* after the marker, an entry being a key or,
with a delimiter, the common prefix that stands for every key under it. Where the core's name
index gives names in order (``natsobj.aio.listing.open_ordered``), a page reads the names after
its marker and their records, batch by batch, until it is full, and jumps past the keys a
common prefix stands for: it costs its own size, not the bucket's. Otherwise the core's
listing streams every current record under the prefix and this module keeps only the page
being built (at most ``max_keys + 1`` entries): memory for the page, time for the prefix.

The continuation token is the last entry of the page, encoded; the next page starts after it,
and after every key that entry stands for.
"""

from __future__ import annotations

import base64
import binascii
import bisect
from dataclasses import dataclass, field
from urllib.parse import quote

from natsobj.aio import ObjectStore
from natsobj.aio.listing import FastListingUnavailable, OrderedListing, open_ordered
from natsobj.gateway import xml
from natsobj.gateway.metadata import etag
from natsobj.gateway.s3errors import S3Error
from natsobj.local.name_index import prefix_upper_bound
from natsobj.model import ObjectInfo

MAX_KEYS = 1000  # S3's ceiling on one page, whatever the client asks for


@dataclass
class Page:
    """One page: the keys and common prefixes in S3 order, and whether more follow."""

    keys: list[ObjectInfo] = field(default_factory=list)
    prefixes: list[str] = field(default_factory=list)
    truncated: bool = False
    last_entry: str | None = None


def entry_of(name: str, prefix: str, delimiter: str) -> tuple[str, bool]:
    """The entry ``name`` is listed under, and whether it is a common prefix: the name itself,
    or the prefix plus everything up to and including the first delimiter after it."""
    if delimiter:
        at = name.find(delimiter, len(prefix))
        if at >= 0:
            return name[: at + len(delimiter)], True
    return name, False


async def page(
    store: ObjectStore,
    *,
    prefix: str,
    delimiter: str,
    start_after: str,
    after_entry: str,
    max_keys: int,
) -> Page:
    """Up to ``max_keys`` entries of keys after ``start_after`` and entries after
    ``after_entry`` (a continuation token's or a v1 marker's: every key a common prefix
    stands for is past it too); "" skips nothing."""
    limit = min(max(max_keys, 0), MAX_KEYS)
    if limit == 0:
        return Page()  # S3 answers max-keys=0 with an empty page that is not truncated
    ordered = await open_ordered(store.bucket_stream, prefix=prefix or None)
    if ordered is not None:
        try:
            return await _ordered_page(ordered, prefix, delimiter, start_after, after_entry, limit)
        except FastListingUnavailable:
            pass  # the server refuses batched gets: the streamed listing falls back further
        finally:
            await ordered.close()
    return await _streamed_page(store, prefix, delimiter, start_after, after_entry, limit)


async def _ordered_page(
    ordered: OrderedListing,
    prefix: str,
    delimiter: str,
    start_after: str,
    after_entry: str,
    limit: int,
) -> Page:
    """``page`` from names in order: each batch continues where the last one ended, or past
    every key of the common prefix it ended in."""
    entries: list[tuple[str, ObjectInfo | None]] = []
    lower: str | None
    lower, inclusive = max(start_after, after_entry), False
    if lower == after_entry and after_entry and entry_of(after_entry, prefix, delimiter)[1]:
        lower, inclusive = prefix_upper_bound(after_entry), True  # past the marker's keys
    while lower is not None:
        infos, following = await ordered.batch(lower, inclusive=inclusive, limit=limit + 1)
        for info in infos:
            entry, grouped = entry_of(info.name, prefix, delimiter)
            if entry <= after_entry or (entries and entries[-1][0] == entry):
                continue
            if len(entries) == limit:
                return _page_of(entries, truncated=True)
            entries.append((entry, None if grouped else info))
        lower, inclusive = following, False
        last = entries[-1] if entries else None
        # the batch ended under the last common prefix: none of the keys it stands for is read
        if last is not None and last[1] is None and (following or "").startswith(last[0]):
            lower, inclusive = prefix_upper_bound(last[0]), True
    return _page_of(entries, truncated=False)


def _page_of(entries: list[tuple[str, ObjectInfo | None]], *, truncated: bool) -> Page:
    result = Page(truncated=truncated)
    for entry, listed in entries:
        if listed is None:
            result.prefixes.append(entry)
        else:
            result.keys.append(listed)
        result.last_entry = entry
    return result


async def _streamed_page(
    store: ObjectStore,
    prefix: str,
    delimiter: str,
    start_after: str,
    after_entry: str,
    limit: int,
) -> Page:
    """``page`` from the core's listing in the server's order: the ``limit + 1`` smallest
    entries are kept while every record under the prefix streams past."""
    entries: list[str] = []  # sorted, at most limit + 1: whether more follow is the extra one
    found: dict[str, ObjectInfo | None] = {}
    async for info in store.iter_list(prefix=prefix or None):
        entry, grouped = entry_of(info.name, prefix, delimiter)
        if info.name <= start_after or entry <= after_entry or entry in found:
            continue
        if len(entries) > limit and entry >= entries[-1]:
            continue
        bisect.insort(entries, entry)
        found[entry] = None if grouped else info
        if len(entries) > limit + 1:
            del found[entries.pop()]
    chosen = [(entry, found[entry]) for entry in entries[:limit]]
    return _page_of(chosen, truncated=len(entries) > limit)


def encode_token(entry: str) -> str:
    return base64.urlsafe_b64encode(entry.encode()).decode()


def decode_token(token: str) -> str:
    try:
        return base64.urlsafe_b64decode(token.encode()).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise S3Error("InvalidArgument", "The continuation token provided is incorrect") from None


def encoded(value: str, encode: bool) -> str:
    return quote(value, safe="/") if encode else value


def _contents(info: ObjectInfo, encode: bool, owner: bool) -> str:
    parts = [
        xml.element("Key", encoded(info.name, encode)),
        xml.element("LastModified", xml.iso(info.mtime)),
        xml.element("ETag", etag(info)),
        xml.element("Size", info.size),
        xml.element("StorageClass", "STANDARD"),
    ]
    if owner:
        parts.append(xml.OWNER)
    return "<Contents>" + "".join(parts) + "</Contents>"


def render(
    bucket: str,
    result: Page,
    *,
    version: int,
    prefix: str,
    delimiter: str,
    max_keys: int,
    encode: bool,
    fetch_owner: bool,
    marker: str,
    token: str | None,
    start_after: str,
) -> bytes:
    """The ListBucketResult document of a v1 (``version`` 1) or v2 page."""
    parts = [
        xml.element("Name", bucket),
        xml.element("Prefix", prefix),  # as S3 does, the one element left unencoded
        xml.element("MaxKeys", max_keys),
        xml.element("IsTruncated", result.truncated),
    ]
    if delimiter:
        parts.append(xml.element("Delimiter", encoded(delimiter, encode)))
    if encode:
        parts.append(xml.element("EncodingType", "url"))
    if version == 2:
        parts.append(xml.element("KeyCount", len(result.keys) + len(result.prefixes)))
        if token is not None:
            parts.append(xml.element("ContinuationToken", token))
        if start_after:
            parts.append(xml.element("StartAfter", encoded(start_after, encode)))
        if result.truncated and result.last_entry is not None:
            parts.append(xml.element("NextContinuationToken", encode_token(result.last_entry)))
    else:
        parts.append(xml.element("Marker", encoded(marker, encode)))
        if result.truncated and delimiter and result.last_entry is not None:
            parts.append(xml.element("NextMarker", encoded(result.last_entry, encode)))
    parts.extend(_contents(info, encode, fetch_owner or version == 1) for info in result.keys)
    parts.extend(
        "<CommonPrefixes>" + xml.element("Prefix", encoded(p, encode)) + "</CommonPrefixes>"
        for p in result.prefixes
    )
    return xml.document("ListBucketResult", parts)


def render_versions(
    bucket: str,
    result: Page,
    *,
    prefix: str,
    delimiter: str,
    max_keys: int,
    key_marker: str,
    encode: bool,
) -> bytes:
    """The ListVersionsResult of a bucket without versioning, as S3 shows one: each current
    object once, version ``null``, latest."""
    parts = [
        xml.element("Name", bucket),
        xml.element("Prefix", encoded(prefix, encode)),
        xml.element("KeyMarker", encoded(key_marker, encode)),
        xml.element("VersionIdMarker", ""),
        xml.element("MaxKeys", max_keys),
        xml.element("IsTruncated", result.truncated),
    ]
    if delimiter:
        parts.append(xml.element("Delimiter", encoded(delimiter, encode)))
    if encode:
        parts.append(xml.element("EncodingType", "url"))
    if result.truncated and result.last_entry is not None:
        parts.append(xml.element("NextKeyMarker", encoded(result.last_entry, encode)))
        parts.append(xml.element("NextVersionIdMarker", "null"))
    for info in result.keys:
        parts.append(
            "<Version>"
            + xml.element("Key", encoded(info.name, encode))
            + xml.element("VersionId", "null")
            + xml.element("IsLatest", True)
            + xml.element("LastModified", xml.iso(info.mtime))
            + xml.element("ETag", etag(info))
            + xml.element("Size", info.size)
            + xml.element("StorageClass", "STANDARD")
            + xml.OWNER
            + "</Version>"
        )
    parts.extend(
        "<CommonPrefixes>" + xml.element("Prefix", encoded(p, encode)) + "</CommonPrefixes>"
        for p in result.prefixes
    )
    return xml.document("ListVersionsResult", parts)
