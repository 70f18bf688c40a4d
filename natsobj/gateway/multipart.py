"""Multipart upload: CreateMultipartUpload, UploadPart, CompleteMultipartUpload,
AbortMultipartUpload, ListParts and ListMultipartUploads, with all their state in NATS so an
upload's parts may go to different gateways.

Everything of an upload lives in one hidden object store per NATS account, ``UPLOADS_STORE``
(an underscore is in no S3 bucket name, so no S3 client can create, list or reach it):

* ``uploads/<bucket>/<upload id>``: the upload record, an empty object whose metadata holds
  the target key and the headers and metadata the object will get;
* ``parts/<bucket>/<upload id>/<part number>``: each part, streamed in as an ordinary object.

Both are put with ``UPLOAD_TTL``, so an abandoned upload expires on the server with no gateway
running; Abort purges them at once (no tombstone is left). The target bucket's own listings
never see any of it.
Complete streams the parts in order into one ordinary ADR-20 object through the core's put
(chunks first, meta record last: readers see the old version or the whole new one), then marks
the record completed (a retried Complete answers the same until it expires) and purges the
parts.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import AsyncIterator
from datetime import timedelta

from aiohttp import web

from natsobj.aio import Client, ObjectStore
from natsobj.errors import BucketNotFound, ObjectNotFound
from natsobj.gateway import conditions, metadata, objects, xml
from natsobj.gateway.s3errors import S3Error
from natsobj.gateway.sigv4 import Verified
from natsobj.model import ObjectInfo
from natsobj.names import chunk_subject, meta_subject

UPLOADS_STORE = "natsobj_multipart"
UPLOAD_TTL = timedelta(days=7)
"""How long an upload and its parts live without Complete or Abort."""
MIN_PART_SIZE = 5 << 20  # S3's smallest part but the last
MAX_PART_NUMBER = 10000
MAX_LISTED = 1000  # S3's ceiling on one page of parts or uploads
_UPLOAD_ID = re.compile(r"[0-9a-f]{32}")
XML = "application/xml"
MAX_COMPLETE_BODY = 8 << 20  # 10,000 parts, each with its ETag and a checksum, with room to spare
OWNER = "<Owner><ID>natsobj</ID><DisplayName>natsobj</DisplayName></Owner>"
INITIATOR = "<Initiator><ID>natsobj</ID><DisplayName>natsobj</DisplayName></Initiator>"


async def _uploads(client: Client) -> ObjectStore:
    """The hidden store of uploads, created on first use (with per-object expiry)."""
    try:
        return await client.store(UPLOADS_STORE)
    except BucketNotFound:
        return await client.create_store(
            UPLOADS_STORE, description="natsobj gateway: multipart uploads in progress"
        )


def _record_name(bucket: str, upload_id: str) -> str:
    return f"uploads/{bucket}/{upload_id}"


def _parts_prefix(bucket: str, upload_id: str) -> str:
    return f"parts/{bucket}/{upload_id}/"


def _no_upload(bucket: str, key: str) -> S3Error:
    return S3Error(
        "NoSuchUpload",
        "The specified upload does not exist. The upload ID may be invalid, or the upload may"
        " have been aborted or completed.",
        bucket=bucket,
        key=key,
    )


async def _record(uploads: ObjectStore, bucket: str, key: str, upload_id: str | None) -> ObjectInfo:
    """The upload's record; NoSuchUpload when there is none for this bucket and key."""
    if upload_id is None or not _UPLOAD_ID.fullmatch(upload_id):
        raise _no_upload(bucket, key)
    try:
        info = await uploads.get_info(_record_name(bucket, upload_id))
    except ObjectNotFound:
        raise _no_upload(bucket, key) from None
    if info.metadata.get("key") != key:
        raise _no_upload(bucket, key)
    return info


def _part_number(query: dict[str, str]) -> int:
    try:
        number = int(query.get("partNumber", ""))
    except ValueError:
        number = 0
    if not 1 <= number <= MAX_PART_NUMBER:
        raise S3Error(
            "InvalidArgument", f"Part number must be an integer between 1 and {MAX_PART_NUMBER}"
        )
    return number


