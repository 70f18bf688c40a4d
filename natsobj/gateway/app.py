"""The gateway's HTTP application: every request is authenticated (SigV4), routed to a bucket
and key (path-style, or virtual-host-style under ``domain``), dispatched to its operation, and
any failure answered as S3's XML error.

The server is aiohttp (docs/gateway.md says why). It keeps no state of its own: each request
reads and writes NATS through the core client of the access key's identity.
"""

from __future__ import annotations

import logging
import re
import secrets
from urllib.parse import parse_qsl, unquote

from aiohttp import web

from natsobj.aio import Client
from natsobj.errors import NatsObjError
from natsobj.gateway import buckets, copying, deletes, multipart, objects, sigv4, xml
from natsobj.gateway.clients import ClientPool
from natsobj.gateway.s3errors import S3Error, from_natsobj

log = logging.getLogger(__name__)

MAX_KEY_BYTES = 1024  # S3's longest key
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""Characters no key may hold: a listing's XML could not carry most of them."""
MAX_HEADER_BYTES = 8190  # one header line, aiohttp's default, kept explicit for the limit docs
POOL: web.AppKey[ClientPool] = web.AppKey("pool", ClientPool)
DOMAIN: web.AppKey[str | None] = web.AppKey("domain", str)
# Sub-resources of the S3 API the gateway does not serve yet: refused as NotImplemented rather
# than mistaken for a plain GET or PUT of the bucket or object.
UNSUPPORTED = frozenset(
    {
        "acl",
        "cors",
        "encryption",
        "lifecycle",
        "logging",
        "notification",
        "object-lock",
        "policy",
        "replication",
        "requestPayment",
        "retention",
        "legal-hold",
        "tagging",
        "torrent",
        "versioning",
        "website",
        "select",
        "accelerate",
        "analytics",
        "inventory",
        "metrics",
        "ownershipControls",
        "attributes",
        "publicAccessBlock",
        "intelligent-tiering",
        "restore",
    }
)


def route(request: web.Request, domain: str | None) -> tuple[str | None, str | None]:
    """``(bucket, key)``: virtual-host style when the Host is ``<bucket>.<domain>``, else path
    style. The key is decoded from the path exactly as sent (no normalisation: ``a//b`` and
    ``../x`` are keys like any other, for the core's name rules to judge)."""
    path = request.raw_path.split("?", 1)[0]
    host = request.host.rsplit(":", 1)[0] if request.host else ""
    if domain and host.endswith("." + domain):
        bucket: str | None = host[: -len(domain) - 1]
        rest = path[1:] if path.startswith("/") else path
    else:
        _, _, after = path.partition("/")
        segment, slash, rest = after.partition("/")
        bucket = unquote(segment) or None
        if not slash:
            rest = ""
    key = _decoded_key(rest, bucket)
    if key is not None and len(key.encode()) > MAX_KEY_BYTES:
        raise S3Error("KeyTooLongError", "Your key is too long", bucket=bucket)
    return bucket, key


def _decoded_key(rest: str, bucket: str | None) -> str | None:
    """The key percent-encoded in ``rest``; InvalidURI (400, as S3 answers) for one that is
    not UTF-8 or holds a control character, rather than a lookup of some other key."""
    unparsable = S3Error("InvalidURI", "Couldn't parse the specified URI.", bucket=bucket)
    try:
        key = unquote(rest, errors="strict")
    except UnicodeDecodeError:
        raise unparsable from None
    if _CONTROL.search(key):
        raise unparsable
    return key or None


