"""Per-object expiry and a bucket's lifecycle rules, on the server's per-message TTL (ADR-43).

A put with a TTL stamps its chunks and its meta record with ``Nats-TTL`` headers; the server
removes them when they expire, with no client running, and leaves a subject delete marker on
the meta subject, which watchers and ``changes()`` report as the object's delete. The chunks
outlive the record (``chunk_ttl``): a reader that found the record always finds its chunks,
and one still reading when they go gets ObjectNotFound, never a short or corrupt object.

Lifecycle rules (``LifecycleRule``: a glob and a TTL, or ``None`` for never) are kept in the
bucket's stream metadata under ``LIFECYCLE_METADATA_KEY``, so every client and face of
natsobj applies the same ones: the first rule whose glob matches a put's name gives its TTL,
unless the put names one itself. A rule may also govern the versions a versioned bucket keeps
(S3's NoncurrentVersionExpiration and ExpiredObjectDeleteMarker): those are removed by a sweep,
``natsobj.aio.version_expiry``, since a kept version's chunks were written before anyone knew
when it would stop being current. Pure values and arithmetic only; the async side is
``natsobj.aio.expiry``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property

from natsobj.errors import BadLifecycleRule
from natsobj.matching import NameMatcher
from natsobj.model import ObjectInfo
from natsobj.parsing import NEVER, format_duration, parse_count, parse_duration, parse_ttl
from natsobj.wire import MSG_TTL

LIFECYCLE_METADATA_KEY = "natsobj.lifecycle"
# The stream's subject_delete_marker_ttl when natsobj turns expiry on: how long the marker
# an expiry leaves stays (a watcher or cursor that catches up within it sees the delete).
# The server also raises every shorter message TTL to it, so it is the bucket's shortest TTL.
DEFAULT_DELETE_MARKER_TTL = timedelta(minutes=5)
# How much longer than the meta record its chunks live: the time a reader that found the
# record still has to read them. At least the marker TTL (see ``chunk_ttl``), at most this.
MAX_CHUNK_GRACE = 60
MIN_SERVER_VERSION = (2, 11)  # the first nats-server with per-message TTLs
# The longest TTL a rule, a put or a stored header may give (longer is what "never" is for):
# an expiry past it could not be a date, and one stored header past it broke whole listings.
MAX_TTL = timedelta(days=36525)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LifecycleRule:
    """Objects whose names match ``pattern`` (a path-aware glob, ``natsobj.matching``)
    expire ``ttl`` after they are written; ``ttl=None`` keeps them (``reports/** -> never``),
    which also stops later rules from applying.

    A rule read from a bucket that cannot be used (``problem`` says why: its glob or its TTL)
    is kept in its place rather than failing the bucket: a glob that is none matches no name;
    a put its glob matches is refused (``BadLifecycleRule``), as guessing its TTL could expire
    what it meant to keep. A rule made here is checked and refused (``BadLifecycleRule``).

    The versions a versioned bucket keeps (S3's names): a noncurrent version is removed
    ``noncurrent_days`` after it stopped being current (NoncurrentDays), but never one of the
    ``newer_noncurrent`` newest noncurrent versions of its name (NewerNoncurrentVersions;
    alone, it keeps those and removes the rest); ``expired_delete_markers`` removes a delete
    marker left with no version under it (ExpiredObjectDeleteMarker). A rule with any of these
    and no ``ttl`` says nothing about current versions: puts pass over it to the next rule."""

    pattern: str
    ttl: timedelta | None = None
    problem: str = ""
    _: KW_ONLY
    noncurrent_days: int | None = None
    newer_noncurrent: int | None = None
    expired_delete_markers: bool = False

    def __post_init__(self) -> None:
        if self.problem:
            return
        try:
            ttl = _rule_ttl(self.ttl, self.pattern)
            _ = self._matcher  # a bad pattern fails here, not at the first put
            _check_version_actions(self)
        except (ValueError, TypeError, OverflowError) as exc:
            raise BadLifecycleRule(f"lifecycle rule {self.pattern!r}: {exc}") from None
        object.__setattr__(self, "ttl", ttl)

    @property
    def governs_versions(self) -> bool:
        """Whether the rule says what happens to kept versions (an unusable rule may have
        meant to: the sweep leaves the names it matches alone)."""
        return bool(
            self.problem
            or self.noncurrent_days is not None
            or self.newer_noncurrent is not None
            or self.expired_delete_markers
        )

    @property
    def governs_current(self) -> bool:
        """Whether puts take their TTL from the rule: every rule but one that only governs
        versions (an unusable rule may have given one: the puts it matches are refused)."""
        return bool(self.problem) or self.ttl is not None or not self.governs_versions

    def expires_noncurrent(self, newer: int, since: datetime | None, now: datetime) -> bool:
        """Whether a noncurrent version with ``newer`` noncurrent versions above it, noncurrent
        since ``since`` (None: unknown, so never by age), is removed at ``now``."""
        if self.problem or (self.noncurrent_days is None and self.newer_noncurrent is None):
            return False
        if self.newer_noncurrent is not None and newer < self.newer_noncurrent:
            return False
        if self.noncurrent_days is None:
            return True
        return since is not None and now - since >= timedelta(days=self.noncurrent_days)

    @classmethod
    def unusable(cls, pattern: object, problem: str) -> LifecycleRule:
        """A rule a bucket holds that cannot be used, kept to be shown and to refuse puts."""
        return cls(pattern if isinstance(pattern, str) else repr(pattern), None, problem)

    @cached_property
    def _matcher(self) -> NameMatcher | None:
        try:
            return NameMatcher(self.pattern, "glob")
        except ValueError:
            if self.problem:
                return None  # a glob that is none: it names no object
            raise

    def matches(self, name: str) -> bool:
        matcher = self._matcher
        return matcher is not None and matcher.matches(name)

    def refuse(self, bucket: str | None, name: str) -> BadLifecycleRule:
        """The error of a put this unusable rule matches."""
        return BadLifecycleRule(
            f"its lifecycle rule {self.pattern!r} cannot be used ({self.problem}), so its"
            " expiry is unknown",
            bucket=bucket,
            name=name,
        )

    @classmethod
    def parse(cls, text: str) -> LifecycleRule:
        """``tmp/**=7d`` or ``reports/**=never``: the CLI's form (the last ``=`` splits). After
        the ``=``, comma-separated actions: a duration or ``never`` (the TTL), and for kept
        versions ``noncurrent:30d``, ``newer-noncurrent:3`` and ``expired-markers``."""
        pattern, sep, actions = text.rpartition("=")
        if not sep or not pattern.strip() or not actions.strip():
            raise BadLifecycleRule(f"a lifecycle rule is GLOB=DURATION (tmp/**=7d), not {text!r}")
        ttl: object = None
        never = False
        versions: dict[str, object] = {}
        for action in (part.strip() for part in actions.split(",")):
            word, _colon, value = action.partition(":")
            key = _VERSION_ACTIONS.get(word.lower())
            if key is None:
                never = action.lower() == NEVER
                ttl = None if never else action
            elif key == "expired_delete_markers":
                versions[key] = True
            else:
                versions[key] = value.strip()
        try:
            if never and versions:
                raise ValueError(
                    "'never' with version actions would be read as no TTL: give"
                    f" {pattern.strip()}=never as a rule of its own, before this one"
                )
            if "noncurrent_days" in versions:
                days = str(versions["noncurrent_days"])
                versions["noncurrent_days"] = _whole_days(
                    timedelta(days=int(days))
                    if days.isdigit()
                    else parse_duration(days, what="noncurrent:")
                )
            if "newer_noncurrent" in versions:
                versions["newer_noncurrent"] = parse_count(
                    versions["newer_noncurrent"], what="newer-noncurrent:"
                )
        except ValueError as exc:
            raise BadLifecycleRule(f"lifecycle rule {pattern.strip()!r}: {exc}") from None
        return cls(pattern.strip(), ttl, **versions)  # type: ignore[arg-type]

    def __str__(self) -> str:
        if self.problem:
            return f"{self.pattern} (unusable: {self.problem})"
        actions = []
        if self.governs_current:
            actions.append(format_duration(self.ttl) if self.ttl else NEVER)
        if self.noncurrent_days is not None:
            actions.append(f"noncurrent:{self.noncurrent_days}d")
        if self.newer_noncurrent is not None:
            actions.append(f"newer-noncurrent:{self.newer_noncurrent}")
        if self.expired_delete_markers:
            actions.append("expired-markers")
        return f"{self.pattern}={','.join(actions)}"

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {"pattern": self.pattern}
        if self.governs_current:
            doc["ttl"] = self.ttl.total_seconds() if self.ttl else None
        if self.noncurrent_days is not None:
            doc["noncurrent_days"] = self.noncurrent_days
        if self.newer_noncurrent is not None:
            doc["newer_noncurrent_versions"] = self.newer_noncurrent
        if self.expired_delete_markers:
            doc["expired_delete_markers"] = True
        if self.problem:
            doc["problem"] = self.problem
        return doc


# The CLI's words for a rule's version actions, and the field each sets
_VERSION_ACTIONS = {
    "noncurrent": "noncurrent_days",
    "newer-noncurrent": "newer_noncurrent",
    "expired-markers": "expired_delete_markers",
}


def _whole_days(value: timedelta) -> int:
    """A duration of whole days (S3 counts NoncurrentDays in days; a bare number is days)."""
    if value.total_seconds() % 86400 or value < timedelta(days=1):
        raise ValueError(f"noncurrent: is a whole number of days (30d), not {value}")
    return value.days


def _check_version_actions(rule: LifecycleRule) -> None:
    """The version actions are whole numbers of at least 1 (days no longer than ``MAX_TTL``)
    and a bool: a rule made here or read from a bucket is refused otherwise."""
    for what, value in (
        ("noncurrent_days", rule.noncurrent_days),
        ("newer_noncurrent_versions", rule.newer_noncurrent),
    ):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"its {what} is a whole number of at least 1, not {value!r}")
    if rule.noncurrent_days is not None and rule.noncurrent_days > MAX_TTL.days:
        raise ValueError(f"its noncurrent_days is at most {MAX_TTL.days}")
    if not isinstance(rule.expired_delete_markers, bool):
        raise ValueError("its expired_delete_markers is true or false")


def _rule_ttl(value: object, pattern: str) -> timedelta | None:
    """A rule's TTL: None or zero keep (never), else between 1s and ``MAX_TTL``."""
    if value is None:
        return None
    what = f"a lifecycle TTL ({pattern!r})"
    try:
        ttl = parse_duration(value, what=what)
    except OverflowError:  # infinite, or more seconds than a timedelta holds
        raise ValueError(
            f"{what} must be at least 1 second and at most {MAX_TTL.days} days, not {value!r}"
        ) from None
    return None if ttl == timedelta(0) else checked_ttl(ttl, what)


def checked_ttl(ttl: timedelta, what: str) -> timedelta:
    """``ttl`` when a TTL can be it: at least the server's second, at most ``MAX_TTL``."""
    if not timedelta(seconds=1) <= ttl <= MAX_TTL:
        raise ValueError(
            f"{what} must be at least 1 second and at most {MAX_TTL.days} days, not {ttl}"
        )
    return ttl


def encode_rules(rules: Iterable[LifecycleRule]) -> str:
    """The stream-metadata value (metadata values are strings): a JSON list, in order. An
    unusable rule is refused: kept again, it would stay unusable."""
    rules = list(rules)
    for rule in rules:
        if rule.problem:
            raise BadLifecycleRule(f"lifecycle rule {rule.pattern!r}: {rule.problem}")
    return json.dumps([rule.to_json() for rule in rules], separators=(",", ":"))


def decode_rules(metadata: Mapping[str, str] | None) -> list[LifecycleRule]:
    """The rules a stream's metadata holds ([] when none), in order. A row that is not a
    usable rule is kept as ``LifecycleRule.unusable`` in its place, so the others still
    apply; a value that is not a list of rows at all is refused rather than half-read
    (ValueError): guessing could expire what a rule meant to keep."""
    text = (metadata or {}).get(LIFECYCLE_METADATA_KEY)
    if not text:
        return []
    try:
        rows = json.loads(text)
    except ValueError as exc:
        rows = exc
    if not isinstance(rows, list):
        raise ValueError(
            f"the bucket's lifecycle rules ({LIFECYCLE_METADATA_KEY} in its stream metadata)"
            f" cannot be read: {rows if isinstance(rows, ValueError) else 'not a list'}"
        )
    return [_rule_of_row(row) for row in rows]


def _rule_of_row(row: object) -> LifecycleRule:
    if not isinstance(row, dict):
        return LifecycleRule.unusable(row, "not a pattern and a ttl")
    pattern, ttl = row.get("pattern"), row.get("ttl")
    if not isinstance(pattern, str) or not pattern:
        return LifecycleRule.unusable(pattern, "its pattern is not a glob")
    try:
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float)):
            raise BadLifecycleRule(f"its ttl is seconds or null, not {ttl!r}")
        return LifecycleRule(
            pattern,
            ttl,  # type: ignore[arg-type]  # read in __post_init__
            noncurrent_days=row.get("noncurrent_days"),
            newer_noncurrent=row.get("newer_noncurrent_versions"),
            expired_delete_markers=row.get("expired_delete_markers", False),
        )
    except BadLifecycleRule as exc:
        return LifecycleRule.unusable(
            pattern, exc.message.removeprefix(f"lifecycle rule {pattern!r}: ")
        )


def coerce_ttl(ttl: object) -> timedelta | None:
    """A put's ``ttl=`` as every face gives it (seconds, a timedelta, ``2d``, ``never``:
    ``parsing.parse_ttl``) as a timedelta: None (the bucket's rules decide), zero (never,
    rules or not) or a TTL the server can keep (``checked_ttl``)."""
    if ttl is None:
        return None
    try:
        value = parse_ttl(ttl)
    except OverflowError:
        value = timedelta.max
    if value == timedelta(0):
        return value
    return checked_ttl(value, "ttl (0 or never: never expire)")


def resolve_ttl(
    explicit: timedelta | None,
    rules: Iterable[LifecycleRule],
    name: str,
    *,
    bucket: str | None = None,
) -> timedelta | None:
    """The TTL a put of ``name`` gets: its own ``ttl=`` if given (already ``coerce_ttl``'d
    where the face took it; 0: never), else the first matching rule's, else none;
    BadLifecycleRule when that rule is unusable."""
    if explicit is not None:
        return explicit or None
    rule = current_rule(rules, name)
    if rule is not None and rule.problem:
        raise rule.refuse(bucket, name)
    return rule.ttl if rule is not None else None


def current_rule(rules: Iterable[LifecycleRule], name: str) -> LifecycleRule | None:
    """The rule that gives a put of ``name`` its TTL: the first matching one that governs
    current versions (``LifecycleRule.governs_current``)."""
    return next((rule for rule in rules if rule.governs_current and rule.matches(name)), None)


def version_rule(rules: Iterable[LifecycleRule], name: str) -> LifecycleRule | None:
    """The rule that governs the kept versions of ``name``: the first matching one that
    governs versions (``LifecycleRule.governs_versions``)."""
    return next((rule for rule in rules if rule.governs_versions and rule.matches(name)), None)


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
    it), None when absent, "never" or zero; ValueError when it is no TTL a put could give
    (any publisher can write one: it is checked like a record field)."""
    if not value or value.strip().lower() == NEVER:
        return None
    try:
        ttl = parse_duration(value, what=f"a {MSG_TTL} header")
    except OverflowError:
        raise ValueError(f"a {MSG_TTL} header is a duration, not {value!r}") from None
    if ttl == timedelta(0):
        return None
    return checked_ttl(ttl, f"a {MSG_TTL} header")


def expires_at(
    stored: datetime | None, ttl_header: str | None, *, subject: str = ""
) -> datetime | None:
    """When a message stored at ``stored`` with this ``Nats-TTL`` header expires. An
    unusable header costs only this record its expiry: None (shown as none), with a warning
    naming the record's ``subject``, never an error for the listing or watch reading it."""
    try:
        ttl = ttl_of_header(ttl_header)
    except ValueError as exc:
        log.warning("%s: the record's expiry is unknown (listed without one): %s", subject, exc)
        return None
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
    epoch, or null) in ``KEPT_EXPIRES_FIELD`` as its last field, so a field of that name
    the publisher wrote into the record is overridden, never read as an expiry."""
    data = data.rstrip(b" \t\r\n")
    if not data.endswith(b"}") or data.endswith(b"{}"):
        return data
    value = b"null" if expires is None else str(int(expires.timestamp() * 1_000_000)).encode()
    return data[:-1] + _KEPT_EXPIRES + value + b"}"


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
    try:
        return datetime.fromtimestamp(micros / 1_000_000, tz=UTC)
    except (OverflowError, ValueError, OSError):
        return None  # an index another process wrote: not a date, so no expiry


def server_supports_ttl(version: tuple[int, int] | None) -> bool:
    """Whether a server of this (major, minor) version has per-message TTLs (2.11+)."""
    return version is not None and version >= MIN_SERVER_VERSION


__all__ = [
    "DEFAULT_DELETE_MARKER_TTL",
    "LIFECYCLE_METADATA_KEY",
    "MAX_TTL",
    "LifecycleRule",
    "coerce_ttl",
    "current_rule",
    "decode_rules",
    "encode_rules",
    "expired_record",
    "expires_at",
    "resolve_ttl",
    "ttl_of_header",
    "version_rule",
]
