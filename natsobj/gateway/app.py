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
    authentication,
    etags,
    hidden,
    metadata,
    object_keys,
    objects,
    routes,
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
POOL: web.AppKey[ClientPool] = web.AppKey("pool", ClientPool)
DOMAIN: web.AppKey[str | None] = web.AppKey("domain", str)


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
    key = object_keys.decoded(rest, bucket) or None
    if key is not None:
        object_keys.check(key, bucket)
    hidden.refuse(bucket)
    return bucket, key


async def dispatch(row: routes.Route, call: routes.Call) -> web.StreamResponse:
    """The operation the request names (``natsobj.gateway.routes``); ``call.verified`` is
    None for an unsigned request, which ``handle`` lets through only to a ``PUBLIC_READ`` row."""
    if not row.versioned:
        versions.refuse(call.query.get("versionId"))
    if row.writes:
        _check_metadata_size(call.request.headers)
        await acl.check_object_acl(call.client, call.bucket, call.request.headers)
    return await row.handler(call)


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


def _operation(
    request: web.Request,
    bucket: str | None,
    key: str | None,
    query: dict[str, str],
    anonymous: bool,
) -> routes.Route:
    """The route table's row for the request. An unsigned request that selects none is refused
    as any unsigned request outside the published reads is (AccessDenied), saying nothing of
    what the gateway serves."""
    try:
        return routes.lookup(request.method, bucket, key, query, request.headers)
    except S3Error:
        if anonymous:
            raise S3Error(
                "AccessDenied", "Anonymous access is not allowed", bucket=bucket
            ) from None
        raise


async def _anonymous(
    pool: ClientPool, row: routes.Route, query: dict[str, str], bucket: str | None
) -> Client:
    """The connection of an unsigned request: only an operation the route table opens to
    unsigned reads (what S3's ``READ`` grant allows) of a published bucket, acting as the
    credentials file's ``[anonymous]`` identity; AccessDenied for anything else, or when the
    file names no such identity."""
    client = await pool.anonymous_client()
    if client is None or bucket is None or row.access is not routes.PUBLIC:
        raise S3Error("AccessDenied", "Anonymous access is not allowed", bucket=bucket)
    await acl.require_published(client, bucket)
    if not objects.OVERRIDES.keys().isdisjoint(query):
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
            pairs = parse_qsl(request.rel_url.raw_query_string, keep_blank_values=True)
            request["s3_bucket"], request["s3_key"] = bucket, key
            signed = authentication.Request(
                method=request.method,
                raw_path=request.raw_path.split("?", 1)[0],
                query=pairs,
                headers=request.headers,
            )
            if request.method == "OPTIONS":
                raise _preflight(request)
            verified = authentication.verify(signed, pool.secret_of)
            request["s3_access_key"] = verified.access_key if verified else None
            query = dict(pairs)
            anonymous = verified is None
            row = _operation(request, bucket, key, query, anonymous)
            request["s3_operation"] = row.operation
            if verified is None:
                client = await _anonymous(pool, row, query, bucket)
            else:
                client = await pool.client(verified.access_key)
            call = routes.Call(client, request, bucket or "", key or "", query, verified)
            response = await dispatch(row, call)
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
