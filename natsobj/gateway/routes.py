"""The gateway's route table: one row per S3 operation it serves, saying how a request selects
it (method, what it addresses, a query parameter or header that must be present), who may call
it (signed only, or also unsigned on a published bucket), the NATS rights its key needs, and
the handler. ``dispatch`` looks a request up here and nowhere else, so adding an operation is
adding a row; ``docs/gateway.md`` shows the table as ``operations_table`` renders it (a test
holds the two equal).

A request no row selects is refused by what it asked for: a sub-resource the gateway does not
serve (``?tagging``, ``?policy``, ...) is ``NotImplemented`` naming the S3 operation in S3's
words, never mistaken for a plain read or write of the bucket or object; any other is
``MethodNotAllowed``, as S3 answers a method a resource does not take."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from natsobj.aio import Client
from natsobj.gateway import (
    acl,
    attributes,
    authentication,
    buckets,
    copying,
    deletes,
    lifecycle,
    multipart,
    object_lock,
    objects,
    versions,
)
from natsobj.gateway.s3errors import S3Error


class Target(enum.Enum):
    """What a request addresses: the account (no bucket), a bucket, or an object."""

    SERVICE = "the account"
    BUCKET = "a bucket"
    OBJECT = "an object"


class Access(enum.Enum):
    """Who may call an operation."""

    SIGNED = "signed"
    # also unsigned, on a bucket published with public-read (S3's READ grant), acting as the
    # credentials file's [anonymous] identity
    PUBLIC_READ = "signed, or unsigned on a published bucket"


@dataclass(frozen=True)
class Call:
    """One request as its handler sees it: the identity's connection, the request, what it
    addresses (empty where it addresses none) and its parsed query."""

    client: Client
    request: web.Request
    bucket: str
    key: str
    query: dict[str, str]
    verified: authentication.Verified | None

    def signed(self) -> authentication.Verified:
        """The signature of a write; an unsigned one never gets this far (``Access``), and is
        refused here too should a row ever let one through."""
        if self.verified is None:
            raise S3Error("AccessDenied", "Anonymous users cannot write")
        return self.verified


Handler = Callable[[Call], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Route:
    """One S3 operation. ``query`` names parameters that must be present (``name=value``: with
    that value) and ``header`` a header that must be: a row with more of them wins over one
    with fewer. ``writes``: the
    request makes or feeds an object, so its ``x-amz-meta-*`` size and canned ACL are checked
    first. ``versioned``: the operation takes a ``versionId`` (its handler reads the version named,
    ``versions.requested``); on any other, one other than ``null`` is NotImplemented, never
    carried out on the current object."""

    operation: str
    method: str
    target: Target
    handler: Handler
    rights: str
    query: tuple[str, ...] = ()
    header: str | None = None
    access: Access = Access.SIGNED
    writes: bool = False
    versioned: bool = False

    @property
    def specificity(self) -> int:
        return len(self.query) + (self.header is not None)

    def selects(self, query: Mapping[str, str], headers: Mapping[str, str]) -> bool:
        """Each of ``query`` present (``name=value``: with that value), and ``header``."""
        for wanted in self.query:
            name, equals, value = wanted.partition("=")
            if name not in query or (equals and query[name] != value):
                return False
        return self.header is None or self.header in headers


COPY_SOURCE = "x-amz-copy-source"
READ, WRITE = "read the bucket", "write the bucket"
STREAMS = "create, delete and list streams"
SETTINGS = "update the bucket's stream (its metadata)"
S, B, OBJ = Target.SERVICE, Target.BUCKET, Target.OBJECT
PUBLIC = Access.PUBLIC_READ


def _list_objects(version: int) -> Handler:
    def handler(c: Call) -> Awaitable[web.StreamResponse]:
        return buckets.list_objects(c.client, c.bucket, c.query, version=version)

    return handler


def _version(c: Call) -> str | None:
    """The version a request names (``versionId``), None for the current one."""
    return versions.requested(c.query.get("versionId"))


def _get_object(head: bool) -> Handler:
    def handler(c: Call) -> Awaitable[web.StreamResponse]:
        return objects.get_object(
            c.client, c.request, c.bucket, c.key, head=head, version=_version(c)
        )

    return handler


ROUTES: tuple[Route, ...] = (
    Route("ListBuckets", "GET", S, lambda c: buckets.list_buckets(c.client, c.query), STREAMS),
    # -- buckets
    Route(
        "CreateBucket",
        "PUT",
        B,
        lambda c: buckets.create_bucket(c.client, c.bucket, c.request.headers),
        STREAMS,
    ),
    Route(
        "HeadBucket",
        "HEAD",
        B,
        lambda c: buckets.head_bucket(c.client, c.bucket),
        READ,
        access=PUBLIC,
    ),
    Route(
        "DeleteBucket", "DELETE", B, lambda c: buckets.delete_bucket(c.client, c.bucket), STREAMS
    ),
    Route(
        "GetBucketLocation",
        "GET",
        B,
        lambda c: buckets.get_location(c.client, c.bucket),
        READ,
        query=("location",),
    ),
    Route(
        "GetBucketVersioning",
        "GET",
        B,
        lambda c: versions.get_versioning(c.client, c.bucket),
        READ,
        query=("versioning",),
    ),
    Route(
        "PutBucketVersioning",
        "PUT",
        B,
        lambda c: versions.put_versioning(c.client, c.request, c.bucket),
        SETTINGS,
        query=("versioning",),
    ),
    Route(
        "GetObjectLockConfiguration",
        "GET",
        B,
        lambda c: object_lock.get_configuration(c.client, c.bucket),
        READ,
        query=("object-lock",),
    ),
    Route(
        "PutObjectLockConfiguration",
        "PUT",
        B,
        lambda c: object_lock.put_configuration(c.client, c.request, c.bucket),
        SETTINGS,
        query=("object-lock",),
    ),
    Route(
        "GetBucketLifecycleConfiguration",
        "GET",
        B,
        lambda c: lifecycle.get_configuration(c.client, c.bucket),
        READ,
        query=("lifecycle",),
    ),
    Route(
        "PutBucketLifecycleConfiguration",
        "PUT",
        B,
        lambda c: lifecycle.put_configuration(c.client, c.request, c.bucket),
        SETTINGS,
        query=("lifecycle",),
    ),
    Route(
        "DeleteBucketLifecycle",
        "DELETE",
        B,
        lambda c: lifecycle.delete_configuration(c.client, c.bucket),
        SETTINGS,
        query=("lifecycle",),
    ),
    Route(
        "GetBucketAcl",
        "GET",
        B,
        lambda c: acl.get_bucket_acl(c.client, c.bucket),
        READ,
        query=("acl",),
    ),
    Route(
        "PutBucketAcl",
        "PUT",
        B,
        lambda c: acl.put_bucket_acl(c.client, c.request, c.bucket),
        SETTINGS,
        query=("acl",),
    ),
    Route(
        "ListMultipartUploads",
        "GET",
        B,
        lambda c: multipart.list_uploads(c.client, c.bucket, c.query),
        READ,
        query=("uploads",),
        access=PUBLIC,
    ),
    Route(
        "ListObjectVersions",
        "GET",
        B,
        lambda c: buckets.list_object_versions(c.client, c.bucket, c.query),
        READ,
        query=("versions",),
        access=PUBLIC,
    ),
    Route(
        "DeleteObjects",
        "POST",
        B,
        lambda c: deletes.delete_objects(c.client, c.request, c.bucket),
        WRITE,
        query=("delete",),
    ),
    Route("ListObjectsV2", "GET", B, _list_objects(2), READ, query=("list-type=2",), access=PUBLIC),
    Route("ListObjects", "GET", B, _list_objects(1), READ, access=PUBLIC),
    # -- objects
    Route(
        "GetObjectAcl",
        "GET",
        OBJ,
        lambda c: acl.get_object_acl(c.client, c.bucket, c.key),
        READ,
        query=("acl",),
    ),
    Route(
        "PutObjectAcl",
        "PUT",
        OBJ,
        lambda c: acl.put_object_acl(c.client, c.request, c.bucket, c.key),
        WRITE,
        query=("acl",),
    ),
    Route(
        "GetObjectRetention",
        "GET",
        OBJ,
        lambda c: object_lock.get_retention(c.client, c.bucket, c.key, _version(c)),
        READ,
        query=("retention",),
        versioned=True,
    ),
    Route(
        "PutObjectRetention",
        "PUT",
        OBJ,
        lambda c: object_lock.put_retention(c.client, c.request, c.bucket, c.key, _version(c)),
        WRITE,
        query=("retention",),
        versioned=True,
    ),
    Route(
        "GetObjectLegalHold",
        "GET",
        OBJ,
        lambda c: object_lock.get_legal_hold(c.client, c.bucket, c.key, _version(c)),
        READ,
        query=("legal-hold",),
        versioned=True,
    ),
    Route(
        "PutObjectLegalHold",
        "PUT",
        OBJ,
        lambda c: object_lock.put_legal_hold(c.client, c.request, c.bucket, c.key, _version(c)),
        WRITE,
        query=("legal-hold",),
        versioned=True,
    ),
    Route(
        "CreateMultipartUpload",
        "POST",
        OBJ,
        lambda c: multipart.create(c.client, c.request, c.bucket, c.key),
        WRITE,
        query=("uploads",),
        writes=True,
    ),
    Route(
        "UploadPartCopy",
        "PUT",
        OBJ,
        lambda c: multipart.copy_part(c.client, c.request, c.bucket, c.key, c.query),
        WRITE + "; read the source's bucket",
        query=("uploadId",),
        header=COPY_SOURCE,
        writes=True,
    ),
    Route(
        "UploadPart",
        "PUT",
        OBJ,
        lambda c: multipart.upload_part(c.client, c.request, c.bucket, c.key, c.query, c.signed()),
        WRITE,
        query=("uploadId",),
        writes=True,
    ),
    Route(
        "CompleteMultipartUpload",
        "POST",
        OBJ,
        lambda c: multipart.complete(c.client, c.request, c.bucket, c.key, c.query.get("uploadId")),
        WRITE,
        query=("uploadId",),
        writes=True,
    ),
    Route(
        "AbortMultipartUpload",
        "DELETE",
        OBJ,
        lambda c: multipart.abort(c.client, c.bucket, c.key, c.query.get("uploadId")),
        WRITE,
        query=("uploadId",),
    ),
    Route(
        "ListParts",
        "GET",
        OBJ,
        lambda c: multipart.list_parts(c.client, c.bucket, c.key, c.query),
        READ,
        query=("uploadId",),
    ),
    Route(
        "CopyObject",
        "PUT",
        OBJ,
        lambda c: copying.copy_object(c.client, c.request, c.bucket, c.key),
        WRITE + "; read the source's bucket",
        header=COPY_SOURCE,
        writes=True,
    ),
    Route(
        "GetObjectAttributes",
        "GET",
        OBJ,
        lambda c: attributes.get_attributes(c.client, c.request, c.bucket, c.key, _version(c)),
        READ,
        query=("attributes",),
        access=PUBLIC,
        versioned=True,
    ),
    Route(
        "PutObject",
        "PUT",
        OBJ,
        lambda c: objects.put_object(c.client, c.request, c.bucket, c.key, c.signed()),
        WRITE,
        writes=True,
    ),
    Route("GetObject", "GET", OBJ, _get_object(head=False), READ, access=PUBLIC, versioned=True),
    Route("HeadObject", "HEAD", OBJ, _get_object(head=True), READ, access=PUBLIC, versioned=True),
    Route(
        "DeleteObject",
        "DELETE",
        OBJ,
        lambda c: objects.delete_object(c.client, c.request, c.bucket, c.key, _version(c)),
        WRITE,
        versioned=True,
    ),
)

# Sub-resources of the S3 API the gateway does not serve yet: NotImplemented, by name (for
# the methods no row above serves them with).
UNSUPPORTED = (
    "accelerate",
    "analytics",
    "cors",
    "encryption",
    "intelligent-tiering",
    "inventory",
    "logging",
    "metrics",
    "notification",
    "ownershipControls",
    "policy",
    "publicAccessBlock",
    "replication",
    "requestPayment",
    "restore",
    "select",
    "tagging",
    "torrent",
    "website",
)
_VERBS = {"GET": "Get", "PUT": "Put", "DELETE": "Delete", "POST": "Post", "HEAD": "Head"}


def _by_specificity(routes: tuple[Route, ...]) -> dict[tuple[str, Target], list[Route]]:
    table: dict[tuple[str, Target], list[Route]] = {}
    for row in routes:
        table.setdefault((row.method, row.target), []).append(row)
    for rows in table.values():
        rows.sort(key=lambda row: -row.specificity)  # stable: the table's order among equals
    return table


_LOOKUP = _by_specificity(ROUTES)


def target_of(bucket: str | None, key: str | None) -> Target:
    if bucket is None:
        return Target.SERVICE
    return Target.BUCKET if key is None else Target.OBJECT


def unsupported_operation(method: str, target: Target, resource: str) -> str:
    """The S3 operation a request for an unserved sub-resource names, in S3's pattern
    (``GET /b?policy`` is GetBucketPolicy, ``PUT /b/k?tagging`` PutObjectTagging)."""
    noun = "Object" if target is Target.OBJECT else "Bucket"
    words = resource.replace("-", " ").split()
    return _VERBS.get(method, method.title()) + noun + "".join(w[0].upper() + w[1:] for w in words)


def lookup(
    method: str,
    bucket: str | None,
    key: str | None,
    query: Mapping[str, str],
    headers: Mapping[str, str],
) -> Route:
    """The row a request selects; NotImplemented or MethodNotAllowed when none does."""
    target = target_of(bucket, key)
    row = next((r for r in _LOOKUP.get((method, target), ()) if r.selects(query, headers)), None)
    # a sub-resource some rows serve (GET ?versioning) stays unserved for the others (PUT)
    served = {wanted.partition("=")[0] for wanted in row.query} if row else set()
    unserved = sorted(set(UNSUPPORTED).intersection(query) - served)
    if unserved:
        names = ", ".join(unsupported_operation(method, target, r) for r in unserved)
        raise S3Error(
            "NotImplemented",
            f"{names} ({', '.join('?' + r for r in unserved)}) is not implemented by this"
            " gateway yet",
            bucket=bucket,
            key=key,
        )
    if row is not None:
        return row
    raise S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.")


def operations_table() -> str:
    """The route table as ``docs/gateway.md`` shows it."""
    lines = [
        "| S3 operation | request | selected by | who may call it | NATS rights of the key |",
        "|---|---|---|---|---|",
    ]
    for row in ROUTES:
        path = {Target.SERVICE: "/", Target.BUCKET: "/bucket", Target.OBJECT: "/bucket/key"}
        selectors = [f"`?{name}`" for name in row.query]
        if row.header:
            selectors.append(f"`{row.header}`")
        lines.append(
            f"| {row.operation} | `{row.method} {path[row.target]}` | "
            f"{', '.join(selectors) or '-'} | {row.access.value} | {row.rights} |"
        )
    return "\n".join(lines) + "\n"
