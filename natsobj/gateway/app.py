"""The gateway's HTTP application: every request is authenticated (SigV4), routed to a bucket
and key (path-style, or virtual-host-style under ``domain``), dispatched to its operation, and
any failure answered as S3's XML error.

The server is aiohttp (docs/gateway.md says why). It keeps no state of its own: each request
reads and writes NATS through the core client of the access key's identity.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from urllib.parse import parse_qsl, unquote

from aiohttp import web

from natsobj.aio import Client
from natsobj.errors import NatsObjError
from natsobj.gateway import (
    acl,
    attributes,
    buckets,
    copying,
    deletes,
    etags,
    hidden,
    keys,
    metadata,
    multipart,
    objects,
    sigv4,
    versions,
    xml,
)
from natsobj.gateway.clients import ClientPool
from natsobj.gateway.s3errors import PUBLIC_DEFAULT, S3Error, for_anonymous, from_natsobj

log = logging.getLogger(__name__)

MAX_METADATA_BYTES = 2048  # S3's limit on an object's x-amz-meta-* names and values together
# aiohttp's parser refuses a request past these before any handler runs (400, its own plain
# answer, the connection closed): the request line (a presigned URL of a 1,024-byte key fits),
# one header line, and the number of headers.
MAX_LINE_BYTES = 16384
MAX_HEADER_BYTES = 8190
MAX_HEADERS = 128
# Reads S3's public-read grant does not cover (the owner's: the ACL itself, the location, an
# upload's parts), refused to unsigned requests.
ANONYMOUS_HIDDEN = frozenset({"acl", "location", "uploadId"})
POOL: web.AppKey[ClientPool] = web.AppKey("pool", ClientPool)
DOMAIN: web.AppKey[str | None] = web.AppKey("domain", str)
# Sub-resources of the S3 API the gateway does not serve yet: refused as NotImplemented rather
# than mistaken for a plain GET or PUT of the bucket or object.
UNSUPPORTED = frozenset(
    {
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
    key = keys.decoded(rest, bucket) or None
    if key is not None:
        keys.check(key, bucket)
    hidden.refuse(bucket)
    return bucket, key


async def dispatch(
    client: Client,
    request: web.Request,
    bucket: str | None,
    key: str | None,
    verified: sigv4.Verified | None,
) -> web.StreamResponse:
    """The operation the request names. ``verified`` is None for an unsigned request, which
    ``handle`` lets through only to read a published bucket."""
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
    if "acl" in query and bucket is not None:
        return await _acl(client, request, bucket, key)
    if bucket is not None and key is not None and method in ("PUT", "POST"):
        _check_metadata_size(request.headers)
        await acl.check_object_acl(client, bucket, request.headers)
    if bucket is None:
        if method == "GET":
            return await buckets.list_buckets(client, query)
    elif key is None:
        if method == "PUT":
            return await buckets.create_bucket(client, bucket, request.headers)
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
        versions.refuse(query.get("versionId"))
        if method == "PUT" and "x-amz-copy-source" in request.headers:
            return await copying.copy_object(client, request, bucket, key)
        if method == "GET" and "attributes" in query:
            return await attributes.get_attributes(client, request, bucket, key)
        if method == "PUT":
            return await objects.put_object(client, request, bucket, key, _signed(verified))
        if method in ("GET", "HEAD"):
            return await objects.get_object(client, request, bucket, key, head=method == "HEAD")
        if method == "DELETE":
            return await objects.delete_object(client, bucket, key)
    raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")


def _check_metadata_size(headers: Mapping[str, str]) -> None:
    """MetadataTooLarge past S3's 2 KiB of ``x-amz-meta-*`` (names and values, UTF-8)."""
    size = sum(
        len(name.encode()) - len(metadata.META_PREFIX) + len(value.encode())
        for name, value in headers.items()
        if name.lower().startswith(metadata.META_PREFIX)
    )
    if size > MAX_METADATA_BYTES:
        raise S3Error(
            "MetadataTooLarge",
            f"Your metadata headers exceed the maximum allowed metadata size ({size} bytes,"
            f" at most {MAX_METADATA_BYTES})",
        )


def _signed(verified: sigv4.Verified | None) -> sigv4.Verified:
    """The signature of a write; an unsigned one never gets this far (``handle``), and is
    refused here too should a route ever let one through."""
    if verified is None:
        raise S3Error("AccessDenied", "Anonymous users cannot write")
    return verified


async def _acl(
    client: Client, request: web.Request, bucket: str, key: str | None
) -> web.StreamResponse:
    """GetBucketAcl, PutBucketAcl, GetObjectAcl, PutObjectAcl (canned ACLs only)."""
    if request.method == "GET":
        if key is None:
            return await acl.get_bucket_acl(client, bucket)
        return await acl.get_object_acl(client, bucket, key)
    if request.method == "PUT":
        if key is None:
            return await acl.put_bucket_acl(client, request, bucket)
        return await acl.put_object_acl(client, request, bucket, key)
    raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")


