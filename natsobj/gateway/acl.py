"""Canned ACLs, as far as a gateway that never widens NATS permissions can honour them: a bucket
is ``private`` (signed requests only) or published ``public-read`` (unsigned GET and HEAD of
its objects and listings too, acting as the credentials file's ``[anonymous]`` identity).

The flag lives in the bucket's stream metadata under ``PUBLIC_READ_METADATA`` (a natsobj key:
``store_config.tag_metadata`` hides it from the bucket's tags), so every gateway in front of
the cluster reads the same answer and none keeps state. An object has no ACL of its own: it
takes its bucket's, so an object's canned ACL is accepted only when it is the bucket's. Grants
(``x-amz-grant-*``, an ``AccessControlPolicy`` body) and the other canned ACLs are
``NotImplemented``: there is no one to grant to but the keys of the file.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from natsobj.aio import Client, ObjectStore
from natsobj.gateway import xml
from natsobj.gateway.s3errors import S3Error
from natsobj.store_config import NATSOBJ_METADATA

PUBLIC_READ_METADATA = NATSOBJ_METADATA + ".s3.public-read"
PRIVATE = "private"
PUBLIC_READ = "public-read"
_ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
_XSI = 'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"'


def canned(headers: Mapping[str, str]) -> str | None:
    """The request's canned ACL (``x-amz-acl``), None when it names none; NotImplemented for a
    grant header or a canned ACL other than ``private`` and ``public-read``."""
    grants = sorted(name for name in headers if name.lower().startswith("x-amz-grant-"))
    if grants:
        raise S3Error("NotImplemented", f"ACL grants ({', '.join(grants)}) are not supported")
    value = headers.get("x-amz-acl")
    if value is not None and value not in (PRIVATE, PUBLIC_READ):
        raise S3Error(
            "NotImplemented",
            f"the canned ACL {value!r} is not supported; only private and public-read",
        )
    return value


async def bucket_acl(store: ObjectStore) -> str:
    """``public-read`` when the bucket is published, else ``private`` (read fresh from its
    stream, so a change by any gateway or NATS client holds at once)."""
    info = await store.bucket_stream.info()
    published = (info.config.get("metadata") or {}).get(PUBLIC_READ_METADATA) == "true"
    return PUBLIC_READ if published else PRIVATE


async def set_bucket_acl(store: ObjectStore, value: str) -> None:
    """Publish (``public-read``) or unpublish (``private``) the bucket; the stream's other
    metadata is kept."""
    flag = "true" if value == PUBLIC_READ else None
    await store.bucket_stream.set_metadata(PUBLIC_READ_METADATA, flag)


async def require_published(client: Client, bucket: str) -> None:
    """AccessDenied unless ``bucket`` is published (NoSuchBucket when it does not exist)."""
    if await bucket_acl(await client.store(bucket)) != PUBLIC_READ:
        raise S3Error("AccessDenied", "Access Denied", bucket=bucket)


async def check_object_acl(client: Client, bucket: str, headers: Mapping[str, str]) -> None:
    """A write's object ACL must be its bucket's (objects have none of their own)."""
    value = canned(headers)
    if value is not None:
        await _require_bucket_acl(await client.store(bucket), value, bucket, None)


async def _require_bucket_acl(store: ObjectStore, value: str, bucket: str, key: str | None) -> None:
    if value != await bucket_acl(store):
        raise S3Error(
            "NotImplemented",
            f"an object takes its bucket's ACL; this bucket's is not {value}",
            bucket=bucket,
            key=key,
        )


def _policy(value: str) -> web.Response:
    grants = [
        f'<Grant><Grantee {_XSI} xsi:type="CanonicalUser">{xml.OWNER_FIELDS}</Grantee>'
        "<Permission>FULL_CONTROL</Permission></Grant>"
    ]
    if value == PUBLIC_READ:
        grants.append(
            f'<Grant><Grantee {_XSI} xsi:type="Group">{xml.element("URI", _ALL_USERS)}'
            "</Grantee><Permission>READ</Permission></Grant>"
        )
    body = xml.document(
        "AccessControlPolicy",
        [xml.OWNER, "<AccessControlList>", *grants, "</AccessControlList>"],
    )
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


async def get_bucket_acl(client: Client, bucket: str) -> web.Response:
    return _policy(await bucket_acl(await client.store(bucket)))


async def get_object_acl(client: Client, bucket: str, key: str) -> web.Response:
    store = await client.store(bucket)
    await store.get_info(key)
    return _policy(await bucket_acl(store))


async def put_bucket_acl(client: Client, request: web.Request, bucket: str) -> web.Response:
    store = await client.store(bucket)
    value = _put_acl_value(request)
    if value != await bucket_acl(store):
        await set_bucket_acl(store, value)
    return web.Response()


async def put_object_acl(
    client: Client, request: web.Request, bucket: str, key: str
) -> web.Response:
    store = await client.store(bucket)
    await store.get_info(key)
    await _require_bucket_acl(store, _put_acl_value(request), bucket, key)
    return web.Response()


def _put_acl_value(request: web.Request) -> str:
    """PutBucketAcl and PutObjectAcl take a canned ACL only (an ``AccessControlPolicy`` body
    lists grants, which are not supported)."""
    value = canned(request.headers)
    if value is None:
        raise S3Error(
            "NotImplemented", "only a canned ACL (x-amz-acl: private or public-read) is supported"
        )
    return value
