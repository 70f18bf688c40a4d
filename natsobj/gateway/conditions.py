"""Conditional requests: ``If-Match``, ``If-None-Match``, ``If-Modified-Since`` and
``If-Unmodified-Since`` on reads (RFC 9110's order, as S3 applies it), and ``If-None-Match: *``
/ ``If-Match`` on writes, which the core's compare-and-swap put enforces against racing writers."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime

from natsobj.aio import ObjectStore
from natsobj.aio.put_modes import CREATE, OVERWRITE, PutMode
from natsobj.errors import ObjectNotFound
from natsobj.gateway.metadata import etag
from natsobj.gateway.s3errors import S3Error
from natsobj.model import ObjectInfo


def _matches(header: str, tag: str) -> bool:
    wanted = [part.strip() for part in header.split(",")]
    return "*" in wanted or tag in wanted or tag.strip('"') in wanted


def _date(value: str) -> datetime | None:
    """An HTTP date, or None for one that does not parse (ignored, as S3 ignores it)."""
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return parsed if parsed.tzinfo is not None else None


def _failed() -> S3Error:
    return S3Error(
        "PreconditionFailed", "At least one of the pre-conditions you specified did not hold"
    )


def _not_modified(tag: str) -> S3Error:
    """304, which carries the ETag the client's cached copy is validated by."""
    error = S3Error("NotModified", "Not Modified")
    error.headers["ETag"] = tag
    return error


def check_read(headers: Mapping[str, str], info: ObjectInfo) -> None:
    """PreconditionFailed (412) or NotModified (304) when the request's conditions say so."""
    tag = etag(info)
    modified = info.mtime.replace(microsecond=0) if info.mtime is not None else None
    if_match = headers.get("If-Match")
    if if_match is not None:
        if not _matches(if_match, tag):
            raise _failed()
    elif (since := _date(headers.get("If-Unmodified-Since", ""))) and modified and modified > since:
        raise _failed()
    if_none_match = headers.get("If-None-Match")
    if if_none_match is not None:
        if _matches(if_none_match, tag):
            raise _not_modified(tag)
    elif (since := _date(headers.get("If-Modified-Since", ""))) and modified and modified <= since:
        raise _not_modified(tag)


async def write_precondition(store: ObjectStore, key: str, headers: Mapping[str, str]) -> PutMode:
    """The core put's mode for a write's conditions. ``If-Match`` replaces only a
    current version with that ETag (``*``: any), NoSuchKey when there is none; ``If-None-Match``
    refuses a current version with that ETag (``*``: any). The put then swaps exactly the
    version judged (its sequence), or creates only when there was none, so a writer in between
    makes it fail too."""
    if_none_match = headers.get("If-None-Match")
    if_match = headers.get("If-Match")
    if if_none_match is None and if_match is None:
        return OVERWRITE
    try:
        info = await store.get_info(key)
    except ObjectNotFound:
        if if_match is not None:
            raise
        return CREATE
    tag = etag(info)
    if if_match is not None and not _matches(if_match, tag):
        raise _failed()
    if if_none_match is not None and _matches(if_none_match, tag):
        raise _failed()
    return PutMode.replacing(info)


def check_copy_source(headers: Mapping[str, str], info: ObjectInfo) -> None:
    """CopyObject's ``x-amz-copy-source-if-*`` conditions on the source version: the read
    conditions' rule, except that every failed one is PreconditionFailed (a copy has no 304)."""
    prefix = "x-amz-copy-source-"
    renamed = {
        name: headers[prefix + name]
        for name in ("If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since")
        if prefix + name in headers
    }
    try:
        check_read(renamed, info)
    except S3Error as exc:
        if exc.code == "NotModified":
            raise _failed() from None
        raise