async def _parts(uploads: ObjectStore, bucket: str, upload_id: str) -> dict[int, ObjectInfo]:
    """The upload's parts by number (the latest upload of each number)."""
    prefix = _parts_prefix(bucket, upload_id)
    return {int(info.name[len(prefix) :]): info async for info in uploads.iter_list(prefix=prefix)}


async def create(client: Client, request: web.Request, bucket: str, key: str) -> web.Response:
    """A new upload: its record, holding what the object will be stored with."""
    await client.store(bucket)  # NoSuchBucket before anything is written
    uploads = await _uploads(client)
    headers, meta = metadata.from_request(request.headers)
    upload_id = secrets.token_hex(16)
    await uploads.put(
        _record_name(bucket, upload_id),
        b"",
        metadata={
            "key": key,
            "headers": json.dumps(headers),
            "metadata": json.dumps(meta),
            "state": "open",
        },
        ttl=UPLOAD_TTL,
    )
    body = xml.document(
        "InitiateMultipartUploadResult",
        [
            xml.element("Bucket", bucket),
            xml.element("Key", key),
            xml.element("UploadId", upload_id),
        ],
    )
    return web.Response(body=body, content_type=XML)


async def upload_part(
    client: Client,
    request: web.Request,
    bucket: str,
    key: str,
    query: dict[str, str],
    verified: Verified,
) -> web.Response:
    """One part, streamed into the hidden store in bounded memory (the same checks as a
    PutObject's body); re-sending a part number replaces it."""
    number = _part_number(query)
    body = objects.UploadBody(request, verified)
    uploads = await _uploads(client)
    upload_id = query.get("uploadId", "")
    record = await _record(uploads, bucket, key, upload_id)
    if record.metadata.get("state") != "open":
        raise _no_upload(bucket, key)
    info = await uploads.put(
        f"{_parts_prefix(bucket, upload_id)}{number:05d}",
        body.pieces(),
        ttl=UPLOAD_TTL,
    )
    return web.Response(headers={"ETag": metadata.etag(info), **body.checksums})


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_complete(body: bytes) -> list[tuple[int, str]]:
    """``[(part number, ETag)]`` of a ``<CompleteMultipartUpload>`` document, in its order;
    MalformedXML for anything else or for no parts at all (as S3 answers)."""
    malformed = S3Error("MalformedXML", "The XML you provided was not well-formed")
    root = xml.parse(body)
    if _local(root.tag) != "CompleteMultipartUpload":
        raise malformed
    parts: list[tuple[int, str]] = []
    for child in root:
        if _local(child.tag) != "Part":
            continue
        fields = {_local(c.tag): (c.text or "").strip() for c in child}
        try:
            number = int(fields.get("PartNumber", ""))
        except ValueError:
            raise malformed from None
        parts.append((number, fields.get("ETag", "").strip('"')))
    if not parts:
        raise malformed
    return parts


def _chosen(
    wanted: list[tuple[int, str]], stored: dict[int, ObjectInfo], bucket: str, key: str
) -> list[ObjectInfo]:
    """The parts Complete names, checked as S3 checks them: ascending numbers
    (InvalidPartOrder), each uploaded with the ETag given (InvalidPart), every part but the
    last at least ``MIN_PART_SIZE`` (EntityTooSmall)."""
    chosen: list[ObjectInfo] = []
    previous = 0
    for number, tag in wanted:
        if number <= previous:
            raise S3Error(
                "InvalidPartOrder",
                "The list of parts was not in ascending order. The parts list must be specified"
                " in order by part number.",
                bucket=bucket,
                key=key,
            )
        previous = number
        info = stored.get(number)
        if info is None or metadata.etag(info).strip('"') != tag:
            raise S3Error(
                "InvalidPart",
                "One or more of the specified parts could not be found. The part may not have"
                " been uploaded, or the specified entity tag may not match the part's entity"
                " tag.",
                bucket=bucket,
                key=key,
            )
        chosen.append(info)
    for info in chosen[:-1]:
        if info.size < MIN_PART_SIZE:
            raise S3Error(
                "EntityTooSmall",
                "Your proposed upload is smaller than the minimum allowed object size.",
                bucket=bucket,
                key=key,
            )
    return chosen


