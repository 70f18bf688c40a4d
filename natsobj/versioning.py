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
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from natsobj.model import DELETE_MARKER_HEADER, ObjectInfo

VERSIONING_METADATA_KEY = "natsobj.versioning"
# The stream's last sequence when versioning was suspended: a version written before it (while
# versions were kept) is still kept when a suspended bucket's write replaces it
SUSPENDED_AT_METADATA_KEY = "natsobj.versioning.suspended_at"
# Object Lock turned on for the bucket ("Enabled"): its versioning can no longer be suspended
OBJECT_LOCK_METADATA_KEY = "natsobj.versioning.object_lock"
# The bucket's default retention (``DefaultRetention``), applied to every version natsobj writes
DEFAULT_RETENTION_METADATA_KEY = "natsobj.versioning.default_retention"
# On a kept version's record: when the version was written and its meta sequence then (the
# record is published later, when it is replaced, so the message's own are not the version's)
VERSION_TIME = "Natsobj-Version-Time"
VERSION_SEQUENCE = "Natsobj-Version-Sequence"
# On what is left on a version's record subject once the version is removed for good (a
# rollup of the subject that replaces its record): the change feed's trace of the removal
VERSION_REMOVED = "Natsobj-Version-Removed"


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


class LockMode(enum.Enum):
    """S3 Object Lock's retention modes: ``GOVERNANCE`` may be shortened or lifted by a caller
    allowed to bypass it; ``COMPLIANCE`` by no one until it ends."""

    GOVERNANCE = "GOVERNANCE"
    COMPLIANCE = "COMPLIANCE"


@dataclass(frozen=True)
class VersionLock:
    """The lock of one version (ADR-20's "Locking", S3's retention and legal hold): a
    retention until ``retain_until`` in ``mode``, and a legal hold, which holds until lifted.
    A version is locked while either holds; a locked version cannot be removed, and its
    record not changed. The default, no retention and no hold, locks nothing."""

    mode: LockMode | None = None
    retain_until: datetime | None = None
    legal_hold: bool = False

    def retained(self, now: datetime) -> bool:
        return self.retain_until is not None and self.retain_until > now

    def holds(self, now: datetime) -> bool:
        return self.legal_hold or self.retained(now)

    def removal_refused(self, now: datetime, *, bypass_governance: bool) -> str | None:
        """Why the version cannot be removed now, or None when it can."""
        if self.legal_hold:
            return "it is under a legal hold"
        governance = self.mode is not LockMode.COMPLIANCE
        if self.retained(now) and not (governance and bypass_governance):
            mode = self.mode.value.lower() if self.mode else "governance"
            return f"it is retained in {mode} mode until {self.retain_until:%Y-%m-%d %H:%M:%S}Z"
        return None

    def change_refused(
        self, new: VersionLock, now: datetime, *, bypass_governance: bool
    ) -> str | None:
        """Why the retention cannot become ``new``'s now (S3's rules: a compliance retention
        is never shortened, lifted or made governance; a governance one only with
        ``bypass_governance``), or None. A legal hold may always be set and lifted."""
        if not self.retained(now):
            return None
        shorter = new.retain_until is None or (
            self.retain_until is not None and new.retain_until < self.retain_until
        )
        weaker = shorter or new.mode is not self.mode
        if not weaker:
            return None
        if self.mode is LockMode.COMPLIANCE:
            return "a compliance-mode retention cannot be shortened, lifted or changed"
        if not bypass_governance:
            return "a governance-mode retention is shortened or lifted only with bypass_governance"
        return None

    def encode(self) -> bytes:
        return json.dumps(
            {
                "mode": self.mode.value if self.mode else None,
                "retain_until": self.retain_until.isoformat() if self.retain_until else None,
                "legal_hold": self.legal_hold,
            }
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> VersionLock:
        """A lock record read back (untrusted input: ValueError when it is not one)."""
        try:
            doc: Any = json.loads(data)
        except RecursionError:
            raise ValueError("a lock record nests too deeply to be one") from None
        if not isinstance(doc, dict):
            raise ValueError("a lock record is a JSON object")
        mode, until, hold = doc.get("mode"), doc.get("retain_until"), doc.get("legal_hold")
        if not isinstance(hold, bool) or not isinstance(until, str | None):
            raise ValueError("a lock record's legal_hold is a bool and retain_until a time")
        retain_until = datetime.fromisoformat(until) if until else None
        if retain_until is not None and retain_until.tzinfo is None:
            raise ValueError("a lock record's retain_until has no time zone")
        return cls(LockMode(mode) if mode is not None else None, retain_until, hold)

    def with_changes(
        self,
        *,
        mode: LockMode | str | None = None,
        retain_until: datetime | None = None,
        legal_hold: bool | None = None,
        clear_retention: bool = False,
    ) -> VersionLock:
        """This lock with the given parts replaced (``clear_retention``: no retention)."""
        lock = self
        if clear_retention:
            lock = replace(lock, mode=None, retain_until=None)
        if mode is not None or retain_until is not None:
            if mode is None or retain_until is None:
                raise ValueError("a retention needs both a mode and a retain-until time")
            if retain_until.tzinfo is None:
                raise ValueError("retain_until must be an aware datetime (UTC)")
            lock = replace(lock, mode=LockMode(mode), retain_until=retain_until)
        if legal_hold is not None:
            lock = replace(lock, legal_hold=legal_hold)
        return lock


@dataclass(frozen=True)
class DefaultRetention:
    """A bucket's default retention (S3's ``DefaultRetention``): every version a natsobj
    write makes is retained in ``mode`` for ``days`` from its write."""

    mode: LockMode
    days: int

    def lock_from(self, now: datetime) -> VersionLock:
        return VersionLock(self.mode, now + timedelta(days=self.days))

    def encode(self) -> str:
        return json.dumps({"mode": self.mode.value, "days": self.days})

    @classmethod
    def decode(cls, value: str) -> DefaultRetention:
        doc: Any = json.loads(value)
        days = doc.get("days") if isinstance(doc, dict) else None
        if not isinstance(days, int) or isinstance(days, bool) or days < 1:
            raise ValueError(
                f"a default retention's days is a whole number of at least 1: {value!r}"
            )
        return cls(LockMode(doc.get("mode")), days)


def utcnow() -> datetime:
    return datetime.now(UTC)


__all__ = [
    "DEFAULT_RETENTION_METADATA_KEY",
    "DELETE_MARKER_HEADER",
    "OBJECT_LOCK_METADATA_KEY",
    "SUSPENDED_AT_METADATA_KEY",
    "VERSIONING_METADATA_KEY",
    "VERSION_REMOVED",
    "DefaultRetention",
    "LockMode",
    "ObjectVersion",
    "VersionLock",
    "Versioning",
]
