"""What reached the store, read back from the store itself: the contract tests compare it
with what the table says the option must mean."""

from __future__ import annotations

from datetime import timedelta

from natsobj.model import ObjectInfo


def ttl_of(info: ObjectInfo) -> timedelta:
    """The TTL a put gave ``info``: its expiry after its write (0: it never expires)."""
    if info.expires is None:
        return timedelta(0)
    reached = info.expires - info.mtime
    return timedelta(seconds=round(reached.total_seconds()))