def multipart_etag(parts: list[ObjectInfo]) -> str:
    """S3's form for a multipart object: the MD5 of the parts' ETags (as bytes), ``-count``."""
    joined = b"".join(bytes.fromhex(metadata.etag(info).strip('"')) for info in parts)
    return f'"{hashlib.md5(joined, usedforsecurity=False).hexdigest()}-{len(parts)}"'


async def _concatenated(uploads: ObjectStore, parts: list[ObjectInfo]) -> AsyncIterator[bytes]:
    """The parts' bytes in order, one chunk at a time, each part digest-checked as it ends."""
    for info in parts:
        async with uploads.get(info.name) as whole:
            async for piece in whole:
                yield piece


def _complete_result(bucket: str, key: str, tag: str) -> web.Response:
    body = xml.document(
        "CompleteMultipartUploadResult",
        [
            xml.element("Location", f"/{bucket}/{key}"),
            xml.element("Bucket", bucket),
            xml.element("Key", key),
            xml.element("ETag", tag),
        ],
    )
    return web.Response(body=body, content_type=XML, headers={"ETag": tag})


async def complete(
    client: Client, request: web.Request, bucket: str, key: str, upload_id: str | None
) -> web.Response:
    """The parts named, in order, as one object under ``key``; ``If-None-Match`` /
    ``If-Match`` hold against the current object through the core's compare-and-swap."""
    store = await client.store(bucket)
    uploads = await _uploads(client)
    record = await _record(uploads, bucket, key, upload_id)
    wanted = parse_complete(await xml.read_body(request, MAX_COMPLETE_BODY))
    if record.metadata.get("state") == "completed":
        return _complete_result(bucket, key, record.metadata["etag"])
    assert upload_id is not None  # _record refused a missing one
    chosen = _chosen(wanted, await _parts(uploads, bucket, upload_id), bucket, key)
    tag = multipart_etag(chosen)
    headers: dict[str, list[str]] = json.loads(record.metadata["headers"])
    headers[metadata.MULTIPART_ETAG] = [tag]
    if_absent, expected_sequence = await conditions.write_precondition(store, key, request.headers)
    await store.put(
        key,
        _concatenated(uploads, chosen),
        headers=headers,
        metadata=json.loads(record.metadata["metadata"]),
        if_absent=if_absent,
        expected_sequence=expected_sequence,
    )
    await uploads.put(
        record.name,
        b"",
        metadata={**record.metadata, "state": "completed", "etag": tag},
        ttl=UPLOAD_TTL,
    )
    await _forget_parts(uploads, bucket, upload_id)
    return _complete_result(bucket, key, tag)


async def _forget(uploads: ObjectStore, info: ObjectInfo) -> None:
    """Purge an object of the hidden store outright: its meta record first (so no reader sees
    a record without its chunks), then its chunks. A delete would leave a tombstone per part
    for ever; the purge leaves nothing."""
    await uploads.bucket_stream.purge(meta_subject(uploads.bucket, info.name))
    if info.nuid:
        await uploads.bucket_stream.purge(chunk_subject(uploads.bucket, info.nuid))


async def _forget_parts(uploads: ObjectStore, bucket: str, upload_id: str) -> None:
    async for info in uploads.iter_list(prefix=_parts_prefix(bucket, upload_id)):
        await _forget(uploads, info)


async def abort(client: Client, bucket: str, key: str, upload_id: str | None) -> web.Response:
    """The upload's parts and record purged at once (their TTL would get them otherwise)."""
    uploads = await _uploads(client)
    record = await _record(uploads, bucket, key, upload_id)
    assert upload_id is not None  # _record refused a missing one
    await _forget_parts(uploads, bucket, upload_id)
    await _forget(uploads, record)
    return web.Response(status=204)


