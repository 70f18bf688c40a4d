"""AWS Signature Version 4, as S3 checks it: the ``Authorization`` header and presigned URLs.

The gateway recomputes the signature from the request as it arrived (method, the path as sent,
the query, the signed headers, the payload hash the client declared) with the secret of the
access key it names, and compares in constant time. A declared payload hash is only a claim:
``PayloadCheck`` verifies it against the body as the body streams in, so a lying body fails the
upload before its meta record is written (nothing is stored).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from natsobj.gateway.s3errors import S3Error
from natsobj.s3.sigv4 import (
    ALGORITHM,
    AMZ_DATE,
    MAX_PRESIGN_EXPIRES,
    SERVICE,
    SIGNATURE_PARAMETER,
    UNSIGNED,
    Request,
    signing_key,
)
from natsobj.s3.sigv4 import signature as request_signature

STREAMING_PREFIX = "STREAMING-"
CLOCK_SKEW = timedelta(minutes=15)


@dataclass(frozen=True)
class Verified:
    """A request whose signature matched: who sent it, the payload hash it declared, and what
    an ``aws-chunked`` body's chunk signatures chain from (its signature, date, scope and
    signing key)."""

    access_key: str
    payload_hash: str
    signature: str
    amz_date: str
    scope: str
    signing_key: bytes


def chained_signature(verified: Verified, kind: str, previous: str, hashes: list[str]) -> str:
    """The signature of one chunk (``kind`` ``PAYLOAD``: the empty string's and the chunk's
    SHA-256) or of the trailer (``TRAILER``: the trailing headers' SHA-256) of a signed
    ``aws-chunked`` body, chained from the previous chunk's signature (the request's for the
    first)."""
    to_sign = "\n".join(
        [f"{ALGORITHM}-{kind}", verified.amz_date, verified.scope, previous, *hashes]
    )
    return hmac.new(verified.signing_key, to_sign.encode(), hashlib.sha256).hexdigest()


def matches(expected: str, given: str) -> bool:
    """Whether a signature sent is the one computed, in constant time. ``compare_digest``
    refuses a non-ASCII string with TypeError, and anything not ASCII is no signature."""
    return given.isascii() and hmac.compare_digest(expected, given)


def check_covered(request: Request, signed: list[str]) -> None:
    """Refuse what the signature does not vouch for, as S3 does, before anything is
    dispatched: an ``x-amz-*`` header it does not cover (it could pick the operation, as
    ``x-amz-copy-source`` turns a presigned PUT into a copy, or set what is stored), and a
    signed header sent more than once (the signature covers one value, the handlers might
    read another)."""
    # items(), not keys(): a multidict's keys name a repeated header once
    names = [name.lower() for name, _ in request.headers.items()]
    covered = {name.lower() for name in signed}
    unsigned = sorted({name for name in names if name.startswith("x-amz-")} - covered)
    if unsigned:
        raise S3Error(
            "AccessDenied",
            "There were headers present in the request which were not signed: "
            + ", ".join(unsigned),
        )
    repeated = sorted({name for name in names if name in covered and names.count(name) > 1})
    if repeated:
        raise S3Error(
            "InvalidRequest",
            "A signed header was sent more than once: " + ", ".join(repeated),
        )


def _parse_time(value: str) -> datetime:
    try:
        return datetime.strptime(value, AMZ_DATE).replace(tzinfo=UTC)
    except ValueError:
        raise S3Error("AccessDenied", "X-Amz-Date is not a valid ISO 8601 basic time") from None


def _scope(credential: str) -> tuple[str, str]:
    """``AKID/20250101/region/s3/aws4_request`` → (access key, scope after it)."""
    parts = credential.split("/")
    if len(parts) != 5 or parts[3] != SERVICE or parts[4] != "aws4_request":
        raise S3Error("AuthorizationHeaderMalformed", "the credential scope is malformed")
    return parts[0], "/".join(parts[1:])


def verify(
    request: Request, secret_of: Callable[[str], str | None], now: datetime | None = None
) -> Verified | None:
    """Check the request's signature; None for an anonymous request (no signature at all),
    S3Error for one that is malformed, expired, of an unknown key, or does not match."""
    now = now or datetime.now(UTC)
    query = dict(request.query)
    authorization = request.headers.get("authorization")
    if authorization is not None:
        return _verify_header(request, authorization, secret_of, now)
    if "X-Amz-Signature" in query:
        return _verify_presigned(request, query, secret_of, now)
    if "Signature" in query or "AWSAccessKeyId" in query:
        raise S3Error("AccessDenied", "Signature Version 2 is not supported; sign with SigV4")
    return None


def _secret(access_key: str, secret_of: Callable[[str], str | None]) -> str:
    secret = secret_of(access_key)
    if secret is None:
        raise S3Error(
            "InvalidAccessKeyId",
            "The AWS access key Id you provided does not exist in our records.",
        )
    return secret


def _verify_header(
    request: Request,
    authorization: str,
    secret_of: Callable[[str], str | None],
    now: datetime,
) -> Verified:
    algorithm, _, rest = authorization.partition(" ")
    if algorithm != ALGORITHM:
        raise S3Error("AccessDenied", "only AWS4-HMAC-SHA256 signatures are supported")
    fields: dict[str, str] = {}
    for item in rest.split(","):
        key, eq, value = item.strip().partition("=")
        if not eq:
            raise S3Error("AuthorizationHeaderMalformed", "the Authorization header is malformed")
        fields[key] = value
    try:
        credential, signed_list, signature = (
            fields["Credential"],
            fields["SignedHeaders"],
            fields["Signature"],
        )
    except KeyError as missing:
        raise S3Error(
            "AuthorizationHeaderMalformed", f"the Authorization header lacks {missing.args[0]}"
        ) from None
    access_key, scope = _scope(credential)
    secret = _secret(access_key, secret_of)
    amz_date = request.headers.get("x-amz-date") or ""
    when = _parse_time(amz_date)
    if abs(now - when) > CLOCK_SKEW:
        raise S3Error(
            "RequestTimeTooSkewed",
            "The difference between the request time and the server's time is too large.",
        )
    if scope.split("/")[0] != amz_date[:8]:
        raise S3Error("SignatureDoesNotMatch", "the credential's date is not the request's")
    payload = request.headers.get("x-amz-content-sha256")
    if payload is None:
        raise S3Error(
            "InvalidRequest", "Missing required header for this request: x-amz-content-sha256"
        )
    signed = signed_list.split(";")
    if "host" not in signed:
        raise S3Error("AccessDenied", "the Host header must be signed")
    expected = request_signature(secret, request, signed, payload, scope, amz_date, None)
    if not matches(expected, signature):
        raise S3Error(
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
        )
    check_covered(request, signed)
    return Verified(access_key, payload, signature, amz_date, scope, signing_key(secret, scope))


def _verify_presigned(
    request: Request,
    query: dict[str, str],
    secret_of: Callable[[str], str | None],
    now: datetime,
) -> Verified:
    if query.get("X-Amz-Algorithm") != ALGORITHM:
        raise S3Error(
            "AuthorizationQueryParametersError", "X-Amz-Algorithm must be AWS4-HMAC-SHA256"
        )
    try:
        credential = query["X-Amz-Credential"]
        amz_date = query["X-Amz-Date"]
        expires = int(query["X-Amz-Expires"])
        signed = query["X-Amz-SignedHeaders"].split(";")
    except (KeyError, ValueError):
        raise S3Error(
            "AuthorizationQueryParametersError", "the presigned URL's parameters are incomplete"
        ) from None
    if not 0 <= expires <= MAX_PRESIGN_EXPIRES:
        raise S3Error("AccessDenied", "X-Amz-Expires must be between 0 and 604800 seconds")
    access_key, scope = _scope(credential)
    secret = _secret(access_key, secret_of)
    when = _parse_time(amz_date)
    if when - now > CLOCK_SKEW:
        raise S3Error("AccessDenied", "Request is not valid yet")
    if now > when + timedelta(seconds=expires):
        raise S3Error("AccessDenied", "Request has expired")
    payload = query.get("X-Amz-Content-Sha256", UNSIGNED)
    expected = request_signature(
        secret, request, signed, payload, scope, amz_date, SIGNATURE_PARAMETER
    )
    if not matches(expected, query["X-Amz-Signature"]):
        raise S3Error(
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
        )
    check_covered(request, signed)
    return Verified(access_key, payload, expected, amz_date, scope, signing_key(secret, scope))


class PayloadCheck:
    """Hashes a body as it streams; ``finish`` raises when a declared SHA-256 was a lie."""

    def __init__(self, declared: str) -> None:
        self.declared = declared.lower()
        self.hash = None if declared == UNSIGNED else hashlib.sha256()

    def update(self, piece: bytes) -> None:
        if self.hash is not None:
            self.hash.update(piece)

    def finish(self) -> None:
        # matches: a declared hash that is not ASCII is no hash (compare_digest would raise)
        if self.hash is not None and not matches(self.hash.hexdigest(), self.declared):
            raise S3Error(
                "XAmzContentSHA256Mismatch",
                "The provided 'x-amz-content-sha256' header does not match what was computed.",
            )