async def dispatch(
    client: Client,
    request: web.Request,
    bucket: str | None,
    key: str | None,
    verified: sigv4.Verified,
) -> web.StreamResponse:
    query = dict(parse_qsl(request.rel_url.raw_query_string, keep_blank_values=True))
    method = request.method
    unsupported = UNSUPPORTED.intersection(query)
    if unsupported:
        raise S3Error(
            "NotImplemented",
            f"{', '.join(sorted(unsupported))} is not implemented by this gateway yet",
            bucket=bucket,
            key=key,
        )
    if bucket is None:
        if method == "GET":
            return await buckets.list_buckets(client, query)
    elif key is None:
        if method == "PUT":
            return await buckets.create_bucket(client, bucket)
        if method == "HEAD":
            return await buckets.head_bucket(client, bucket)
        if method == "DELETE":
            return await buckets.delete_bucket(client, bucket)
        if method == "GET" and "location" in query:
            return await buckets.get_location(client, bucket)
        if method == "GET" and "uploads" in query:
            return await multipart.list_uploads(client, bucket, query)
        if method == "GET" and "versions" in query:
            return await buckets.list_object_versions(client, bucket, query)
        if method == "POST" and "delete" in query:
            return await deletes.delete_objects(client, request, bucket)
        if method == "GET":
            version = 2 if query.get("list-type") == "2" else 1
            return await buckets.list_objects(client, bucket, query, version=version)
    elif "uploads" in query or "uploadId" in query:
        return await _multipart(client, request, bucket, key, query, verified)
    else:
        if method == "PUT" and "x-amz-copy-source" in request.headers:
            return await copying.copy_object(client, request, bucket, key)
        if method == "PUT":
            return await objects.put_object(client, request, bucket, key, verified)
        if method in ("GET", "HEAD"):
            return await objects.get_object(client, request, bucket, key, head=method == "HEAD")
        if method == "DELETE":
            return await objects.delete_object(client, bucket, key)
    raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")


async def _multipart(
    client: Client,
    request: web.Request,
    bucket: str,
    key: str,
    query: dict[str, str],
    verified: sigv4.Verified,
) -> web.StreamResponse:
    """The multipart upload operations on one key (natsobj.gateway.multipart)."""
    method = request.method
    upload_id = query.get("uploadId")
    if method == "POST" and "uploads" in query:
        return await multipart.create(client, request, bucket, key)
    if method == "PUT" and "x-amz-copy-source" in request.headers:
        raise S3Error("NotImplemented", "UploadPartCopy is not implemented yet", bucket=bucket)
    if method == "PUT":
        return await multipart.upload_part(client, request, bucket, key, query, verified)
    if method == "POST":
        return await multipart.complete(client, request, bucket, key, upload_id)
    if method == "DELETE":
        return await multipart.abort(client, bucket, key, upload_id)
    if method == "GET":
        return await multipart.list_parts(client, bucket, key, query)
    raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")


def _error_response(error: S3Error, request: web.Request, request_id: str) -> web.Response:
    resource = request.raw_path.split("?", 1)[0]
    headers = {"x-amz-request-id": request_id, **error.headers}
    body = (
        b""
        if request.method == "HEAD" or error.status == 304
        else xml.error(error.code, error.message, resource, request_id)
    )
    return web.Response(
        status=error.status, body=body, headers=headers, content_type="application/xml"
    )


async def handle(request: web.Request) -> web.StreamResponse:
    """One S3 request, start to end."""
    request_id = secrets.token_hex(8).upper()
    pool = request.app[POOL]
    bucket = key = None
    try:
        bucket, key = route(request, request.app[DOMAIN])
        signed = sigv4.Request(
            method=request.method,
            raw_path=request.raw_path.split("?", 1)[0],
            query=parse_qsl(request.rel_url.raw_query_string, keep_blank_values=True),
            headers=request.headers,
        )
        verified = sigv4.verify(signed, pool.secret_of)
        if verified is None:
            raise S3Error("AccessDenied", "Anonymous access is not allowed", bucket=bucket)
        client = await pool.client(verified.access_key)
        response = await dispatch(client, request, bucket, key, verified)
    except S3Error as exc:
        if exc.bucket is None:
            exc.bucket, exc.key = bucket, key
        return _error_response(exc, request, request_id)
    except NatsObjError as exc:
        return _error_response(from_natsobj(exc, bucket=bucket, key=key), request, request_id)
    response.headers["x-amz-request-id"] = request_id
    return response


def make_app(pool: ClientPool, *, domain: str | None = None) -> web.Application:
    """The application; ``pool``'s connections are closed when it shuts down."""
    app = web.Application(
        client_max_size=1 << 20, handler_args={"max_field_size": MAX_HEADER_BYTES}
    )
    app[POOL] = pool
    app[DOMAIN] = domain
    # every path, a decoded newline included (``.*`` stops at one: aiohttp's own 404 answered)
    app.router.add_route("*", r"/{tail:[\s\S]*}", handle)

    async def close(_: web.Application) -> None:
        await pool.close()

    app.on_cleanup.append(close)
    return app