def _count(query: dict[str, str], name: str) -> int:
    try:
        value = int(query.get(name, str(MAX_LISTED)))
    except ValueError:
        raise S3Error("InvalidArgument", f"{name} must be an integer") from None
    if value < 0:
        raise S3Error("InvalidArgument", f"{name} must be at least 0")
    return min(value, MAX_LISTED)


async def list_parts(client: Client, bucket: str, key: str, query: dict[str, str]) -> web.Response:
    """ListParts: the upload's parts in number order, after ``part-number-marker``."""
    uploads = await _uploads(client)
    upload_id = query.get("uploadId")
    record = await _record(uploads, bucket, key, upload_id)
    if record.metadata.get("state") != "open":
        raise _no_upload(bucket, key)
    assert upload_id is not None
    try:
        marker = int(query.get("part-number-marker") or 0)
    except ValueError:
        raise S3Error("InvalidArgument", "part-number-marker must be an integer") from None
    limit = _count(query, "max-parts")
    stored = await _parts(uploads, bucket, upload_id)
    numbers = sorted(n for n in stored if n > marker)
    page, truncated = numbers[:limit], len(numbers) > limit
    items = [
        "<Part>"
        + xml.element("PartNumber", number)
        + xml.element("LastModified", xml.iso(stored[number].mtime))
        + xml.element("ETag", metadata.etag(stored[number]))
        + xml.element("Size", stored[number].size)
        + "</Part>"
        for number in page
    ]
    body = xml.document(
        "ListPartsResult",
        [
            xml.element("Bucket", bucket),
            xml.element("Key", key),
            xml.element("UploadId", upload_id),
            INITIATOR,
            OWNER,
            xml.element("StorageClass", "STANDARD"),
            xml.element("PartNumberMarker", marker),
            xml.element("NextPartNumberMarker", page[-1] if page else marker),
            xml.element("MaxParts", limit),
            xml.element("IsTruncated", truncated),
            *items,
        ],
    )
    return web.Response(body=body, content_type=XML)


async def list_uploads(client: Client, bucket: str, query: dict[str, str]) -> web.Response:
    """ListMultipartUploads: the bucket's open uploads by key, then upload id, after the
    markers; ``prefix`` filters keys. The bucket's open uploads are sorted in memory (records
    only, no parts): uploads in progress are few next to objects."""
    await client.store(bucket)
    uploads = await _uploads(client)
    prefix = query.get("prefix", "")
    key_marker = query.get("key-marker", "")
    id_marker = query.get("upload-id-marker", "")
    limit = _count(query, "max-uploads")
    found = sorted(
        [
            (info.metadata.get("key", ""), info.name.rsplit("/", 1)[-1], info)
            async for info in uploads.iter_list(prefix=f"uploads/{bucket}/")
            if info.metadata.get("state") == "open"
            and info.metadata.get("key", "").startswith(prefix)
        ],
        key=lambda entry: (entry[0], entry[1]),
    )
    after = [
        entry
        for entry in found
        if (entry[0], entry[1]) > (key_marker, id_marker)
        if id_marker or entry[0] > key_marker
    ]
    page, truncated = after[:limit], len(after) > limit
    items = [
        "<Upload>"
        + xml.element("Key", key)
        + xml.element("UploadId", upload_id)
        + INITIATOR
        + OWNER
        + xml.element("StorageClass", "STANDARD")
        + xml.element("Initiated", xml.iso(info.mtime))
        + "</Upload>"
        for key, upload_id, info in page
    ]
    body = xml.document(
        "ListMultipartUploadsResult",
        [
            xml.element("Bucket", bucket),
            xml.element("KeyMarker", key_marker),
            xml.element("UploadIdMarker", id_marker),
            xml.element("NextKeyMarker", page[-1][0] if page else ""),
            xml.element("NextUploadIdMarker", page[-1][1] if page else ""),
            xml.element("Prefix", prefix),
            xml.element("MaxUploads", limit),
            xml.element("IsTruncated", truncated),
            *items,
        ],
    )
    return web.Response(body=body, content_type=XML)
