"""What a change feed reports of a versioned bucket besides records: locks set, changed or
lifted (ADR-20's "Event Notifications (add/delete/lock)") and versions removed for good.

``ObjectStore.changes`` and ``watch`` yield these, in stream order among the ``ObjectInfo``
records, only when asked (``include_version_events``): a feed that starts runs for new
objects must not start one for a lock. Each names its bucket, object and version, and the
stream sequence a ``ChangeCursor`` resumes after."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from natsobj.model import ObjectInfo
from natsobj.versioning import VersionLock


@dataclass(frozen=True)
class LockEvent:
    """A version's lock record as it was written: ``lock`` is its new state (no retention and
    no hold: the version was unlocked). A record that cannot be read (any writer of the bucket
    can write one) has ``lock`` None and ``problem`` saying why: the version is held as locked
    (``natsobj.aio.locks``), and the feed goes on."""

    bucket: str
    name: str
    version_id: str
    lock: VersionLock | None
    sequence: int
    mtime: datetime
    problem: str = ""

    @property
    def unreadable(self) -> bool:
        return self.lock is None

    @property
    def unlocked(self) -> bool:
        """Whether the record lifts every retention and hold (S3's unlock)."""
        return self.lock is not None and self.lock.retain_until is None and not self.lock.legal_hold

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe dict, as ``ObjectInfo.as_dict`` is for a record."""
        return {
            **_common(self),
            "event": "unlock" if self.unlocked else "lock",
            "lock": json.loads(self.lock.encode()) if self.lock is not None else None,
            "problem": self.problem,
        }


@dataclass(frozen=True)
class VersionRemoved:
    """A version removed for good (``delete(name, version=)``, or a lifecycle rule): reported
    once, where its kept record was replaced by the marker of its removal."""

    bucket: str
    name: str
    version_id: str
    sequence: int
    mtime: datetime

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe dict, as ``ObjectInfo.as_dict`` is for a record."""
        return {**_common(self), "event": "version_removed"}


def _common(event: LockEvent | VersionRemoved) -> dict[str, Any]:
    return {
        "bucket": event.bucket,
        "name": event.name,
        "version_id": event.version_id,
        "sequence": event.sequence,
        "mtime": event.mtime.isoformat(),
    }


VersionEvent = LockEvent | VersionRemoved
Change = ObjectInfo | LockEvent | VersionRemoved
"""What a change feed yields: a record (a put, a delete, a delete marker, an expiry), or, when
asked for, a ``VersionEvent``."""

__all__ = ["Change", "LockEvent", "VersionEvent", "VersionRemoved"]
