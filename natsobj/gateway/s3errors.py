"""S3's error codes: the exception the gateway's handlers raise, its HTTP status, and how a
natsobj error (``natsobj.errors``) reads to an S3 client."""

from __future__ import annotations

from natsobj.errors import (
    BadBucketName,
    BadObjectName,
    BucketExists,
    BucketNotFound,
    DigestMismatch,
    LinkError,
    NatsObjError,
    NotConnected,
    ObjectChanged,
    ObjectExists,
    ObjectLocked,
    ObjectNotFound,
    PermissionDenied,
    StoreFull,
    StoreSealed,
    UnsafeLocalState,
)
from natsobj.retry import RetryableError

STATUS: dict[str, int] = {
    "AccessDenied": 403,
    "AccessForbidden": 403,
    "AuthorizationHeaderMalformed": 400,
    "AuthorizationQueryParametersError": 400,
    "BadDigest": 400,
    "BadRequest": 400,
    "BucketAlreadyOwnedByYou": 409,
    "BucketNotEmpty": 409,
    "EntityTooLarge": 400,
    "EntityTooSmall": 400,
    "IncompleteBody": 400,
    "InternalError": 500,
    "InvalidDigest": 400,
    "InvalidPart": 400,
    "InvalidPartOrder": 400,
    "InvalidPartNumber": 416,
    "InvalidAccessKeyId": 403,
    "InvalidArgument": 400,
    "InvalidBucketState": 409,
    "InvalidBucketName": 400,
    "InvalidRange": 416,
    "InvalidRequest": 400,
    "InvalidRetentionPeriod": 400,
    "KeyTooLongError": 400,
    "MalformedXML": 400,
    "MaxMessageLengthExceeded": 400,
    "MetadataTooLarge": 400,
    "MethodNotAllowed": 405,
    "MissingContentLength": 411,
    "NoSuchBucket": 404,
    "NoSuchKey": 404,
    "NoSuchLifecycleConfiguration": 404,
    "NoSuchObjectLockConfiguration": 404,
    "NoSuchUpload": 404,
    "NoSuchVersion": 404,
    "NotImplemented": 501,
    "NotModified": 304,
    "ObjectLockConfigurationNotFoundError": 404,
    "PreconditionFailed": 412,
    "RequestTimeTooSkewed": 403,
    "ServiceUnavailable": 503,
    "SignatureDoesNotMatch": 403,
    "XAmzContentSHA256Mismatch": 400,
}


class S3Error(Exception):
    """An S3 error response: ``code`` as S3 spells it, a message, and the resource it is
    about (bucket and key, shown in the XML's ``Resource``)."""

    def __init__(
        self, code: str, message: str, *, bucket: str | None = None, key: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.bucket = bucket
        self.key = key
        self.headers: dict[str, str] = {}

    @property
    def status(self) -> int:
        return STATUS.get(self.code, 400)


# Most specific first: the first class the error is an instance of decides.
_CODES: tuple[tuple[type[NatsObjError], str], ...] = (
    (BucketNotFound, "NoSuchBucket"),
    (ObjectNotFound, "NoSuchKey"),
    (BucketExists, "BucketAlreadyOwnedByYou"),
    (ObjectExists, "PreconditionFailed"),
    (ObjectChanged, "PreconditionFailed"),
    (BadBucketName, "InvalidBucketName"),
    (BadObjectName, "InvalidArgument"),
    # a link the gateway will not follow (into another bucket: natsobj.aio.links), refused as
    # S3 refuses a read the caller may not make
    (LinkError, "AccessDenied"),
    # a version under retention or a legal hold: S3 refuses its removal as access denied
    (ObjectLocked, "AccessDenied"),
    (DigestMismatch, "BadDigest"),
    (PermissionDenied, "AccessDenied"),
    (StoreSealed, "AccessDenied"),
    (StoreFull, "EntityTooLarge"),
    # the NATS server or JetStream cluster cannot be reached now: S3's answer that clients
    # (boto3, the AWS CLI, rclone) retry, rather than an InternalError they give up on
    (RetryableError, "ServiceUnavailable"),
    (NotConnected, "ServiceUnavailable"),
)
# natsobj's own refusal of local state another user could write: no retry cures it
_NOT_TRANSIENT = (UnsafeLocalState,)
RETRY_AFTER_SECONDS = 1


def from_natsobj(error: NatsObjError, *, bucket: str | None, key: str | None) -> S3Error:
    """The S3 error a natsobj error stands for; anything unmapped is an InternalError that
    still carries natsobj's message (which names the bucket, object and NATS detail). A
    ServiceUnavailable says when to ask again (``Retry-After``)."""
    if not isinstance(error, _NOT_TRANSIENT):
        for cls, code in _CODES:
            if isinstance(error, cls):
                mapped = S3Error(code, str(error), bucket=bucket, key=key)
                if code == "ServiceUnavailable":
                    mapped.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
                return mapped
    return S3Error("InternalError", str(error), bucket=bucket, key=key)


# What an unsigned client is told instead of natsobj's message, which may carry NATS subjects,
# grant advice, the NATS server's address and user, or a link's target bucket: S3's own words.
PUBLIC_MESSAGES = {
    "AccessDenied": "Access Denied",
    "NoSuchBucket": "The specified bucket does not exist",
    "NoSuchKey": "The specified key does not exist.",
}
PUBLIC_DEFAULT = "We encountered an internal error. Please try again."


def for_anonymous(error: S3Error) -> S3Error:
    """``error`` (one mapped ``from_natsobj``) as an unsigned client sees it: its code, and
    S3's generic message for it (the operator's log has the real one)."""
    public = S3Error(
        error.code,
        PUBLIC_MESSAGES.get(error.code, PUBLIC_DEFAULT),
        bucket=error.bucket,
        key=error.key,
    )
    public.headers.update(error.headers)
    return public
