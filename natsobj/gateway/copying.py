"""CopyObject: ``PUT`` with ``x-amz-copy-source``. NATS has no server-side copy, so the bytes
stream through the gateway with the core's ``copy_object`` (read, digest-checked, into a put),
in the memory of one chunk; the result is an ordinary ADR-20 object like any put's."""

from __future__ import annotations

from aiohttp import web

from natsobj.aio import Client
from natsobj.aio.copy import copy_object as core_copy
from natsobj.gateway import conditions, etags, hidden, metadata, object_keys, versions, xml
from natsobj.gateway.s3errors import S3Error
from natsobj.model import ObjectInfo

SOURCE = "x-amz-copy-source"
DIRECTIVE = "x-amz-metadata-directive"


def parse_source(value: str) -> tuple[str, str, str | None]:
    """``(bucket, key, version)`` of an ``x-amz-copy-source`` header: ``bucket/key`` or
    ``/bucket/key``, percent-encoded, optionally with ``?versionId=`` (None: the current
    version, as ``null`` names it too)."""
    path, _, query = value.partition("?")
    name, _, version = query.partition("=")
    if query and name != "versionId":
        raise S3Error("InvalidArgument", "Copy Source may name only a versionId")
    bucket, _, key = object_keys.decoded(path, None).lstrip("/").partition("/")
    if not bucket or not key:
        raise S3Error(
            "InvalidArgument",
            "Copy Source must mention the source bucket and key: sourcebucket/sourcekey",
        )
    object_keys.check(key, bucket)
    hidden.refuse(bucket)
    return bucket, key, versions.requested(version or None)


async def copy_object(client: Client, request: web.Request, bucket: str, key: str) -> web.Response:
    """Copy the source object to ``bucket``/``key``: its headers and metadata kept
    (``x-amz-metadata-directive: COPY``, the default) or taken from this request (``REPLACE``,
    the only way to copy an object onto itself, as S3 has it); the source's ETag is kept
    either way. The source's conditions are judged on the version that is copied, before a
    byte is written."""
    source_bucket, source_key, version = parse_source(request.headers[SOURCE])
    directive = request.headers.get(DIRECTIVE, "COPY").upper()
    if directive not in ("COPY", "REPLACE"):
        raise S3Error("InvalidArgument", f"Unknown metadata directive: {directive}")
    if (source_bucket, source_key, version) == (bucket, key, None) and directive == "COPY":
        raise S3Error(
            "InvalidRequest",
            "This copy request is illegal because it is trying to copy an object to itself "
            "without changing the object's metadata, storage class, website redirect location "
            "or encryption attributes.",
        )
    source = await client.store(source_bucket)
    target = source if source_bucket == bucket else await client.store(bucket)
    headers: dict[str, list[str]] | None = None
    meta: dict[str, str] | None = None
    if directive == "REPLACE":
        headers, meta = metadata.from_request(request.headers)

    def check(info: ObjectInfo) -> None:
        conditions.check_copy_source(request.headers, info)
        if headers is not None and etags.ETAG in info.headers:
            # the copy has the source's bytes, so the source's ETag holds for it too
            headers[etags.ETAG] = info.headers[etags.ETAG]

    copied = await versions.named(
        version,
        lambda: core_copy(
            source,
            source_key,
            target,
            key,
            check=check,
            headers=headers,
            metadata=meta,
            version=version,
        ),
    )
    body = xml.document(
        "CopyObjectResult",
        [
            xml.element("LastModified", xml.iso(copied.mtime)),
            xml.element("ETag", metadata.etag(copied)),
        ],
    )
    answered = await versions.id_headers(target, copied.nuid)
    if version is not None:
        answered["x-amz-copy-source-version-id"] = version
    return web.Response(body=body, content_type=xml.CONTENT_TYPE, headers=answered)
