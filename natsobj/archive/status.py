"""How far behind the archive is: the cursor, the lag, and what it holds."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from natsobj.archive.target import ArchiveTarget
from natsobj.archive.targets import TARGET_METADATA_KEY, ArchiveTargets
from natsobj.errors import NatsObjError

if TYPE_CHECKING:
    from natsobj.aio.store import ObjectStore


@dataclass
class ArchiveStatus:
    bucket: str
    target: str
    cursor: int  # the last meta-stream sequence the index covers
    last_sequence: int  # the stream's last sequence
    lag_sequences: int
    lag_seconds: float  # age of the oldest change not yet archived; 0 when caught up
    versions: int
    bytes: int
    skipped: list[int] = field(default_factory=list)
    updated_at: str | None = None
    offloaded_objects: int = 0  # current objects whose bytes are in S3 only (tiering)
    offloaded_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def target_of(status_metadata: dict[str, str], bucket: str) -> str:
    """The archive URL the archiver recorded in the bucket's stream metadata."""
    url = status_metadata.get(TARGET_METADATA_KEY)
    if not url:
        raise NatsObjError(
            "has no archive recorded",
            bucket=bucket,
            hint="Pass the target (--to s3://...) or start one with `natsobj archive run`.",
        )
    return url


async def archive_status(
    store: ObjectStore, target: ArchiveTarget | ArchiveTargets
) -> ArchiveStatus:
    targets = ArchiveTargets.of(target)
    cursor = await targets.indexed_through()
    summary = await targets.read_cursor()
    stream = await store.status(count_offloaded=True)
    waiting = await store.changes(cursor, limit=1)
    lag_seconds = 0.0
    if waiting and waiting[0].mtime is not None:
        lag_seconds = max(0.0, (datetime.now(UTC) - waiting[0].mtime).total_seconds())
    return ArchiveStatus(
        bucket=store.bucket,
        target=targets.url,
        cursor=cursor,
        last_sequence=stream.last_sequence,
        lag_sequences=max(0, stream.last_sequence - cursor),
        lag_seconds=lag_seconds,
        versions=int(summary.get("versions", 0)),
        bytes=int(summary.get("bytes", 0)),
        skipped=list(summary.get("skipped", [])),
        updated_at=summary.get("updated_at"),
        offloaded_objects=stream.offloaded_objects or 0,
        offloaded_bytes=stream.offloaded_bytes or 0,
    )
