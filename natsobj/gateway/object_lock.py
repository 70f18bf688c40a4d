"""S3 Object Lock through the gateway (``natsobj.versioning.VersionLock``): the bucket's
configuration (Put/GetObjectLockConfiguration, CreateBucket's
``x-amz-bucket-object-lock-enabled``), a version's retention and legal hold
(Put/GetObjectRetention, Put/GetObjectLegalHold, PutObject's ``x-amz-object-lock-*``) and
``x-amz-bypass-governance-retention``. The core enforces the rules; a refusal is S3's
AccessDenied."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from xml.etree import ElementTree

from aiohttp import web

from natsobj.aio import Client, ObjectStore, locks
from natsobj.gateway import versions, xml
from natsobj.gateway.s3errors import S3Error
from natsobj.model import ObjectInfo
from natsobj.versioning import DefaultRetention, LockMode, Versioning

BYPASS = "x-amz-bypass-governance-retention"
ENABLED_AT_CREATION = "x-amz-bucket-object-lock-enabled"
MODE, UNTIL, HOLD = (
    "x-amz-object-lock-mode",
    "x-amz-object-lock-retain-until-date",
    "x-amz-object-lock-legal-hold",
)
_BODY = 64 << 10
DAYS_PER_YEAR = 365


def bypasses(headers: Mapping[str, str]) -> bool:
    """Whether the request asks to bypass governance-mode retention."""
    return headers.get(BYPASS, "").strip().lower() == "true"


def _fields(root: ElementTree.Element) -> dict[str, ElementTree.Element]:
    return {child.tag.rsplit("}", 1)[-1]: child for child in root}


def _text(element: ElementTree.Element | None) -> str | None:
    return (element.text or "").strip() if element is not None else None


def _mode(value: str | None) -> LockMode:
    try:
        return LockMode(value)
    except ValueError:
        raise S3Error("MalformedXML", "Mode must be GOVERNANCE or COMPLIANCE") from None


def _time(value: str | None) -> datetime:
    try:
        parsed = datetime.fromisoformat((value or "").replace("Z", "+00:00"))
    except ValueError:
        raise S3Error("InvalidArgument", "RetainUntilDate is not a date") from None
    if parsed.tzinfo is None:
        raise S3Error("InvalidArgument", "RetainUntilDate needs a time zone")
    return parsed


async def _locked_bucket(client: Client, bucket: str) -> ObjectStore:
    store = await client.store(bucket)
    if not await store.object_lock():
        raise S3Error("InvalidRequest", "Bucket is missing Object Lock Configuration")
    return store


async def enable_at_creation(client: Client, bucket: str, headers: Mapping[str, str]) -> None:
    """CreateBucket with ``x-amz-bucket-object-lock-enabled: true``: Object Lock on from the
    start (versioning enabled, for good)."""
    if headers.get(ENABLED_AT_CREATION, "").strip().lower() == "true":
        await (await client.store(bucket)).enable_object_lock()


async def put_configuration(client: Client, request: web.Request, bucket: str) -> web.Response:
    """PutObjectLockConfiguration: Object Lock on (a bucket keeping versions), and its
    default retention (``Days`` or ``Years``), or none without a ``Rule``."""
    root = xml.parse(await xml.read_body(request, _BODY))
    fields = _fields(root)
    if _text(fields.get("ObjectLockEnabled")) != "Enabled":
        raise S3Error("MalformedXML", "ObjectLockEnabled must be Enabled")
    store = await client.store(bucket)
    if not await store.object_lock():
        if await store.versioning() is not Versioning.ENABLED:
            raise S3Error(
                "InvalidBucketState",
                "Versioning must be Enabled on the bucket to turn on Object Lock",
            )
        await store.enable_object_lock()
    retention = None
    rule = fields.get("Rule")
    if rule is not None:
        default = _fields(rule).get("DefaultRetention")
        parts = _fields(default) if default is not None else {}
        days, years = _text(parts.get("Days")), _text(parts.get("Years"))
        if (days is None) == (years is None):
            raise S3Error("MalformedXML", "A DefaultRetention has Days or Years")
        count = days if days is not None else years
        if not (count or "").isdigit() or int(count or 0) < 1:
            raise S3Error(
                "InvalidRetentionPeriod", "Default retention period must be a positive integer"
            )
        span = int(count or 0) * (1 if days is not None else DAYS_PER_YEAR)
        retention = DefaultRetention(_mode(_text(parts.get("Mode"))), span)
    await store.set_default_retention(retention)
    return web.Response()


async def get_configuration(client: Client, bucket: str) -> web.Response:
    store = await client.store(bucket)
    if not await store.object_lock():
        raise S3Error(
            "ObjectLockConfigurationNotFoundError",
            "Object Lock configuration does not exist for this bucket",
        )
    parts = [xml.element("ObjectLockEnabled", "Enabled")]
    retention = await store.default_retention()
    if retention is not None:
        parts.append(
            "<Rule><DefaultRetention>"
            + xml.element("Mode", retention.mode.value)
            + xml.element("Days", retention.days)
            + "</DefaultRetention></Rule>"
        )
    body = xml.document("ObjectLockConfiguration", parts)
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


async def put_retention(
    client: Client, request: web.Request, bucket: str, key: str, version: str | None
) -> web.Response:
    """PutObjectRetention: ``Mode`` and ``RetainUntilDate``, or neither to lift it."""
    fields = _fields(xml.parse(await xml.read_body(request, _BODY)))
    store = await _locked_bucket(client, bucket)
    mode, until = _text(fields.get("Mode")), _text(fields.get("RetainUntilDate"))
    if (mode is None) != (until is None):
        raise S3Error("MalformedXML", "A Retention has both Mode and RetainUntilDate, or neither")
    await versions.named(
        version,
        lambda: store.lock(
            key,
            version=version,
            mode=_mode(mode) if mode is not None else None,
            retain_until=_time(until) if until is not None else None,
            clear_retention=mode is None,
            bypass_governance=bypasses(request.headers),
        ),
    )
    return web.Response()


async def get_retention(client: Client, bucket: str, key: str, version: str | None) -> web.Response:
    store = await _locked_bucket(client, bucket)
    lock = await versions.named(version, lambda: store.lock_info(key, version=version))
    if lock.mode is None or lock.retain_until is None:
        raise S3Error(
            "NoSuchObjectLockConfiguration", "The specified object does not have a retention"
        )
    body = xml.document(
        "Retention",
        [
            xml.element("Mode", lock.mode.value),
            xml.element("RetainUntilDate", xml.iso(lock.retain_until)),
        ],
    )
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


async def put_legal_hold(
    client: Client, request: web.Request, bucket: str, key: str, version: str | None
) -> web.Response:
    """PutObjectLegalHold: ``Status`` ON or OFF."""
    status = _text(_fields(xml.parse(await xml.read_body(request, _BODY))).get("Status"))
    if status not in ("ON", "OFF"):
        raise S3Error("MalformedXML", "A LegalHold's Status is ON or OFF")
    store = await _locked_bucket(client, bucket)
    await versions.named(
        version, lambda: store.lock(key, version=version, legal_hold=status == "ON")
    )
    return web.Response()


async def get_legal_hold(
    client: Client, bucket: str, key: str, version: str | None
) -> web.Response:
    store = await _locked_bucket(client, bucket)
    lock = await versions.named(version, lambda: store.lock_info(key, version=version))
    body = xml.document("LegalHold", [xml.element("Status", "ON" if lock.legal_hold else "OFF")])
    return web.Response(body=body, content_type=xml.CONTENT_TYPE)


@dataclass(frozen=True)
class RequestedLock:
    """PutObject's ``x-amz-object-lock-*``, checked before a byte is written."""

    mode: LockMode | None
    retain_until: datetime | None
    legal_hold: bool | None


