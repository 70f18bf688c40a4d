"""Object versions on the fsspec face (docs/versioning.md), in s3fs's words: a filesystem made
with ``version_aware=True`` takes a ``version_id`` keyword and paths ``bucket/key?versionId=ID``,
lists versions (``ls(path, versions=True)``, ``object_version_info``), and one without it
refuses a version as s3fs's does. The options are rows of ``natsobj.operation_options``
(``version``, ``version_aware``, ``list.versions``), read by their one parser.

Unlike s3fs, a filesystem that is not version-aware reads ``?versionId=`` as part of the name
(natsobj names may hold ``?``: ``natsobj.paths``), never as a version it then ignores, and a
path naming a version is never written to or deleted as the current object: no call on one
version serves or changes another's bytes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from natsobj.operation_options import Face, resolve
from natsobj.versioning import ObjectVersion

# The "version" rows a filesystem takes when it is made; ``version`` is a per-call keyword
VERSION_OPTIONS = ("version_aware",)


def version_aware_option(options: dict[str, Any]) -> bool:
    """``version_aware``, taken out of a filesystem's options and read by the table's row."""
    given = {name: options.pop(name) for name in VERSION_OPTIONS if name in options}
    aware: bool = resolve(Face.FSSPEC, "version", given)["version_aware"]
    return aware


def list_versions_option(value: Any) -> bool:
    """``ls``'s ``versions`` keyword, read by the ``list.versions`` row (``"true"`` too)."""
    every: bool = resolve(Face.FSSPEC, "list", {"versions": value})["versions"]
    return every


@dataclass(frozen=True)
class VersionedPath:
    """A path split as a call takes it: bucket, key, and the version named (None: current)."""

    QUERY = "?versionId="

    bucket: str
    key: str
    version: str | None

    @property
    def path(self) -> str:
        return f"{self.bucket}/{self.key}" if self.key else self.bucket

    @property
    def shown(self) -> str:
        """The path as an error shows it, the version named included."""
        return self.path + (f"{self.QUERY}{self.version}" if self.version else "")

    def written(self) -> tuple[str, str]:
        """``(bucket, key)`` of a write, which makes a new version: naming one is refused."""
        if self.version is not None:
            raise ValueError(
                f"nats://{self.shown}: a write makes a new version and cannot name one;"
                f" write to nats://{self.path}"
            )
        return self.bucket, self.key


def split_version(path: str, version_id: Any, *, aware: bool) -> VersionedPath:
    """``path`` (protocol stripped) and a call's ``version_id`` as a ``VersionedPath``: on a
    version-aware filesystem a ``?versionId=ID`` ending the path names a version, as on s3fs,
    and it and ``version_id`` must agree; on any other ``version_id`` is refused (s3fs's
    ValueError) and the path is the name as written. ``null`` is the current version."""
    bucket, _, key = path.strip("/").partition("/")
    if not aware:
        if version_id is not None:
            raise ValueError(
                "version_id cannot be specified if the filesystem is not version aware"
            )
        return VersionedPath(bucket, key, None)
    key, query, in_path = key.partition(VersionedPath.QUERY)
    where = f"nats://{bucket}/{key}"
    named = {
        resolve(Face.FSSPEC, "version", {"version": given}, where=where)["version"]
        for given in ((in_path if query else None), version_id)
        if given is not None
    }
    if len(named) > 1:
        raise ValueError(f"{where}: the path and version_id name two versions: {sorted(named)}")
    return VersionedPath(bucket, key, named.pop() if named else None)


def entry_of_version(version: ObjectVersion, entry: dict[str, Any]) -> dict[str, Any]:
    """A file entry of ``ls(path, versions=True)``: named ``bucket/key?versionId=ID``, as
    s3fs names it, so each version is a path a version-aware call reads."""
    return {
        **entry,
        "name": f"{entry['name']}{VersionedPath.QUERY}{version.version_id}",
        "IsLatest": version.is_latest,
        "lost": version.lost,
    }


def version_info_entry(version: ObjectVersion) -> dict[str, Any]:
    """One entry of ``object_version_info``, in S3's ListObjectVersions words."""
    return {
        "Key": version.name,
        "VersionId": version.version_id,
        "IsLatest": version.is_latest,
        "LastModified": version.mtime,
        "Size": version.info.size,
        "Lost": version.lost,
    }
