"""What a put may replace, one value (``PutMode``), as arrow-rs object_store's ``PutMode``:
``OVERWRITE`` whatever is there, ``CREATE`` only where no object is (S3's
``If-None-Match: *``), or ``PutMode.update(n)``, a compare-and-swap that succeeds only when
the name's last meta record is at sequence ``n`` (0: a name never written).

Put-if-absent rides on the compare-and-swap: a deleted name (a tombstone, or the delete marker
of an expiry) still has a last record, so a put that must create the name expects that
record's sequence. Every face that creates without overwriting asks this module, not its own
lookup.
"""

from __future__ import annotations

import enum
import warnings
from dataclasses import dataclass
from typing import Protocol

from natsobj.errors import ObjectExists, ObjectNotFound
from natsobj.model import ObjectInfo


class _Kind(enum.Enum):
    OVERWRITE = "overwrite"
    CREATE = "create"
    UPDATE = "update"


@dataclass(frozen=True)
class PutMode:
    """A put's mode: ``OVERWRITE``, ``CREATE`` or ``PutMode.update(sequence)``."""

    kind: _Kind
    sequence: int | None = None

    @classmethod
    def update(cls, sequence: int) -> PutMode:
        """Replace only the version whose meta record is at ``sequence`` (0: create a name
        never written); ObjectChanged when another writer came first."""
        if isinstance(sequence, bool) or not isinstance(sequence, int) or sequence < 0:
            raise ValueError(f"PutMode.update takes a meta sequence >= 0, not {sequence!r}")
        return cls(_Kind.UPDATE, sequence)

    @classmethod
    def replacing(cls, info: ObjectInfo) -> PutMode:
        """Replace exactly the version ``info`` was read at. A record read from the store
        always has its sequence; one that has none (a template, not a stored version) is
        refused rather than taken for 0, which would mean "create only"."""
        if info.sequence is None:
            raise ValueError(f"object {info.name!r}: a version to replace needs its sequence")
        return cls.update(info.sequence)

    def __repr__(self) -> str:
        if self.kind is _Kind.UPDATE:
            return f"PutMode.update({self.sequence})"
        return f"PutMode.{self.kind.name}"


OVERWRITE = PutMode(_Kind.OVERWRITE)
CREATE = PutMode(_Kind.CREATE)


def from_keywords(mode: PutMode, expected_sequence: int | None, if_absent: bool) -> PutMode:
    """``mode``, or the mode the keywords before it (``expected_sequence=``, ``if_absent=``)
    asked for, with a DeprecationWarning: one release to move to ``mode=``."""
    if expected_sequence is None and not if_absent:
        return mode
    if mode is not OVERWRITE or (expected_sequence is not None and if_absent):
        raise ValueError("give one of mode, expected_sequence and if_absent")
    warnings.warn(
        "put(expected_sequence=, if_absent=) are deprecated: pass mode=PutMode.update(n)"
        " or mode=CREATE",
        DeprecationWarning,
        stacklevel=3,
    )
    if if_absent:
        return CREATE
    assert expected_sequence is not None  # the first check returned mode otherwise
    return PutMode.update(expected_sequence)


class NamedRecords(Protocol):
    """What the rule reads of a store (``ObjectStore``): a name's last record."""

    bucket: str

    async def get_info(
        self, name: str, *, include_deleted: bool = False, min_sequence: int | None = None
    ) -> ObjectInfo: ...


async def create_sequence(store: NamedRecords, name: str) -> int:
    """The ``expected_sequence`` of a put that creates ``name``: 0 for a name never written,
    its tombstone's sequence for a deleted one; ObjectExists when an object is there. A writer
    that creates the name after this look-up makes the put fail with ObjectChanged, so the
    look-up and the put together never overwrite an object."""
    try:
        current = await store.get_info(name, include_deleted=True)
    except ObjectNotFound:
        return 0
    if not current.deleted:
        raise ObjectExists("object already exists", bucket=store.bucket, name=name)
    return current.sequence or 0


async def expected_sequence(store: NamedRecords, name: str, mode: PutMode) -> int | None:
    """The compare-and-swap sequence a put in ``mode`` writes with (None: none)."""
    if mode.kind is _Kind.CREATE:
        return await create_sequence(store, name)
    return mode.sequence
