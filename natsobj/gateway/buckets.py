"""Bucket operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation,
and the two listings of a bucket's objects."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime

from aiohttp import web

from natsobj.aio import Client
from natsobj.aio.name_sync import name_page, name_pages
from natsobj.aio.stream import BucketStream, LastMsg
from natsobj.errors import BucketNotFound
from natsobj.gateway import acl, listing, object_lock, versions, xml
from natsobj.gateway.hidden import is_uploads_store
from natsobj.gateway.multipart import forget_uploads
from natsobj.gateway.s3errors import S3Error
from natsobj.model import parse_server_time
from natsobj.versioning import Versioning
from natsobj.wire import MARKER_REASON

REGION = "us-east-1"  # the region the gateway answers GetBucketLocation with (S3's default)


MAX_BUCKETS = 10_000  # the most one ListBuckets page may ask for, as S3 has it


def _max_buckets(value: str | None) -> int:
    if value is None:
        return MAX_BUCKETS
    try:
        count = int(value)
    except ValueError:
        count = 0
    if not 1 <= count <= MAX_BUCKETS:
        raise S3Error("InvalidArgument", f"max-buckets must be between 1 and {MAX_BUCKETS}")
    return count


async def list_buckets(client: Client, query: dict[str, str]) -> web.Response:
    """The account's buckets in name order: with ``prefix``, those it starts; ``max-buckets``
    a page, the next one after ``continuation-token`` (the last name of the page before,
    encoded). Only the page's buckets are looked up for their creation time; one deleted
    between the names and its lookup is left out, as a listing a moment later would."""
    prefix = query.get("prefix", "")
    limit = _max_buckets(query.get("max-buckets"))
    token = query.get("continuation-token")
    after = listing.decode_token(token) if token is not None else ""
    names = sorted(
        name
        for name in await client.store_names()
        # a store of uploads is the gateway's own, for a bucket's multipart uploads in progress
        if not is_uploads_store(name) and name.startswith(prefix) and name > after
    )
    parts = []
    for name in names[:limit]:
        try:
            store = await client.store(name)
        except BucketNotFound:
            continue
        parts.append(
            "<Bucket>"
            + xml.element("Name", name)
            + xml.element("CreationDate", xml.iso(_created(store.bucket_stream.created)))
            + "</Bucket>"
        )
    elements = [
        xml.OWNER,
        "<Buckets>" + "".join(parts) + "</Buckets>",
    ]
    if len(names) > limit:
        elements.append(xml.element("ContinuationToken", listing.encode_token(names[limit - 1])))
    if prefix:
        elements.append(xml.element("Prefix", prefix))
    body = xml.document("ListAllMyBucketsResult", elements)
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


_S3_BUCKET = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")


def check_bucket_name(bucket: str) -> None:
    """S3's rules for a new bucket's name (3 to 63 lower-case letters, digits and hyphens,
    starting and ending with a letter or digit); NATS's own rule (no dots) then applies too.
    Existing buckets of other names stay reachable: the rule is for creating."""
    if not _S3_BUCKET.fullmatch(bucket):
        raise S3Error("InvalidBucketName", "The specified bucket is not valid.", bucket=bucket)


def _created(value: str) -> datetime | None:
    """The stream's creation time as the server reported it (None when it did not)."""
    return parse_server_time(value) if value else None


async def create_bucket(client: Client, bucket: str, headers: Mapping[str, str]) -> web.Response:
    """A new bucket. Re-creating one the caller can reach succeeds, as S3 answers in
    ``us-east-1`` (the region this gateway reports) and as the core's create is idempotent; one
    made with other settings is BucketAlreadyOwnedByYou. The name must be one S3 accepts too,
    so the bucket is reachable by every S3 client (``check_bucket_name``). A canned ACL
    (``x-amz-acl``) publishes or unpublishes it (``natsobj.gateway.acl``)."""
    check_bucket_name(bucket)
    wanted = acl.canned(headers)
    store = await client.create_store(bucket)
    if wanted is not None and wanted != await acl.bucket_acl(store):
        await acl.set_bucket_acl(store, wanted)
    await object_lock.enable_at_creation(client, bucket, headers)
    return web.Response(headers={"Location": f"/{bucket}"})


async def head_bucket(client: Client, bucket: str) -> web.Response:
    await client.store(bucket)
    return web.Response(headers={"x-amz-bucket-region": REGION})


