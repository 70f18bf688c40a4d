"""Whether a put of a known size fits what is left of its bucket's ``max_bytes``, asked before
any byte is sent.

The server enforces ``max_bytes`` (object store streams discard new messages), but only as the
chunks arrive: a put too big for the room left would upload until the room is used up, then
fail and have its chunks purged. When the size is known up front (bytes, a file), that is
refused at once. The version a put replaces is no room: its chunks are purged only after the
new version is committed, so both are held while the put runs.
"""

from __future__ import annotations

from natsobj.aio.stream import BucketStream
from natsobj.errors import NoRoom


async def check_room(stream: BucketStream, name: str, size: int | None, window_bytes: int) -> None:
    """Raise ``NoRoom`` when ``size`` bytes cannot fit the bucket's ``max_bytes``.

    Free for unlimited buckets and sizes not known (a compressed bucket counts the bytes
    put, not the bytes stored, against its limit). Otherwise the room is read from the
    stream (one ``STREAM.INFO``), only when it matters: for an object larger than the put
    window (a smaller one the server refuses within its first window) or than ``max_bytes``
    as last read (read again, so a limit raised since is seen)."""
    if size is None or stream.max_bytes < 0:
        return
    if size <= window_bytes and size <= stream.max_bytes:
        return
    state = (await stream.info()).state
    if stream.max_bytes < 0:
        return
    room = stream.max_bytes - state.bytes
    if size > room:
        raise NoRoom.of(
            bucket=stream.bucket, name=name, size=size, room=room, max_bytes=stream.max_bytes
        )
