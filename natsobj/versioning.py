"""Object versions (ADR-20's "Versioning / Revisions", S3's bucket versioning), as values.

A bucket is unversioned (ADR-20's behaviour, byte for byte: a put purges the version it
replaces), or versioned: ``ENABLED`` keeps every version a natsobj write replaces, and
``SUSPENDED`` keeps those written before the suspension but none written after it. The state
is the bucket's stream metadata (``VERSIONING_METADATA_KEY``), read by puts as the lifecycle
rules are.

A version's id is its nuid: the token of the chunk subject its bytes are on (a delete marker,
which has none, gets one of its own). The current version is the name's meta record, as
every client reads it; a version natsobj keeps has a record of its own on
``natsobj.names.version_subject``, under the chunk subjects, where no ADR-20 client looks
(docs/versioning.md says why that keeps their view intact)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from natsobj.model import ObjectInfo

VERSIONING_METADATA_KEY = "natsobj.versioning"
# The stream's last sequence when versioning was suspended: a version written before it (while
# versions were kept) is still kept when a suspended bucket's write replaces it
SUSPENDED_AT_METADATA_KEY = "natsobj.versioning.suspended_at"
# On a kept version's record: when the version was written and its meta sequence then (the
# record is published later, when it is replaced, so the message's own are not the version's)
VERSION_TIME = "Natsobj-Version-Time"
VERSION_SEQUENCE = "Natsobj-Version-Sequence"
# An object header of a versioned delete's tombstone: a delete marker, a version of its own,
# rather than the plain tombstone ADR-20 clients leave (which is no version)
DELETE_MARKER_HEADER = "Natsobj-Delete-Marker"


class Versioning(enum.Enum):
    """A bucket's versioning, in S3's words (GetBucketVersioning's ``Status``)."""

    UNVERSIONED = ""
    ENABLED = "Enabled"
    SUSPENDED = "Suspended"

    @classmethod
    def parse(cls, value: str | Versioning) -> Versioning:
        """A state from its S3 word (any case); ValueError naming the words otherwise."""
        if isinstance(value, Versioning):
            return value
        for state in cls:
            if state.value.lower() == str(value).strip().lower():
                return state
        words = ", ".join(repr(state.value) for state in cls if state.value)
        raise ValueError(f"versioning must be one of {words}, not {value!r}")


def is_delete_marker(info: ObjectInfo) -> bool:
    """Whether a tombstone is a versioned delete's marker (a version), not a plain delete."""
    return info.deleted and DELETE_MARKER_HEADER in info.headers


@dataclass(frozen=True)
class ObjectVersion:
    """One version of a name, as ``ObjectStore.versions`` lists it (S3's ListObjectVersions
    entry): the record (``info``; ``info.mtime`` and ``info.sequence`` are the version's own),
    whether it is the name's current one, a delete marker, or ``lost``: a kept version whose
    chunks another client purged (an ADR-20 client's overwrite purges what it replaces),
    listed so that it is known gone, and never read."""

    info: ObjectInfo
    is_latest: bool
    lost: bool = False

    @property
    def version_id(self) -> str:
        return self.info.nuid

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def delete_marker(self) -> bool:
        return self.info.deleted

    @property
    def mtime(self) -> datetime | None:
        return self.info.mtime


__all__ = [
    "DELETE_MARKER_HEADER",
    "SUSPENDED_AT_METADATA_KEY",
    "VERSIONING_METADATA_KEY",
    "ObjectVersion",
    "Versioning",
    "is_delete_marker",
]
