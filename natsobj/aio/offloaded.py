"""Reading an offloaded object: the seam between the core and the archive.

An offloaded object's bytes live in an archive, which the core knows nothing about: the
archive registers how to read them (``register_offloaded_reader``) when it is imported. A
process that never meets an offloaded record never imports the archive; one that does, and
has not imported it yet, loads the modules installed packages name in the entry-point group
``READER_GROUP`` (natsobj's own ``pyproject.toml`` names its archive there), so ``get`` works
the same whether or not the caller imported the archive first, and the core names none.

A ranged read of an offloaded object asks the archive for just those bytes when it registered
a ``read_range`` (an S3 range GET); otherwise it reads the object from its start through the
whole-object reader and drops what comes before the range.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from importlib.metadata import entry_points
from typing import Protocol

from natsobj.aio.stream import BucketStream
from natsobj.errors import DigestMismatch, MissingExtra, NatsObjError
from natsobj.model import ObjectInfo

# The entry points whose modules register an offloaded reader when loaded, tried in turn.
READER_GROUP = "natsobj.offloaded_readers"


class OffloadedReaderFactory(Protocol):
    def __call__(self, stream: BucketStream, info: ObjectInfo) -> AsyncGenerator[bytes]:
        """The object's bytes, verified against ``info``'s size and digest as they come."""
        ...


class OffloadedRangeReader(Protocol):
    async def __call__(self, stream: BucketStream, info: ObjectInfo, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the object (0 <= start < end <= info.size), exactly
        that many: a range cannot be checked against the digest, its length can."""
        ...


_registered: list[OffloadedReaderFactory] = []
_ranged: list[OffloadedRangeReader] = []


def register_offloaded_reader(
    factory: OffloadedReaderFactory, *, read_range: OffloadedRangeReader | None = None
) -> None:
    """Make ``factory`` the reader of offloaded objects (the archive calls this on import),
    and ``read_range``, when given, the reader of byte ranges of them."""
    _registered[:] = [factory]
    _ranged[:] = [read_range] if read_range is not None else []


def offloaded_reader() -> OffloadedReaderFactory | None:
    """The registered factory, loading the ``READER_GROUP`` entry points if none is
    registered yet; None when none can be loaded (the ``archive`` extra is not installed)."""
    if not _registered:
        for entry in entry_points(group=READER_GROUP):
            try:
                entry.load()
            except ImportError:
                continue
            if _registered:
                break
    return _registered[0] if _registered else None


def read_offloaded(stream: BucketStream, info: ObjectInfo) -> AsyncGenerator[bytes]:
    return _factory(info)(stream, info)


async def read_offloaded_range(
    stream: BucketStream, info: ObjectInfo, start: int, end: int
) -> bytes:
    """Bytes ``[start, end)`` of an offloaded object: the registered ``read_range``, else the
    whole-object reader from the start, stopped once ``end`` is reached."""
    factory = _factory(info)
    if _ranged:
        data = await _ranged[0](stream, info, start, end)
    else:
        pieces, kept, offset = factory(stream, info), [], 0
        try:
            async for piece in pieces:
                if offset + len(piece) > start:
                    kept.append(piece[max(0, start - offset) : end - offset])
                offset += len(piece)
                if offset >= end:
                    break
        finally:
            await pieces.aclose()
        data = b"".join(kept)
    if len(data) != end - start:
        raise DigestMismatch(
            f"the archive returned {len(data)} bytes for a range of {end - start}",
            bucket=info.bucket,
            name=info.name,
        )
    return data


def _factory(info: ObjectInfo) -> OffloadedReaderFactory:
    factory = offloaded_reader()
    if factory is None:
        raise NatsObjError(
            "the object is offloaded to an S3 archive, and this process cannot read from one",
            bucket=info.bucket,
            name=info.name,
            hint=f"Install the archive extra: {MissingExtra.install_line('archive')}.",
        )
    return factory
