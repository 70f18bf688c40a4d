"""Multipart upload: CreateMultipartUpload, UploadPart, CompleteMultipartUpload,
AbortMultipartUpload, ListParts and ListMultipartUploads, with all their state in NATS so an
upload's parts may go to different gateways.

Everything of a bucket's uploads lives in a hidden object store of that bucket's own,
``uploads_store(bucket)`` (an underscore is in no S3 bucket name, so no S3 client can create,
list or reach it). One store per bucket, not per account: NATS permissions on it then go with
the bucket's, so a key that may not reach a bucket cannot list, replace, read or abort the
parts of that bucket's uploads either.

* ``uploads/<upload id>``: the upload record, an empty object whose metadata holds the target
  key and the headers and metadata the object will get;
* ``parts/<upload id>/<part number>``: each part, streamed in as an ordinary object.

Both are put with ``UPLOAD_TTL``, so an abandoned upload expires on the server with no gateway
running; Abort purges them at once (no tombstone is left). The target bucket's own listings
never see any of it.
Complete streams the parts in order into one ordinary ADR-20 object through the core's put
(chunks first, meta record last: readers see the old version or the whole new one), then marks
the record completed (a retried Complete answers the same until it expires) and purges the
parts.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

from aiohttp import web

from natsobj.aio import Client, ObjectStore
from natsobj.errors import BucketNotFound, ObjectNotFound
from natsobj.gateway import (
    checksums,
    conditions,
    copying,
    etags,
    metadata,
    object_lock,
    objects,
    parts,
    versions,
    xml,
)
from natsobj.gateway.authentication import Verified
from natsobj.gateway.hidden import UPLOADS_PREFIX
from natsobj.gateway.s3errors import S3Error
from natsobj.model import ObjectInfo
from natsobj.names import chunk_subject, meta_subject

UPLOAD_TTL = timedelta(days=7)
"""How long an upload and its parts live without Complete or Abort."""
MIN_PART_SIZE = 5 << 20  # S3's smallest part but the last
MAX_LISTED = 1000  # S3's ceiling on one page of parts or uploads
_UPLOAD_ID = re.compile(r"[0-9a-f]{32}")
_COPY_RANGE = re.compile(r"bytes=(\d+)-(\d+)")
COPY_RANGE = "x-amz-copy-source-range"
MAX_COMPLETE_BODY = 8 << 20  # 10,000 parts, each with its ETag and a checksum, with room to spare
INITIATOR = f"<Initiator>{xml.OWNER_FIELDS}</Initiator>"


def uploads_store(bucket: str) -> str:
    """The name of the hidden store of ``bucket``'s uploads in progress."""
    return UPLOADS_PREFIX + bucket


async def _new_uploads(client: Client, bucket: str) -> ObjectStore:
    """The bucket's store of uploads, created by its first upload (with per-object expiry)."""
    try:
        return await client.store(uploads_store(bucket))
    except BucketNotFound:
        return await client.create_store(
            uploads_store(bucket),
            description=f"natsobj gateway: multipart uploads in progress to {bucket}",
        )


async def forget_uploads(client: Client, bucket: str) -> None:
    """Delete the bucket's store of uploads, and with it its uploads in progress."""
    with contextlib.suppress(BucketNotFound):
        await client.delete_store(uploads_store(bucket))


RECORDS = "uploads/"  # where a bucket's store of uploads keeps each upload's record


def _record_name(upload_id: str) -> str:
    return f"{RECORDS}{upload_id}"


def _parts_prefix(upload_id: str) -> str:
    return f"parts/{upload_id}/"


def _no_upload(bucket: str, key: str) -> S3Error:
    return S3Error(
        "NoSuchUpload",
        "The specified upload does not exist. The upload ID may be invalid, or the upload may"
        " have been aborted or completed.",
        bucket=bucket,
        key=key,
    )


async def _record(
    client: Client, bucket: str, key: str, upload_id: str | None
) -> tuple[ObjectStore, str, ObjectInfo]:
    """``(the bucket's store of uploads, upload id, record)``; NoSuchUpload when there is no
    such upload of this bucket and key."""
    if upload_id is None or not _UPLOAD_ID.fullmatch(upload_id):
        raise _no_upload(bucket, key)
    try:
        uploads = await client.store(uploads_store(bucket))
        info = await uploads.get_info(_record_name(upload_id))
    except (BucketNotFound, ObjectNotFound):
        raise _no_upload(bucket, key) from None
    if info.metadata.get("key") != key:
        raise _no_upload(bucket, key)
    return uploads, upload_id, info


