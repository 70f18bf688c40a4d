"""Reading an offloaded object through from the S3 archive, behind the ordinary ``get``.

The bytes stream with one ranged GET (a packed small object is exactly its range of the
pack), in pieces of about a MiB, and are checked against the size and SHA-256 kept in the
meta record: a read never returns short or wrong data.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable
from datetime import UTC, datetime

from natsobj.aio.reader import ObjectReader
from natsobj.archive import index
from natsobj.archive.index import ArchiveRecord
from natsobj.archive.restore import verified_bytes
from natsobj.archive.target import ArchiveTarget
from natsobj.archive.targets import ArchiveTargets
from natsobj.model import ObjectInfo


@functools.cache
def target_for(url: str) -> ArchiveTarget:
    """One target per archive URL for the process, with credentials from the AWS chain."""
    return ArchiveTarget(url)


def archived_record(info: ObjectInfo) -> ArchiveRecord:
    """The offloaded version as the archive index would describe it, for ``verified_bytes``."""
    offload = info.tiering.offload if info.tiering else None
    assert offload is not None, "only offloaded objects are read through"
    return ArchiveRecord(
        sequence=int(info.stands_for or info.sequence or 0),
        bucket=info.bucket,
        name=info.name,
        kind=index.PUT,
        mtime=info.mtime or datetime.now(UTC),
        size=info.size,
        digest=info.digest,
        nuid=info.nuid,
        key=offload.key,
        offset=offload.offset,
        length=offload.length,
    )


def offloaded_bytes(info: ObjectInfo) -> AsyncGenerator[bytes]:
    """The offloaded object's bytes, verified (DigestMismatch after the last piece if not),
    from its target or, when that does not answer, from a replica (``Offload.mirrors``)."""
    offload = info.tiering.offload if info.tiering else None
    assert offload is not None, "only offloaded objects are read through"
    holders = [target_for(url) for url in offload.urls]
    source = holders[0] if len(holders) == 1 else ArchiveTargets(holders, "replicate")
    return verified_bytes(source, archived_record(info))


class OffloadedReader(ObjectReader):
    """An ``ObjectReader`` whose pieces come from S3 instead of JetStream's chunks."""

    async def _iter_chunks(
        self, write: Callable[[bytes], object] | None = None
    ) -> AsyncGenerator[bytes]:
        pieces = offloaded_bytes(self.info)
        try:
            async for piece in pieces:
                if write is not None:
                    write(piece)
                yield piece
        finally:
            await pieces.aclose()
