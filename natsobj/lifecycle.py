"""Per-object expiry and a bucket's lifecycle rules, on the server's per-message TTL (ADR-43).

A put with a TTL stamps its chunks and its meta record with ``Nats-TTL`` headers; the server
removes them when they expire, with no client running, and leaves a subject delete marker on
the meta subject, which watchers and ``changes()`` report as the object's delete. The chunks
outlive the record (``chunk_ttl``): a reader that found the record always finds its chunks,
and one still reading when they go gets ObjectNotFound, never a short or corrupt object.

Lifecycle rules (``LifecycleRule``: a glob and a TTL, or ``None`` for never) are kept in the
bucket's stream metadata under ``LIFECYCLE_METADATA_KEY``, so every client and face of
natsobj applies the same ones: the first rule whose glob matches a put's name gives its TTL,
unless the put names one itself. Pure values and arithmetic only; the async side is
``natsobj.aio.expiry``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property

from natsobj.matching import NameMatcher
from natsobj.model import ObjectInfo
from natsobj.parsing import NEVER, format_duration, parse_duration

LIFECYCLE_METADATA_KEY = "natsobj.lifecycle"
# The stream's subject_delete_marker_ttl when natsobj turns expiry on: how long the marker
# an expiry leaves stays (a watcher or cursor that catches up within it sees the delete).
# The server also raises every shorter message TTL to it, so it is the bucket's shortest TTL.
DEFAULT_DELETE_MARKER_TTL = timedelta(minutes=5)
# How much longer than the meta record its chunks live: the time a reader that found the
# record still has to read them. At least the marker TTL (see ``chunk_ttl``), at most this.
MAX_CHUNK_GRACE = 60
MIN_SERVER_VERSION = (2, 11)  # the first nats-server with per-message TTLs


@dataclass(frozen=True)
class LifecycleRule:
    """Objects whose names match ``pattern`` (a path-aware glob, ``natsobj.matching``)
    expire ``ttl`` after they are written; ``ttl=None`` keeps them (``reports/** -> never``),
    which also stops later rules from applying."""

    pattern: str
    ttl: timedelta | None = None

    def __post_init__(self) -> None:
        ttl = self.ttl
        if ttl is not None and not isinstance(ttl, timedelta):
            ttl = parse_duration(ttl, what=f"the TTL of rule {self.pattern!r}")
        if ttl is not None and ttl < timedelta(seconds=1):
            if ttl != timedelta(0):
                raise ValueError(f"a lifecycle TTL is at least 1s, not {ttl} ({self.pattern!r})")
            ttl = None
        object.__setattr__(self, "ttl", ttl)
        _ = self._matcher  # a bad pattern fails here, not at the first put

    @cached_property
    def _matcher(self) -> NameMatcher:
        return NameMatcher(self.pattern, "glob")

    def matches(self, name: str) -> bool:
        return self._matcher.matches(name)

    @classmethod
    def parse(cls, text: str) -> LifecycleRule:
        """``tmp/**=7d`` or ``reports/**=never``: the CLI's form (the last ``=`` splits)."""
        pattern, sep, ttl = text.rpartition("=")
        if not sep or not pattern.strip():
            raise ValueError(f"a lifecycle rule is GLOB=DURATION (tmp/**=7d), not {text!r}")
        ttl = ttl.strip()
        return cls(pattern.strip(), None if ttl.lower() == NEVER else parse_duration(ttl))

    def __str__(self) -> str:
        return f"{self.pattern}={format_duration(self.ttl) if self.ttl else NEVER}"

    def to_json(self) -> dict[str, object]:
        return {"pattern": self.pattern, "ttl": self.ttl.total_seconds() if self.ttl else None}


def encode_rules(rules: Iterable[LifecycleRule]) -> str:
    """The stream-metadata value (metadata values are strings): a JSON list, in order."""
    return json.dumps([rule.to_json() for rule in rules], separators=(",", ":"))


def decode_rules(metadata: Mapping[str, str] | None) -> list[LifecycleRule]:
    """The rules a stream's metadata holds ([] when none). A value natsobj did not write is
    refused rather than half-read: guessing could expire what a rule meant to keep."""
    text = (metadata or {}).get(LIFECYCLE_METADATA_KEY)
    if not text:
        return []
    try:
        rows = json.loads(text)
        return [LifecycleRule(row["pattern"], _ttl_of_row(row.get("ttl"))) for row in rows]
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(
            f"the bucket's lifecycle rules ({LIFECYCLE_METADATA_KEY} in its stream metadata)"
            f" cannot be read: {exc}"
        ) from exc


def _ttl_of_row(value: object) -> timedelta | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"a rule's ttl is seconds or null, not {value!r}")
    return timedelta(seconds=value)


def coerce_ttl(ttl: float | timedelta | None) -> timedelta | None:
    """A put's ``ttl=`` as a timedelta: None (the bucket's rules decide), zero (never, rules
    or not) or at least a second (the server's granularity)."""
    if ttl is None:
        return None
    value = ttl if isinstance(ttl, timedelta) else timedelta(seconds=float(ttl))
    if value < timedelta(0) or timedelta(0) < value < timedelta(seconds=1):
        raise ValueError(f"ttl is 0 (never expire) or at least 1 second, not {ttl!r}")
    return value


def resolve_ttl(
    explicit: float | timedelta | None, rules: Iterable[LifecycleRule], name: str
) -> timedelta | None:
    """The TTL a put of ``name`` gets: its own ``ttl=`` if given (0: never), else the first
    matching rule's, else none."""
    ttl = coerce_ttl(explicit)
    if ttl is not None:
        return ttl or None
    rule = next((rule for rule in rules if rule.matches(name)), None)
    return rule.ttl if rule is not None else None


def whole_seconds(ttl: timedelta, marker_ttl: timedelta | None) -> int:
    """A TTL as the server keeps it: whole seconds, rounded up, at least the bucket's marker
    TTL (the server raises shorter ones; raising them here keeps ``chunk_ttl`` right)."""
    floor = max(1, math.ceil(marker_ttl.total_seconds())) if marker_ttl else 1
    return max(floor, math.ceil(ttl.total_seconds()))


def chunk_grace(meta_seconds: int, marker_ttl: timedelta | None) -> int:
    """How long the chunks outlive the record. At least the marker TTL: a record restamped
    near its end (``update_meta``) is raised to that by the server and must still go first."""
    marker = math.ceil(marker_ttl.total_seconds()) if marker_ttl else 1
    return max(1, marker, min(MAX_CHUNK_GRACE, meta_seconds))


def chunk_ttl(meta_seconds: int, marker_ttl: timedelta | None) -> int:
    """The TTL of a put's chunks for a record that lives ``meta_seconds``."""
    return meta_seconds + chunk_grace(meta_seconds, marker_ttl)


def meta_ttl(meta_seconds: int, elapsed: float, marker_ttl: timedelta | None) -> int | None:
    """The TTL of the record that completes a put whose first chunk went out ``elapsed``
    seconds ago: the object's clock started with that chunk, so the record expires within
    half a second of ``meta_seconds`` after it, at least half a second before the first
    chunk (whose grace is a second or more). None when the put took so long that the
    object would be born expired."""
    remaining = math.floor(meta_seconds - elapsed + 0.5)
    if remaining < 1:
        return None
    return whole_seconds(timedelta(seconds=remaining), marker_ttl)


def ttl_of_header(value: str | None) -> timedelta | None:
    """A stored ``Nats-TTL`` header (whole seconds, or a Go duration where the server wrote
    it), None when absent, "never" or unreadable."""
    if not value or value.strip().lower() == NEVER:
        return None
    try:
        ttl = parse_duration(value)
    except ValueError:
        return None
    return ttl if ttl > timedelta(0) else None


def expires_at(stored: datetime | None, ttl_header: str | None) -> datetime | None:
    """When a message stored at ``stored`` with this ``Nats-TTL`` header expires."""
    ttl = ttl_of_header(ttl_header)
    return stored + ttl if stored is not None and ttl is not None else None


def expired_record(
    name: str, bucket: str, *, mtime: datetime | None, sequence: int | None
) -> ObjectInfo:
    """What a subject delete marker (a meta-subject message with a ``Nats-Marker-Reason``
    header, which the server leaves when the record expired or the bucket's max age removed
    it) stands for: the object's delete by expiry, as watchers,
    ``changes()`` and ``get_info(include_deleted=True)`` report it."""
    return ObjectInfo(name, bucket, deleted=True, mtime=mtime, sequence=sequence, expired=True)


# The name index keeps meta records, not their headers; an expiring record is kept with its
# expiry as one more JSON field (other clients never see it: it is local to this machine).
KEPT_EXPIRES_FIELD = "natsobj_expires_us"
_KEPT_EXPIRES = b',"' + KEPT_EXPIRES_FIELD.encode() + b'":'


def record_to_keep(data: bytes, expires: datetime | None) -> bytes:
    """A meta record as the name index keeps it: with ``expires`` (microseconds since the
    epoch) in ``KEPT_EXPIRES_FIELD`` when it has one."""
    if expires is None or not data.endswith(b"}") or data.endswith(b"{}"):
        return data
    micros = int(expires.timestamp() * 1_000_000)
    return data[:-1] + _KEPT_EXPIRES + str(micros).encode() + b"}"


def kept_expires(doc: bytes | Mapping[str, object]) -> datetime | None:
    """The expiry ``record_to_keep`` added to a kept record (parsed or raw), or None."""
    if isinstance(doc, bytes | bytearray):
        at = doc.rfind(_KEPT_EXPIRES)
        if at == -1:
            return None
        digits = doc[at + len(_KEPT_EXPIRES) : -1]
        micros: object = int(digits) if digits.isdigit() else None
    else:
        micros = doc.get(KEPT_EXPIRES_FIELD)
    if type(micros) is not int:
        return None
    return datetime.fromtimestamp(micros / 1_000_000, tz=UTC)


def server_supports_ttl(version: tuple[int, int] | None) -> bool:
    """Whether a server of this (major, minor) version has per-message TTLs (2.11+)."""
    return version is not None and version >= MIN_SERVER_VERSION


__all__ = [
    "DEFAULT_DELETE_MARKER_TTL",
    "LIFECYCLE_METADATA_KEY",
    "LifecycleRule",
    "coerce_ttl",
    "decode_rules",
    "encode_rules",
    "expired_record",
    "expires_at",
    "resolve_ttl",
    "ttl_of_header",
]