async def _parts(uploads: ObjectStore, upload_id: str) -> dict[int, ObjectInfo]:
    """The upload's parts by number (the latest upload of each number)."""
    prefix = _parts_prefix(upload_id)
    return {int(info.name[len(prefix) :]): info async for info in uploads.iter_list(prefix=prefix)}


async def create(client: Client, request: web.Request, bucket: str, key: str) -> web.Response:
    """A new upload: its record, holding what the object will be stored with."""
    store = await client.store(bucket)  # NoSuchBucket before anything is written
    await object_lock.requested(store, request.headers)  # refused now, not at Complete
    uploads = await _new_uploads(client, bucket)
    headers, meta = metadata.from_request(request.headers)
    chosen = checksums.upload_algorithm(request.headers)
    upload_id = secrets.token_hex(16)
    record = {
        "key": key,
        "headers": json.dumps(headers),
        "metadata": json.dumps(meta),
        "lock": json.dumps(object_lock.raw_headers(request.headers)),
        "state": "open",
    }
    answer: dict[str, str] = {}
    if chosen is not None:
        record["checksum_algorithm"], record["checksum_type"] = chosen
        answer = {
            checksums.ALGORITHM_HEADER: chosen[0].upper(),
            checksums.TYPE_HEADER: chosen[1],
        }
    await uploads.put(_record_name(upload_id), b"", metadata=record, ttl=UPLOAD_TTL)
    body = xml.document(
        "InitiateMultipartUploadResult",
        [
            xml.element("Bucket", bucket),
            xml.element("Key", key),
            xml.element("UploadId", upload_id),
        ],
    )
    return web.Response(body=body, content_type=xml.CONTENT_TYPE, headers=answer)


def _algorithm(record: ObjectInfo) -> str | None:
    """The checksum algorithm the upload was created with (every part gets its checksum)."""
    return record.metadata.get("checksum_algorithm") or None


async def _open_record(
    client: Client, bucket: str, key: str, query: dict[str, str]
) -> tuple[ObjectStore, str, ObjectInfo]:
    """``(hidden store, upload id, record)`` of an upload still open (NoSuchUpload else)."""
    uploads, upload_id, record = await _record(client, bucket, key, query.get("uploadId"))
    if record.metadata.get("state") != "open":
        raise _no_upload(bucket, key)
    return uploads, upload_id, record


def part_name(upload_id: str, number: int) -> str:
    return f"{_parts_prefix(upload_id)}{number:05d}"


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
    number = parts.part_number(query.get("partNumber", ""))
    uploads, upload_id, record = await _open_record(client, bucket, key, query)
    body = objects.UploadBody(request, verified, _algorithm(record))
    info = await uploads.put(
        part_name(upload_id, number),
        body.pieces(),
        ttl=UPLOAD_TTL,
        digest_headers=body.keep,
    )
    return web.Response(headers={"ETag": metadata.etag(info), **body.checksums})


def parse_copy_range(value: str | None, size: int) -> tuple[int, int]:
    """``[start, end)`` of an ``x-amz-copy-source-range`` (``bytes=FIRST-LAST``, one range,
    both ends given) for a source of ``size`` bytes: the whole source without one;
    InvalidArgument for any other form, InvalidRange past the source's end (as S3 answers)."""
    if value is None:
        return 0, size
    match = _COPY_RANGE.fullmatch(value.strip())
    if match is None or objects.offset(match[2]) < objects.offset(match[1]):
        raise S3Error(
            "InvalidArgument",
            "The x-amz-copy-source-range value must be of the form bytes=first-last where first"
            " and last are the zero-based offsets of the first and last bytes to copy",
        )
    start, last = objects.offset(match[1]), objects.offset(match[2])
    if last >= size:
        raise S3Error("InvalidRange", "The requested range is not satisfiable")
    return start, last + 1


