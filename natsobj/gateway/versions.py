"""Object versions through S3 (``natsobj.versioning``): the ``versionId`` a request names,
the ``x-amz-version-id`` and ``x-amz-delete-marker`` headers, Put/GetBucketVersioning and
ListObjectVersions. A version's id is natsobj's (its nuid); ``null`` is the current object,
the one version of a bucket never versioned, as S3 names it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from aiohttp import web

from natsobj.aio import Client, ObjectStore
from natsobj.errors import ObjectNotFound
from natsobj.gateway import listing, xml
from natsobj.gateway.metadata import etag
from natsobj.gateway.s3errors import S3Error
from natsobj.parsing import parse_version_id
from natsobj.versioning import ObjectVersion, Versioning

NULL = "null"
"""The version id of every object of a bucket without versioning: its current one."""
VERSION_ID = "x-amz-version-id"
DELETE_MARKER = "x-amz-delete-marker"
_BODY = 64 << 10
T = TypeVar("T")


def requested(version: str | None) -> str | None:
    """The version a request names (``versionId``): None for the current one (none named, or
    ``null``); an id that cannot be one of natsobj's is InvalidArgument, as S3 answers it."""
    if version is None:
        return None
    try:
        return parse_version_id(version)
    except ValueError:
        raise S3Error("InvalidArgument", "Invalid version id specified") from None


def refuse(version: str | None) -> None:
    """NotImplemented for a version id other than ``null`` on an operation that does not take
    one yet, rather than carrying it out on the current object, which the caller did not
    name."""
    if version is not None and version != NULL:
        raise S3Error(
            "NotImplemented",
            "This operation does not take a version id other than null on this gateway yet",
        )


async def named(version: str | None, read: Callable[[], Awaitable[T]]) -> T:
    """``read`` of a named version: its ObjectNotFound is S3's NoSuchVersion."""
    try:
        return await read()
    except ObjectNotFound as exc:
        if version is None:
            raise
        raise S3Error("NoSuchVersion", f"The specified version does not exist. ({exc})") from None


async def id_headers(store: ObjectStore, version: str, *, marker: bool = False) -> dict[str, str]:
    """``x-amz-version-id`` (and ``x-amz-delete-marker``) where the bucket keeps versions; a
    bucket never versioned, or suspended, answers without them, as S3 does."""
    if await store.versioning_state.state() is not Versioning.ENABLED:
        return {}
    return {VERSION_ID: version, **({DELETE_MARKER: "true"} if marker else {})}


async def get_versioning(client: Client, bucket: str) -> web.Response:
    """GetBucketVersioning: ``Status`` Enabled or Suspended, none for a bucket never versioned
    (an empty configuration, 200, as S3 answers; rclone asks before bucket operations)."""
    state = await (await client.store(bucket)).versioning()
    parts = [xml.element("Status", state.value)] if state.value else []
    body = xml.document("VersioningConfiguration", parts)
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


async def put_versioning(client: Client, request: web.Request, bucket: str) -> web.Response:
    """PutBucketVersioning: ``Status`` Enabled or Suspended. MFA delete is NotImplemented."""
    root = xml.parse(await xml.read_body(request, _BODY))
    fields = {child.tag.rsplit("}", 1)[-1]: (child.text or "").strip() for child in root}
    if root.tag.rsplit("}", 1)[-1] != "VersioningConfiguration":
        raise S3Error("MalformedXML", "The XML you provided was not well-formed")
    if fields.get("MfaDelete", "Disabled") != "Disabled":
        raise S3Error("NotImplemented", "MFA delete is not implemented by this gateway")
    status = fields.get("Status")
    if status not in ("Enabled", "Suspended"):
        raise S3Error("MalformedXML", "Status must be Enabled or Suspended")
    try:
        await (await client.store(bucket)).set_versioning(status)
    except ValueError as exc:  # Object Lock on: never suspended
        raise S3Error("InvalidBucketState", str(exc)) from None
    return web.Response()


@dataclass
class VersionsPage:
    """One page of ListObjectVersions."""

    entries: list[ObjectVersion]
    prefixes: list[str]
    truncated: bool
    next_key: str | None = None
    next_version: str | None = None


def page(
    listed: list[ObjectVersion],
    *,
    prefix: str,
    delimiter: str,
    key_marker: str,
    version_marker: str,
    max_keys: int,
) -> VersionsPage:
    """S3's paging of versions (by key, newest first): after ``key_marker`` (or, with
    ``version_marker``, after that version of it), keys holding ``delimiter`` past the
    prefix rolled up into common prefixes, at most ``max_keys`` entries and prefixes."""
    result = VersionsPage([], [], truncated=False)
    passed = not version_marker
    count = 0
    for version in listed:
        name = version.name
        if name < key_marker or (name == key_marker and not version_marker):
            continue
        if name == key_marker and not passed:
            passed = version.version_id == version_marker
            continue
        rolled = _common_prefix(name, prefix, delimiter)
        if rolled is not None and result.prefixes and result.prefixes[-1] == rolled:
            continue
        if rolled is not None and rolled <= key_marker:
            continue  # a prefix the previous page ended with
        if count == max_keys:
            result.truncated = True
            return result
        count += 1
        if rolled is not None:
            result.prefixes.append(rolled)
            result.next_key, result.next_version = rolled, None
        else:
            result.entries.append(version)
            result.next_key, result.next_version = name, version.version_id
    result.next_key = result.next_version = None
    return result


def _common_prefix(name: str, prefix: str, delimiter: str) -> str | None:
    if not delimiter:
        return None
    cut = name.find(delimiter, len(prefix))
    return None if cut < 0 else name[: cut + len(delimiter)]


def render(
    bucket: str,
    result: VersionsPage,
    *,
    prefix: str,
    delimiter: str,
    max_keys: int,
    key_marker: str,
    version_marker: str,
    encode: bool,
) -> bytes:
    """The ListVersionsResult of a versioned bucket (``encode``: keys url-encoded, as
    ``encoding-type=url`` asks, which boto3 sends and decodes)."""

    def encoded(value: str) -> str:
        return listing.encoded(value, encode)

    parts = [
        xml.element("Name", bucket),
        xml.element("Prefix", encoded(prefix)),
        xml.element("KeyMarker", encoded(key_marker)),
        xml.element("VersionIdMarker", version_marker),
        xml.element("MaxKeys", max_keys),
        xml.element("IsTruncated", result.truncated),
    ]
    if delimiter:
        parts.append(xml.element("Delimiter", encoded(delimiter)))
    if encode:
        parts.append(xml.element("EncodingType", "url"))
    if result.truncated and result.next_key is not None:
        parts.append(xml.element("NextKeyMarker", encoded(result.next_key)))
        if result.next_version is not None:
            parts.append(xml.element("NextVersionIdMarker", result.next_version))
    for version in result.entries:
        info = version.info
        common = (
            xml.element("Key", encoded(info.name))
            + xml.element("VersionId", version.version_id)
            + xml.element("IsLatest", version.is_latest)
            + xml.element("LastModified", xml.iso(info.mtime))
        )
        if version.delete_marker:
            parts.append("<DeleteMarker>" + common + xml.OWNER + "</DeleteMarker>")
        else:
            parts.append(
                "<Version>"
                + common
                + xml.element("ETag", etag(info))
                + xml.element("Size", info.size)
                + xml.element("StorageClass", "STANDARD")
                + xml.OWNER
                + "</Version>"
            )
    parts.extend(
        "<CommonPrefixes>" + xml.element("Prefix", encoded(p)) + "</CommonPrefixes>"
        for p in result.prefixes
    )
    return xml.document("ListVersionsResult", parts)
