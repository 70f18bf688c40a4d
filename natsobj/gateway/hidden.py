"""The gateway's own stores, which no S3 request addresses: each bucket's store of multipart
uploads in progress, ``natsobj_multipart_<bucket>`` (natsobj.gateway.multipart). An underscore
is in no S3 bucket name, so no S3 client can create one; but an existing NATS bucket of any
name is reachable by name, and answering for this one would let a reader of a bucket list
every upload in progress and read other clients' unfinished parts. So a request naming one,
as its bucket or as a copy's source, is answered as if there were no such bucket."""

from __future__ import annotations

from natsobj.gateway.s3errors import S3Error

UPLOADS_PREFIX = "natsobj_multipart_"


def is_uploads_store(name: str) -> bool:
    return name.startswith(UPLOADS_PREFIX)


def refuse(bucket: str | None) -> None:
    """NoSuchBucket for a hidden store's name (as S3 answers a bucket that is not there)."""
    if bucket is not None and is_uploads_store(bucket):
        raise S3Error("NoSuchBucket", "The specified bucket does not exist", bucket=bucket)