async def _multipart(
    client: Client,
    request: web.Request,
    bucket: str,
    key: str,
    query: dict[str, str],
    verified: sigv4.Verified | None,
) -> web.StreamResponse:
    """The multipart upload operations on one key (natsobj.gateway.multipart)."""
    method = request.method
    upload_id = query.get("uploadId")
    if method == "POST" and "uploads" in query:
        return await multipart.create(client, request, bucket, key)
    if method == "PUT" and "x-amz-copy-source" in request.headers:
        return await multipart.copy_part(client, request, bucket, key, query)
    if method == "PUT":
        return await multipart.upload_part(client, request, bucket, key, query, _signed(verified))
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
        status=error.status, body=body, headers=headers, content_type=xml.CONTENT_TYPE
    )


def _preflight(request: web.Request) -> S3Error:
    """A CORS preflight (OPTIONS, never signed) is answered as S3 answers it for a bucket
    without a CORS configuration, which no bucket of this gateway has."""
    if "Origin" not in request.headers:
        return S3Error("BadRequest", "Insufficient information. Origin request header needed.")
    return S3Error("AccessForbidden", "CORSResponse: This CORS request is not allowed.")


async def _anonymous(pool: ClientPool, request: web.Request, bucket: str | None) -> Client:
    """The connection of an unsigned request: only GET and HEAD of a published bucket (its
    objects and listings, what S3's ``READ`` grant allows), acting as the credentials file's
    ``[anonymous]`` identity; AccessDenied for anything else, or when the file names no such
    identity."""
    client = await pool.anonymous_client()
    if (
        client is None
        or bucket is None
        or request.method not in ("GET", "HEAD")
        or not ANONYMOUS_HIDDEN.isdisjoint(request.query)
    ):
        raise S3Error("AccessDenied", "Anonymous access is not allowed", bucket=bucket)
    await acl.require_published(client, bucket)
    if not objects.OVERRIDES.keys().isdisjoint(request.query):
        # S3's answer: an anonymous reader may not make a published object answer as, say,
        # inline text/html
        raise S3Error(
            "InvalidRequest",
            "Request specific response headers cannot be used for anonymous GET requests.",
            bucket=bucket,
        )
    return client


async def handle(request: web.Request) -> web.StreamResponse:
    """One S3 request, start to end, sealing and checking kept values with the gateway's key
    (natsobj.gateway.etags). An unsigned client's errors carry S3's words only, never
    natsobj's message (NATS subjects, the server's address and user, a link's target): the
    log has that."""
    request_id = secrets.token_hex(8).upper()
    pool = request.app[POOL]
    bucket = key = None
    anonymous = False
    with etags.using(pool.seal_key):
        try:
            bucket, key = route(request, request.app[DOMAIN])
            request["s3_bucket"], request["s3_key"] = bucket, key
            signed = sigv4.Request(
                method=request.method,
                raw_path=request.raw_path.split("?", 1)[0],
                query=parse_qsl(request.rel_url.raw_query_string, keep_blank_values=True),
                headers=request.headers,
            )
            if request.method == "OPTIONS":
                raise _preflight(request)
            verified = sigv4.verify(signed, pool.secret_of)
            request["s3_access_key"] = verified.access_key if verified else None
            if verified is None:
                anonymous = True
                client = await _anonymous(pool, request, bucket)
            else:
                client = await pool.client(verified.access_key)
            response = await dispatch(client, request, bucket, key, verified)
        except S3Error as exc:
            if exc.bucket is None:
                exc.bucket, exc.key = bucket, key
            return _error_response(exc, request, request_id)
        except NatsObjError as exc:
            error = from_natsobj(exc, bucket=bucket, key=key)
            if anonymous:
                log.info("unsigned %s %s: %s", request.method, request.path, exc)
                error = for_anonymous(error)
            return _error_response(error, request, request_id)
        except (web.HTTPException, ConnectionError):
            raise  # aiohttp's own answer (a body over its limit), a client gone mid-request
        except Exception:
            # a defect of the gateway's: the operator's log has the traceback, the client
            # an S3 error document (never aiohttp's plain 500)
            log.exception("%s %s failed", request.method, request.path)
            error = S3Error("InternalError", PUBLIC_DEFAULT, bucket=bucket, key=key)
            return _error_response(error, request, request_id)
    response.headers["x-amz-request-id"] = request_id
    return response


def make_app(pool: ClientPool, *, domain: str | None = None) -> web.Application:
    """The application; ``pool``'s connections are closed when it shuts down."""
    app = web.Application(
        client_max_size=1 << 20,
        handler_args={
            "max_line_size": MAX_LINE_BYTES,
            "max_field_size": MAX_HEADER_BYTES,
            "max_headers": MAX_HEADERS,
        },
    )
    app[POOL] = pool
    app[DOMAIN] = domain
    # every path, a decoded newline included (``.*`` stops at one: aiohttp's own 404 answered)
    app.router.add_route("*", r"/{tail:[\s\S]*}", handle)

    async def close(_: web.Application) -> None:
        await pool.close()

    app.on_cleanup.append(close)
    return app