async def copy_part(
    client: Client, request: web.Request, bucket: str, key: str, query: dict[str, str]
) -> web.Response:
    """UploadPartCopy: a range of an existing object (``x-amz-copy-source``,
    ``x-amz-copy-source-range``) as a part, read through the core's range reader (only the
    chunks that hold it, one piece in memory) into the part's put. The copy-source conditions
    are CopyObject's, judged on the version read."""
    number = parts.part_number(query.get("partNumber", ""))
    uploads, upload_id, record = await _open_record(client, bucket, key, query)
    source_bucket, source_key, version = copying.parse_source(request.headers[copying.SOURCE])
    source = await client.store(source_bucket)
    reader = await versions.named(version, lambda: source.open_range(source_key, version=version))
    try:
        conditions.check_copy_source(request.headers, reader.info)
        start, end = parse_copy_range(request.headers.get(COPY_RANGE), reader.info.size)
        algorithm = _algorithm(record)
        checksum = checksums.Checksum(algorithm) if algorithm is not None else None

        md5 = hashlib.md5(usedforsecurity=False)

        async def pieces() -> AsyncIterator[bytes]:
            async for piece in objects.range_pieces(reader, start, end):
                md5.update(piece)
                if checksum is not None:
                    checksum.update(piece)
                yield piece

        def keep(digest: str) -> dict[str, list[str]]:
            """The part's ETag (the MD5 of the bytes copied, as an uploaded part's) and its
            checksum, bound to its digest."""
            kept = {**etags.bind(etags.ETAG, f'"{md5.hexdigest()}"', digest)}
            if checksum is not None:
                value = checksum.value()
                kept.update(
                    checksums.Stored(checksum.algorithm, checksums.FULL_OBJECT, value).bind(digest)
                )
            return kept

        info = await uploads.put(
            part_name(upload_id, number), pieces(), ttl=UPLOAD_TTL, digest_headers=keep
        )
    finally:
        await reader.close()
    fields = [
        xml.element("LastModified", xml.iso(info.mtime)),
        xml.element("ETag", metadata.etag(info)),
    ]
    if checksum is not None:
        fields.append(xml.element("Checksum" + checksum.algorithm.upper(), checksum.value()))
    return web.Response(body=xml.document("CopyPartResult", fields), content_type=xml.CONTENT_TYPE)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


@dataclass(frozen=True)
class Wanted:
    """One ``<Part>`` of a CompleteMultipartUpload document."""

    number: int
    etag: str
    checksums: dict[str, str]  # its ``Checksum<ALGORITHM>`` elements, by lower-case algorithm


def parse_complete(body: bytes) -> list[Wanted]:
    """The parts of a ``<CompleteMultipartUpload>`` document, in its order; MalformedXML for
    anything else or for no parts at all (as S3 answers)."""
    malformed = S3Error("MalformedXML", "The XML you provided was not well-formed")
    root = xml.parse(body)
    if _local(root.tag) != "CompleteMultipartUpload":
        raise malformed
    wanted: list[Wanted] = []
    for child in root:
        if _local(child.tag) != "Part":
            continue
        fields = {_local(c.tag): (c.text or "").strip() for c in child}
        try:
            number = int(fields.get("PartNumber", ""))
        except ValueError:
            raise malformed from None
        sums = {
            name[len("Checksum") :].lower(): value
            for name, value in fields.items()
            if name.startswith("Checksum") and name != "ChecksumType"
        }
        wanted.append(Wanted(number, fields.get("ETag", "").strip('"'), sums))
    if not wanted:
        raise malformed
    return wanted


def _invalid_part(bucket: str, key: str) -> S3Error:
    return S3Error(
        "InvalidPart",
        "One or more of the specified parts could not be found. The part may not have been"
        " uploaded, or the specified entity tag may not match the part's entity tag.",
        bucket=bucket,
        key=key,
    )


def _chosen(
    wanted: list[Wanted], stored: dict[int, ObjectInfo], bucket: str, key: str
) -> list[ObjectInfo]:
    """The parts Complete names, checked as S3 checks them: ascending numbers
    (InvalidPartOrder), each uploaded with the ETag and checksum given (InvalidPart), every
    part but the last at least ``MIN_PART_SIZE`` (EntityTooSmall)."""
    chosen: list[ObjectInfo] = []
    previous = 0
    for part in wanted:
        if part.number <= previous:
            raise S3Error(
                "InvalidPartOrder",
                "The list of parts was not in ascending order. The parts list must be specified"
                " in order by part number.",
                bucket=bucket,
                key=key,
            )
        previous = part.number
        info = stored.get(part.number)
        # a link is no part the gateway stored (a NATS writer of the bucket could plant one
        # to make Complete copy a bucket it cannot read); the ETag compared is the one the
        # gateway sealed for the part's bytes (natsobj.gateway.etags), which no writer can
        # forge for other bytes
        if info is None or info.is_link or metadata.etag(info).strip('"') != part.etag:
            raise _invalid_part(bucket, key)
        kept = checksums.stored(info)
        for algorithm, value in part.checksums.items():
            if kept is None or (kept.algorithm, kept.value) != (algorithm, value):
                raise _invalid_part(bucket, key)
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


