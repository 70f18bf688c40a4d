"""Change cursors: a place in a bucket's change history that survives the bucket's recreation.

A watcher (a trigger, a sensor, a streaming query) keeps one between runs; ``check`` tells a
cursor of an earlier bucket of the same name, whose sequence means nothing any more.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from natsobj.errors import BucketRecreated
from natsobj.model import StoreStatus, parse_server_time
from natsobj.operation_options import LATEST


@dataclass(frozen=True)
class ChangeCursor:
    """A place in a bucket's change history: the last meta-stream sequence handled, and the
    creation time of the stream it counts in. A sequence alone means nothing once the bucket
    is deleted and created again (the new stream counts from 1 again), so a cursor carries the
    stream it belongs to and ``check`` refuses it on any other with ``BucketRecreated``.

    ``stream_created`` is None for a cursor written before cursors carried it (a bare sequence:
    ``"42"`` or ``42``). Such a cursor is taken to belong to the bucket as it is when first
    checked, unless its sequence is past the stream's end (then it cannot, and ``check``
    raises); ``check`` returns it with the creation time filled in, so it is stored in full
    form from then on. Times compare to the microsecond: two buckets of one name are never
    created within the same one.
    """

    sequence: int = 0
    stream_created: datetime | None = None

    def __post_init__(self) -> None:
        if isinstance(self.sequence, bool) or not isinstance(self.sequence, int):
            raise ValueError(f"a change cursor's sequence must be an int, not {self.sequence!r}")
        if self.sequence < 0:
            raise ValueError(f"a change cursor's sequence cannot be negative ({self.sequence})")
        created = self.stream_created  # a string (the server's RFC 3339 form) is read too
        if not isinstance(created, datetime):
            created = cursor_time(created)
        if created is not None:
            created = (created if created.tzinfo else created.replace(tzinfo=UTC)).astimezone(UTC)
        object.__setattr__(self, "stream_created", created)

    def __str__(self) -> str:
        """The compact form ``<sequence>@<created>`` kept in a trigger's state, a sensor's
        cursor or a query's offset; a bare ``<sequence>`` when the creation time is unknown."""
        if self.stream_created is None:
            return str(self.sequence)
        return f"{self.sequence}@{self.stream_created.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}"

    @classmethod
    def parse(cls, value: ChangeCursor | str | int) -> ChangeCursor:
        """Read any form a cursor was ever stored in: this class's string form, or a bare
        sequence (int or digits: a cursor of an older release). Anything else is a
        ValueError saying so."""
        if isinstance(value, ChangeCursor):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(value)
        if isinstance(value, str):
            sequence, at, created = value.strip().partition("@")
            return cls(cursor_sequence(sequence), cursor_time(created) if at else None)
        raise ValueError(f"{value!r} is not a change cursor")

    @classmethod
    def end_of(cls, status: StoreStatus) -> ChangeCursor:
        """A cursor meaning "only what comes after now"."""
        return cls(status.last_sequence, _stream_created(status))

    @classmethod
    def start_of(cls, status: StoreStatus) -> ChangeCursor:
        """A cursor meaning "everything the bucket holds"."""
        return cls(0, _stream_created(status))

    @classmethod
    def starting_at(cls, start: str | int, status: StoreStatus) -> ChangeCursor:
        """The cursor a change feed starting at ``start`` (the options table's follow.start,
        parsed) resumes after, on the bucket ``status`` describes: a meta sequence starts at
        that record, ``latest`` after the bucket's last one, and ``earliest`` and ``current``
        at its beginning: the meta stream keeps one record per name, so its records are the
        objects' current versions. A feed that reports the current versions otherwise (by
        listing them) starts after them, at ``latest``."""
        if isinstance(start, int):
            return replace(cls.start_of(status), sequence=start - 1)
        return cls.end_of(status) if start == LATEST else cls.start_of(status)

    def check(self, status: StoreStatus) -> ChangeCursor:
        """This cursor, pinned to the bucket ``status`` was read from; ``BucketRecreated``
        when it belongs to an earlier bucket of that name (another creation time, or a
        sequence past the stream's end: sequences only grow)."""
        current = _stream_created(status)
        moved = None not in (self.stream_created, current) and self.stream_created != current
        if moved or self.sequence > status.last_sequence:
            raise BucketRecreated(
                f"the change cursor is at meta sequence {self.sequence} of a bucket created "
                f"{_shown_time(self.stream_created)}, but this bucket was created "
                f"{_shown_time(current)} and ends at sequence {status.last_sequence}: it was "
                "deleted and created again since the cursor was taken",
                bucket=status.bucket,
            )
        return self if self.stream_created is not None else replace(self, stream_created=current)


def cursor_sequence(value: object) -> int:
    """A cursor's sequence read from its stored form; a ValueError naming the forms."""
    text = str(value).strip()
    if isinstance(value, bool) or not (isinstance(value, int) or text.isdigit()):
        raise ValueError(
            f"{value!r} is not a change cursor: expected <sequence> or <sequence>@<time>"
        )
    return int(text)


def cursor_time(value: object) -> datetime | None:
    """None for no time at all (an old cursor); a ValueError for one that cannot be read."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a stream creation time (RFC 3339)")
    try:
        return parse_server_time(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a stream creation time (RFC 3339)") from None


def _stream_created(status: StoreStatus) -> datetime | None:
    return cursor_time(status.stream_info.created)


def _shown_time(created: datetime | None) -> str:
    return created.isoformat() if created is not None else "at an unknown time (an old cursor)"
