"""DeleteObjects: up to 1,000 keys in one request, each deleted on its own and reported as
deleted or as its error (S3 reports per key; one failure does not stop the others)."""

from __future__ import annotations

from aiohttp import web

from natsobj.aio import Client
from natsobj.errors import NatsObjError, ObjectNotFound
from natsobj.gateway import object_lock, versions, xml
from natsobj.gateway.s3errors import S3Error, from_natsobj
from natsobj.model import ObjectInfo

MAX_KEYS = 1000  # S3's limit per request
MAX_BODY = 2 << 20  # 1,000 keys of 1,024 bytes, escaped, with room to spare


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse(body: bytes) -> tuple[list[tuple[str, str | None]], bool]:
    """``(objects, quiet)`` of a ``<Delete>`` document, each object its key and the version
    it names (None: the current one); MalformedXML for anything else, InvalidArgument
    (nothing deleted) for a version id that cannot be one."""
    root = xml.parse(body)
    if _local(root.tag) != "Delete":
        raise S3Error("MalformedXML", "The XML you provided was not well-formed")
    keys: list[tuple[str, str | None]] = []
    quiet = False
    for child in root:
        if _local(child.tag) == "Quiet":
            quiet = (child.text or "").strip().lower() == "true"
        elif _local(child.tag) == "Object":
            key = next((c.text for c in child if _local(c.tag) == "Key"), None)
            if not key:
                raise S3Error("MalformedXML", "An Object without a Key")
            version = next((c.text for c in child if _local(c.tag) == "VersionId"), None)
            keys.append((key, versions.requested((version or "").strip() or None)))
    if not keys or len(keys) > MAX_KEYS:
        raise S3Error("MalformedXML", f"a Delete names 1 to {MAX_KEYS} objects")
    return keys, quiet


async def delete_objects(client: Client, request: web.Request, bucket: str) -> web.Response:
    keys, quiet = parse(await xml.read_body(request, MAX_BODY))
    store = await client.store(bucket)
    parts = []
    bypass = object_lock.bypasses(request.headers)
    for key, version in keys:
        named = xml.element("VersionId", version) if version is not None else ""
        try:
            removed = await store.delete(key, version=version, bypass_governance=bypass)
        except ObjectNotFound:
            removed = None
        except NatsObjError as exc:
            error = from_natsobj(exc, bucket=bucket, key=key)
            parts.append(
                "<Error>"
                + xml.element("Key", key)
                + named
                + xml.element("Code", error.code)
                + xml.element("Message", error.message)
                + "</Error>"
            )
            continue
        if not quiet:
            parts.append(
                "<Deleted>" + xml.element("Key", key) + named + _marker(removed) + "</Deleted>"
            )
    body = xml.document("DeleteResult", parts)
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


def _marker(removed: ObjectInfo | None) -> str:
    """A delete marker the delete made or removed: S3 says so, with its id."""
    if removed is None or not removed.delete_marker:
        return ""
    return xml.element("DeleteMarker", True) + xml.element("DeleteMarkerVersionId", removed.nuid)