class Whole:
    """The checksum of an object completed from parts, from its upload's algorithm and type:
    COMPOSITE is known before a byte is read (the checksum of the parts' checksums),
    FULL_OBJECT once the parts have streamed through (``update``, then ``finish``, before the
    object is committed). The value Complete's ``x-amz-checksum-*`` header declares is
    compared as soon as the checksum is known: BadDigest, nothing stored."""

    def __init__(self, record: ObjectInfo, chosen: list[ObjectInfo], request: web.Request):
        self.algorithm = _algorithm(record)
        self.kind = record.metadata.get("checksum_type", checksums.COMPOSITE)
        self.declared = checksums.declared(request.headers)
        kept = [checksums.stored(info) for info in chosen]
        self.part_values: list[str | None] = [
            part.value if part is not None and part.algorithm == self.algorithm else None
            for part in kept
        ]
        self.full: checksums.Checksum | None = None
        self.value: str | None = None
        if self.algorithm is None or None in self.part_values:
            return
        if self.kind == checksums.FULL_OBJECT:
            self.full = checksums.Checksum(self.algorithm)
        else:  # known now: a wrong declared one fails before a byte is read
            self.value = checksums.composite(self.algorithm, [v or "" for v in self.part_values])
            self._check()

    def update(self, piece: bytes) -> None:
        if self.full is not None:
            self.full.update(piece)

    def finish(self) -> None:
        if self.full is not None:
            self.value = self.full.value()
            self._check()

    def _check(self) -> None:
        if self.declared is None or self.value is None:
            return
        checksum, given = self.declared
        given = given.strip()
        if checksum.algorithm != self.algorithm or given not in (
            self.value,
            self.value.partition("-")[0],
        ):
            raise S3Error(
                "BadDigest",
                f"The {checksum.algorithm.upper()} you specified did not match the calculated "
                "checksum.",
            )

    def stored(self) -> checksums.Stored | None:
        if self.algorithm is None or self.value is None:
            return None
        return checksums.Stored(self.algorithm, self.kind, self.value)


async def _concatenated(
    uploads: ObjectStore, parts: list[ObjectInfo], whole: Whole
) -> AsyncIterator[bytes]:
    """The parts' bytes in order, one chunk at a time, each part digest-checked as it ends;
    the whole object's checksum is checked after the last (before the put commits). Each part
    is read from the very record ``_chosen`` checked, never looked up again by name: a part
    replaced since is ObjectChanged (its chunks are gone), not other bytes."""
    for info in parts:
        reader = uploads.reader(info)
        try:
            async for piece in reader:
                whole.update(piece)
                yield piece
        finally:
            await reader.close()
    whole.finish()


def _complete_result(
    bucket: str,
    key: str,
    tag: str,
    kept: checksums.Stored | None,
    version: dict[str, str] | None = None,
) -> web.Response:
    fields = [
        xml.element("Location", f"/{bucket}/{key}"),
        xml.element("Bucket", bucket),
        xml.element("Key", key),
        xml.element("ETag", tag),
    ]
    if kept is not None:
        fields.append(checksums.element(kept) + xml.element("ChecksumType", kept.kind))
    body = xml.document("CompleteMultipartUploadResult", fields)
    headers = {"ETag": tag, **(version or {})}
    return web.Response(body=body, content_type=xml.CONTENT_TYPE, headers=headers)


def _kept_in(record: ObjectInfo) -> checksums.Stored | None:
    """The checksum a completed upload's record remembers, for a retried Complete."""
    value = record.metadata.get("checksum")
    algorithm = _algorithm(record)
    if not value or algorithm is None:
        return None
    return checksums.Stored(algorithm, record.metadata.get("checksum_type", ""), value)


async def complete(
    client: Client, request: web.Request, bucket: str, key: str, upload_id: str | None
) -> web.Response:
    """The parts named, in order, as one object under ``key``; ``If-None-Match`` /
    ``If-Match`` hold against the current object through the core's compare-and-swap. The
    object keeps its checksum and its parts' sizes and checksums (natsobj.gateway.parts)."""
    store = await client.store(bucket)
    uploads, upload_id, record = await _record(client, bucket, key, upload_id)
    wanted = parse_complete(await xml.read_body(request, MAX_COMPLETE_BODY))
    if record.metadata.get("state") == "completed":
        return _complete_result(bucket, key, record.metadata["etag"], _kept_in(record))
    chosen = _chosen(wanted, await _parts(uploads, upload_id), bucket, key)
    whole = Whole(record, chosen, request)
    tag = multipart_etag(chosen)
    headers: dict[str, list[str]] = json.loads(record.metadata["headers"])

    def keep(digest: str) -> dict[str, list[str]]:
        kept = whole.stored()
        layout = list(zip((info.size for info in chosen), whole.part_values, strict=True))
        return {
            **etags.bind(etags.ETAG, tag, digest),
            **parts.bind(layout, digest),
            **(kept.bind(digest) if kept else {}),
        }

    mode = await conditions.write_precondition(store, key, request.headers)
    locking = await object_lock.requested(store, json.loads(record.metadata.get("lock") or "{}"))
    completed = await store.put(
        key,
        _concatenated(uploads, chosen, whole),
        headers=headers,
        metadata=json.loads(record.metadata["metadata"]),
        mode=mode,
        digest_headers=keep,
    )
    kept = whole.stored()
    done = {**record.metadata, "state": "completed", "etag": tag}
    if kept is not None:
        done["checksum"] = kept.value
    await uploads.put(record.name, b"", metadata=done, ttl=UPLOAD_TTL)
    await _forget_parts(uploads, upload_id)
    await object_lock.lock_new_version(store, key, completed.nuid, locking)
    version = await versions.id_headers(store, completed.nuid)
    return _complete_result(bucket, key, tag, kept, version)