async def delete_bucket(client: Client, bucket: str) -> web.Response:
    """Only an empty bucket is deleted, as S3 does (BucketNotEmpty otherwise); its uploads in
    progress go with it, so a bucket created later under the name starts with none."""
    store = await client.store(bucket)
    if await _holds_records(store.bucket_stream):
        raise S3Error(
            "BucketNotEmpty", "The bucket you tried to delete is not empty", bucket=bucket
        )
    await forget_uploads(client, bucket)
    await client.delete_store(bucket)
    return web.Response(status=204)


async def _holds_records(stream: BucketStream) -> bool:
    """Whether any meta subject of the bucket's stream ends in a record that is not a
    delete: decided by the stream, never by a listing, which skips what it cannot read (a
    record over natsobj's size limit that nats.go wrote, one that fails validation) and
    would let DeleteBucket take such objects with it. Costs one read per deleted name that
    still has its delete record before the first live one."""
    async for subjects in name_pages(stream, await name_page(stream, 0)):
        for subject in subjects:
            found = await stream.last(subject)
            if found is not None and not _a_delete(found):
                return True
    return False


def _a_delete(found: LastMsg) -> bool:
    """A delete record (natsobj's, another client's) or the server's marker of an expiry."""
    if MARKER_REASON in found.headers:
        return True
    try:
        record = json.loads(found.data)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("deleted") is True


async def get_location(client: Client, bucket: str) -> web.Response:
    await client.store(bucket)
    body = xml.document("LocationConstraint", [])  # empty: us-east-1, as S3 answers it
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


def _max_keys(value: str | None) -> int:
    if value is None:
        return listing.MAX_KEYS
    try:
        count = int(value)
    except ValueError:
        raise S3Error("InvalidArgument", "max-keys must be an integer") from None
    if count < 0:
        raise S3Error("InvalidArgument", "max-keys must be at least 0")
    return count


def _listing_params(query: dict[str, str]) -> tuple[str, str, int, bool]:
    """``(prefix, delimiter, max-keys, url-encoded)`` of a listing request."""
    encoding = query.get("encoding-type")
    if encoding not in (None, "url"):
        raise S3Error("InvalidArgument", "Invalid Encoding Method specified in Request")
    max_keys = _max_keys(query.get("max-keys"))
    return query.get("prefix", ""), query.get("delimiter", ""), max_keys, encoding == "url"


async def list_object_versions(client: Client, bucket: str, query: dict[str, str]) -> web.Response:
    """ListObjectVersions: every version of a versioned bucket (``natsobj.gateway.versions``);
    of one never versioned, the current objects, version null (what S3 answers there, and
    what cleanup tools ask)."""
    store = await client.store(bucket)
    prefix, delimiter, max_keys, encode = _listing_params(query)
    key_marker = query.get("key-marker", "")
    if await store.versioning() is not Versioning.UNVERSIONED:
        version_marker = query.get("version-id-marker", "")
        listed = [v for v in await store.versions(prefix=prefix) if not v.lost]
        found = versions.page(
            listed,
            prefix=prefix,
            delimiter=delimiter,
            key_marker=key_marker,
            version_marker=version_marker,
            max_keys=max_keys,
        )
        body = versions.render(
            bucket,
            found,
            prefix=prefix,
            delimiter=delimiter,
            max_keys=max_keys,
            key_marker=key_marker,
            version_marker=version_marker,
            encode=encode,
        )
        return web.Response(body=body, content_type=xml.CONTENT_TYPE)
    result = await listing.page(
        store,
        prefix=prefix,
        delimiter=delimiter,
        start_after="",
        after_entry=key_marker,
        max_keys=max_keys,
    )
    body = listing.render_versions(
        bucket,
        result,
        prefix=prefix,
        delimiter=delimiter,
        max_keys=max_keys,
        key_marker=key_marker,
        encode=encode,
    )
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


async def list_objects(
    client: Client, bucket: str, query: dict[str, str], *, version: int
) -> web.Response:
    """ListObjectsV2 (``version`` 2: continuation-token, start-after, fetch-owner) or
    ListObjects (v1: marker)."""
    store = await client.store(bucket)
    prefix, delimiter, max_keys, encode = _listing_params(query)
    token = query.get("continuation-token") if version == 2 else None
    start_after = query.get("start-after", "") if version == 2 else ""
    marker = query.get("marker", "") if version == 1 else ""
    result = await listing.page(
        store,
        prefix=prefix,
        delimiter=delimiter,
        start_after=start_after,
        after_entry=listing.decode_token(token) if token is not None else marker,
        max_keys=max_keys,
    )
    body = listing.render(
        bucket,
        result,
        version=version,
        prefix=prefix,
        delimiter=delimiter,
        max_keys=max_keys,
        encode=encode,
        fetch_owner=query.get("fetch-owner") == "true",
        marker=marker,
        token=token,
        start_after=start_after,
    )
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)
