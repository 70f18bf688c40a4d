"""DeleteObjects: up to 1,000 keys in one request, each deleted on its own and reported as
deleted or as its error (S3 reports per key; one failure does not stop the others)."""

from __future__ import annotations

from aiohttp import web

from natsobj.aio import Client
from natsobj.errors import NatsObjError, ObjectNotFound
from natsobj.gateway import versions, xml
from natsobj.gateway.s3errors import S3Error, from_natsobj

MAX_KEYS = 1000  # S3's limit per request
MAX_BODY = 2 << 20  # 1,000 keys of 1,024 bytes, escaped, with room to spare


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse(body: bytes) -> tuple[list[str], bool]:
    """``(keys, quiet)`` of a ``<Delete>`` document; MalformedXML for anything else,
    NotImplemented (nothing deleted) when an object names a version other than ``null``."""
    root = xml.parse(body)
    if _local(root.tag) != "Delete":
        raise S3Error("MalformedXML", "The XML you provided was not well-formed")
    keys: list[str] = []
    quiet = False
    for child in root:
        if _local(child.tag) == "Quiet":
            quiet = (child.text or "").strip().lower() == "true"
        elif _local(child.tag) == "Object":
            key = next((c.text for c in child if _local(c.tag) == "Key"), None)
            if not key:
                raise S3Error("MalformedXML", "An Object without a Key")
            for field in child:
                if _local(field.tag) == "VersionId":
                    versions.refuse((field.text or "").strip())
            keys.append(key)
    if not keys or len(keys) > MAX_KEYS:
        raise S3Error("MalformedXML", f"a Delete names 1 to {MAX_KEYS} objects")
    return keys, quiet


async def delete_objects(client: Client, request: web.Request, bucket: str) -> web.Response:
    keys, quiet = parse(await xml.read_body(request, MAX_BODY))
    store = await client.store(bucket)
    parts = []
    for key in keys:
        try:
            await store.delete(key)
        except ObjectNotFound:
            pass
        except NatsObjError as exc:
            error = from_natsobj(exc, bucket=bucket, key=key)
            parts.append(
                "<Error>"
                + xml.element("Key", key)
                + xml.element("Code", error.code)
                + xml.element("Message", error.message)
                + "</Error>"
            )
            continue
        if not quiet:
            parts.append("<Deleted>" + xml.element("Key", key) + "</Deleted>")
    body = xml.document("DeleteResult", parts)
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)
