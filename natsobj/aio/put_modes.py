"""Put-if-absent over the compare-and-swap put: the one rule for "create this name, never
overwrite an object", as arrow-rs object_store's ``PutMode::Create``.

``ObjectStore.put(expected_sequence=n)`` succeeds only when the name's last meta record is at
``n``, and 0 means a name never written. A deleted name (a tombstone, or the delete marker of
an expiry) still has a last record, so a put that must create the name expects that record's
sequence: every face that creates without overwriting asks this module, not its own lookup.
"""

from __future__ import annotations

from typing import Protocol

from natsobj.errors import ObjectExists, ObjectNotFound
from natsobj.model import ObjectInfo


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
