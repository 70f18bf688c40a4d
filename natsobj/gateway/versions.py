"""Object versions, which this gateway does not keep: every object of its buckets is the one
version S3 calls ``null`` (what ListObjectVersions answers), and a request naming any other
version is refused rather than carried out on the current object, which the caller did not
name (a DELETE of "an old version" would otherwise delete the current one)."""

from __future__ import annotations

from natsobj.gateway.s3errors import S3Error

NULL = "null"
"""The version id of every object of a bucket without versioning: its current one."""


def refuse(version: str | None) -> None:
    """NotImplemented for a version id other than ``null`` (``versionId`` on GET, HEAD and
    DELETE, ``VersionId`` in DeleteObjects)."""
    if version is not None and version != NULL:
        raise S3Error(
            "NotImplemented",
            "Object versions are not implemented by this gateway; only versionId=null (the"
            " current object of a bucket without versioning) can be named",
        )