async def requested(store: ObjectStore, headers: Mapping[str, str]) -> RequestedLock | None:
    """The lock a write asks for its new version (None: none); InvalidArgument or
    InvalidRequest before the write when it cannot be given."""
    mode, until, hold = headers.get(MODE), headers.get(UNTIL), headers.get(HOLD)
    if mode is None and until is None and hold is None:
        return None
    if (mode is None) != (until is None):
        raise S3Error(
            "InvalidArgument",
            "x-amz-object-lock-mode and x-amz-object-lock-retain-until-date go together",
        )
    if hold is not None and hold.strip().upper() not in ("ON", "OFF"):
        raise S3Error("InvalidArgument", "x-amz-object-lock-legal-hold is ON or OFF")
    if not await store.object_lock():
        raise S3Error("InvalidRequest", "Bucket is missing Object Lock Configuration")
    return RequestedLock(
        _mode(mode) if mode is not None else None,
        _time(until) if until is not None else None,
        hold.strip().upper() == "ON" if hold is not None else None,
    )


def raw_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The ``x-amz-object-lock-*`` of a request, as an upload's record keeps them until its
    Complete locks the object."""
    return {name: headers[name] for name in (MODE, UNTIL, HOLD) if name in headers}


async def answer_headers(store: ObjectStore, info: ObjectInfo) -> dict[str, str]:
    """What a GET or HEAD of a version answers about its lock, in a bucket with Object Lock."""
    if not await store.versioning_state.object_lock():
        return {}
    lock, _ = await locks.read(store.bucket_stream, info.name, info.nuid)
    answer = {}
    if lock.mode is not None and lock.retain_until is not None:
        answer[MODE] = lock.mode.value
        answer[UNTIL] = xml.iso(lock.retain_until)
    if lock.legal_hold:
        answer[HOLD] = "ON"
    return answer


async def lock_new_version(
    store: ObjectStore, key: str, version: str, wanted: RequestedLock | None
) -> None:
    """The version a write just made, locked as it asked."""
    if wanted is not None:
        await store.lock(
            key,
            version=version,
            mode=wanted.mode,
            retain_until=wanted.retain_until,
            legal_hold=wanted.legal_hold,
        )
