"""One store's view of its bucket's versioning (``natsobj.versioning``), kept with the stream
metadata: read with the store's stream info and again at most ``REFRESH_SECONDS`` later, as
the lifecycle rules are, so a put costs no extra round trip. Another process's change is
seen within that time (S3 says to wait after enabling versioning too)."""

from __future__ import annotations

import logging
import time
from typing import Any

from natsobj.aio.expiry import REFRESH_SECONDS
from natsobj.aio.stream import BucketStream, StreamInfo
from natsobj.model import ObjectInfo
from natsobj.versioning import (
    DEFAULT_RETENTION_METADATA_KEY,
    OBJECT_LOCK_METADATA_KEY,
    SUSPENDED_AT_METADATA_KEY,
    VERSIONING_METADATA_KEY,
    DefaultRetention,
    Versioning,
)

log = logging.getLogger(__name__)


def _state_of(bucket: str, config: dict[str, Any]) -> Versioning:
    """The state the metadata says. A value natsobj did not write is taken as ``ENABLED``:
    keeping versions can lose nothing, purging them could."""
    value = (config.get("metadata") or {}).get(VERSIONING_METADATA_KEY)
    if value is None:
        return Versioning.UNVERSIONED
    try:
        return Versioning.parse(value)
    except ValueError:
        log.warning(
            "bucket %r: its versioning metadata %r is unreadable; versions are kept",
            bucket,
            value,
        )
        return Versioning.ENABLED


def _retention_of(bucket: str, config: dict[str, Any]) -> DefaultRetention | None:
    """The default retention the metadata says; one that cannot be read is warned about and
    applies none (a put is not refused for it; the versions it keeps are kept)."""
    value = (config.get("metadata") or {}).get(DEFAULT_RETENTION_METADATA_KEY)
    if value is None:
        return None
    try:
        return DefaultRetention.decode(value)
    except ValueError as exc:
        log.warning(
            "bucket %r: its default retention is unreadable (%s); none applied", bucket, exc
        )
        return None


class BucketVersioning:
    """The versioning state of one store's bucket (``ObjectStore.versioning``)."""

    def __init__(self, stream: BucketStream, info: StreamInfo) -> None:
        self.stream = stream
        self.note(info)

    def note(self, info: StreamInfo) -> None:
        self._state = _state_of(self.stream.bucket, info.config)
        at = (info.config.get("metadata") or {}).get(SUSPENDED_AT_METADATA_KEY)
        # unreadable: every version counts as written before it (kept; none is lost)
        self._suspended_at = int(at) if at is not None and at.isdigit() else None
        self._default_retention = _retention_of(self.stream.bucket, info.config)
        metadata = info.config.get("metadata") or {}
        self._object_lock = metadata.get(OBJECT_LOCK_METADATA_KEY) is not None
        self._read_at = time.monotonic()

    async def state(self, *, fresh: bool = False) -> Versioning:
        if fresh or time.monotonic() - self._read_at > REFRESH_SECONDS:
            self.note(await self.stream.info())
        return self._state

    async def default_retention(self, *, fresh: bool = False) -> DefaultRetention | None:
        await self.state(fresh=fresh)
        return self._default_retention

    async def object_lock(self, *, fresh: bool = False) -> bool:
        await self.state(fresh=fresh)
        return self._object_lock

    async def enable_object_lock(self) -> None:
        """Turn Object Lock on for good: versioning enabled, and never suspended again."""
        await self.set(Versioning.ENABLED)
        self.note(await self.stream.set_metadata(OBJECT_LOCK_METADATA_KEY, "Enabled"))

    async def set_default_retention(self, retention: DefaultRetention | None) -> None:
        """Keep (None: drop) the bucket's default retention; it needs versioning on."""
        if retention is not None and await self.state(fresh=True) is not Versioning.ENABLED:
            raise ValueError(
                f"bucket {self.stream.bucket!r}: a default retention needs versioning enabled"
            )
        value = retention.encode() if retention is not None else None
        self.note(await self.stream.set_metadata(DEFAULT_RETENTION_METADATA_KEY, value))

    async def keeps(self, info: ObjectInfo) -> bool:
        """Whether a write replacing ``info`` keeps it: in a bucket keeping versions, and in
        a suspended one when it was written before the suspension."""
        state = await self.state()
        if state is Versioning.ENABLED:
            return True
        if state is Versioning.SUSPENDED:
            at = self._suspended_at
            return at is None or (info.sequence or 0) <= at
        return False

    async def set(self, state: Versioning) -> Versioning:
        """Keep ``state`` in the stream metadata (a stream admin's permission is needed). A
        bucket once versioned is never unversioned again, as in S3: it can be suspended."""
        current = await self.state(fresh=True)
        if state is Versioning.UNVERSIONED and current is not Versioning.UNVERSIONED:
            raise ValueError(
                f"bucket {self.stream.bucket!r} has been versioned: its versioning can be"
                " suspended, not turned off (the versions it kept stay either way)"
            )
        if state is Versioning.SUSPENDED and self._object_lock:
            raise ValueError(
                f"bucket {self.stream.bucket!r} has Object Lock on: its versioning cannot be"
                " suspended (S3's rule: the locks need every version kept)"
            )
        if state is not current:
            if state is Versioning.SUSPENDED:
                last = (await self.stream.info()).state.last_sequence
                await self.stream.set_metadata(SUSPENDED_AT_METADATA_KEY, str(last))
            self.note(await self.stream.set_metadata(VERSIONING_METADATA_KEY, state.value))
        return self._state
