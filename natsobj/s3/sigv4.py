"""AWS Signature Version 4 as S3 computes it: the one copy of the rule, for the gateway that
checks signatures (``natsobj.gateway.authentication``) and for the presigned URLs natsobj makes
(``natsobj presign``, the filesystem's ``sign``).

Standard library only, so the CLI and the filesystem presign without the gateway extra.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, unquote

from natsobj.settings import check_gateway_url

ALGORITHM = "AWS4-HMAC-SHA256"
UNSIGNED = "UNSIGNED-PAYLOAD"
SERVICE = "s3"
MAX_PRESIGN_EXPIRES = 7 * 24 * 3600  # S3's own ceiling for a presigned URL
DEFAULT_REGION = "us-east-1"
AMZ_DATE = "%Y%m%dT%H%M%SZ"
SIGNATURE_PARAMETER = "X-Amz-Signature"


@dataclass(frozen=True)
class Request:
    """What a signature covers, taken from the HTTP request as received (or to be sent)."""

    method: str
    raw_path: str  # the path exactly as sent, still percent-encoded, without the query
    query: list[tuple[str, str]]  # decoded pairs, in the order sent
    headers: Mapping[str, str]  # case-insensitive lookups (a multidict or a lower-cased dict)


def uri_encode(value: str, *, slash: bool) -> str:
    """SigV4's encoding: everything but the unreserved characters, ``/`` too when ``slash``."""
    return quote(value, safe="-_.~" + ("/" if not slash else ""))


def canonical_query(query: list[tuple[str, str]], drop: str | None) -> str:
    pairs = sorted(
        (uri_encode(k, slash=True), uri_encode(v, slash=True)) for k, v in query if k != drop
    )
    return "&".join(f"{k}={v}" for k, v in pairs)


def canonical_path(raw_path: str) -> str:
    """S3 signs the path once encoded (not twice as other services): normalise what the
    client sent by decoding and re-encoding each segment with SigV4's unreserved set."""
    return "/".join(uri_encode(unquote(part), slash=True) for part in raw_path.split("/")) or "/"


def signing_key(secret: str, scope: str) -> bytes:
    """The key of a scope ``DAY/REGION/s3/aws4_request``, derived from the secret."""
    day, region = scope.split("/")[0], scope.split("/")[1]
    key = ("AWS4" + secret).encode()
    for part in (day, region, SERVICE, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def signature(
    secret: str,
    request: Request,
    signed: list[str],
    payload: str,
    scope: str,
    amz_date: str,
    drop: str | None,
) -> str:
    """The signature of ``request`` over the ``signed`` headers and the declared ``payload``
    hash; ``drop`` is a query parameter left out (a presigned URL's own signature)."""
    headers = "".join(
        f"{name}:{' '.join(request.headers.get(name, '').split())}\n" for name in signed
    )
    canonical = "\n".join(
        [
            request.method,
            canonical_path(request.raw_path),
            canonical_query(request.query, drop),
            headers,
            ";".join(signed),
            payload,
        ]
    )
    to_sign = "\n".join(
        # surrogateescape: a header value that is not UTF-8 arrives with its bytes escaped
        # (aiohttp's decoding) and is signed as those bytes, as the client signed them
        [ALGORITHM, amz_date, scope, hashlib.sha256(_utf8(canonical)).hexdigest()]
    )
    return hmac.new(signing_key(secret, scope), to_sign.encode(), hashlib.sha256).hexdigest()


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def presign(
    endpoint: str,
    bucket: str,
    key: str,
    *,
    access_key: str,
    secret: str,
    expires_in: int = 3600,
    method: str = "GET",
    region: str = DEFAULT_REGION,
    now: datetime | None = None,
) -> str:
    """A path-style presigned URL for ``bucket/key`` at ``endpoint`` (``http://host:port``),
    signed over the host alone with an unsigned payload, as ``aws s3 presign`` and boto3's
    ``generate_presigned_url`` make them: valid ``expires_in`` seconds from ``now``."""
    if not 1 <= expires_in <= MAX_PRESIGN_EXPIRES:
        raise ValueError(
            f"expires_in must be 1 to {MAX_PRESIGN_EXPIRES} seconds (7 days), not {expires_in}"
        )
    check_gateway_url(endpoint)
    scheme, _, rest = endpoint.rstrip("/").partition("://")
    host, _, base = rest.partition("/")
    amz_date = (now or datetime.now(UTC)).astimezone(UTC).strftime(AMZ_DATE)
    scope = f"{amz_date[:8]}/{region}/{SERVICE}/aws4_request"
    path = "/".join(part for part in (base, bucket, key) if part)
    raw_path = "/" + uri_encode(path, slash=False)
    query = [
        ("X-Amz-Algorithm", ALGORITHM),
        ("X-Amz-Credential", f"{access_key}/{scope}"),
        ("X-Amz-Date", amz_date),
        ("X-Amz-SignedHeaders", "host"),
        ("X-Amz-Expires", str(expires_in)),
    ]  # in the order botocore writes them, so the URL is the one ``aws s3 presign`` prints
    default_port = {"http": ":80", "https": ":443"}[scheme]
    request = Request(method.upper(), raw_path, query, {"host": host.removesuffix(default_port)})
    signed = signature(secret, request, ["host"], UNSIGNED, scope, amz_date, None)
    encoded = "&".join(f"{k}={uri_encode(v, slash=True)}" for k, v in query)
    return f"{scheme}://{host}{raw_path}?{encoded}&{SIGNATURE_PARAMETER}={signed}"