async def _forget(uploads: ObjectStore, info: ObjectInfo) -> None:
    """Purge an object of the hidden store outright: its meta record first (so no reader sees
    a record without its chunks), then its chunks. A delete would leave a tombstone per part
    for ever; the purge leaves nothing."""
    await uploads.bucket_stream.purge(meta_subject(uploads.bucket, info.name))
    if info.nuid:
        await uploads.bucket_stream.purge(chunk_subject(uploads.bucket, info.nuid))


async def _forget_parts(uploads: ObjectStore, upload_id: str) -> None:
    async for info in uploads.iter_list(prefix=_parts_prefix(upload_id)):
        await _forget(uploads, info)


async def abort(client: Client, bucket: str, key: str, upload_id: str | None) -> web.Response:
    """The upload's parts and record purged at once (their TTL would get them otherwise)."""
    uploads, upload_id, record = await _record(client, bucket, key, upload_id)
    await _forget_parts(uploads, upload_id)
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
    uploads, upload_id, record = await _open_record(client, bucket, key, query)
    try:
        marker = int(query.get("part-number-marker") or 0)
    except ValueError:
        raise S3Error("InvalidArgument", "part-number-marker must be an integer") from None
    limit = _count(query, "max-parts")
    stored = await _parts(uploads, upload_id)
    numbers = sorted(n for n in stored if n > marker)
    page, truncated = numbers[:limit], len(numbers) > limit
    items = [
        "<Part>"
        + xml.element("PartNumber", number)
        + xml.element("LastModified", xml.iso(stored[number].mtime))
        + xml.element("ETag", metadata.etag(stored[number]))
        + xml.element("Size", stored[number].size)
        + checksums.element(checksums.stored(stored[number]))
        + "</Part>"
        for number in page
    ]
    algorithm = _algorithm(record)
    chosen = (
        xml.element("ChecksumAlgorithm", algorithm.upper())
        + xml.element("ChecksumType", record.metadata.get("checksum_type", ""))
        if algorithm
        else ""
    )
    body = xml.document(
        "ListPartsResult",
        [
            xml.element("Bucket", bucket),
            xml.element("Key", key),
            xml.element("UploadId", upload_id),
            INITIATOR,
            xml.OWNER,
            xml.element("StorageClass", "STANDARD"),
            chosen,
            xml.element("PartNumberMarker", marker),
            xml.element("NextPartNumberMarker", page[-1] if page else marker),
            xml.element("MaxParts", limit),
            xml.element("IsTruncated", truncated),
            *items,
        ],
    )
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


async def _records(client: Client, bucket: str) -> list[ObjectInfo]:
    """The records of the bucket's uploads; none when no upload was ever made to it."""
    try:
        uploads = await client.store(uploads_store(bucket))
    except BucketNotFound:
        return []
    return [info async for info in uploads.iter_list(prefix=RECORDS)]


async def list_uploads(client: Client, bucket: str, query: dict[str, str]) -> web.Response:
    """ListMultipartUploads: the bucket's open uploads by key, then upload id, after the
    markers; ``prefix`` filters keys. The bucket's open uploads are sorted in memory (records
    only, no parts): uploads in progress are few next to objects."""
    await client.store(bucket)
    prefix = query.get("prefix", "")
    key_marker = query.get("key-marker", "")
    id_marker = query.get("upload-id-marker", "")
    limit = _count(query, "max-uploads")
    found = sorted(
        [
            (info.metadata.get("key", ""), info.name.rsplit("/", 1)[-1], info)
            for info in await _records(client, bucket)
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
        + xml.OWNER
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
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)
